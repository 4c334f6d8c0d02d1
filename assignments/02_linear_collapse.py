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
# name: 02_linear_collapse
# run_tests: false
# init_cell: true
# check_all_cell: true
# export_cell: false
# generate: true
# strip_solutions_from_all_cells: true

# %% [markdown]
# # Homework 2: the linear collapse
#
# Questions from the exercises of Chapter 2 (*The linear collapse on Gaussian prompts*). Fill in
# each `...`, run the cell, then the `grader.check` cell below it: it runs the public tests
# (shape, type, a sanity bound). The grade also counts hidden tests, which check the values. Use
# `gmmlib` wherever it helps; keep the names the questions ask for.

# %%
import numpy as np
from scipy.optimize import minimize_scalar

from gmmlib import GaussianMixture, linear_attention_limit, softmax_attention_limit
from gmmlib.regression import optimal_finite_prompt_linear_risk, softmax_family_constant

# %% [raw]
# # BEGIN QUESTION
# name: q1
# points: 2

# %% [markdown]
# **Question 1** (Exercise ex-02-warmup-gap, warm-up). Let $\mu = \mathcal N(m, \Gamma)$ in the
# plane with $\Gamma = \operatorname{diag}(1, 4)$, $m = (1, 0)$, $U = V = I$ and the query
# $z = (2, 1)$. Compute the infinite-prompt limits of softmax attention, `T_soft`, and of linear
# attention, `T_lin` (arrays of shape `(2,)`).

# %%
Gamma = np.diag([1.0, 4.0])
m = np.array([1.0, 0.0])
z = np.array([2.0, 1.0])
mu = GaussianMixture.gaussian(m, Gamma)
T_soft = softmax_attention_limit(mu, z, np.eye(2), np.eye(2))  # SOLUTION
T_lin = linear_attention_limit(mu, z, np.eye(2), np.eye(2))  # SOLUTION

# %% tags=["near-miss"]
# linear attention with the covariance Γ for the second moment Γ + mmᵀ
T_lin = Gamma @ z

# %% [raw]
# # BEGIN TESTS

# %%
assert np.shape(T_soft) == (2,) and np.shape(T_lin) == (2,)

# %%
# HIDDEN
# m + Γz = (3, 4) and (Γ + mmᵀ)z = (4, 4); their gap is Vm(1 − mᵀUz) (eq-02-collapse);
# 64 ulp of round-off
ulp = 64 * np.finfo(float).eps
assert np.allclose(T_soft, [3.0, 4.0], rtol=ulp, atol=0)
assert np.allclose(T_lin, [4.0, 4.0], rtol=ulp, atol=0)
assert np.allclose(np.asarray(T_soft) - T_lin, np.array([1.0, 0.0]) * (1 - 2.0), rtol=ulp, atol=ulp)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q2
# points: 2

# %% [markdown]
# **Question 2** (Exercise ex-02-identity, warm-up). Take $\Sigma = I_d$. Write
# `risk_star(L, d)`, the smallest risk $\mathcal R^*_L$ of one linear-attention head on prompts
# of $L$ tokens, and `L_one_percent(d)`, the smallest prompt length (an int) at which
# $\mathcal R^*_L$ is at most 1 % of the risk $d$ of the zero predictor.

# %%
def risk_star(L, d):
    return d * (d + 1) / (L + d + 1)  # SOLUTION


def L_one_percent(d):
    return 99 * (d + 1)  # SOLUTION


# %% tags=["near-miss"]
# the optimum without the fourth-moment term: Γ*_L = (1 + d/L)⁻¹ instead of (1 + (d+1)/L)⁻¹
def risk_star(L, d):  # noqa: F811
    return d * d / (L + d)


def L_one_percent(d):  # noqa: F811
    return 99 * d


# %% [raw]
# # BEGIN TESTS

# %%
assert 0 < risk_star(10, 3) < 3
assert isinstance(L_one_percent(3), (int, np.integer))

# %%
# HIDDEN
# gmmlib's optimal finite-prompt risk (eq-02-finite-optimum, through the optimal linear map),
# 1000 ulp of round-off; L_one_percent by a scan of that risk
for d_t in (1, 2, 5):
    for L_t in (1, 10, 300):
        ref = optimal_finite_prompt_linear_risk(np.eye(d_t), L_t)
        assert abs(risk_star(L_t, d_t) - ref) <= 1000 * np.finfo(float).eps * max(ref, 1)
for d_t in (1, 3):
    ratio = [optimal_finite_prompt_linear_risk(np.eye(d_t), L_t) / d_t for L_t in range(1, 500)]
    assert L_one_percent(d_t) == 1 + int(np.argmax(np.array(ratio) <= 0.01 + 1e-12))

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q3
# points: 2

# %% [markdown]
# **Question 3** (Exercise ex-02-softmax-scale, computation). For $\Sigma = I_d$, minimise the
# family constant $\bar C(c) = d\,\frac{1-c^2}{c^2(1-2c^2)^{1+d/2}}$ (`softmax_family_constant`)
# over $c^2\in(0, \frac12)$ for $d = 1, \dots, 8$. Give the minimisers `c2_opt` to within
# $10^{-6}$ and the minima `C_min` (arrays of shape `(8,)`).

# %%
dims = np.arange(1, 9)
# BEGIN SOLUTION
c2_opt, C_min = [], []
for d in dims:
    res = minimize_scalar(lambda s: softmax_family_constant(np.eye(d), s), bounds=(1e-3, 0.499),
                          method="bounded", options={"xatol": 1e-10})
    c2_opt.append(res.x)
    C_min.append(res.fun)
# END SOLUTION
c2_opt = np.array(c2_opt)  # SOLUTION
C_min = np.array(C_min)  # SOLUTION

# %% tags=["near-miss"]
# the rule of thumb c² = 1/(d + 3) taken for the minimiser
c2_opt = 1 / (dims + 3.0)
C_min = np.array([softmax_family_constant(np.eye(d), s) for d, s in zip(dims, c2_opt)])

# %% [raw]
# # BEGIN TESTS

# %%
assert np.shape(c2_opt) == (8,) and np.shape(C_min) == (8,)
assert np.all((0 < c2_opt) & (c2_opt < 0.5))
assert np.all(C_min >= dims * (dims + 1))  # never below linear attention's d(d+1)

# %%
# HIDDEN
# d log C̄/ds = 0 is (d + 2)s² − (d + 4)s + 1 = 0: its root in (0, ½) to the 1e-6 asked;
# C̄ is flat there (error ≈ C̄''δ²/2), so the minima to 1e-9 relative
d_t = np.arange(1, 9)
s_star = ((d_t + 4) - np.sqrt(d_t**2 + 4 * d_t + 8)) / (2 * (d_t + 2))
assert np.all(np.abs(c2_opt - s_star) <= 1e-6)
C_star = d_t * (1 - s_star) / (s_star * (1 - 2 * s_star) ** (1 + d_t / 2))
assert np.allclose(C_min, C_star, rtol=1e-9, atol=0)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION
