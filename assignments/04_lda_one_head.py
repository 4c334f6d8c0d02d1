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
# Variants of the exercises of Chapter 4 (*Linear discriminant analysis with one softmax head*):
# the chapter's solutions teach the method, not these numbers. Fill in each `...`, run the
# cell, then the `grader.check` cell below it: its public tests check a property every right
# answer has and say what is wrong. The grade also counts hidden tests, which check the values
# (to about 1e-8). Compute with numpy and scipy from the chapter's formulas: the point is to
# do by hand what gmmlib's LDA module does for you in the chapter.
#
# The model **M** of this homework has $d = 2$, a non-identity covariance and means of
# different Mahalanobis norms, so that neither $\Gamma^{-1}$ nor the quadratic term of the
# intercept can be skipped.

# %%
import numpy as np

G = np.array([[2.0, 0.6], [0.6, 1.0]])   # Γ
m_pos = np.array([1.2, 0.4])              # m₁
m_neg = np.array([-0.5, 1.2])             # m₋₁
delta = m_pos - m_neg                     # Δ

# %% [raw]
# # BEGIN QUESTION
# name: q1
# points: 2

# %% [markdown]
# **Question 1** (a variant of Exercise ex-04-warmup-prior). In the model M take
# $\pi_+ = 0.3$. Compute the Bayes weights `w_star` (shape `(2,)`) and intercept `b_star` (a
# float) of $f^*(x) = w^{*\top}x + b^*$ from eq-04-bayes-score, and `x1_cross` (a float), the
# first coordinate of the point where the Bayes boundary crosses the line $x_2 = 0$.

# %% [raw]
# # BEGIN SOLUTION

# %%
pi_pos = 0.3
s0 = np.log(pi_pos / (1 - pi_pos))  # SOLUTION
w_star = np.linalg.solve(G, delta)  # SOLUTION
quad = -0.5 * (m_pos @ np.linalg.solve(G, m_pos) - m_neg @ np.linalg.solve(G, m_neg))  # SOLUTION
b_star = float(quad + s0)  # SOLUTION
x1_cross = float(-b_star / w_star[0])  # SOLUTION

# %% [raw]
# # END SOLUTION

# %% tags=["near-miss"]
# the quadratic term −½(m₁ᵀΓ⁻¹m₁ − m₋₁ᵀΓ⁻¹m₋₁) dropped, as if the means had equal norms (C1)
b_star = float(np.log(0.3 / 0.7))
x1_cross = float(-b_star / w_star[0])

# %% tags=["book-method"]
# eq-04-bayes-score term by term, with the inverse of Γ
Gi = np.linalg.inv(G)
w_star = Gi @ (m_pos - m_neg)
b_star = float(-0.5 * (m_pos @ Gi @ m_pos - m_neg @ Gi @ m_neg) + np.log(0.3) - np.log(0.7))
x1_cross = float(-b_star / w_star[0])

# %% [raw]
# # BEGIN TESTS

# %%
assert np.shape(w_star) == (2,), "w_star must be a vector of shape (2,)"
assert np.allclose(G @ w_star, m_pos - m_neg, rtol=0, atol=1e-9), \
    "w* must solve Γw = m₁ − m₋₁ (eq-04-bayes-score): is it Γ⁻¹Δ, not Δ or ΓΔ?"
assert abs(w_star[0] * x1_cross + b_star) < 1e-9, \
    "x1_cross must lie on your boundary: w*ᵀ(x1_cross, 0) + b* = 0"

# %%
# HIDDEN
# the posterior log-odds from the two Gaussian densities (GaussianMixture.posterior) at 0, e₁,
# e₂: b* is the value at 0, w* the increments. Tolerance 1e-9: the round-off of a log-density
# ratio is ~1e-15, any exact method is within 1e-13; the near miss (no quadratic term) is off by
# 0.81 in b*, 8e8 tolerances away
from gmmlib import GaussianMixture

_mix = GaussianMixture([0.3, 0.7], np.stack([m_pos, m_neg]), np.stack([G, G]))
_post = _mix.posterior(np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]))
_odds = np.log(_post[:, 0] / _post[:, 1])
assert np.allclose(w_star, _odds[1:] - _odds[0], rtol=0, atol=1e-9)
assert abs(b_star - _odds[0]) <= 1e-9
assert abs(x1_cross + _odds[0] / (_odds[1] - _odds[0])) <= 1e-9

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q2
# points: 2

# %% [markdown]
# **Question 2** (a variant of Exercise ex-04-warmup-origin). In M with $\pi_+ = 0.45$, take
# construction 2 of prop-04-constructions (the constant gate, $s = 0$) with the readout
# $v_{21} = (1, -1)$ (not $w^*$). Compute its $v_{22}$ (`v22_B`, a float), its gate amplitude
# $r$ (`r_B`, a float, from eq-04-map) and its finite-prompt constant at the origin $C(0)$
# (`C0_B`, a float, from eq-04-origin).

# %% [raw]
# # BEGIN SOLUTION

# %%
pi_B = 0.45
v21_B = np.array([1.0, -1.0])
s0_B = np.log(pi_B / (1 - pi_B))  # SOLUTION
quad_B = -0.5 * (m_pos @ np.linalg.solve(G, m_pos) - m_neg @ np.linalg.solve(G, m_neg))  # SOLUTION
b_B = float(quad_B + s0_B)  # SOLUTION
m_bar = pi_B * m_pos + (1 - pi_B) * m_neg  # SOLUTION
v22_B = float((b_B - v21_B @ m_bar) / (2 * pi_B - 1))  # SOLUTION
r_B = float(v21_B @ delta + 2 * v22_B)  # SOLUTION
C0_B = float(v21_B @ G @ v21_B + r_B**2 * pi_B * (1 - pi_B))  # SOLUTION

# %% [raw]
# # END SOLUTION

# %% tags=["near-miss"]
# v₂₂ counted once in r (r = v₂₁ᵀΔ + v₂₂): the label ±1 read as 0/1
r_B = float(v21_B @ delta + v22_B)
C0_B = float(v21_B @ G @ v21_B + r_B**2 * pi_B * (1 - pi_B))

# %% tags=["book-method"]
# the chapter's route: b + rπ₊ = b* fixes v₂₂, eq-04-map gives r, eq-04-origin gives C(0)
Gi = np.linalg.inv(G)
b_book = -0.5 * (m_pos @ Gi @ m_pos - m_neg @ Gi @ m_neg) + np.log(0.45 / 0.55)
v22_B = float((b_book - v21_B @ (0.45 * m_pos + 0.55 * m_neg)) / (2 * 0.45 - 1))
r_B = float(v21_B @ delta + 2 * v22_B)
C0_B = float(v21_B @ G @ v21_B + 0.45 * 0.55 * r_B**2)

# %% [raw]
# # BEGIN TESTS

# %%
assert all(isinstance(x, float) for x in (v22_B, r_B, C0_B)), "v22_B, r_B, C0_B must be floats"
assert abs(r_B - (v21_B @ delta + 2 * v22_B)) < 1e-9, \
    "r must be v₂₁ᵀΔ + 2v₂₂ (eq-04-map): the label of a token is ±1"
assert C0_B >= v21_B @ G @ v21_B, \
    "C(0) is the within-class spread v₂₁ᵀΓv₂₁ plus a label-counting term, which is not negative"

# %%
# HIDDEN
# independent of eq-04-origin: at the origin attention is uniform, so C(0) is the variance of
# the value v₂₁ᵀx + v₂₂y under the token law (GaussianMixture moments); v₂₂ from b + rπ₊ = b*
# with b* the posterior log-odds at 0 (Bayes' formula). Tolerance 1e-8 × max(1, |value|): both
# are exact up to round-off (~1e-13 here); the near miss is off by 12 in r and 90 in C(0)
from gmmlib import GaussianMixture

_cov = np.zeros((3, 3))
_cov[:2, :2] = G
_tokens = GaussianMixture([0.45, 0.55], [np.append(m_pos, 1.0), np.append(m_neg, -1.0)],
                          [_cov, _cov])
_cls = GaussianMixture([0.45, 0.55], np.stack([m_pos, m_neg]), np.stack([G, G]))
_p0 = _cls.posterior(np.zeros((1, 2)))[0]
_b = np.log(_p0[0] / _p0[1])
_v22 = (_b - v21_B @ (0.45 * m_pos + 0.55 * m_neg)) / (2 * 0.45 - 1)
_r = v21_B @ delta + 2 * _v22
_value = np.append(v21_B, _v22)
_mean = _tokens.mean()
_C0 = _value @ (_tokens.second_moment() - np.outer(_mean, _mean)) @ _value
assert abs(v22_B - _v22) <= 1e-8 * max(1, abs(_v22))
assert abs(r_B - _r) <= 1e-8 * max(1, abs(_r))
assert abs(C0_B - _C0) <= 1e-8 * max(1, _C0)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q3
# points: 2

# %% [markdown]
# **Question 3** (a variant of Exercise ex-04-noise, one step further). In M with
# $\pi_+ = 0.45$, the exact heads of construction 1 ($r = 0$) are the $v_{21}\neq0$ with
# $v_{21}^\top(m_1 + m_{-1}) = 2b^*$. Among them, find the head whose finite-prompt constant at
# the origin, $C(0) = v_{21}^\top\Gamma v_{21}$ (eq-04-origin with $r = 0$), is smallest: give
# its readout `v21_best` (shape `(2,)`) and the minimum `C0_min` (a float). (In C1, where
# $\Gamma = I$, the chapter's solution finds it at $t = 0$; here $\Gamma\neq I$.)

# %% [raw]
# # BEGIN SOLUTION

# %%
m_sum = m_pos + m_neg
# BEGIN SOLUTION
# minimise vᵀΓv subject to vᵀm_sum = 2b*: Lagrange gives Γv ∝ m_sum
b_45 = -0.5 * (m_pos @ np.linalg.solve(G, m_pos) - m_neg @ np.linalg.solve(G, m_neg))
b_45 += np.log(0.45 / 0.55)
g = np.linalg.solve(G, m_sum)
v21_best = 2 * b_45 * g / (m_sum @ g)
# END SOLUTION
C0_min = float(v21_best @ G @ v21_best)  # SOLUTION

# %% [raw]
# # END SOLUTION

# %% tags=["near-miss"]
# the Euclidean projection of 0 on the constraint (gmmlib's default v₂₁), optimal only if Γ = I
v21_best = 2 * b_45 * m_sum / (m_sum @ m_sum)
C0_min = float(v21_best @ G @ v21_best)

# %% tags=["book-method"]
# the chapter's family v₂₁ = v_p + t n (n ⊥ m₁ + m₋₁) and a one-dimensional minimisation in t
# (Brent, scipy's default tolerance) of C(0) from eq-04-origin
from scipy.optimize import minimize_scalar

v_p = 2 * b_45 * m_sum / (m_sum @ m_sum)
n_perp = np.array([m_sum[1], -m_sum[0]]) / np.linalg.norm(m_sum)
t_best = minimize_scalar(lambda t: (v_p + t * n_perp) @ G @ (v_p + t * n_perp)).x
v21_best = v_p + t_best * n_perp
C0_min = float(v21_best @ G @ v21_best)

# %% [raw]
# # BEGIN TESTS

# %%
assert np.shape(v21_best) == (2,), "v21_best must be a vector of shape (2,)"
assert abs(C0_min - v21_best @ G @ v21_best) < 1e-9, \
    "with r = 0, C(0) is v₂₁ᵀΓv₂₁ at your v21_best (eq-04-origin)"
n_test = np.array([m_sum[1], -m_sum[0]])  # moving along the constraint: v₂₁ + εn is still exact
assert abs(n_test @ G @ v21_best) < 1e-6, \
    "not a minimum: moving v₂₁ along the constraint (v₂₁ + εn, nᵀ(m₁ + m₋₁) = 0) lowers vᵀΓv"

# %%
# HIDDEN
# independent evidence: C(0) of the head itself by gmmlib's general finite-prompt law
# (finite_prompt_mse: Kish's factor times the tilted spread, with no r = 0 shortcut), and the
# minimiser from b* read off Bayes' formula. Tolerances: 1e-6 on v₂₁ (scipy's Brent stops at a
# relative 1.5e-8 in t, the book-method's ~1e-8 error), 1e-9 on C(0) (quadratic at the minimum:
# ~1e-16); the near miss is 0.39 away in v₂₁ and 0.21 in C(0)
from gmmlib import GaussianMixture
from gmmlib.limits import finite_prompt_mse

_cls = GaussianMixture([0.45, 0.55], np.stack([m_pos, m_neg]), np.stack([G, G]))
_p0 = _cls.posterior(np.zeros((1, 2)))[0]
_b = np.log(_p0[0] / _p0[1])
_g = np.linalg.solve(G, m_pos + m_neg)
_v = 2 * _b * _g / ((m_pos + m_neg) @ _g)
_w = np.linalg.solve(G, delta)
_U = np.zeros((3, 3))
_U[:2, :2] = np.outer(_v, _w) / (_v @ G @ _v)
_U[2, :2] = -(_U[:2, :2].T @ delta) / 2
_cov = np.zeros((3, 3))
_cov[:2, :2] = G
_tokens = GaussianMixture([0.45, 0.55], [np.append(m_pos, 1.0), np.append(m_neg, -1.0)],
                          [_cov, _cov])
_C0 = float(finite_prompt_mse(_tokens, np.zeros(3), _U, np.append(_v, -(_v @ delta) / 2)[None]))
assert np.allclose(v21_best, _v, rtol=0, atol=1e-6)
assert abs(C0_min - _C0) <= 1e-9

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q4
# manual: true
# points: 2

# %% [markdown]
# **Question 4** (free response; prop-04-linear and Exercise ex-04-symmetric). In M with
# $\pi_+ = 0.3$ (Question 1), linear attention cannot compute the Bayes score. (a) Keeping the
# means and $\Gamma$, for which prior $\pi_+$ would the best linear attention be Bayes-optimal?
# Give the value. (b) Explain why one softmax head needs no such condition: where does its
# intercept come from, and why can linear attention not produce one on the queries $(x, 0)$?
# Three to five sentences.

# %% [raw]
# # BEGIN SOLUTION

# %% [markdown]
# **Reference answer.** (a) Linear attention is Bayes-optimal iff $b^* = 0$
# (prop-04-linear). Here
# $-\tfrac12(m_1^\top\Gamma^{-1}m_1 - m_{-1}^\top\Gamma^{-1}m_{-1}) \approx 0.8128$, so
# $b^* = 0.8128 + s_0 = 0$ iff $s_0 = -0.8128$, that is
# $\pi_+ = \sigma(-0.8128) = 1/(1 + e^{0.8128}) \approx 0.307$. (b) On the query $(x, 0)$
# linear attention outputs $e_{d+1}^\top VM\tilde Ux$, linear in $x$: it is $0$ at $x = 0$,
# where the Bayes score is $b^*$. Softmax attention divides by the total weight, so its output
# is a weighted *average* of the values, whose mean is not zero: at $x = 0$ (uniform
# attention) it is the mean value $v_{21}^\top\bar m + (2\pi_+ - 1)v_{22}$; in eq-04-effective
# the intercept is $b + r\sigma(s_0)$, with $s_0$, the prior log-odds, read from the class
# frequencies of the prompt. So the head can set its intercept to $b^*$ for any prior.
#
# **Rubric** (2 points).
# - 1 point: the condition $b^* = 0$ and the value $\pi_+ = \sigma(-0.8128)\approx 0.307$ (half a
#   point for the condition with a wrong value).
# - 1 point: linear attention's output is linear in $x$ with no constant (it vanishes at
#   $x = 0$), while softmax attention averages the values (normalised weights), which carries a
#   constant: the prior log-odds $s_0$ in the gate and $b + r\sigma(s_0)$ in the readout (half a
#   point for only one of the two halves).

# %% [raw]
# # END SOLUTION

# %% [raw]
# # END QUESTION
