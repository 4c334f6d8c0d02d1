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
# name: 03_gated_experts
# run_tests: false
# init_cell: true
# check_all_cell: true
# export_cell: false
# generate: true
# strip_solutions_from_all_cells: true

# %% [markdown]
# # Homework 3: softmax-gated affine experts
#
# Questions from the exercises of Chapter 3 (*Softmax-gated affine experts*). Fill in each
# `...`, run the cell, then the `grader.check` cell below it: it runs the public tests (shape,
# type, a sanity bound). The grade also counts hidden tests, which check the values. Use
# `gmmlib` wherever it helps; keep the names the questions ask for.

# %%
import numpy as np

from gmmlib import GaussianMixture, softmax_attention_limit
from gmmlib.limits import attention_gates, effective_sample_fraction

# %% [raw]
# # BEGIN QUESTION
# name: q1
# points: 2

# %% [markdown]
# **Question 1** (Exercise ex-03-warmup-gates, warm-up). Two components with the shared
# covariance $\Gamma = I$, $\pi_1 = \frac14$, $\pi_2 = \frac34$, means $m_1 = (1, 0)$ and
# $m_2 = (0, 0)$, $U = I$, and the query $z = (\log 3, 0.7)$, so that
# $(m_1 - m_2)^\top Uz = \log 3$. Compute the gates `alpha` $= (\alpha_1, \alpha_2)$ of softmax
# attention's limit at $z$, and the weights `alpha_lin` that linear attention puts on the two
# components at the same query (arrays of shape `(2,)`).

# %%
mix2 = GaussianMixture([0.25, 0.75], [[1.0, 0.0], [0.0, 0.0]], [np.eye(2), np.eye(2)])
z = np.array([np.log(3.0), 0.7])
alpha = attention_gates(mix2, z, np.eye(2))  # SOLUTION
alpha_lin = mix2.weights.copy()  # SOLUTION

# %% tags=["near-miss"]
# the gates from the scores alone, without the prior odds log(π₁/π₂)
scores = mix2.means @ z
alpha = np.exp(scores) / np.exp(scores).sum()

# %% [raw]
# # BEGIN TESTS

# %%
assert np.shape(alpha) == (2,) and np.isclose(np.sum(alpha), 1.0)
assert np.shape(alpha_lin) == (2,) and np.isclose(np.sum(alpha_lin), 1.0)

# %%
# HIDDEN
# α₁/α₂ = (π₁/π₂) e^{(m₁ − m₂)ᵀUz} = 1 (cor-03-shared); 64 ulp of round-off
ulp = 64 * np.finfo(float).eps
assert np.allclose(alpha, [0.5, 0.5], rtol=0, atol=ulp)
assert np.allclose(alpha_lin, [0.25, 0.75], rtol=0, atol=ulp)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q2
# points: 2

# %% [markdown]
# **Question 2** (Exercise ex-03-two-components, warm-up). Two components with a shared
# covariance $\Gamma$, $\pi_1 = \pi_2 = \frac12$, $m_1 = -m_2 = m$. Write
# `T_two(z, m, Gamma, U, V)`, the infinite-prompt limit $T_{U,V}[\mu](z)$ in closed form, for one
# query `z` of shape `(d,)` (it returns an array of shape `(p,)`). Do not call gmmlib's limits
# here: the point is the formula.

# %%
def T_two(z, m, Gamma, U, V):
    a = U @ z  # SOLUTION
    return V @ Gamma @ a + V @ m * np.tanh(m @ a)  # SOLUTION


# %% tags=["near-miss"]
# the gate's logit difference 2mᵀUz inside tanh instead of half of it
def T_two(z, m, Gamma, U, V):  # noqa: F811
    a = U @ z
    return V @ Gamma @ a + V @ m * np.tanh(2 * m @ a)


# %% [raw]
# # BEGIN TESTS

# %%
assert np.shape(T_two(np.ones(2), np.ones(2), np.eye(2), np.eye(2), np.eye(2))) == (2,)
assert np.allclose(T_two(np.zeros(2), np.ones(2), np.eye(2), np.eye(2), np.eye(2)), 0)

# %%
# HIDDEN
# gmmlib's softmax_attention_limit (the gates of the tilted mixture, for any covariances) at
# 20 queries; 1000 ulp of round-off on outputs of size ~5
rng = np.random.default_rng(303)
m_t = np.array([1.2, -0.4])
G_t = np.array([[0.7, 0.2], [0.2, 0.5]])
U_t = np.array([[0.8, 0.2], [-0.1, 0.6]])
V_t = np.array([[1.0, 0.0], [0.3, 1.0]])
mix_t = GaussianMixture([0.5, 0.5], [m_t, -m_t], [G_t, G_t])
Z_t = rng.normal(scale=1.5, size=(20, 2))
ref = softmax_attention_limit(mix_t, Z_t, U_t, V_t)
mine = np.array([T_two(q, m_t, G_t, U_t, V_t) for q in Z_t])
assert np.all(np.abs(mine - ref) <= 1000 * np.finfo(float).eps * np.maximum(np.abs(ref), 1))

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q3
# points: 2

# %% [markdown]
# **Question 3** (Exercise ex-03-kish, computation). For the chapter's running example (`mix`,
# `U` below) with $U$ replaced by $\omega U$, compute Kish's effective sample fraction
# `fractions` at the query $z = (1, 1)$ for $\omega\in\{0.5, 1, 2, 4\}$ (shape `(4,)`), and the
# prompt lengths `L_100` that hold about 100 effective tokens (shape `(4,)`).

# %%
mix = GaussianMixture(
    [0.3, 0.3, 0.4],
    [[-2.0, -1.0], [2.0, -1.0], [0.0, 2.0]],
    [[[1.0, 0.5], [0.5, 0.8]], [[0.5, -0.2], [-0.2, 1.0]], 0.3 * np.eye(2)],
)
U = np.array([[0.8, 0.2], [-0.1, 0.6]])
omegas = np.array([0.5, 1.0, 2.0, 4.0])
z = np.array([1.0, 1.0])
fractions = np.array([effective_sample_fraction(mix, z, w * U) for w in omegas])  # SOLUTION
L_100 = 100 / fractions  # SOLUTION

# %% tags=["near-miss"]
# the mixture treated as one Gaussian with its covariance: e^{-aᵀ Cov(μ) a}
fractions = np.array([np.exp(-(w * U @ z) @ mix.covariance() @ (w * U @ z)) for w in omegas])
L_100 = 100 / fractions

# %% [raw]
# # BEGIN TESTS

# %%
assert np.shape(fractions) == (4,) and np.all((0 < fractions) & (fractions <= 1))
assert np.shape(L_100) == (4,) and np.all(np.diff(L_100) > 0)

# %%
# HIDDEN
# (E w)²/E w² with w = e^{aᵀX} by Gauss–Hermite quadrature of the mixture, with the rule's
# error (10 × the change between 60 and 120 nodes per axis, plus round-off)
from gmmlib.evidence import converged_quadrature
from gmmlib.quadrature import mixture_nodes

A_t = np.array([w * U @ np.ones(2) for w in (0.5, 1.0, 2.0, 4.0)])


def _fraction(n):
    X, w, _ = mixture_nodes(mix, n)
    s = X @ A_t.T - (X @ A_t.T).max(0)
    return (w @ np.exp(s)) ** 2 / (w @ np.exp(2 * s))


_ref = converged_quadrature(_fraction, 60, dim=2)
assert np.all(np.abs(fractions - _ref.value) <= _ref.error)
assert np.allclose(L_100 * _ref.value, 100, rtol=1e-6)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION
