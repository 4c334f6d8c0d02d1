# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [raw]
# # ASSIGNMENT CONFIG
# name: 00_toolkit
# run_tests: false
# init_cell: true
# check_all_cell: true
# export_cell: false
# generate: true
# strip_solutions_from_all_cells: true

# %% [markdown]
# # Homework 0: the toolkit
#
# Questions from the exercises of Chapter 0 (*The toolkit*). Fill in each `...`, run the cell,
# then the `grader.check` cell below it: it runs the public tests (shape, type, a sanity bound).
# The grade also counts hidden tests, which check the values. Use `gmmlib` wherever it helps;
# keep the names the questions ask for.

# %%
import numpy as np

from gmmlib import GaussianMixture, softmax_attention_limit
from gmmlib.limits import effective_sample_fraction

# %% [raw]
# # BEGIN QUESTION
# name: q1
# points: 3

# %% [markdown]
# **Question 1** (Exercise ex-00-kappa, warm-up). Let $\mu = \mathcal N(0, \Gamma)$ on
# $\mathbb R^2$ with $\Gamma = \operatorname{diag}(1, \frac14)$, $U = I$ and the query
# $z = (1, 2)$. Compute the sharpness `kappa` $= \kappa = a^\top\Gamma a$ with $a = Uz$ (a float),
# the infinite-prompt output `T_limit` $= T_{U,I}[\mu](z)$ (an array of shape `(2,)`) and the
# effective length `L_eff` $= L e^{-\kappa}$ of a prompt of $L = 1000$ tokens (a float).

# %%
Gamma = np.diag([1.0, 0.25])
U = np.eye(2)
z = np.array([1.0, 2.0])
# BEGIN SOLUTION
mu = GaussianMixture.gaussian(np.zeros(2), Gamma)
a = U @ z
kappa = float(a @ Gamma @ a)
T_limit = softmax_attention_limit(mu, z, U, np.eye(2))
L_eff = 1000 * effective_sample_fraction(mu, z, U)
# END SOLUTION

# %% tags=["near-miss"]
# Γ forgotten in the sharpness, the tilt direction a taken for the output
kappa = float(a @ a)
T_limit = a
L_eff = 1000 * np.exp(-kappa)

# %% [raw]
# # BEGIN TESTS

# %%
assert isinstance(kappa, float) and kappa > 0
assert np.shape(T_limit) == (2,)
assert 0 < L_eff <= 1000

# %%
# HIDDEN
# the closed forms of the exercise's solution; 64 ulp of float64 round-off
ulp = 64 * np.finfo(float).eps
assert abs(kappa - 2.0) <= ulp * 2.0
assert np.allclose(T_limit, [1.0, 0.5], rtol=ulp, atol=0)
assert abs(L_eff - 1000 * np.exp(-2.0)) <= ulp * 1000

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q2
# points: 3

# %% [markdown]
# **Question 2** (Exercise ex-00-pairings, warm-up). For $X\sim\mathcal N(0, \Gamma)$ in
# $\mathbb R^2$, write a function `isserlis_moments(Gamma)` that returns the array
# $(\mathbb E X_1^4,\ \mathbb E[X_1^2X_2^2],\ \mathbb E[X_1^3X_2])$ by Isserlis' theorem, for any
# covariance `Gamma` of shape `(2, 2)`. Also set `n_pairings_6` to the number of pairings of a
# sixth moment (an int).

# %%
# BEGIN SOLUTION
def isserlis_moments(Gamma):
    G = np.asarray(Gamma, dtype=float)
    return np.array([3 * G[0, 0] ** 2,
                     G[0, 0] * G[1, 1] + 2 * G[0, 1] ** 2,
                     3 * G[0, 0] * G[0, 1]])


n_pairings_6 = 5 * 3 * 1
# END SOLUTION

# %% tags=["near-miss"]
# one pairing of the cross moment instead of two
def isserlis_moments(Gamma):  # noqa: F811
    G = np.asarray(Gamma, dtype=float)
    return np.array([3 * G[0, 0] ** 2, G[0, 0] * G[1, 1] + G[0, 1] ** 2,
                     3 * G[0, 0] * G[0, 1]])


# %% [raw]
# # BEGIN TESTS

# %%
assert np.shape(isserlis_moments(np.eye(2))) == (3,)
assert np.allclose(isserlis_moments(np.eye(2)), [3.0, 1.0, 0.0])
assert isinstance(n_pairings_6, (int, np.integer))

# %%
# HIDDEN
# the three moments by Gauss–Hermite quadrature at a correlated Γ, with the rule's error
# (10 × the change between 10 and 20 nodes per axis, plus round-off)
from gmmlib.evidence import converged_quadrature
from gmmlib.quadrature import gaussian_nodes

G_test = np.array([[1.3, 0.6], [0.6, 0.8]])


def _moments_by_quadrature(n):
    X, w = gaussian_nodes(np.zeros(2), G_test, n)
    return w @ np.stack([X[:, 0] ** 4, X[:, 0] ** 2 * X[:, 1] ** 2, X[:, 0] ** 3 * X[:, 1]], 1)


_ref = converged_quadrature(_moments_by_quadrature, 10, dim=2)
assert np.all(np.abs(isserlis_moments(G_test) - _ref.value) <= _ref.error)
assert n_pairings_6 == 15

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q3
# points: 3

# %% [markdown]
# **Question 3** (Exercise ex-00-tanh, warm-up). Let $X = \pm m$ with probability $\frac12$ each
# ($m\in\mathbb R$) and $Z = X + \xi\varepsilon$ with $\varepsilon\sim\mathcal N(0, 1)$
# independent. Write `two_point_denoiser(z, m, xi)`, the posterior mean
# $\mathbb E[X\mid Z = z]$, for an array `z` of any shape (returned with that shape).

# %%
# BEGIN SOLUTION
def two_point_denoiser(z, m, xi):
    return m * np.tanh(m * np.asarray(z, dtype=float) / xi**2)
# END SOLUTION


# %% tags=["near-miss"]
# the whole logit difference 2mz/ξ² inside tanh instead of half of it
def two_point_denoiser(z, m, xi):  # noqa: F811
    return m * np.tanh(2 * m * np.asarray(z, dtype=float) / xi**2)


# %% [raw]
# # BEGIN TESTS

# %%
z_grid = np.linspace(-3, 3, 7)
assert np.shape(two_point_denoiser(z_grid, 1.5, 0.7)) == (7,)
assert np.all(np.abs(two_point_denoiser(z_grid, 1.5, 0.7)) <= 1.5)

# %%
# HIDDEN
# gmmlib's Bayes denoiser of the two-point prior (posterior weights from the two
# densities, no tanh), 1000 ulp of round-off on values of size m
from gmmlib.denoising import bayes_denoiser

z_grid = np.linspace(-3, 3, 7)
for m_t, xi_t in [(1.5, 0.7), (-0.8, 1.3), (2.0, 2.0)]:
    prior = GaussianMixture.isotropic([0.5, 0.5], [[m_t], [-m_t]], 0.0)
    ref = bayes_denoiser(prior, xi_t, z_grid[:, None])[:, 0]
    tol = 1000 * np.finfo(float).eps * abs(m_t)
    assert np.all(np.abs(two_point_denoiser(z_grid, m_t, xi_t) - ref) <= tol)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION
