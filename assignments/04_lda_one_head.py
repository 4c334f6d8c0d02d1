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
# name: 04_lda_one_head
# run_tests: false
# init_cell: true
# check_all_cell: true
# export_cell: false
# generate: true
# strip_solutions_from_all_cells: true

# %% [markdown]
# # Homework 4: linear discriminant analysis with one softmax head
#
# Questions from the exercises of Chapter 4 (*Linear discriminant analysis with one softmax
# head*). Fill in each `...`, run the cell, then the `grader.check` cell below it: it runs the
# public tests (shape, type, a sanity bound). The grade also counts hidden tests, which check
# the values. Use `gmmlib` wherever it helps; keep the names the questions ask for.

# %%
import numpy as np

from gmmlib import GaussianMixture
from gmmlib.lda import LDAModel, construction_r0, construction_s0
from gmmlib.limits import effective_sample_fraction, finite_prompt_mse

# %% [raw]
# # BEGIN QUESTION
# name: q1
# points: 2

# %% [markdown]
# **Question 1** (Exercise ex-04-warmup-prior, warm-up). In the setting of C1
# ($m_1 = (1, 0)$, $m_{-1} = (0, 1)$, $\Gamma = I$) take $\pi_+ = 0.75$. Compute the Bayes
# weights `w_star` (shape `(2,)`) and intercept `b_star` (a float) of
# $f^*(x) = w^{*\top}x + b^*$, and the point `x1_cross` where the Bayes boundary crosses the line
# $x_2 = 0$ (a float, its first coordinate).

# %%
model = LDAModel(0.75, [1.0, 0.0], [0.0, 1.0], np.eye(2))
w_star, b_star = model.bayes_params()  # SOLUTION
b_star = float(b_star)  # SOLUTION
x1_cross = -b_star / w_star[0]  # SOLUTION

# %% tags=["near-miss"]
# the log-prior log π₊ for the log-odds log(π₊/(1 − π₊))
b_star = float(np.log(0.75))
x1_cross = -b_star / w_star[0]

# %% [raw]
# # BEGIN TESTS

# %%
assert np.shape(w_star) == (2,) and isinstance(b_star, float)
assert isinstance(float(x1_cross), float)

# %%
# HIDDEN
# the posterior log-odds from the two Gaussian densities (GaussianMixture.posterior) at 0, e₁,
# e₂: b* is the value at 0, w* the increments; 1000 ulp of round-off
mix = GaussianMixture([0.75, 0.25], [[1.0, 0.0], [0.0, 1.0]], [np.eye(2), np.eye(2)])
post = mix.posterior(np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]))
odds = np.log(post[:, 0] / post[:, 1])
tol = 1000 * np.finfo(float).eps
assert abs(b_star - odds[0]) <= tol
assert np.allclose(w_star, odds[1:] - odds[0], rtol=0, atol=tol)
assert abs(x1_cross - (-np.log(3.0))) <= tol

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q2
# points: 2

# %% [markdown]
# **Question 2** (Exercise ex-04-warmup-origin, warm-up). In C1 ($\pi_+ = 0.6$, below), take the
# two exact heads of the chapter: construction 1 with $r = 0$ and
# $v_{21} = b^*(1, 1) + \sqrt{1 - b^{*2}}\,(1, -1)$ (so $\|v_{21}\|^2 = 2$), and construction 2
# ($s = 0$) with $v_{21} = w^*$. Compute their finite-prompt constants at the origin,
# `C0_A` and `C0_B` (floats), and the factor `ratio` $= C_B(0)/C_A(0)$.

# %%
C1 = LDAModel(0.6, [1.0, 0.0], [0.0, 1.0], np.eye(2))
w1, b1 = C1.bayes_params()
v_A = b1 * np.ones(2) + np.sqrt(1 - b1**2) * np.array([1.0, -1.0])
origin = np.zeros(3)  # the query (x, 0) with x = 0
# BEGIN SOLUTION
U_A, V_A = construction_r0(C1, v21=v_A).head()
U_B, V_B = construction_s0(C1).head()
# END SOLUTION
C0_A = float(finite_prompt_mse(C1.token_mixture(), origin, U_A, V_A[-1:]))  # SOLUTION
C0_B = float(finite_prompt_mse(C1.token_mixture(), origin, U_B, V_B[-1:]))  # SOLUTION
ratio = C0_B / C0_A  # SOLUTION

# %% tags=["near-miss"]
# eq-04-origin with r = s₀/(2π₊ − 1): the factor 2 of r = 2s₀/(2π₊ − 1) dropped
r_half = np.log(1.5) / 0.2
C0_B = 2 + 0.24 * r_half**2
ratio = C0_B / C0_A

# %% [raw]
# # BEGIN TESTS

# %%
assert isinstance(C0_A, float) and isinstance(C0_B, float)
assert C0_A > 0 and ratio > 0

# %%
# HIDDEN
# C(0) = v₂₁ᵀΓv₂₁ + r²π₊(1 − π₊) (eq-04-origin) with r = 0 and r = 2s₀/(2π₊ − 1) = 10 log 1.5;
# 1000 ulp of round-off
tol = 1000 * np.finfo(float).eps
assert abs(C0_A - 2.0) <= tol * 2
C_B = 2 + 0.24 * 100 * np.log(1.5) ** 2
assert abs(C0_B - C_B) <= tol * C_B
assert abs(ratio - C_B / 2) <= tol * C_B

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q3
# points: 2

# %% [markdown]
# **Question 3** (Exercise ex-04-noise, computation). In C1, the exact heads of construction 1
# are $v_{21} = b^*(1,1) + t(1,-1)$, $t\in\mathbb R$. Compute the finite-prompt constant $C(z)$
# at the queries $x = (0,0)$ and $x = (1.5,-1.5)$ for the 41 values `ts` below: `C_curve`, of
# shape `(41, 2)` (one column per query).

# %%
ts = np.linspace(-2, 2, 41)
Q_ex = np.array([[0.0, 0.0, 0.0], [1.5, -1.5, 0.0]])
# BEGIN SOLUTION
C_curve = []
for t in ts:
    U, V = construction_r0(C1, v21=b1 * np.ones(2) + t * np.array([1.0, -1.0])).head()
    C_curve.append(finite_prompt_mse(C1.token_mixture(), Q_ex, U, V[-1:]))
# END SOLUTION
C_curve = np.array(C_curve)  # SOLUTION

# %% tags=["near-miss"]
# Kish's factor e^{Λ(2a) − 2Λ(a)} forgotten: the spread under the doubly tilted law alone
fractions = []
for t in ts:
    U, V = construction_r0(C1, v21=b1 * np.ones(2) + t * np.array([1.0, -1.0])).head()
    fractions.append(effective_sample_fraction(C1.token_mixture(), Q_ex, U))
C_curve = C_curve * np.array(fractions)

# %% [raw]
# # BEGIN TESTS

# %%
assert np.shape(C_curve) == (41, 2) and np.all(C_curve > 0)

# %%
# HIDDEN
# at the origin C = 2b*² + 2t² (eq-04-origin, r = 0), 1000 ulp; at x = (1.5, −1.5) and
# t = ±1, ±2 the definition E[w²(vᵀX − T)²]/(E w)², w = e^{aᵀX}, by Gauss–Hermite quadrature
# of the token law with the rule's error (10 × the change from 20 to 40 nodes per axis)
from gmmlib.evidence import converged_quadrature
from gmmlib.quadrature import mixture_nodes

C1_t = LDAModel(0.6, [1.0, 0.0], [0.0, 1.0], np.eye(2))
b_t = C1_t.bayes_params()[1]
t_grid = np.linspace(-2, 2, 41)
origin_law = 2 * b_t**2 + 2 * t_grid**2
assert np.all(np.abs(C_curve[:, 0] - origin_law) <= 1000 * np.finfo(float).eps * origin_law)
tokens = C1_t.token_mixture()
for i in (0, 10, 30, 40):
    U, V = construction_r0(C1_t, v21=b_t * np.ones(2) + t_grid[i] * np.array([1.0, -1.0])).head()
    a, v = U @ np.array([1.5, -1.5, 0.0]), V[-1]

    def _C(n):
        X, w, _ = mixture_nodes(tokens, n)
        e = np.exp(X @ a - (X @ a).max())
        T = (w * e) @ (X @ v) / (w @ e)
        return (w @ (e**2 * (X @ v - T) ** 2)) / (w @ e) ** 2

    _ref = converged_quadrature(_C, 20, dim=3)
    assert abs(C_curve[i, 1] - _ref.value) <= _ref.error

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION
