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
# name: 01_infinite_prompt_limit
# run_tests: false
# init_cell: true
# check_all_cell: true
# export_cell: false
# generate: true
# strip_solutions_from_all_cells: true

# %% [markdown]
# # Homework 1: the infinite-prompt limit
#
# Questions from the exercises of Chapter 1 (*The infinite-prompt limit*). Fill in each `...`,
# run the cell, then the `grader.check` cell below it: it runs the public tests (shape, type, a
# sanity bound). The grade also counts hidden tests, which check the values. Use `gmmlib`
# wherever it helps; keep the names the questions ask for.

# %%
import numpy as np

from gmmlib import (GaussianMixture, linear_attention, linear_attention_limit,
                    softmax_attention_limit)
from gmmlib.limits import effective_sample_fraction, finite_prompt_mse

# %% [raw]
# # BEGIN QUESTION
# name: q1
# points: 2

# %% [markdown]
# **Question 1** (Exercise ex-01-warmup-kappa, warm-up). A prompt has tokens
# $z_j\sim\mathcal N(0, \Gamma)$ in the plane with $\Gamma = \operatorname{diag}(1, 0.25)$, and
# $U = 2I$. For the query $z = (1, 1)$, compute the sharpness `kappa` $= \kappa$ (a float), the
# limit `T_limit` $= T_{U,I}[\mu](z)$ (shape `(2,)`) and the effective length `L_eff`
# $= Le^{-\kappa}$ of a prompt of $L = 1000$ tokens.

# %%
Gamma = np.diag([1.0, 0.25])
U = 2 * np.eye(2)
z = np.array([1.0, 1.0])
mu = GaussianMixture.gaussian(np.zeros(2), Gamma)
a = U @ z  # SOLUTION
kappa = float(a @ Gamma @ a)  # SOLUTION
T_limit = softmax_attention_limit(mu, z, U, np.eye(2))  # SOLUTION
L_eff = 1000 * effective_sample_fraction(mu, z, U)  # SOLUTION

# %% tags=["near-miss"]
# U forgotten: the query itself taken as the tilt
kappa = float(z @ Gamma @ z)
T_limit = Gamma @ z
L_eff = 1000 * np.exp(-kappa)

# %% [raw]
# # BEGIN TESTS

# %%
assert isinstance(kappa, float) and kappa > 0
assert np.shape(T_limit) == (2,)
assert 0 < L_eff <= 1000

# %%
# HIDDEN
# the closed forms κ = 5, T = Γa = (2, 0.5), L e^{-κ}; 64 ulp of float64 round-off
ulp = 64 * np.finfo(float).eps
assert abs(kappa - 5.0) <= ulp * 5.0
assert np.allclose(T_limit, [2.0, 0.5], rtol=ulp, atol=0)
assert abs(L_eff - 1000 * np.exp(-5.0)) <= ulp * L_eff

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q2
# points: 2

# %% [markdown]
# **Question 2** (Exercise ex-01-warmup-lognormal, warm-up). For $\mu = \mathcal N(m,\Gamma)$ and
# the normalised weight $\tilde w = e^{a^\top X}/\mathbb E e^{a^\top X}$, write
# `weight_moment(k, kappa)`, the moment $\mathbb E\tilde w^k$ as a function of $k$ and
# $\kappa = a^\top\Gamma a$, and `kish_fraction(kappa)`, Kish's effective sample fraction
# $(\mathbb E\tilde w)^2/\mathbb E\tilde w^2$. Both take floats or arrays.

# %%
def weight_moment(k, kappa):
    return np.exp(k * (k - 1) * np.asarray(kappa, dtype=float) / 2)  # SOLUTION


def kish_fraction(kappa):
    return weight_moment(1, kappa) ** 2 / weight_moment(2, kappa)  # SOLUTION


# %% tags=["near-miss"]
# E e^{k a·X} without the normalisation by (E e^{a·X})^k
def weight_moment(k, kappa):  # noqa: F811
    return np.exp(k**2 * np.asarray(kappa, dtype=float) / 2)


# %% [raw]
# # BEGIN TESTS

# %%
assert np.isclose(weight_moment(1, 0.7), 1.0)
assert 0 < kish_fraction(2.0) < 1

# %%
# HIDDEN
# E w̃^k by Gauss–Hermite quadrature of w̃ = exp(√κ G − κ/2), G ~ N(0, 1), with the rule's
# error (10 × the change between 30 and 60 nodes, plus round-off)
from gmmlib.evidence import converged_quadrature
from gmmlib.quadrature import gauss_hermite

kappas = np.array([0.5, 1.0, 2.0])


def _moments(n):
    g, w = gauss_hermite(n)
    wt = np.exp(np.sqrt(kappas)[:, None] * g[:, 0] - kappas[:, None] / 2)
    return np.stack([(wt**k) @ w for k in (2, 3)])


_ref = converged_quadrature(_moments, 30)
mine = np.stack([weight_moment(k, kappas) for k in (2, 3)])
assert np.all(np.abs(mine - _ref.value) <= _ref.error)
assert np.allclose(kish_fraction(kappas), 1 / _ref.value[0], rtol=1e-9)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q3
# points: 2

# %% [markdown]
# **Question 3** (Exercise ex-01-linear, derivation). Linear attention's finite-prompt error is
# an ordinary Monte Carlo error:
# $L\,\mathbb E\|T^{\mathrm{lin}}[\hat\mu_L](z)-T^{\mathrm{lin}}[\mu](z)\|^2$
# does not depend on $L$. For $\mu = \mathcal N(0,\Gamma)$, compute this constant with Isserlis'
# theorem and write it as `linear_constant(Gamma, U, V, z)` (a float), for any covariance
# `Gamma`, matrices `U`, `V` and query `z`.

# %%
def linear_constant(Gamma, U, V, z):
    # BEGIN SOLUTION
    a = U @ z
    kappa = a @ Gamma @ a
    return float(kappa * np.trace(V @ Gamma @ V.T) + np.sum((V @ Gamma @ a) ** 2))
    # END SOLUTION


# %% tags=["near-miss"]
# the second moment E‖(aᵀX)VX‖² without subtracting the squared mean
def linear_constant(Gamma, U, V, z):  # noqa: F811
    a = U @ z
    kappa = a @ Gamma @ a
    return float(kappa * np.trace(V @ Gamma @ V.T) + 2 * np.sum((V @ Gamma @ a) ** 2))


# %% [raw]
# # BEGIN TESTS

# %%
assert isinstance(linear_constant(np.eye(2), np.eye(2), np.eye(2), np.ones(2)), float)
assert linear_constant(np.eye(2), np.eye(2), np.eye(2), np.zeros(2)) == 0

# %%
# HIDDEN
# Monte Carlo with the generator fixed here: 20,000 prompts of L = 50 tokens from the
# chapter's Γ, U scaled to κ = 2; tolerance: the Gaussian quantile times the standard error
# (monte_carlo_mean, family-wise α = 1e-3)
from gmmlib.evidence import monte_carlo_mean

G_t = np.array([[1.0, 0.4], [0.4, 0.6]])
z_t = np.array([1.0, 0.5])
U_t = np.array([[1.0, 0.0], [0.3, 1.0]])
U_t = U_t * np.sqrt(2.0 / ((U_t @ z_t) @ G_t @ (U_t @ z_t)))
V_t = np.array([[1.0, 0.0], [0.5, 1.0]])
mu_t = GaussianMixture.gaussian(np.zeros(2), G_t)
X = mu_t.sample_tokens(20000, 50, np.random.default_rng(101))
err = np.sum((linear_attention(X, z_t[None], U_t, V_t)[:, 0]
              - linear_attention_limit(mu_t, z_t, U_t, V_t)) ** 2, axis=-1)
est = monte_carlo_mean(50 * err)
assert abs(linear_constant(G_t, U_t, V_t, z_t) - est.value) <= est.error

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q4
# points: 2

# %% [markdown]
# **Question 4** (Exercise ex-01-length, computation). Take the chapter's Gaussian prompt
# $\mu = \mathcal N(m, \Gamma)$, query $z_0$, value matrix $V$ and $U = cU_0$ scaled so that
# $\kappa = (Uz_0)^\top\Gamma\,Uz_0 = 4$ (defined below). With `finite_prompt_mse`, find the
# prompt length `L_needed` (a float) at which the finite-prompt law
# $\mathbb E\|T[\hat\mu_L](z_0) - T[\mu](z_0)\|^2\approx C(z_0)/L$ puts the root-mean-square error
# at $0.05$.

# %%
m_g = np.array([0.5, -0.5])
Gamma_g = np.array([[1.0, 0.4], [0.4, 0.6]])
gauss = GaussianMixture.gaussian(m_g, Gamma_g)
z0 = np.array([1.0, 0.5])
U0 = np.array([[1.0, 0.0], [0.3, 1.0]])
V_g = np.array([[1.0, 0.0], [0.5, 1.0]])
a0 = U0 @ z0
U_k = U0 * np.sqrt(4.0 / (a0 @ Gamma_g @ a0))
L_needed = float(finite_prompt_mse(gauss, z0, U_k, V_g)) / 0.05**2  # SOLUTION

# %% tags=["near-miss"]
# the root-mean-square error set to 0.05 without squaring the target
L_needed = float(finite_prompt_mse(gauss, z0, U_k, V_g)) / 0.05

# %% [raw]
# # BEGIN TESTS

# %%
assert isinstance(L_needed, float) and L_needed > 1

# %%
# HIDDEN
# C(z) = e^κ (tr VΓVᵀ + ‖VΓa‖²) for a Gaussian prompt (eq-01-gaussian-law), an independent
# closed form; 1000 ulp of round-off
a_t = U_k @ z0
C = np.exp(4.0) * (np.trace(V_g @ Gamma_g @ V_g.T) + np.sum((V_g @ Gamma_g @ a_t) ** 2))
assert abs(L_needed - C / 0.05**2) <= 1000 * np.finfo(float).eps * L_needed

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q5
# points: 2

# %% [markdown]
# **Question 5** (Exercise ex-01-linear, the simulation). Check your formula of Question 3 by
# Monte Carlo: with the generator `rng` below, draw 20,000 prompts of $L = 50$ tokens from
# $\mathcal N(0, \Gamma)$ with the chapter's $\Gamma$, query $z_0$, $V$ and $U$ scaled to
# $\kappa = 2$ (defined below; use `mu_0.sample_tokens`), and give `lin_mc`, the sample mean of
# $L\,\|T^{\mathrm{lin}}[\hat\mu_L](z_0) - T^{\mathrm{lin}}[\mu](z_0)\|^2$ (a float).

# %%
rng = np.random.default_rng(2026)
mu_0 = GaussianMixture.gaussian(np.zeros(2), Gamma_g)
U_2 = U0 * np.sqrt(2.0 / (a0 @ Gamma_g @ a0))
n_prompts, L = 20_000, 50
# BEGIN SOLUTION
X = mu_0.sample_tokens(n_prompts, L, rng)
out = linear_attention(X, z0[None], U_2, V_g)[:, 0]
lim = linear_attention_limit(mu_0, z0, U_2, V_g)
# END SOLUTION
lin_mc = float(np.mean(L * np.sum((out - lim) ** 2, axis=-1)))  # SOLUTION

# %% tags=["near-miss"]
# the mean squared error itself, without the factor L
lin_mc = float(np.mean(np.sum((out - lim) ** 2, axis=-1)))

# %% [raw]
# # BEGIN TESTS

# %%
assert isinstance(lin_mc, float) and lin_mc > 0

# %%
# HIDDEN
# against the closed form κ tr(VΓVᵀ) + ‖VΓa‖² at κ = 2, within the Gaussian quantile times the
# standard error of a mean of 20,000 draws (monte_carlo_mean on the same draws, generator
# seeded 2026, family-wise α = 1e-3)
from gmmlib.evidence import monte_carlo_mean

G_t = np.array([[1.0, 0.4], [0.4, 0.6]])
z_t = np.array([1.0, 0.5])
U_t = np.array([[1.0, 0.0], [0.3, 1.0]])
U_t = U_t * np.sqrt(2.0 / ((U_t @ z_t) @ G_t @ (U_t @ z_t)))
V_t = np.array([[1.0, 0.0], [0.5, 1.0]])
mu_t = GaussianMixture.gaussian(np.zeros(2), G_t)
X_t = mu_t.sample_tokens(20_000, 50, np.random.default_rng(2026))
err = np.sum((linear_attention(X_t, z_t[None], U_t, V_t)[:, 0]
              - linear_attention_limit(mu_t, z_t, U_t, V_t)) ** 2, axis=-1)
est = monte_carlo_mean(50 * err)
a_t = U_t @ z_t
exact = 2.0 * np.trace(V_t @ G_t @ V_t.T) + np.sum((V_t @ G_t @ a_t) ** 2)
assert abs(lin_mc - exact) <= est.error

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION
