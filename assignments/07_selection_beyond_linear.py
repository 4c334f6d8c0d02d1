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
# name: 07_selection_beyond_linear
# run_tests: false
# init_cell: true
# check_all_cell: true
# export_cell: false
# generate: true
# strip_solutions_from_all_cells: true

# %% [markdown]
# # Homework 7: selection beyond linear rules
#
# Variants of the exercises of Chapter 7 (*Selection beyond linear rules*): the chapter's
# solutions teach the method, not these numbers. Fill in each `...`, run the cell, then the
# `grader.check` cell below it: its public tests check a property every right answer has and
# say what is wrong. The grade also counts hidden tests, which check the values (to about
# 1e-9). Work from the chapter's formulas with numpy and scipy; the grader compares you with
# gmmlib's general attention limits.
#
# This homework's task is a **rectangular XOR**: four equally likely components
# $\mathcal N((\pm\ell_1, \pm\ell_2), \gamma^2I)$ with $\ell_1 = 1$, $\ell_2 = 0.5$,
# $\gamma = 0.8$, each labelled by the sign of the product of its mean's coordinates (the
# chapter's XOR has $\ell_1 = \ell_2$).

# %%
import numpy as np
from scipy.stats import norm

l1, l2, gamma = 1.0, 0.5, 0.8
means = np.array([[1.0, 0.5], [1.0, -0.5], [-1.0, 0.5], [-1.0, -0.5]])  # (±ℓ₁, ±ℓ₂)
labels = np.sign(means[:, 0] * means[:, 1])  # y_k = sign(m_k1 m_k2)

# %% [raw]
# # BEGIN QUESTION
# name: q1
# points: 2

# %% [markdown]
# **Question 1** (a variant of Exercise ex-07-warmup-xor). Adapt the proof of
# prop-07-xor-bayes to the rectangular XOR: what is its Bayes rule, and what is its Bayes
# accuracy? Give `acc_rect` (a float, to 1e-9) in closed form with $\Phi$ (`norm.cdf`).

# %% [raw]
# # BEGIN SOLUTION

# %%
# BEGIN SOLUTION
# E[Y | x] = tanh(ℓ₁x₁/γ²) tanh(ℓ₂x₂/γ²): the Bayes rule is still sign(x₁x₂); it is right iff
# both coordinates fall on their mean's side, or both on the other side
p1, p2 = norm.cdf(l1 / gamma), norm.cdf(l2 / gamma)
# END SOLUTION
acc_rect = float(p1 * p2 + (1 - p1) * (1 - p2))  # SOLUTION

# %% [raw]
# # END SOLUTION

# %% tags=["near-miss"]
# only the event "both coordinates on their mean's side": the double flip, also right, forgotten
acc_rect = float(norm.cdf(l1 / gamma) * norm.cdf(l2 / gamma))

# %% tags=["book-method"]
# the chapter's closed form eq-07-xor-bayes, with each offset in its own factor
acc_rect = float(norm.cdf(l1 / gamma) * norm.cdf(l2 / gamma)
                 + norm.cdf(-l1 / gamma) * norm.cdf(-l2 / gamma))

# %% [raw]
# # BEGIN TESTS

# %%
assert isinstance(acc_rect, float), "acc_rect must be a float"
assert 0.5 < acc_rect < 1, "the Bayes rule beats a coin (½) and is not perfect (the blobs overlap)"
assert acc_rect <= norm.cdf(l1 / gamma), \
    "too high: even knowing ε₂ one would err when x₁ falls on the wrong side (Φ(ℓ₁/γ))"

# %%
# HIDDEN
# an independent identity: for a binary label the Bayes accuracy is E max(p, 1 − p) =
# ½ + ½E|E[Y|X]|, and E|tanh(ℓ₁X₁/γ²) tanh(ℓ₂X₂/γ²)| factorises (X₁, X₂ independent under
# the mixture), each factor a one-dimensional integral by scipy's quad (error < 1e-13).
# Tolerance 1e-9; the near miss (one event) is off by 0.028
from scipy.integrate import quad


def _e_abs(_l, _g=0.8):
    return quad(lambda x: abs(np.tanh(_l * x / _g**2)) * norm.pdf(x, _l, _g), -np.inf, np.inf,
                epsabs=1e-13, epsrel=1e-13)[0]


_acc = 0.5 + 0.5 * _e_abs(1.0) * _e_abs(0.5)
assert abs(acc_rect - _acc) <= 1e-9

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q2
# points: 2

# %% [markdown]
# **Question 2** (a variant of Exercise ex-07-scale). The four means of the rectangular XOR have
# equal norms and $\Gamma = \gamma^2I$, so thm-07-label-readout applies. Take its construction
# eq-07-construction with $U$ replaced by $\omega U$ ($\omega > 0$) and the scalar labels.
# Write `readout(X, omega)`: the infinite-prompt readout at the queries $(x, 0)$ for the rows
# $x$ of `X` (shape `(n, 2)`; returns shape `(n,)`), in closed form.

# %% [raw]
# # BEGIN SOLUTION

# %%
def readout(X, omega):
    # BEGIN SOLUTION
    X = np.asarray(X, dtype=float)
    # gate logits log ¼ + ω(ε₁ℓ₁x₁ + ε₂ℓ₂x₂)/γ²: the signs decouple, each gives a tanh
    t1 = np.tanh(omega * l1 * X[:, 0] / gamma**2)
    t2 = np.tanh(omega * l2 * X[:, 1] / gamma**2)
    return t1 * t2
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% tags=["near-miss"]
# the whole logit difference 2ωℓᵢxᵢ/γ² inside tanh instead of half of it
def readout(X, omega):  # noqa: F811
    X = np.asarray(X, dtype=float)
    return (np.tanh(2 * omega * l1 * X[:, 0] / gamma**2)
            * np.tanh(2 * omega * l2 * X[:, 1] / gamma**2))


# %% tags=["book-method"]
# eq-07-readout as the chapter writes it: a softmax over the four components of
# log πₖ + ω mₖᵀΓ⁻¹x, applied to the labels
def readout(X, omega):  # noqa: F811
    logits = np.log(0.25) + omega * np.asarray(X, dtype=float) @ means.T / gamma**2
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ labels


# %% [raw]
# # BEGIN TESTS

# %%
_X = np.array([[0.3, 0.2], [-0.4, 0.7], [1.0, -1.5], [0.0, 0.9], [-2.0, -0.1]])
assert np.shape(readout(_X, 1.0)) == (5,), "readout(X, omega) must return shape (n,)"
assert np.all(np.abs(readout(_X, 1.0)) <= 1), "a readout of labels ±1 is an average: |·| ≤ 1"
assert abs(readout(_X, 1.0)[3]) < 1e-12, \
    "on the axis x₁ = 0 the two signs of ε₁ are equally likely: the readout is 0"
assert np.all(np.sign(readout(_X, 2.0)) == np.sign(_X[:, 0] * _X[:, 1])), \
    "the sign of the readout must be that of x₁x₂ (ex-07-scale), for every ω > 0"

# %%
# HIDDEN
# gmmlib's softmax_attention_limit (the general gated-experts limit, prop-03) on the
# four-component token law with the head (ωdiag(Γ⁻¹, 0), (0, 0, 1)), at 40 queries and
# ω = 0.3, 1, 4; both exact up to round-off (~1e-16 on values ≤ 1): tolerance 1e-12; the near
# miss is off by up to 0.39
from gmmlib import GaussianMixture, softmax_attention_limit

_cov = np.zeros((3, 3))
_cov[:2, :2] = 0.64 * np.eye(2)
_law = GaussianMixture(np.full(4, 0.25), np.column_stack([means, labels]), np.stack([_cov] * 4))
_Xq = np.random.default_rng(717).normal(size=(40, 2))
for _om in (0.3, 1.0, 4.0):
    _U = np.zeros((3, 3))
    _U[:2, :2] = _om * np.eye(2) / 0.64
    _ref = softmax_attention_limit(_law, np.column_stack([_Xq, np.zeros(40)]), _U,
                                   np.array([[0.0, 0.0, 1.0]]))[:, 0]
    assert np.all(np.abs(np.asarray(readout(_Xq, _om)) - _ref) <= 1e-12)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q3
# points: 2

# %% [markdown]
# **Question 3** (Exercise ex-07-scale, one step further). Why does a large $\omega$ hurt on a
# finite prompt? Quantify it: write `kish(X, omega)`, Kish's factor
# $e^{\Lambda(2a) - 2\Lambda(a)}$ at the queries $(x, 0)$ (rows of `X`, shape `(n, 2)`; returns
# shape `(n,)`), where $a = \omega U(x, 0)$ is the query's tilt and $\Lambda$ the cumulant
# generating function of the token law of the rectangular XOR (the prompt length divided by
# this factor is the effective number of tokens, sec-00-snis). Use the moment generating
# function of each Gaussian component of eq-07-token-mixture.

# %% [raw]
# # BEGIN SOLUTION

# %%
def kish(X, omega):
    # BEGIN SOLUTION
    X = np.asarray(X, dtype=float)
    # a = (ωx/γ², 0); Λ(a) = ½aᵀdiag(Γ, 0)a + log E e^{aᵀ(m, y)} over the four means:
    # Λ(a) = ω²|x|²/(2γ²) + Σᵢ log cosh(ωℓᵢxᵢ/γ²)
    def cgf(scale):
        b = scale * omega * X / gamma**2
        lc = np.log(np.cosh(b * np.array([l1, l2])))
        return 0.5 * gamma**2 * np.sum(b**2, axis=1) + lc.sum(axis=1)
    return np.exp(cgf(2.0) - 2 * cgf(1.0))
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% tags=["near-miss"]
# the Gaussian part ½aᵀdiag(Γ, 0)a of each component's cumulant forgotten (the means only)
def kish(X, omega):  # noqa: F811
    X = np.asarray(X, dtype=float)

    def cgf(scale):
        b = scale * omega * X / gamma**2
        return np.log(np.cosh(b * np.array([l1, l2]))).sum(axis=1)
    return np.exp(cgf(2.0) - 2 * cgf(1.0))


# %% tags=["book-method"]
# the chapter's computation: log_mgf of the token mixture (gmmlib.GaussianMixture) at 2a and a
from gmmlib import GaussianMixture


def kish(X, omega):  # noqa: F811
    cov = np.zeros((3, 3))
    cov[:2, :2] = gamma**2 * np.eye(2)
    law = GaussianMixture(np.full(4, 0.25), np.column_stack([means, labels]),
                          np.stack([cov] * 4))
    A = np.column_stack([omega * np.asarray(X, dtype=float) / gamma**2, np.zeros(len(X))])
    return np.exp(law.log_mgf(2 * A) - 2 * law.log_mgf(A))


# %% [raw]
# # BEGIN TESTS

# %%
_X = np.array([[0.3, 0.2], [-0.4, 0.7], [1.0, -1.5], [0.0, 0.0]])
assert np.shape(kish(_X, 1.0)) == (4,), "kish(X, omega) must return shape (n,)"
assert np.all(kish(_X, 1.0) >= 1 - 1e-12), \
    "Kish's factor E[w²]/E[w]² is at least 1 (Cauchy–Schwarz)"
assert abs(kish(_X, 1.0)[3] - 1) < 1e-12, "at x = 0 the tilt is 0: uniform weights, factor 1"
assert kish(_X[:1], 3.0)[0] > kish(_X[:1], 1.0)[0], "a sharper head (larger ω) reads fewer tokens"

# %%
# HIDDEN
# gmmlib's GaussianMixture.log_mgf of the token law (its closed form, no XOR-specific
# factorisation) at 30 queries and ω = 0.5, 1, 3 (factors up to ~1e35 at ω = 3); independently,
# a Gauss–Hermite quadrature of E[w²]/E[w]² agrees at ω ≤ 1 (factors up to ~500; further out
# the tilt leaves the rule's reach). Both sides here are closed forms, exact to round-off
# (~1e-14 relative): tolerance 1e-9 relative; the near miss misses a factor e^{ω²|x|²/γ²}
from gmmlib import GaussianMixture  # noqa: F811

_cov = np.zeros((3, 3))
_cov[:2, :2] = 0.64 * np.eye(2)
_law = GaussianMixture(np.full(4, 0.25), np.column_stack([means, labels]), np.stack([_cov] * 4))
_Xq = 0.8 * np.random.default_rng(727).normal(size=(30, 2))
for _om in (0.5, 1.0, 3.0):
    _A = np.column_stack([_om * _Xq / 0.64, np.zeros(30)])
    _ref = np.exp(_law.log_mgf(2 * _A) - 2 * _law.log_mgf(_A))
    assert np.all(np.abs(np.asarray(kish(_Xq, _om)) / _ref - 1) <= 1e-9)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q4
# manual: true
# points: 3

# %% [markdown]
# **Question 4** (free response; cor-07-xor and Exercise ex-07-intercept). With a constant
# coordinate in the tokens, linear attention's readout on the rectangular XOR becomes an affine
# score $w^\top x + b$. (a) Explain why no rule $\operatorname{sign}(w^\top x + b)$ reaches the
# Bayes accuracy of Question 1 (hint: write the accuracy of a rule $h(x)\in\{-1, 1\}$ with
# $\mathbb E[Y\mid x]$). (b) What does one softmax head do, on the same prompts, that an
# affine score cannot? Four to six sentences.

# %% [raw]
# # BEGIN SOLUTION

# %% [markdown]
# **Reference answer.** (a) For a rule $h$ with values $\pm1$,
# $P(h(X) = Y) = \mathbb E\big[\tfrac12(1 + h(X)\,\mathbb E[Y\mid X])\big] \le
# \tfrac12 + \tfrac12\mathbb E|\mathbb E[Y\mid X]|$, with equality iff $h = \operatorname{sign}
# \mathbb E[Y\mid X]$ almost everywhere on $\{\mathbb E[Y\mid X]\neq0\}$. Here $\mathbb E[Y\mid x] =
# \tanh(\ell_1x_1/\gamma^2)\tanh(\ell_2x_2/\gamma^2)$ vanishes only on the axes (a null set), so
# a rule reaches the Bayes accuracy iff it equals $\operatorname{sign}(x_1x_2)$ almost
# everywhere. The set $\{x_1x_2 > 0\}$ (two opposite open quadrants) is not a half-plane up to a
# null set: a half-plane is convex, while the midpoint of $(2, 1)$ and $(-1, -2)$ is $(0.5,
# -0.5)$, where $x_1x_2 < 0$, and the same holds for small balls around these points; so every
# affine rule disagrees with the Bayes rule on a set of positive probability and is strictly
# worse. (b) Softmax attention selects: the weights $e^{z'^\top Uz}$ tilt the prompt towards the
# component whose mean is nearest the query (the gate grows like $e^{m_k^\top x/\gamma^2}$ and the
# means have equal norms), softly at $\omega = 1$, so the readout is a gated average of labels,
# $\tanh(\ell_1x_1/\gamma^2)\tanh(\ell_2x_2/\gamma^2)$ in the limit, a non-linear function of $x$
# whose sign is the Bayes rule; its normalisation makes the output query-dependent convex
# combinations of the components' labels (gated experts), which no fixed affine score can be.
#
# **Rubric** (3 points).
# - 1 point: the accuracy of a rule is $\frac12 + \frac12\mathbb E[h(X)\mathbb E[Y\mid X]]$, so
#   Bayes accuracy requires $h = \operatorname{sign}(x_1x_2)$ almost everywhere.
# - 1 point: a half-plane cannot equal two opposite quadrants up to a null set (convexity, or
#   any correct geometric argument); "XOR is not linearly separable" alone is half a point.
# - 1 point: softmax attention's query-dependent weights select the nearest component (gated
#   experts), giving the non-linear readout $\tanh\cdot\tanh$ whose sign is Bayes.

# %% [raw]
# # END SOLUTION

# %% [raw]
# # END QUESTION
