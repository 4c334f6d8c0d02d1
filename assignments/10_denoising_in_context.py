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
# name: 10_denoising_in_context
# run_tests: false
# init_cell: true
# check_all_cell: true
# export_cell: false
# generate: true
# strip_solutions_from_all_cells: true

# %% [markdown]
# # Homework 10: denoising in context
#
# Questions from the exercises of Chapter 10 (*Denoising in context*). Fill in each `...`, run
# the cell, then the `grader.check` cell below it: it runs the public tests (shape, type, a
# sanity bound). The grade also counts hidden tests, which check the values. Use `gmmlib`
# wherever it helps; keep the names the questions ask for.

# %%
import math

import numpy as np
from scipy.optimize import minimize_scalar

from gmmlib import GaussianMixture, softmax_attention_limit
from gmmlib.denoising import noisy_mixture
from gmmlib.in_context import in_context_mse

# %% [raw]
# # BEGIN QUESTION
# name: q1
# points: 2

# %% [markdown]
# **Question 1** (Exercise ex-10-warmup-golden, warm-up). Let
# $h(s) = \frac14 - \frac58s^2 - \frac1{8s^2}$. Give its maximiser `s_star` on $s > 0$ and
# maximum `h_max`, the exponent `exponent` of $L$ in the mean error $e^{M^2h_{\max}}$ with
# $M^2 = 2\log L$ (eq-10-rate), and, for $L = 10^6$, the position `t_carry` $= s^\star M$ of the
# queries that carry the mean and the edge `edge` $= M/\sqrt3$ of the law's regime (floats).

# %%
s_star = 5 ** (-1 / 4)  # SOLUTION
h_max = 1 / 4 - 5 / 8 * s_star**2 - 1 / (8 * s_star**2)  # SOLUTION
exponent = 2 * h_max  # SOLUTION
M = math.sqrt(2 * math.log(1e6))
t_carry = s_star * M  # SOLUTION
edge = M / math.sqrt(3)  # SOLUTION

# %% tags=["near-miss"]
# e^{M²h} read as L^h: the factor 2 of M² = 2 log L dropped
exponent = h_max

# %% [raw]
# # BEGIN TESTS

# %%
assert all(isinstance(x, float) for x in (s_star, h_max, exponent, t_carry, edge))
assert s_star > 0 and h_max < 0 and exponent < 0

# %%
# HIDDEN
# h maximised numerically (Brent, bounded, xatol 1e-10: s to ~1e-9 where h is flat); the
# maximum and the exponent (1 − √5)/4 and (1 − √5)/2 to 1000 ulp; t and the edge at L = 10⁶
def _h(s):
    return 0.25 - 5 / 8 * s**2 - 1 / (8 * s**2)


best = minimize_scalar(lambda s: -_h(s), bounds=(0.1, 3), method="bounded",
                       options={"xatol": 1e-10})
tol = 1000 * np.finfo(float).eps
assert abs(s_star - best.x) <= 1e-8
assert abs(h_max - (1 - math.sqrt(5)) / 4) <= tol and abs(h_max - _h(best.x)) <= 1e-12
assert abs(exponent - (1 - math.sqrt(5)) / 2) <= tol
M_t = math.sqrt(12 * math.log(10))
assert abs(t_carry - best.x * M_t) <= 1e-7 and abs(edge - M_t / math.sqrt(3)) <= tol

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q2
# points: 2

# %% [markdown]
# **Question 2** (Exercise ex-10-warmup-one-token, warm-up). Write
# `one_token_mse(mixture, z, U, V)`, the mean squared error
# $\mathbb E\|T[\hat\mu_1](z) - T[\mu](z)\|^2$ of attention on a prompt of **one** token drawn from
# `mixture` (a float, for one query `z`). You may use eq-10-mean-error (`in_context_mse`) or the
# closed form it reduces to.

# %%
def one_token_mse(mixture, z, U, V):
    mse = in_context_mse(mixture, z[None], U, V, lengths=[1], step=0.25)  # SOLUTION
    return float(mse.ravel()[0])  # SOLUTION


# %% tags=["near-miss"]
# the spread of one token's value about its own mean, E‖VZ − V E Z‖², instead of about T[μ](z)
def one_token_mse(mixture, z, U, V):  # noqa: F811
    return float(np.trace(V @ mixture.covariance() @ V.T))


# %% [raw]
# # BEGIN TESTS

# %%
mix_try = GaussianMixture.gaussian(np.zeros(2), np.eye(2))
assert isinstance(one_token_mse(mix_try, np.ones(2), np.eye(2), np.eye(2)), float)
assert one_token_mse(mix_try, np.ones(2), np.eye(2), np.eye(2)) > 0

# %%
# HIDDEN
# E‖VZ − T‖² = Σ_k π_k (tr V S_k Vᵀ + ‖V m_k − T‖²) with T from softmax_attention_limit, at
# two queries and two U (the answer depends on U only through T); rtol 1e-5, ten times the
# documented accuracy of in_context_mse's trapezoid at its default step
mix_t = GaussianMixture([0.3, 0.7], [[1.0, -0.5], [-1.0, 1.0]],
                        [0.5 * np.eye(2), [[0.8, 0.2], [0.2, 0.4]]])
V_t = np.array([[1.0, 0.0], [0.4, 1.0]])
for U_t in (np.array([[1.0, 0.2], [0.0, 0.8]]), 0.3 * np.eye(2)):
    for z_t in (np.array([0.7, 0.3]), np.array([2.0, -1.0])):
        T = softmax_attention_limit(mix_t, z_t, U_t, V_t)
        ref = sum(p * (np.trace(V_t @ S @ V_t.T) + np.sum((V_t @ m - T) ** 2))
                  for p, m, S in zip(mix_t.weights, mix_t.means, mix_t.covs))
        assert abs(one_token_mse(mix_t, z_t, U_t, V_t) - ref) <= 1e-5 * ref

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q3
# points: 2

# %% [markdown]
# **Question 3** (Exercise ex-10-unequal, derivation). A head with a key bias scores a noisy token
# $z'$ against the query $z$ by $z'^\top Uz - c\|z'\|^2$. On the noisy prompt
# $\mu_\tau = \sum_k\pi_k\mathcal N(m_k, \nu^2I)$ (`mu_u` below, $\nu^2 = \gamma^2 + \xi^2$), write
# `key_bias_output(Z, U, c)`, its infinite-prompt output $T_{U,I}(z)$ (value matrix $I$) at the
# rows of `Z` (shape `(n, 2)`, returns shape `(n, 2)`), in closed form: complete the square.

# %%
gamma, xi = 0.5, 1.0
nu2 = gamma**2 + xi**2
task_u = GaussianMixture.isotropic([0.4, 0.6], [[1.5, 0.5], [-0.5, -1.0]], gamma**2)
mu_u = noisy_mixture(task_u, xi)


def key_bias_output(Z, U, c):
    # BEGIN SOLUTION
    Z = np.asarray(Z, dtype=float)
    shrink = 1 / (1 + 2 * c * nu2)
    logits = np.log(task_u.weights) + (Z @ U.T @ task_u.means.T
                                       - c * np.sum(task_u.means**2, 1)) * shrink
    alpha = np.exp(logits - logits.max(1, keepdims=True))
    alpha /= alpha.sum(1, keepdims=True)
    return (alpha @ task_u.means + nu2 * Z @ U.T) * shrink
    # END SOLUTION


# %% tags=["near-miss"]
# the gate logits without the factor 1/(1 + 2cν²)
def key_bias_output(Z, U, c):  # noqa: F811
    Z = np.asarray(Z, dtype=float)
    shrink = 1 / (1 + 2 * c * nu2)
    logits = np.log(task_u.weights) + (Z @ U.T @ task_u.means.T - c * np.sum(task_u.means**2, 1))
    alpha = np.exp(logits - logits.max(1, keepdims=True))
    alpha /= alpha.sum(1, keepdims=True)
    return (alpha @ task_u.means + nu2 * Z @ U.T) * shrink


# %% [raw]
# # BEGIN TESTS

# %%
Z_try = np.array([[0.0, 0.0], [1.0, -1.0]])
assert np.shape(key_bias_output(Z_try, np.eye(2) / nu2, 0.3)) == (2, 2)
assert np.allclose(key_bias_output(Z_try, np.eye(2) / nu2, 0.0),
                   softmax_attention_limit(mu_u, Z_try, np.eye(2) / nu2, np.eye(2)))

# %%
# HIDDEN
# the two integrals that define attention, by Gauss–Hermite quadrature of μ_τ (no tilting
# formula), with the rule's error (10 × the change from 20 to 40 nodes per axis), 5 queries
from gmmlib.evidence import converged_quadrature
from gmmlib.quadrature import mixture_nodes

U_t, c_t = np.eye(2) / nu2, 0.3
Z_t = np.random.default_rng(1010).normal(scale=1.5, size=(5, 2))


def _attention(n):
    Zn, w, _ = mixture_nodes(mu_u, n)
    logit = Zn @ U_t @ Z_t.T - c_t * np.sum(Zn**2, 1)[:, None]
    weights = w[:, None] * np.exp(logit - logit.max(0))
    return (weights.T @ Zn) / weights.sum(0)[:, None]


_ref = converged_quadrature(_attention, 20, dim=2)
assert np.all(np.abs(key_bias_output(Z_t, U_t, c_t) - _ref.value) <= _ref.error)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION
