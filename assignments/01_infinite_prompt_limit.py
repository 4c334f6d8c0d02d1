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
# name: 01_infinite_prompt_limit
# run_tests: false
# init_cell: true
# check_all_cell: true
# export_cell: false
# generate: true
# strip_solutions_from_all_cells: true

# %% [markdown]
# # Homework 1: the infinite-prompt limit
#
# Variants of the exercises of Chapter 1 (*The infinite-prompt limit*): the chapter's solutions
# teach the method, not these answers. Replace each `...` by your code, run the cell, then the
# `grader.check` cell below it: the public tests check properties every right answer has and say
# what is wrong; the grade also counts hidden tests, which check the values. Use numpy and the
# `gmmlib` names imported below for the pieces; keep the names the questions ask for. The last
# question is answered in words and graded by hand.

# %%
import numpy as np

from gmmlib import GaussianMixture

# %% [raw]
# # BEGIN QUESTION
# name: q1
# points: 3

# %% [markdown]
# **Question 1** (a variant of Exercise ex-01-linear: a prompt with a mean). For
# $\mu = \mathcal N(m, \Gamma)$ with $m\ne0$, linear attention's finite-prompt error is still
# an ordinary Monte Carlo error,
# $L\,\mathbb E\|T^{\mathrm{lin}}[\hat\mu_L](z)-T^{\mathrm{lin}}[\mu](z)\|^2 =
# \mathbb E\|(a^\top X)VX\|^2 - \|V\,\mathbb E[XX^\top]a\|^2$ with $a = Uz$. Compute this constant
# with Isserlis' theorem (write $X = m + Y$, $Y\sim\mathcal N(0, \Gamma)$) and write it as
# `linear_constant(m, Gamma, U, V, z)` (a float), for any mean `m`, covariance `Gamma`, matrices
# `U`, `V` and query `z`.

# %% [raw]
# # BEGIN SOLUTION

# %%
def linear_constant(m, Gamma, U, V, z):
    # BEGIN SOLUTION
    m, Gamma, V = np.asarray(m, float), np.asarray(Gamma, float), np.asarray(V, float)
    a = np.asarray(U) @ np.asarray(z)
    s, kappa = a @ m, a @ Gamma @ a                 # aᵀX = s + aᵀY, Var(aᵀY) = κ
    Vm, VGa = V @ m, V @ Gamma @ a
    # Cov[(aᵀX)X] = (s² + κ)Γ + s(Γamᵀ + maᵀΓ) + κmmᵀ + ΓaaᵀΓ; its trace after V
    return float((s**2 + kappa) * np.trace(V @ Gamma @ V.T) + 2 * s * (VGa @ Vm)
                 + kappa * (Vm @ Vm) + VGa @ VGa)
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% tags=["near-miss"]
# the centred formula κ tr(VΓVᵀ) + ‖VΓa‖² with the second moment Γ + mmᵀ in place of Γ
def linear_constant(m, Gamma, U, V, z):  # noqa: F811
    S = np.asarray(Gamma, float) + np.outer(m, m)
    a = np.asarray(U) @ np.asarray(z)
    return float((a @ S @ a) * np.trace(V @ S @ V.T) + np.sum((V @ S @ a) ** 2))


# %% tags=["book-method"]
# the exercise's route in matrix form: Isserlis' theorem for E[(aᵀX)² XXᵀ] with X = m + Y,
# minus the outer product of the mean E[XXᵀ]a, traced after V
def linear_constant(m, Gamma, U, V, z):  # noqa: F811
    m, G, V = np.asarray(m, float), np.asarray(Gamma, float), np.asarray(V, float)
    a = np.asarray(U) @ np.asarray(z)
    s, kappa, Ga = a @ m, a @ G @ a, G @ a
    mm = np.outer(m, m)
    fourth = ((s**2 + kappa) * (mm + G) + 2 * s * (np.outer(m, Ga) + np.outer(Ga, m))
              + 2 * np.outer(Ga, Ga))
    mean = (G + mm) @ a
    return float(np.trace(V @ (fourth - np.outer(mean, mean)) @ V.T))


# %% [raw]
# # BEGIN TESTS

# %%
_G, _U = np.array([[1.0, 0.4], [0.4, 0.6]]), np.array([[1.0, 0.0], [0.3, 1.0]])
_V, _z = np.array([[1.0, 0.0], [0.5, 1.0]]), np.array([1.0, 0.5])
_a = _U @ _z
_centred = (_a @ _G @ _a) * np.trace(_V @ _G @ _V.T) + np.sum((_V @ _G @ _a) ** 2)
assert isinstance(linear_constant(np.zeros(2), _G, _U, _V, _z), float), "return a float"
assert np.isclose(linear_constant(np.zeros(2), _G, _U, _V, _z), _centred), \
    "at m = 0 the constant must be the chapter's κ tr(VΓVᵀ) + ‖VΓa‖²"
assert abs(linear_constant(np.array([0.8, 0.3]), _G, _U, _V, np.zeros(2))) < 1e-12, \
    "at the query z = 0 every score aᵀz_j is 0: linear attention outputs 0 exactly, no error"

# %%
# HIDDEN
# E‖(aᵀX)VX − E[(aᵀX)VX]‖² by Gauss–Hermite quadrature under N(m, Γ), computed here: the
# integrand is a polynomial of degree 4, integrated exactly from 3 nodes per axis, so the error
# is round-off (converged_quadrature: 10 × the change from 10 to 20 nodes + 100 ulp, ~1e-13);
# the book's method (Isserlis, closed form) is exact too; the near miss (Γ + mmᵀ for Γ) is off
# by 7 % to 43 % of the value at these cases, 1e10 times the tolerance
from gmmlib.runtime import converged_quadrature
from gmmlib.quadrature import gaussian_nodes

_cases = [
    (np.array([0.8, 0.3]), np.array([[1.0, 0.4], [0.4, 0.6]]), np.array([[0.7, -0.2], [0.1, 0.9]]),
     np.array([[1.0, 0.0], [0.5, 1.0]]), np.array([-0.6, 1.1])),
    (np.array([-0.4, 1.0, 0.5]), np.array([[0.9, 0.2, 0.0], [0.2, 0.6, -0.1], [0.0, -0.1, 0.4]]),
     np.array([[0.6, 0.1, 0.0], [0.0, 0.8, 0.3], [-0.2, 0.0, 0.5]]),
     np.array([[1.0, 0.0, 0.4], [0.3, -0.6, 0.0]]), np.array([0.5, -0.9, 1.2])),
    (np.array([1.2, -0.7]), np.array([[0.5, -0.1], [-0.1, 0.8]]),
     np.array([[1.1, 0.3], [-0.4, 0.6]]), np.array([[0.8, 0.2], [0.0, 1.0]]), np.array([0.3, 0.9])),
]
for _m, _G, _U, _V, _z in _cases:
    def _by_quadrature(n):
        X, w = gaussian_nodes(_m, _G, n)
        f = (X @ (_U @ _z))[:, None] * (X @ _V.T)          # (aᵀx) V x at every node
        return w @ np.sum((f - w @ f) ** 2, axis=1)

    _ref = converged_quadrature(_by_quadrature, 10, dim=_m.size)
    _mine = linear_constant(_m, _G, _U, _V, _z)
    assert abs(_mine - _ref.value) <= _ref.error, \
        (f"linear_constant: {_mine:.6g} at m = {_m.tolist()}; the mean adds terms in s = aᵀm, "
         "and the covariance of (aᵀX)X is not the centred one with Γ + mmᵀ")

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q2
# points: 3

# %% [markdown]
# **Question 2** (a variant of Exercise ex-01-warmup-lognormal: a prompt that is not
# Gaussian). The tokens are uniform on the square $[-1, 1]^2$ (independent coordinates), and
# $V = I$. For a tilt vector $a = Uz\in\mathbb R^2$, write `uniform_limit(a)`, the limit
# $T[\mu](z)$ (the mean of the tilted law, shape `(2,)`), and `uniform_constant(a)`, the
# constant $C(z) = e^{\Lambda(2a) - 2\Lambda(a)}\,\mathbb E_{\mu^{(2a)}}\|X - T[\mu](z)\|^2$ of
# prop-01-clt (a float), with $\Lambda$ the log-moment generating function of $\mu$. Closed forms
# or a quadrature are both fine; valid for every $a$ with non-zero coordinates.

# %% [raw]
# # BEGIN SOLUTION

# %%
def uniform_limit(a):
    # BEGIN SOLUTION
    a = np.asarray(a, dtype=float)
    return 1 / np.tanh(a) - 1 / a              # per coordinate: the Langevin function
    # END SOLUTION


def uniform_constant(a):
    # BEGIN SOLUTION
    a = np.asarray(a, dtype=float)

    def log_mgf(b):                            # Λ of the uniform law on [−1, 1], per axis
        return np.log(np.sinh(b) / b)

    def tilted_var(b):                         # the variance of the tilt by b, per axis
        return 1 / b**2 - 1 / np.sinh(b) ** 2

    kish = np.exp(np.sum(log_mgf(2 * a) - 2 * log_mgf(a)))
    spread = np.sum(tilted_var(2 * a) + (uniform_limit(2 * a) - uniform_limit(a)) ** 2)
    return float(kish * spread)
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% tags=["near-miss"]
# the Gaussian answers with the uniform law's covariance Γ = I/3: T = Γa, C = e^κ(tr Γ + ‖Γa‖²)
def uniform_limit(a):  # noqa: F811
    return np.asarray(a, dtype=float) / 3


def uniform_constant(a):  # noqa: F811
    a = np.asarray(a, dtype=float)
    return float(np.exp(a @ a / 3) * (2 / 3 + np.sum((a / 3) ** 2)))


# %% tags=["book-method"]
# the chapter's evidence for prop-01-clt: the defining integrals by a tensor quadrature rule
# (Gauss–Legendre, the uniform law's rule, 20 nodes per axis)
def _tilted_moments(a, n=20):
    x, w = np.polynomial.legendre.leggauss(n)
    X = np.stack(np.meshgrid(x, x, indexing="ij"), -1).reshape(-1, 2)
    W = np.outer(w, w).ravel() / 4
    e = np.exp(X @ np.asarray(a, float))
    T = (W * e) @ X / (W @ e)
    return X, W, e / (W @ e), T


def uniform_limit(a):  # noqa: F811
    return _tilted_moments(a)[3]


def uniform_constant(a):  # noqa: F811
    X, W, wt, T = _tilted_moments(a)
    return float(W @ (wt**2 * np.sum((X - T) ** 2, axis=1)))


# %% [raw]
# # BEGIN TESTS

# %%
_T = np.asarray(uniform_limit(np.array([0.7, -1.3])))
assert np.shape(_T) == (2,), "uniform_limit returns an array of shape (2,)"
assert np.all(np.abs(_T) < 1) and _T[0] > 0 > _T[1], \
    "the tilted mean stays inside the square and moves towards the sign of a"
assert np.allclose(uniform_limit(np.array([1e-3, -1e-3])), [1e-3 / 3, -1e-3 / 3], rtol=1e-3), \
    "for a small tilt the tilted mean is Cov(μ) a = a/3"
assert np.isclose(uniform_constant(np.array([1e-3, 1e-3])), 2 / 3, rtol=1e-3), \
    "for a small tilt C is the variance tr Cov(μ) = 2/3 of a plain average"

# %%
# HIDDEN
# the defining integrals by a 2-D Gauss–Legendre rule, computed here: the integrands are
# entire, the rule converges geometrically (converged_quadrature: 10 × the change from 40 to
# 80 nodes per axis + round-off, ~1e-13); atol 1e-8 is above the error of a 10-node rule
# (≤ 4e-9 at these tilts) and the book's 20-node rule (~1e-15), and 1e6 times below the near
# miss (the Gaussian answers with Γ = I/3: T off by ≥ 0.06, C by ≥ 1.3 here)
from gmmlib.runtime import converged_quadrature


def _uniform_by_quadrature(a):
    def moments(n):
        x, w = np.polynomial.legendre.leggauss(n)
        X = np.stack(np.meshgrid(x, x, indexing="ij"), -1).reshape(-1, 2)
        W = np.outer(w, w).ravel() / 4
        e = np.exp(X @ a)
        T = (W * e) @ X / (W @ e)
        C = W @ ((e / (W @ e)) ** 2 * np.sum((X - T) ** 2, axis=1))
        return np.append(T, C)

    return converged_quadrature(moments, 40, dim=2, method="Gauss–Legendre quadrature")


for _a in (np.array([1.5, -0.5]), np.array([2.4, 0.7]), np.array([-0.3, 3.1])):
    _ref = _uniform_by_quadrature(_a)
    assert np.all(_ref.error < 1e-8)
    assert np.allclose(uniform_limit(_a), _ref.value[:2], rtol=0, atol=1e-8), \
        f"uniform_limit at a = {_a.tolist()}: the tilt of a uniform coordinate by b has mean " \
        "coth b − 1/b, not b/3"
    assert abs(uniform_constant(_a) - _ref.value[2]) <= 1e-8, \
        f"uniform_constant at a = {_a.tolist()}: use Λ of the uniform law, not the Gaussian κ"

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q3
# points: 2

# %% [markdown]
# **Question 3** (a variant of Exercise ex-01-length: another accuracy, and the other way
# round). Take the chapter's Gaussian prompt of fig-01-law (defined below) with $U = cU_0$
# scaled so that $\kappa = (Uz_0)^\top\Gamma\,Uz_0$ takes a given value. From the law
# $\mathbb E\|T[\hat\mu_L](z_0) - T[\mu](z_0)\|^2\approx C(z_0)/L$ of cor-01-gaussian, by hand:
#
# - write `C_of_kappa(kappa)`, the constant $C(z_0)$ at sharpness $\kappa$ (a float);
# - set `L_needed` (a float): the prompt length at which the root-mean-square error is $0.04$
#   at $\kappa = 2.5$;
# - set `kappa_max` (a float, to within $10^{-3}$): the largest $\kappa$ at which a prompt of
#   $L = 20{,}000$ tokens still has a root-mean-square error of at most $0.05$.

# %%
m_g = np.array([0.5, -0.5])
Gamma_g = np.array([[1.0, 0.4], [0.4, 0.6]])
z0 = np.array([1.0, 0.5])
U0 = np.array([[1.0, 0.0], [0.3, 1.0]])
V_g = np.array([[1.0, 0.0], [0.5, 1.0]])
a0 = U0 @ z0

# %% [raw]
# # BEGIN SOLUTION

# %%
def C_of_kappa(kappa):
    # BEGIN SOLUTION
    a = a0 * np.sqrt(kappa / (a0 @ Gamma_g @ a0))      # U = cU₀, so a = c a₀
    return float(np.exp(kappa) * (np.trace(V_g @ Gamma_g @ V_g.T)
                                  + np.sum((V_g @ Gamma_g @ a) ** 2)))
    # END SOLUTION


L_needed = C_of_kappa(2.5) / 0.04**2  # SOLUTION
# BEGIN SOLUTION
lo, hi = 0.0, 10.0                     # C grows with κ: bisect C(κ)/0.05² = 20,000
while hi - lo > 1e-9:
    mid = (lo + hi) / 2
    lo, hi = (mid, hi) if C_of_kappa(mid) / 0.05**2 <= 20_000 else (lo, mid)
# END SOLUTION
kappa_max = lo  # SOLUTION

# %% [raw]
# # END SOLUTION

# %% tags=["near-miss"]
# Kish's count alone: C = e^κ tr(VΓVᵀ), the term ‖VΓa‖² of the values' dependence dropped
def C_of_kappa(kappa):  # noqa: F811
    return float(np.exp(kappa) * np.trace(V_g @ Gamma_g @ V_g.T))


L_needed = C_of_kappa(2.5) / 0.04**2
kappa_max = float(np.log(20_000 * 0.05**2 / np.trace(V_g @ Gamma_g @ V_g.T)))

# %% tags=["book-method"]
# the chapter's closed form C = e^κ(t_V + q_V) with q_V = ‖VΓa‖² linear in κ, and κ_max read
# off a grid of step 10⁻³ (the last κ on the grid that meets the target)
t_V = np.trace(V_g @ Gamma_g @ V_g.T)
q_per_kappa = np.sum((V_g @ Gamma_g @ a0) ** 2) / (a0 @ Gamma_g @ a0)
L_needed = float(np.exp(2.5) * (t_V + 2.5 * q_per_kappa) / 0.04**2)
grid = np.arange(0, 10, 1e-3)
kappa_max = float(grid[np.exp(grid) * (t_V + grid * q_per_kappa) / 0.05**2 <= 20_000][-1])

# %% [raw]
# # BEGIN TESTS

# %%
assert np.isclose(C_of_kappa(0.0), np.trace(V_g @ Gamma_g @ V_g.T)), \
    "at κ = 0 attention is a plain average: C must be tr(VΓVᵀ)"
assert C_of_kappa(3.0) > C_of_kappa(2.0) > 0, "C must grow with the sharpness κ"
assert np.isclose(L_needed * 0.04**2, C_of_kappa(2.5)), "L_needed: the MSE C/L must equal 0.04²"
assert abs(C_of_kappa(kappa_max) / 0.05**2 - 20_000) < 20_000 * 0.01, \
    "kappa_max: at κ_max a prompt of 20,000 tokens should have an MSE of about 0.05²"

# %%
# HIDDEN
# the law's constant from gmmlib's finite_prompt_mse (cor-01-gaussian), computed here; κ_max
# by brentq on it. L_needed is a closed form (exact up to round-off): rtol 1e-9. κ_max is asked
# to 1e-3, the error of the book's grid; the tolerance 1.1e-3 is 950 times below the near miss
# (C without ‖VΓa‖²: κ_max off by 1.05, L_needed by a factor 3.3)
from scipy.optimize import brentq

from gmmlib.limits import finite_prompt_mse

_law = GaussianMixture.gaussian(m_g, Gamma_g)


def _C(kappa):
    return float(finite_prompt_mse(_law, z0, U0 * np.sqrt(kappa / (a0 @ Gamma_g @ a0)), V_g))


assert np.isclose(L_needed, _C(2.5) / 0.04**2, rtol=1e-9, atol=0), \
    "L_needed: C(z₀) = e^κ(tr VΓVᵀ + ‖VΓa‖²), the values' dependence on the score included"
_k = brentq(lambda k: _C(k) / 0.05**2 - 20_000, 0.0, 10.0, xtol=1e-12)
assert abs(kappa_max - _k) <= 1.1e-3, f"kappa_max: off by {kappa_max - _k:.3g}"

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
# **Question 4** (free response, about Question 2). Scale the tilt, $a = \omega a_0$ with
# $a_0 = (1.5, -0.5)$, and let $\omega\to\infty$: compute `uniform_constant(omega * a0)` for
# $\omega = 1, 10, 100$ (with a closed form, or with a quadrature whose convergence you check: at
# $\omega = 100$ the tilted law lives within about $1/100$ of a corner, and a 20-node rule is far
# off there). For a Gaussian prompt $C$ grows like $e^{\kappa}$, $\kappa\propto\omega^2$.
# What does $C$ do for the uniform prompt, and *why* does a bounded prompt escape the
# exponential price of sharp attention? Explain with the two factors of $C$: Kish's factor
# $e^{\Lambda(2a) - 2\Lambda(a)}$ and the spread of the tilted law.

# %% [raw]
# # BEGIN SOLUTION

# %% [markdown]
# **Reference answer.** $C$ does not blow up: it tends to the constant
# $\frac12\big(\frac{|a_{0,1}|}{|a_{0,2}|} + \frac{|a_{0,2}|}{|a_{0,1}|}\big) = \frac53$
# (0.81, 1.67, 1.67 at $\omega = 1, 10, 100$). Kish's factor is the exponential of a second
# difference of the log-MGF, $\Lambda(2a) - 2\Lambda(a)$. For a Gaussian $\Lambda$ is quadratic,
# so the second difference is $\kappa\propto\omega^2$ and the factor is $e^{\kappa}$. For a
# bounded law $\Lambda$ grows only linearly: per coordinate $\Lambda(b) = \log\frac{\sinh b}{b}
# = |b| - \log(2|b|) + o(1)$, the linear parts cancel in the second difference and the factor is
# $\prod_i b_i\coth b_i\approx\omega^2|a_{0,1}a_{0,2}|$, polynomial (the tilted law sits in a
# corner of side about $1/\omega$, a fraction $\omega^{-2}$ of the square's tokens). Meanwhile
# the tilted law concentrates: per coordinate its variance under the tilt by $2b$ and the squared
# shift $(T_{2b} - T_b)^2$ are each about $1/(4b^2)$, so the spread is
# $\sum_i 1/(2b_i^2)\propto\omega^{-2}$. The product is of order $\omega^{d-2}$, constant in
# $d = 2$. Sharp attention on bounded tokens selects the extreme corner, which a prompt of
# polynomial length already populates; a Gaussian's tilted law keeps moving out into a tail of
# exponentially small mass.
#
# **Rubric** (4 points).
# - 1 point: the numbers, and the statement that $C$ stays bounded (tends to $5/3$), unlike
#   $e^{\kappa}$.
# - 1 point: Kish's factor is $e^{\Lambda(2a)-2\Lambda(a)}$; quadratic $\Lambda$ (Gaussian) gives
#   $e^{\kappa}$, asymptotically linear $\Lambda$ (bounded law) gives a polynomial factor
#   $\prod_i b_i\coth b_i$.
# - 1 point: the spread of the tilted law shrinks like $\omega^{-2}$ (a corner of width
#   $1/\omega$).
# - 1 point: the conclusion, the product is $O(\omega^{d-2})$: the exponential price comes from
#   the tails of the token law, not from the softmax itself.

# %% [raw]
# # END SOLUTION

# %% [raw]
# # END QUESTION
