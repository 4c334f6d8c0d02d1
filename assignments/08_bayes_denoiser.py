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
# name: 08_bayes_denoiser
# run_tests: false
# init_cell: true
# check_all_cell: true
# export_cell: false
# generate: true
# strip_solutions_from_all_cells: true

# %% [markdown]
# # Homework 8: the Bayes denoiser is a gated affine map
#
# Questions from the exercises of Chapter 8 (*The Bayes denoiser is a gated affine map*). Fill
# in each `...`, run the cell, then the `grader.check` cell below it: it runs the public tests
# (shape, type, a sanity bound). The grade also counts hidden tests, which check the values. Use
# `gmmlib` wherever it helps; keep the names the questions ask for.

# %%
import numpy as np
from scipy.optimize import minimize_scalar

from gmmlib import GaussianMixture
from gmmlib.denoising import best_affine_denoiser, best_linear_denoiser, noisy_mixture
from gmmlib.limits import attention_gates

# %% [raw]
# # BEGIN QUESTION
# name: q1
# points: 2

# %% [markdown]
# **Question 1** (Exercise ex-08-tanh, warm-up). Let $X = \pm m$ with probability $\frac12$ each
# (two point masses in the plane) and $Z = X + \varepsilon$,
# $\varepsilon\sim\mathcal N(0, \xi^2 I)$. Write `two_point_denoiser(Z, m, xi)`, the posterior
# mean $\mathbb E[X\mid Z = z]$ at the rows of `Z` (shape `(n, 2)`, returns shape `(n, 2)`), in
# closed form.

# %%
def two_point_denoiser(Z, m, xi):
    Z = np.asarray(Z, dtype=float)  # SOLUTION
    return np.tanh(Z @ m / xi**2)[:, None] * m  # SOLUTION


# %% tags=["near-miss"]
# the logit difference 2mᵀz/ξ² inside tanh instead of half of it
def two_point_denoiser(Z, m, xi):  # noqa: F811
    Z = np.asarray(Z, dtype=float)
    return np.tanh(2 * Z @ m / xi**2)[:, None] * m


# %% [raw]
# # BEGIN TESTS

# %%
m_try = np.array([1.5, -0.5])
Z_try = np.array([[0.0, 0.0], [1.0, 2.0], [-3.0, 0.5]])
assert np.shape(two_point_denoiser(Z_try, m_try, 0.7)) == (3, 2)
assert np.allclose(two_point_denoiser(Z_try[:1], m_try, 0.7), 0)

# %%
# HIDDEN
# Tweedie's formula z + ξ²∇log p_Z(z), the gradient by Richardson-extrapolated finite
# differences of the mixture's log density, with their error bound, at 50 queries
from gmmlib.evidence import richardson_derivative

m_t, xi_t = np.array([1.5, -0.5]), 0.7
law = noisy_mixture(GaussianMixture.isotropic([0.5, 0.5], [m_t, -m_t], 0.0), xi_t)
Z_t = np.random.default_rng(808).normal(size=(50, 2))
score = [richardson_derivative(law.log_prob, Z_t, np.tile(e, (50, 1)), h=1e-3) for e in np.eye(2)]
tweedie = Z_t + xi_t**2 * np.stack([s.value for s in score], axis=1)
tol = xi_t**2 * np.stack([s.error for s in score], axis=1)
assert np.all(np.abs(two_point_denoiser(Z_t, m_t, xi_t) - tweedie) <= tol)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q2
# points: 2

# %% [markdown]
# **Question 2** (Exercise ex-08-affine-floor, warm-up). For $m_1 = (3, 0)$, $m_2 = (0, 3)$,
# $\pi_1 = \pi_2 = \frac12$, $\Gamma = \gamma^2 I$ with $\gamma = 1$ and the noise $\xi = 2$,
# compute the risks `R_aff` and `R_lin` (floats) of the best affine and the best linear
# denoiser.

# %%
gamma, xi = 1.0, 2.0
prior = GaussianMixture.isotropic([0.5, 0.5], [[3.0, 0.0], [0.0, 3.0]], gamma**2)
R_aff = best_affine_denoiser(prior, xi)[2]  # SOLUTION
R_lin = best_linear_denoiser(prior, xi)[1]  # SOLUTION

# %% tags=["near-miss"]
# Cov X = Γ: the between-component part of the covariance forgotten
R_aff = xi**2 * 2 * gamma**2 / (gamma**2 + xi**2)

# %% [raw]
# # BEGIN TESTS

# %%
assert isinstance(R_aff, float) and isinstance(R_lin, float)
assert 0 < R_aff <= R_lin <= 2 * xi**2

# %%
# HIDDEN
# the hand computation of the exercise: Σ_X has eigenvalues 1 and 5.5, M = 5.5 I;
# 1000 ulp of round-off
tol = 1000 * np.finfo(float).eps
assert abs(R_aff - 4 * (1 / 5 + 5.5 / 9.5)) <= tol * 4
assert abs(R_lin - 8 * 5.5 / 9.5) <= tol * 8

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q3
# points: 2

# %% [markdown]
# **Question 3** (Exercise ex-08-unequal-norms, derivation). Take unequal norms,
# $m_1 = (3, 0)$, $m_2 = (0, 2)$ ($\gamma = 1$, $\xi = 2$, $\nu^2 = \gamma^2 + \xi^2$), and the head
# $U = I/\nu^2$ on the noisy prompt (`unequal` below). Compute `gate_gap`, the largest gate error
# $|\alpha_1(z) - \beta_1(z)|$ between its attention gates and the posterior of the noisy mixture,
# over the line of the means $z = t\Delta/\|\Delta\|^2$, $\Delta = m_1 - m_2$, to within $10^{-8}$.

# %%
nu2 = gamma**2 + xi**2
unequal = noisy_mixture(GaussianMixture.isotropic([0.5, 0.5], [[3.0, 0.0], [0.0, 2.0]], 1.0), xi)


# BEGIN SOLUTION
def gate_error(t):
    z = t * np.array([[3.0, -2.0]]) / 13
    alpha = attention_gates(unequal, z, np.eye(2) / nu2)[0, 0]
    return abs(alpha - unequal.posterior(z)[0, 0])


best = minimize_scalar(lambda t: -gate_error(t), bounds=(-20, 20), method="bounded",
                       options={"xatol": 1e-9})
# END SOLUTION
gate_gap = float(gate_error(best.x))  # SOLUTION

# %% tags=["near-miss"]
# the whole shift of the logit difference, 0.5, for half of it at the switch: tanh(1/4)
gate_gap = float(np.tanh(1 / 4))

# %% [raw]
# # BEGIN TESTS

# %%
assert isinstance(gate_gap, float) and 0 < gate_gap < 1

# %%
# HIDDEN
# max_t |σ(t) − σ(t − 0.5)| = σ(0.25) − σ(−0.25) = tanh(1/8), to the 1e-8 asked
assert abs(gate_gap - np.tanh(1 / 8)) <= 1e-8

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION
