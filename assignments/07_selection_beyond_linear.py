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
# Questions from the exercises of Chapter 7 (*Selection beyond linear rules*). Fill in each
# `...`, run the cell, then the `grader.check` cell below it: it runs the public tests (shape,
# type, a sanity bound). The grade also counts hidden tests, which check the values. Use
# `gmmlib` wherever it helps; keep the names the questions ask for.

# %%
import numpy as np

from gmmlib import linear_attention_limit, softmax_attention_limit
from gmmlib.classification import bayes_scores
from gmmlib.selection import (onehot_task, readout_construction, token_mixture, xor_bayes_accuracy,
                              xor_task)

# %% [raw]
# # BEGIN QUESTION
# name: q1
# points: 2

# %% [markdown]
# **Question 1** (Exercise ex-07-warmup-xor, warm-up). Evaluate the Bayes accuracy
# `acc_xor` (a float) of XOR (eq-07-xor-bayes) for $\nu = \gamma = 1$: four equally likely
# components $\mathcal N((\pm\nu, \pm\nu), \gamma^2 I)$ labelled by the sign of the product of
# their mean's coordinates.

# %%
acc_xor = xor_bayes_accuracy(offset=1.0, gamma=1.0)  # SOLUTION

# %% tags=["near-miss"]
# only the event "both coordinates on their mean's side": Φ(1)²
from scipy.stats import norm

acc_xor = float(norm.cdf(1.0) ** 2)

# %% [raw]
# # BEGIN TESTS

# %%
assert isinstance(acc_xor, float) and 0.5 < acc_xor < 1

# %%
# HIDDEN
# Monte Carlo with the generator fixed here: the rule sign(x₁x₂) on 400,000 draws of the task;
# tolerance the Gaussian quantile times the standard error (monte_carlo_mean, α = 1e-3)
from gmmlib.evidence import monte_carlo_mean

task, labels = xor_task(offset=1.0, gamma=1.0)
X, k = task.sample(400_000, np.random.default_rng(707))
right = (np.sign(X[:, 0] * X[:, 1]) == labels[k, 0]).astype(float)
est = monte_carlo_mean(right)
assert abs(acc_xor - est.value) <= est.error

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q2
# points: 2

# %% [markdown]
# **Question 2** (Exercise ex-07-scale, derivation). Take the chapter's XOR task ($\nu = 2$,
# $\gamma^2 = \frac12$) and the construction eq-07-construction with $U$ replaced by $\omega U$
# (`readout_construction(0.5 * np.eye(2), label_dim=1, omega=omega)`). Write
# `xor_readout(X, omega)`, the infinite-prompt readout at the queries $(x, 0)$ for the rows $x$
# of `X` (shape `(n, 2)`, returns shape `(n,)`) in closed form, without gmmlib's limits.

# %%
def xor_readout(X, omega):
    X = np.asarray(X, dtype=float)  # SOLUTION
    return np.tanh(4 * omega * X[:, 0]) * np.tanh(4 * omega * X[:, 1])  # SOLUTION


# %% tags=["near-miss"]
# the whole logit difference 8ωx_i inside tanh instead of half of it
def xor_readout(X, omega):  # noqa: F811
    X = np.asarray(X, dtype=float)
    return np.tanh(8 * omega * X[:, 0]) * np.tanh(8 * omega * X[:, 1])


# %% [raw]
# # BEGIN TESTS

# %%
X_try = np.array([[0.1, 0.2], [-0.3, 0.4], [1.0, -1.0]])
assert np.shape(xor_readout(X_try, 1.0)) == (3,)
assert np.all(np.abs(xor_readout(X_try, 1.0)) <= 1)
assert np.all(np.sign(xor_readout(X_try, 1.0)) == np.sign(X_try[:, 0] * X_try[:, 1]))

# %%
# HIDDEN
# gmmlib's softmax_attention_limit on the token law with the construction's head, 30 queries
# near the axes (where the gates switch), ω = 0.5, 1, 3; 100 ulp of round-off on values ≤ 1
xor_x, xor_labels = xor_task(offset=2.0, gamma=np.sqrt(0.5))
law = token_mixture(xor_x, xor_labels)
X_t = 0.3 * np.random.default_rng(717).normal(size=(30, 2))
for om in (0.5, 1.0, 3.0):
    head = readout_construction(0.5 * np.eye(2), label_dim=1, omega=om)
    ref = softmax_attention_limit(law, np.hstack([X_t, np.zeros((30, 1))]), *head)[:, 0]
    assert np.all(np.abs(xor_readout(X_t, om) - ref) <= 100 * np.finfo(float).eps)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q3
# points: 2

# %% [markdown]
# **Question 3** (Exercise ex-07-intercept, computation). Append a constant coordinate to every
# token and query of the multi-class task: tokens $(x, 1, y_k)$, queries $(x, 1, 0)$ (`augmented`
# below), and read the label block with `V_aug` $= [0\;|\;I_3]$. Find `U_aug` (shape `(6, 6)`)
# whose linear-attention limit readout is the Bayes scores $(w_k^\top x + b_k)_k$ of the task
# (`bayes_scores(mc_x)`) at every query.

# %%
angles = np.pi / 2 + 2 * np.pi * np.arange(3) / 3
mc_x, mc_labels = onehot_task([0.8, 0.1, 0.1], np.c_[np.cos(angles), np.sin(angles)], np.eye(2))
W_bayes, b_bayes = bayes_scores(mc_x)
augmented = token_mixture(mc_x, np.hstack([np.ones((3, 1)), mc_labels]))  # tokens (x, 1, e_k)
V_aug = np.hstack([np.zeros((3, 3)), np.eye(3)])
U_aug = np.zeros((6, 6))
B = V_aug @ augmented.second_moment()  # SOLUTION
U_aug[:, :3] = np.linalg.pinv(B) @ np.c_[W_bayes, b_bayes]  # SOLUTION

# %% tags=["near-miss"]
# the intercepts b_k dropped: the affine score without its constant column
U_aug = np.zeros((6, 6))
U_aug[:, :3] = np.linalg.pinv(V_aug @ augmented.second_moment()) @ np.c_[W_bayes, 0 * b_bayes]

# %% [raw]
# # BEGIN TESTS

# %%
assert np.shape(U_aug) == (6, 6)

# %%
# HIDDEN
# linear_attention_limit(augmented, (x, 1, 0), U_aug, V_aug) against the Bayes scores at 50
# queries; 10⁴ ulp of round-off (a pseudo-inverse of a 3 × 6 matrix of condition ≈ 10)
X_t = 2 * np.random.default_rng(727).normal(size=(50, 2))
Q_t = np.hstack([X_t, np.ones((50, 1)), np.zeros((50, 3))])
out = linear_attention_limit(augmented, Q_t, U_aug, V_aug)
ref = X_t @ W_bayes.T + b_bayes
assert np.all(np.abs(out - ref) <= 1e4 * np.finfo(float).eps * np.maximum(np.abs(ref), 1))

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION
