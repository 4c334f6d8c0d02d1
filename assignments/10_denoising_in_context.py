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
# Variants of the exercises of Chapter 10 (*Denoising in context*): the chapter's solutions teach
# the method, not these answers. Replace each `...` with your answer, run the cell, then the
# `grader.check` cell below it: its public tests check values and properties a right answer
# must have, and say what is wrong when one fails. The grade also counts hidden tests, which
# compare your values with independent computations. The last question asks *why*, in words; it
# is graded by hand. Use `gmmlib` for the pieces around an answer (mixtures, quadrature nodes),
# not for the quantity a question asks you to compute.

# %%
import math

import numpy as np
from scipy.optimize import minimize_scalar

from gmmlib import GaussianMixture, softmax_attention_limit
from gmmlib.quadrature import gauss_hermite

# %% [raw]
# # BEGIN QUESTION
# name: q1
# points: 2

# %% [markdown]
# **Question 1** (a variant of Exercise ex-10-warmup-golden, warm-up). Redo the heuristic
# heur-10-rate with queries drawn from a *wider* law than the tokens: in units of the prompt's
# spread the tokens project like $\mathcal N(0, 1)$ but the query density is
# $\propto e^{-t^2/(2\sigma^2)}$ with $\sigma^2 = 2$ (as for the chapter's wider queries $q_\tau$).
# In regime (ii) the exponent is $-t^2/(2\sigma^2) + (M^2 - y^{*2})/2$ with
# $y^* = t/2 + M^2/(2t)$ and $M^2 = 2\log L$. With $t = sM$ it is $M^2h(s)$: find $h$, and give
# its maximiser `s_star` on $s > 0$, its maximum `h_max`, the exponent `exponent` of $L$ in
# $e^{M^2h_{\max}}$, and for $L = 10^6$ the position `t_carry` $= s^\star M$ of the queries that
# carry the mean (floats).

# %% [raw]
# # BEGIN SOLUTION

# %%
sigma2 = 2.0
M = math.sqrt(2 * math.log(1e6))
# BEGIN SOLUTION
# y*² = M²(s²/4 + 1/2 + 1/(4s²)), so h(s) = 1/4 − (1/(2σ²) + 1/8)s² − 1/(8s²)
A = 1 / (2 * sigma2) + 1 / 8
# END SOLUTION
s_star = (8 * A) ** -0.25  # SOLUTION
h_max = 0.25 - A * s_star**2 - 1 / (8 * s_star**2)  # SOLUTION
exponent = 2 * h_max  # SOLUTION
t_carry = s_star * M  # SOLUTION

# %% [raw]
# # END SOLUTION

# %% tags=["near-miss"]
# e^{M²h} read as L^h: the factor 2 of M² = 2 log L dropped
exponent = h_max

# %% tags=["book-method"]
# h maximised numerically (Brent, bounded, xatol 1e-10), as the chapter maximises along a line
def h(s):
    return 0.25 - (1 / (2 * sigma2) + 1 / 8) * s**2 - 1 / (8 * s**2)


best = minimize_scalar(lambda s: -h(s), bounds=(0.1, 3), method="bounded",
                       options={"xatol": 1e-10})
s_star, h_max = float(best.x), float(h(best.x))
exponent, t_carry = 2 * h_max, s_star * M

# %% [raw]
# # BEGIN TESTS

# %%
assert all(isinstance(x, float) for x in (s_star, h_max, exponent, t_carry)), (
    "s_star, h_max, exponent and t_carry must be floats")
assert s_star > 1 / math.sqrt(3), (
    "regime (ii) holds for t > M/√3 (the cut y* below 2t): the maximiser must satisfy s > 1/√3")
assert -1 < exponent < 0, (
    "the query-averaged error decays, and more slowly than 1/L (prop-10-heavy-tail): the "
    "exponent of L lies in (−1, 0)")
assert abs(exponent - 2 * h_max) < 1e-12, "e^{M²h} = L^{2h}, since M² = 2 log L"
assert abs(t_carry - s_star * math.sqrt(12 * math.log(10))) < 1e-9, "t_carry is s* M at L = 10⁶"

# %%
# HIDDEN
# closed forms: h(s) = 1/4 − (3/8)s² − 1/(8s²), s*⁴ = 1/3, h* = (1 − √3)/4, exponent
# (1 − √3)/2. Tolerances: 1e-7 on s* and 1e-6 on t (Brent at xatol 1e-10 lands ~6e-10 from s*,
# where h is flat), 1e-9 on h* and the exponent (Brent's value is exact to ~1e-16); the near miss
# (the exponent h*) is 0.18 away
_s = 3 ** -0.25
assert abs(s_star - _s) <= 1e-7, "s_star is not the maximiser of h"
assert abs(h_max - (1 - math.sqrt(3)) / 4) <= 1e-9, "h_max is not the maximum of h"
assert abs(exponent - (1 - math.sqrt(3)) / 2) <= 1e-9, "exponent is not the exponent of L"
assert abs(t_carry - _s * math.sqrt(12 * math.log(10))) <= 1e-6, "t_carry is off"

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q2
# points: 3

# %% [markdown]
# **Question 2** (a variant of Exercise ex-10-warmup-one-token, computation). A prompt of **two**
# tokens. In one dimension, with tokens $Y_1, Y_2\sim\mathcal N(0, 1)$ i.i.d., $U = V = 1$ and
# the query $t$, attention weights each token by $e^{tY_j}$ and its limit is $T[\mu](t) = t$.
# Write `two_token_mse(t)`, the exact mean square error
# $\mathbb E\big|\frac{e^{tY_1}Y_1 + e^{tY_2}Y_2}{e^{tY_1} + e^{tY_2}} - t\big|^2$ (a float, for a
# float `t`), to a relative accuracy of $10^{-6}$ or better: by Gauss–Hermite quadrature over
# $(Y_1, Y_2)$ (`gauss_hermite(n, 2)` gives nodes and weights of $\mathcal N(0, I_2)$) or by
# eq-10-mean-error.

# %% [raw]
# # BEGIN SOLUTION

# %%
def two_token_mse(t):
    # BEGIN SOLUTION
    y, w = gauss_hermite(60, 2)
    share = 1 / (1 + np.exp(-t * (y[:, 1] - y[:, 0])))  # e^{tY₂}/(e^{tY₁} + e^{tY₂})
    error = (y[:, 0] - t) + share * (y[:, 1] - y[:, 0])
    return float(w @ error**2)
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% tags=["near-miss"]
# the self-normalised average treated as the plain mean of the two tokens: E|Y − t|²/2
def two_token_mse(t):  # noqa: F811
    return (1 + t**2) / 2


# %% tags=["book-method"]
# the chapter's ten lines of eq-10-mean-error (plain Riemann sums, step 0.05) at L = 2
def two_token_mse(t, L=2):  # noqa: F811
    y = np.arange(-12, 2 * t + 12, 0.05)
    p = np.exp(-y**2 / 2) / np.sqrt(2 * np.pi) * 0.05
    u = np.arange(-10, np.log(L) + t * (2 * t + 12) + 30, 0.05)
    sw = np.exp(t * y[None, :] - t**2 / 2 - u[:, None])
    phi = np.exp(-sw) @ p
    sA = (sw * np.exp(-sw)) @ (p * (y - t))
    s2B = (sw**2 * np.exp(-sw)) @ (p * (y - t) ** 2)
    return float(0.05 * np.sum(L * s2B * phi ** (L - 1) + L * (L - 1) * sA**2 * phi ** (L - 2)))


# %% [raw]
# # BEGIN TESTS

# %%
assert isinstance(two_token_mse(1.0), float), "two_token_mse must return a float"
assert abs(two_token_mse(0.0) - 0.5) < 1e-9, (
    "at t = 0 the two weights are equal and the output is the plain mean of two standard "
    "normal tokens, whose mean square is 1/2")

# %%
# HIDDEN
# gmmlib's in_context_mse (eq-10-mean-error on one grid of scores, step 0.25: round-off) at four
# queries; rtol 1e-5: above the error of the chapter's Riemann sums (at most 2e-7 relative here,
# at t = 2) and 5000 times below the near miss ((1 + t²)/2: 5 % off at t = 0.5, 17 % at t = 2)
from gmmlib.in_context import in_context_mse

_law = GaussianMixture.isotropic([1.0], [[0.0]], 1.0)
for _t in (0.5, 1.0, 1.5, 2.0):
    _ref = in_context_mse(_law, [[_t]], np.eye(1), np.eye(1), lengths=[2], step=0.25)[0, 0]
    assert abs(two_token_mse(_t) - _ref) <= 1e-5 * _ref, f"off the exact mean error at t = {_t}"

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q3
# points: 3

# %% [markdown]
# **Question 3** (a variant of Exercise ex-10-unequal, derivation). A head with a key bias scores a
# noisy token $z'$ against the query $z$ by $z'^\top Uz - \chi\|z'\|^2$ (value matrix $I$). Now
# the two noisy components have *different* spreads: the prompt law is
# $\mu = \sum_k\pi_k\mathcal N(m_k, \nu_k^2I)$ with $\nu_k^2 = \gamma_k^2 + \xi^2$ (`mu_u`
# below). Complete the square for each component and write `key_bias_output(Z, U, chi)`, the
# infinite-prompt output $T(z)$ at the rows of `Z` (shape `(n, 2)`, returns shape `(n, 2)`), in
# closed form. Mind the factors that no longer cancel between the components.

# %% [raw]
# # BEGIN SOLUTION

# %%
xi = 1.0
gammas = np.array([0.3, 0.9])
nu2_k = gammas**2 + xi**2
weights_u = np.array([0.4, 0.6])
means_u = np.array([[1.0, 1.0], [-1.5, 0.5]])
mu_u = GaussianMixture(weights_u, means_u, nu2_k[:, None, None] * np.eye(2))


def key_bias_output(Z, U, chi):
    # BEGIN SOLUTION
    A = np.asarray(Z, dtype=float) @ np.asarray(U, dtype=float).T  # a = Uz, one row per query
    shrink = 1 / (1 + 2 * chi * nu2_k)  # s_k: the tilted precision is (1 + 2χν_k²)/ν_k²
    # the mass of π_k N(m_k, ν_k²I) e^{aᵀx − χ‖x‖²}: log π_k + s_k(aᵀm_k − χ‖m_k‖²)
    # + (d/2) log s_k + ½ν_k² s_k ‖a‖² (d = 2)
    logits = (np.log(weights_u) + shrink * (A @ means_u.T - chi * np.sum(means_u**2, 1))
              + np.log(shrink) + 0.5 * nu2_k * shrink * np.sum(A**2, 1)[:, None])
    alpha = np.exp(logits - logits.max(1, keepdims=True))
    alpha /= alpha.sum(1, keepdims=True)
    # the tilted means s_k(m_k + ν_k² a)
    experts = shrink[None, :, None] * (means_u[None] + nu2_k[None, :, None] * A[:, None, :])
    return np.einsum("nk,nkd->nd", alpha, experts)
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% tags=["near-miss"]
# the equal-spread logits of the chapter's solution with ν_k² per component: the terms
# (d/2) log s_k + ½ν_k² s_k‖a‖², common to the components when the spreads are equal, dropped
def key_bias_output(Z, U, chi):  # noqa: F811
    A = np.asarray(Z, dtype=float) @ np.asarray(U, dtype=float).T
    shrink = 1 / (1 + 2 * chi * nu2_k)
    logits = np.log(weights_u) + shrink * (A @ means_u.T - chi * np.sum(means_u**2, 1))
    alpha = np.exp(logits - logits.max(1, keepdims=True))
    alpha /= alpha.sum(1, keepdims=True)
    experts = shrink[None, :, None] * (means_u[None] + nu2_k[None, :, None] * A[:, None, :])
    return np.einsum("nk,nkd->nd", alpha, experts)


# %% tags=["book-method"]
# the chapter's check of ex-10-unequal: the two integrals that define attention, by
# Gauss–Hermite quadrature of μ (40 nodes per axis, the finer of the chapter's two rules)
from gmmlib.quadrature import mixture_nodes


def key_bias_output(Z, U, chi):  # noqa: F811
    Z = np.asarray(Z, dtype=float)
    X, w, _ = mixture_nodes(mu_u, 40)
    logit = X @ np.asarray(U) @ Z.T - chi * np.sum(X**2, 1)[:, None]
    weights = w[:, None] * np.exp(logit - logit.max(0))
    return (weights.T @ X) / weights.sum(0)[:, None]


# %% [raw]
# # BEGIN TESTS

# %%
Z_try = np.array([[0.0, 0.0], [1.0, -1.0], [-2.0, 0.5]])
U_try = np.array([[0.8, 0.1], [-0.2, 0.6]])
out = key_bias_output(Z_try, U_try, 0.3)
assert np.shape(out) == (3, 2), f"the output must have shape (3, 2), not {np.shape(out)}"
assert np.allclose(key_bias_output(Z_try, U_try, 0.0),
                   softmax_attention_limit(mu_u, Z_try, U_try, np.eye(2)), atol=1e-9), (
    "at χ = 0 the head is plain attention, whose limit is softmax_attention_limit: with "
    "unequal spreads its gates carry ½ν_k²‖Uz‖², which differs between the components")

# %%
# HIDDEN
# the two integrals of the definition by Gauss–Hermite quadrature of μ (no completed square),
# at 6 queries, two U and two χ; tolerance: the rule's error (10 × the change from 20 to 40 nodes
# per axis, plus round-off: at most ~1e-4, at χ = 0.6), above the 40-node rule's own error
# (~3e-11 against the closed form) and 400 times below the near miss (0.03 to 0.06 away)
from gmmlib.runtime import converged_quadrature
from gmmlib.quadrature import mixture_nodes  # noqa: F811 (the book-method control imports it too)

_Z = np.random.default_rng(1010).normal(scale=1.5, size=(6, 2))
for _U in (np.array([[0.8, 0.1], [-0.2, 0.6]]), 0.5 * np.eye(2)):
    for _chi in (0.25, 0.6):
        def _attention(n):
            _X, _w, _ = mixture_nodes(mu_u, n)
            _logit = _X @ _U @ _Z.T - _chi * np.sum(_X**2, 1)[:, None]
            _W = _w[:, None] * np.exp(_logit - _logit.max(0))
            return (_W.T @ _X) / _W.sum(0)[:, None]

        _ref = converged_quadrature(_attention, 20, dim=2)
        _gap = np.abs(key_bias_output(_Z, _U, _chi) - _ref.value)
        assert np.all(_gap <= _ref.error), f"off the quadrature by {_gap.max():.3g} at χ = {_chi}"

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q4
# manual: true
# points: 4

# %% [markdown]
# **Question 4** (free response; on Question 2, eq-10-finite and prop-10-heavy-tail). At every
# fixed query the error of attention on a prompt of $L$ tokens is finite and, for large $L$,
# about $C_\tau(z)/L$. In a few sentences: (a) why does the error averaged over queries
# $z\sim\mu_\tau$ nevertheless decay more slowly than $1/L$? (b) Which prompts carry that mean,
# and why does a typical prompt not show it?

# %% [raw]
# # BEGIN SOLUTION

# %% [markdown]
# **Reference answer.** (a) The constant grows like $C_\tau(z)\ge(d\,\xi^4/\nu^2)e^{\|z\|^2/\nu^2}$
# (by Jensen, $\Lambda(2a) - 2\Lambda(a)\ge\nu^2\|a\|^2$ with $a = z/\nu^2$, and the tilted law's
# covariance is at least $\nu^2I$), faster than the density of the queries,
# $\propto e^{-\|z - m_k\|^2/(2\nu^2)}$, decays: so $\mathbb E_zC_\tau(z) = \infty$. At each query
# $\liminf_L L\,\mathbb E\|\cdot\|^2\ge C_\tau(z)$ (convergence in distribution of the scaled
# error), and Fatou's lemma over $z$ gives $L\cdot$(query-averaged error)$\to\infty$: the law
# $C_\tau(z)/L$ holds query by query but not uniformly, since far queries need prompts well
# beyond $e^{3\kappa/2}$ ($\kappa = \|z\|^2/\nu^2$) before it sets in (its first correction is
# small only once $L\gg e^{2\kappa}$).
# (b) Rare prompts that hold a token far out along the query: its weight $e^{a^\top Z_j}$ then
# exceeds that of all the other tokens together, it takes the output over, and the error is
# large. A typical prompt holds no token beyond about $\sqrt{2\log L}$ (in units of the spread),
# so its error is much smaller: by the chapter's heuristic heur-10-rate (one-dimensional model,
# not a theorem; its rates at $c = 0$) the typical prompt's error averaged over queries decays
# like $L^{-2/3}$, while the mean over prompts, carried by the rare ones, decays like
# $L^{-(\sqrt5-1)/2 + o(1)}$.
#
# **Rubric** (4 points).
# - (a) 1 point: $C_\tau(z)$ grows like $e^{\|z\|^2/\nu^2}$ (or: the effective length
#   $Le^{2\Lambda(a)-\Lambda(2a)}$ collapses for far queries), faster than the query density decays.
# - (a) 1 point: hence $\mathbb E_zC_\tau = \infty$, and (Fatou) $L$ times the averaged error
#   cannot converge; the law is not uniform in $z$.
# - (b) 1 point: the mean is carried by rare prompts holding a far token along the query, which
#   takes the self-normalised average over.
# - (b) 1 point: a typical prompt lacks such a token (its largest token sits near
#   $\sqrt{2\log L}$), so the typical error (median) is smaller than the mean and decays faster.

# %% [raw]
# # END SOLUTION

# %% [raw]
# # END QUESTION
