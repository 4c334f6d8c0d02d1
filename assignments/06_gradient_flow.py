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
# name: 06_gradient_flow
# run_tests: false
# init_cell: true
# check_all_cell: true
# export_cell: false
# generate: true
# strip_solutions_from_all_cells: true

# %% [markdown]
# # Homework 6: gradient flow near the minimisers
#
# Questions from the exercises of Chapter 6 (*Gradient flow near the minimisers*). Fill in each
# `...`, run the cell, then the `grader.check` cell below it: it runs the public tests (shape,
# type, a sanity bound). The grade also counts hidden tests, which check the values. Use
# `gmmlib` wherever it helps; keep the names the questions ask for.

# %%
import numpy as np
from scipy.special import expit

from gmmlib.lda import LDAModel
from gmmlib.quadrature import gaussian_nodes

# %% [raw]
# # BEGIN QUESTION
# name: q1
# points: 2

# %% [markdown]
# **Question 1** (Exercise ex-06-valley, warm-up). Solve
# $\dot\varepsilon = -c\,\varepsilon^{2k-1}$ ($c > 0$, $k\ge2$,
# $\varepsilon(0) = \varepsilon_0 > 0$), the gradient flow of $\frac{c}{2k}\varepsilon^{2k}$:
# write `valley_eps(t, eps0, c, k)` (for an
# array of times `t`), and `excess_exponent(k)`, the exponent $p$ in
# $\frac{c}{2k}\varepsilon(t)^{2k}\sim t^{p}$ as $t\to\infty$ (a float).

# %%
def valley_eps(t, eps0, c, k):
    t = np.asarray(t, dtype=float)
    return (eps0 ** (-(2 * k - 2)) + (2 * k - 2) * c * t) ** (-1 / (2 * k - 2))  # SOLUTION


def excess_exponent(k):
    return -k / (k - 1)  # SOLUTION


# %% tags=["near-miss"]
# the factor 2k − 2 of the separated equation dropped, and the exponent of ε itself
def valley_eps(t, eps0, c, k):  # noqa: F811
    t = np.asarray(t, dtype=float)
    return (eps0 ** (-(2 * k - 2)) + c * t) ** (-1 / (2 * k - 2))


def excess_exponent(k):  # noqa: F811
    return -1 / (2 * k - 2)


# %% [raw]
# # BEGIN TESTS

# %%
assert np.shape(valley_eps(np.linspace(0, 1, 5), 1.0, 1.0, 2)) == (5,)
assert np.isclose(valley_eps(0.0, 0.7, 2.0, 3), 0.7)
assert excess_exponent(2) < 0

# %%
# HIDDEN
# the ODE integrated by scipy (DOP853) at rtol 1e-10 and 1e-12: tolerance 10 × the change
# between the two plus 1000 ulp; the exponents −2 (k = 2) and −3/2 (k = 3)
from scipy.integrate import solve_ivp

t_eval = np.array([0.0, 0.3, 1.0, 5.0, 40.0])
for eps0, c, k in ((1.0, 1.0, 2), (0.7, 2.0, 3), (1.5, 0.3, 2)):
    runs = [solve_ivp(lambda _t, e: -c * e ** (2 * k - 1), (0, 40), [eps0], method="DOP853",
                      t_eval=t_eval, rtol=r, atol=1e-14).y[0] for r in (1e-10, 1e-12)]
    tol = 10 * np.abs(runs[1] - runs[0]) + 1000 * np.finfo(float).eps * np.abs(runs[1])
    assert np.all(np.abs(valley_eps(t_eval, eps0, c, k) - runs[1]) <= tol)
assert abs(excess_exponent(2) + 2) < 1e-12 and abs(excess_exponent(3) + 1.5) < 1e-12

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q2
# points: 2

# %% [markdown]
# **Question 2** (Exercise ex-06-floor, warm-up). Write `sgd_floor(eta, B, lams)`, the noise
# floor $\mathbb E[R(\theta_k) - R^\star]$ of constant-step SGD (step $\eta$, batches of $B$) near a
# minimiser whose Hessian has the positive eigenvalues `lams` (eq-06-sgd-floor). Then, for
# $\eta\lambda_i\ll1$, give `floor_ratios`, the factors by which the floor changes when (i) the
# step is halved, (ii) the batch is doubled, (iii) the step is halved and the number of steps
# doubled (shape `(3,)`).

# %%
def sgd_floor(eta, B, lams):
    lams = np.asarray(lams, dtype=float)  # SOLUTION
    return float(eta / (4 * B) * np.sum(lams / (1 - eta * lams / 2)))  # SOLUTION


floor_ratios = np.array([0.5, 0.5, 0.5])  # SOLUTION


# %% tags=["near-miss"]
# tr(HP) for ½ tr(HP): a factor 2
def sgd_floor(eta, B, lams):  # noqa: F811
    lams = np.asarray(lams, dtype=float)
    return float(eta / (2 * B) * np.sum(lams / (1 - eta * lams / 2)))


# %% [raw]
# # BEGIN TESTS

# %%
assert isinstance(sgd_floor(0.01, 32, [1.0, 2.0]), float) and sgd_floor(0.01, 32, [1.0]) > 0
assert np.shape(floor_ratios) == (3,)

# %%
# HIDDEN
# the stationary covariance of the linearised SGD δ' = (I − ηH)δ − ηξ, Cov ξ = H/B, solved
# numerically (scipy's discrete Lyapunov solver) for a non-diagonal H, then ½ tr(HP);
# 10⁴ ulp for the solver; the three ratios from the floor at ηλ ≪ 1
from scipy.linalg import solve_discrete_lyapunov

rng = np.random.default_rng(606)
A = rng.normal(size=(4, 4))
H = A @ A.T + 0.1 * np.eye(4)
for eta, B in ((0.05, 16), (0.2, 4)):
    M = np.eye(4) - eta * H
    P = solve_discrete_lyapunov(M, eta**2 * H / B)
    ref = 0.5 * np.trace(H @ P)
    assert abs(sgd_floor(eta, B, np.linalg.eigvalsh(H)) - ref) <= 1e4 * np.finfo(float).eps * ref
assert np.allclose(floor_ratios, 0.5, rtol=0, atol=1e-12)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q3
# points: 2

# %% [markdown]
# **Question 3** (Exercise ex-06-kernel, derivation). In C1 take the point of $E_2$ with
# $(w, b, r, s) = (w^*, b^* - 2\sigma(s_0), 2, 0)$, and the effective Hessian
# $F = \mathbb E[\sigma'(f^*)\phi\phi^\top]$ with $\phi = \nabla_{(w,b,r,s)}f$. Give `kernel_dim`,
# the dimension of its kernel (an int), and `delta`, the kernel vector with $\delta_s = (1, 0)$
# and $\delta_r = 0$ (shape `(6,)`, in the order $(w, b, r, s)$).

# %%
C1 = LDAModel(0.6, [1.0, 0.0], [0.0, 1.0], np.eye(2))
w_star, b_star = C1.bayes_params()
sig = expit(C1.s0)
r = 2.0
kernel_dim = C1.dim + 1  # SOLUTION
delta_w = -r * sig * (1 - sig) * np.array([1.0, 0.0])  # SOLUTION
delta = np.concatenate([delta_w, [0.0, 0.0], [1.0, 0.0]])  # SOLUTION

# %% tags=["near-miss"]
# σ(s₀) for σ'(s₀) in δ_w, and δ_r forgotten in the count
kernel_dim = C1.dim
delta = np.concatenate([-r * sig * np.array([1.0, 0.0]), [0.0, 0.0], [1.0, 0.0]])

# %% [raw]
# # BEGIN TESTS

# %%
assert isinstance(kernel_dim, (int, np.integer))
assert np.shape(delta) == (6,) and np.allclose(delta[2:], [0, 0, 1, 0])

# %%
# HIDDEN
# F by Gauss–Hermite quadrature of the two classes (40 nodes per axis): the number of its
# eigenvalues below 1e-12 × the largest, and |Fδ| at 1000 ulp of ‖F‖
model = LDAModel(0.6, [1.0, 0.0], [0.0, 1.0], np.eye(2))
w_t, b_t = model.bayes_params()
g0 = expit(model.s0)
F = np.zeros((6, 6))
for p, m in ((0.6, [1.0, 0.0]), (0.4, [0.0, 1.0])):
    X, w = gaussian_nodes(np.array(m), np.eye(2), 40)
    f = X @ w_t + b_t
    phi = np.hstack([X, np.ones((len(X), 1)), np.full((len(X), 1), g0), 2.0 * g0 * (1 - g0) * X])
    F += p * (phi * (w * expit(f) * expit(-f))[:, None]).T @ phi
vals = np.linalg.eigvalsh(F)
assert kernel_dim == int(np.sum(vals < 1e-12 * vals.max()))
assert np.all(np.abs(F @ delta) <= 1000 * np.finfo(float).eps * vals.max())

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION
