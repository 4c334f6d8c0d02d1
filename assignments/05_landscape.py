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
# name: 05_landscape
# run_tests: false
# init_cell: true
# check_all_cell: true
# export_cell: false
# generate: true
# strip_solutions_from_all_cells: true

# %% [markdown]
# # Homework 5: the optimisation landscape
#
# Questions from the exercises of Chapter 5 (*The optimisation landscape*). Fill in each `...`,
# run the cell, then the `grader.check` cell below it: it runs the public tests (shape, type, a
# sanity bound). The grade also counts hidden tests, which check the values. Use `gmmlib`
# wherever it helps; keep the names the questions ask for.

# %%
import numpy as np
from scipy.special import expit

from gmmlib.lda import (EffectiveParams, LDABlocks, LDAModel, attention_jacobian,
                        effective_params, population_risk)
from gmmlib.lda_landscape import zeta_sequence

C1 = LDAModel(0.6, [1.0, 0.0], [0.0, 1.0], np.eye(2))  # setting C1
w_star, b_star = C1.bayes_params()
sig = expit(C1.s0)  # σ(s₀) = π₊

# %% [raw]
# # BEGIN QUESTION
# name: q1
# points: 2

# %% [markdown]
# **Question 1** (Exercise ex-05-which, warm-up). In setting C1, take the effective heads
# $(w^*, b^*, 0, (3, -1))$, $(w^*, b^* - 2\sigma(s_0), 2, 0)$ and $(w^*, b^*, 1, 0)$ (in the order
# $(w, b, r, s)$, `heads` below). Compute their excess risks `excess` $= \tilde R - R^*$ with
# `population_risk` and `C1.bayes_risk` on 80-point rules (shape `(3,)`), and decide which are
# global minimisers: `is_minimiser`, a list of three booleans.

# %%
heads = [EffectiveParams(w_star, b_star, 0.0, np.array([3.0, -1.0])),
         EffectiveParams(w_star, b_star - 2 * sig, 2.0, np.zeros(2)),
         EffectiveParams(w_star, b_star, 1.0, np.zeros(2))]
excess = np.array([population_risk(C1, h, 80) - C1.bayes_risk(80) for h in heads])  # SOLUTION
is_minimiser = [True, True, False]  # SOLUTION

# %% tags=["near-miss"]
# a constant gate (s = 0) read as a minimiser whatever the intercept b + rσ(s₀)
is_minimiser = [True, True, True]

# %% [raw]
# # BEGIN TESTS

# %%
assert np.shape(excess) == (3,) and np.all(excess > -1e-9)
assert len(is_minimiser) == 3 and all(isinstance(x, (bool, np.bool_)) for x in is_minimiser)

# %%
# HIDDEN
# the third predictor is f* + σ(s₀): its excess logistic risk by Gauss–Hermite quadrature of
# each class, with the rule's error (10 × the change from 40 to 80 nodes); the other two are
# f* itself (excess at round-off: 1000 ulp)
from gmmlib.evidence import converged_quadrature
from gmmlib.quadrature import gaussian_nodes

model = LDAModel(0.6, [1.0, 0.0], [0.0, 1.0], np.eye(2))
w_t, b_t = model.bayes_params()


def _excess(n):
    total = 0.0
    for p, m, y in ((0.6, [1.0, 0.0], 1.0), (0.4, [0.0, 1.0], -1.0)):
        X, w = gaussian_nodes(np.array(m), np.eye(2), n)
        f = X @ w_t + b_t
        total += p * (w @ (np.logaddexp(0, -y * (f + 0.6)) - np.logaddexp(0, -y * f)))
    return total


_ref = converged_quadrature(_excess, 40, dim=2)
assert abs(excess[2] - _ref.value) <= _ref.error
assert np.all(np.abs(excess[:2]) <= 1000 * np.finfo(float).eps)
assert list(is_minimiser) == [True, True, False]

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q2
# points: 2

# %% [markdown]
# **Question 2** (Exercise ex-05-kernel-sym, warm-up). Take symmetric means $m_1 = -m_{-1}$
# (`sym` below, $d = 2$). Find the vector `g` $= (g_w, g_b, g_r, g_s)$ of length $2d + 2 = 6$
# (in the order of `EffectiveParams.vector`), with $g_r = 1$, such that $J^\top g = 0$ for the
# Jacobian $J$ of $\theta\mapsto(w, b, r, s)$ (`attention_jacobian`) at *every* head $\theta$.

# %%
sym = LDAModel(0.6, [1.0, 0.5], [-1.0, -0.5], np.eye(2))
g = np.array([0.0, 0.0, 2.0, 1.0, 0.0, 0.0])  # SOLUTION

# %% tags=["near-miss"]
# the weights of b and r swapped (b + 2r for r + 2b)
g = np.array([0.0, 0.0, 1.0, 2.0, 0.0, 0.0])
g = g / g[3]

# %% [raw]
# # BEGIN TESTS

# %%
assert np.shape(g) == (6,) and g[3] == 1

# %%
# HIDDEN
# Jᵀg at 20 random heads (gmmlib's attention_jacobian), 1000 ulp of round-off times the size
# of J's entries
rng = np.random.default_rng(505)
model = LDAModel(0.6, [1.0, 0.5], [-1.0, -0.5], np.eye(2))
for _ in range(20):
    theta = LDABlocks(rng.normal(size=(2, 2)), rng.normal(size=2), rng.normal(size=2), rng.normal())
    J = attention_jacobian(model, theta)
    assert np.all(np.abs(J.T @ g) <= 1000 * np.finfo(float).eps * np.abs(J).max() * np.abs(g).sum())

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q3
# points: 2

# %% [markdown]
# **Question 3** (Exercise ex-05-zeta-theta, computation). The minimising sequence
# $\zeta_\rho = (w^* - \sigma'(s_0)q,\ b^* - \sigma(s_0)\rho,\ \rho,\ q/\rho)$ of the chapter
# (`zeta_sequence(C1, q, rho)`) runs off to infinity. Write `theta_rho(rho)`, which returns
# attention parameters (an `LDABlocks(U11, u21, v21, v22)`) whose effective parameters are
# $\zeta_\rho$ in C1 with $q = (1, -0.5)$, for **every** $\rho > 0$.

# %%
q_dir = np.array([1.0, -0.5])
sig1 = sig * (1 - sig)  # σ'(s₀)


def theta_rho(rho):
    # BEGIN SOLUTION
    total = 2 * b_star - (2 * sig - 1) * rho  # p + q' fixes b = b* − σ(s₀)ρ
    v21 = np.array([total + 1.0, total - 1.0]) / 2  # v21·Δ = 1 keeps v21 ≠ 0
    w = w_star - sig1 * q_dir
    U11 = np.outer(v21, w) / (v21 @ C1.cov @ v21)
    u21 = (q_dir / rho - U11.T @ C1.delta) / 2
    return LDABlocks(U11, u21, v21, (rho - 1.0) / 2)
    # END SOLUTION


# %% tags=["near-miss"]
# v21 ∝ (1, 1): fine for most ρ, but v21 = 0 at ρ* = b*/(σ(s₀) − ½)
def theta_rho(rho):  # noqa: F811
    total = 2 * b_star - (2 * sig - 1) * rho
    v21 = np.array([total, total]) / 2
    w = w_star - sig1 * q_dir
    norm2 = v21 @ C1.cov @ v21
    U11 = np.outer(v21, w) / norm2 if norm2 > 1e-20 else np.zeros((2, 2))
    u21 = (q_dir / rho - U11.T @ C1.delta) / 2
    return LDABlocks(U11, u21, v21, rho / 2)


# %% [raw]
# # BEGIN TESTS

# %%
assert isinstance(theta_rho(1.0), LDABlocks)
assert np.shape(effective_params(C1, theta_rho(1.0)).vector()) == (6,)

# %%
# HIDDEN
# the image Φ(θ_ρ) (effective_params) against ζ_ρ (zeta_sequence) at 9 values of ρ from 0.5
# to 100 and at ρ* = b*/(σ(s₀) − ½); 1000 ulp of round-off on parameters up to ~100
rho_star = b_star / (sig - 0.5)
for r in np.append(np.geomspace(0.5, 100, 9), rho_star):
    image = effective_params(C1, theta_rho(r)).vector()
    target = zeta_sequence(C1, q_dir, r).vector()
    tol = 1000 * np.finfo(float).eps * np.maximum(np.abs(target), 1)
    assert np.all(np.abs(image - target) <= tol)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION
