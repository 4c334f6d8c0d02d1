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
# Variants of the exercises of Chapter 6 (*Gradient flow near the minimisers*): the chapter's
# solutions teach the method, not these numbers. Fill in each `...`, run the cell, then the
# `grader.check` cell below it: its public tests check a property every right answer has and
# say what is wrong. The grade also counts hidden tests, which check the values (to a relative
# 1e-5 at most). Nothing here trains: the answers are closed forms and one quadrature.

# %%
import numpy as np
from scipy.special import expit

from gmmlib.quadrature import gaussian_nodes

# %% [raw]
# # BEGIN QUESTION
# name: q1
# points: 2

# %% [markdown]
# **Question 1** (a variant of Exercise ex-06-valley). For the one-dimensional valley
# $\dot\varepsilon = -c\,\varepsilon^{2k-1}$ ($c > 0$, $k\ge2$,
# $\varepsilon(0) = \varepsilon_0 > 0$), write `t_half(c, k, eps0)`, the time at which
# $\varepsilon$ has fallen to $\varepsilon_0/2$
# (a float), and give `p4`, the exponent $p$ of the decay $\frac{c}{2k}\varepsilon(t)^{2k}\sim
# t^{p}$ for $k = 4$ (a float).

# %% [raw]
# # BEGIN SOLUTION

# %%
def t_half(c, k, eps0):
    # BEGIN SOLUTION
    # ε^{−(2k−2)} = ε₀^{−(2k−2)} + (2k − 2)ct; set ε = ε₀/2
    return float((2.0 ** (2 * k - 2) - 1) / ((2 * k - 2) * c * eps0 ** (2 * k - 2)))
    # END SOLUTION


p4 = -4 / 3  # SOLUTION

# %% [raw]
# # END SOLUTION

# %% tags=["near-miss"]
# the factor 2k − 2 of the separated equation dropped, and the exponent of ε itself
def t_half(c, k, eps0):  # noqa: F811
    return float((2.0 ** (2 * k - 2) - 1) / (c * eps0 ** (2 * k - 2)))


p4 = -1 / 6

# %% tags=["book-method"]
# the chapter's solution: separate the variables, ε(t) = (ε₀^{−(2k−2)} + (2k−2)ct)^{−1/(2k−2)},
# and invert at ε₀/2; the excess ∝ ε^{2k} ∝ t^{−2k/(2k−2)}
def t_half(c, k, eps0):  # noqa: F811
    j = 2 * k - 2
    return float(((eps0 / 2) ** (-j) - eps0 ** (-j)) / (j * c))


p4 = -2 * 4 / (2 * 4 - 2)

# %% [raw]
# # BEGIN TESTS

# %%
assert isinstance(t_half(1.0, 2, 1.0), float) and t_half(1.0, 2, 1.0) > 0, \
    "t_half must return a positive float"
assert abs(t_half(2.0, 3, 0.5) - t_half(1.0, 3, 0.5) / 2) < 1e-12 * t_half(1.0, 3, 0.5), \
    "doubling c doubles the speed of the flow: t_half must scale like 1/c"
assert isinstance(p4, float) and p4 < 0, "p4 must be a negative float: the excess decays"

# %%
# HIDDEN
# the ODE integrated by scipy (DOP853, rtol 1e-12, atol 1e-15) with an event at ε = ε₀/2, at six
# (c, k, ε₀); its error is ~1e-11 relative, the tolerance 1e-7 relative; the near miss (factor
# 2k − 2 dropped) is off by a factor 2 to 8. The exponent −k/(k − 1) at k = 4 to 1e-12
from scipy.integrate import solve_ivp

for _c, _k, _e0 in ((1.0, 2, 1.0), (0.3, 3, 0.4), (2.0, 4, 0.9), (0.7, 2, 0.2), (1.3, 5, 1.1),
                    (0.05, 3, 2.0)):
    def _half(_t, e, _e0=_e0):
        return e[0] - _e0 / 2
    _half.terminal = True
    _T = 1e3 * (2.0 ** (2 * _k - 2)) / ((2 * _k - 2) * _c * _e0 ** (2 * _k - 2))
    _sol = solve_ivp(lambda _t, e, _c=_c, _k=_k: -_c * e ** (2 * _k - 1), (0, _T), [_e0],
                     method="DOP853", rtol=1e-12, atol=1e-15, events=_half)
    _ref = _sol.t_events[0][0]
    assert abs(t_half(_c, _k, _e0) - _ref) <= 1e-7 * _ref
assert abs(p4 + 4 / 3) < 1e-12

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q2
# points: 2

# %% [markdown]
# **Question 2** (a variant of Exercise ex-06-floor). Write `sgd_floor(eta, B, H)`, the noise
# floor $\mathbb E[R(\theta_k) - R^\star]$ of eq-06-sgd-floor for a Hessian `H` given as a
# symmetric positive semi-definite matrix (not its eigenvalues), step `eta` and batch `B`,
# *without* assuming $\eta\lambda_i\ll1$. Then give `eta_max`, the supremum of the steps for
# which the linearised SGD of rem-06-sgd-floor has a stationary covariance, for `H_ex` below.

# %% [raw]
# # BEGIN SOLUTION

# %%
H_ex = np.array([[3.0, 1.0, 0.5], [1.0, 2.0, 0.3], [0.5, 0.3, 0.8]])


def sgd_floor(eta, B, H):
    # BEGIN SOLUTION
    lam = np.linalg.eigvalsh(H)
    return float(eta / (4 * B) * np.sum(lam / (1 - eta * lam / 2)))
    # END SOLUTION


eta_max = float(2 / np.linalg.eigvalsh(H_ex).max())  # SOLUTION

# %% [raw]
# # END SOLUTION

# %% tags=["near-miss"]
# the small-step floor η tr H/(4B) used beyond its range (the factor 1/(1 − ηλ/2) dropped)
def sgd_floor(eta, B, H):  # noqa: F811
    return float(eta / (4 * B) * np.trace(H))


# %% tags=["book-method"]
# as the chapter's noise_floor: the eigenvalues of H from a factor (H = LLᵀ, those of LᵀL,
# like F^{1/2}JJᵀF^{1/2}), then the sum of eq-06-sgd-floor
def sgd_floor(eta, B, H):  # noqa: F811
    Lh = np.linalg.cholesky(H)
    lam = np.linalg.eigvalsh(Lh.T @ Lh)
    return float(eta / (4 * B) * np.sum(lam / (1 - eta * lam / 2)))


# %% [raw]
# # BEGIN TESTS

# %%
assert isinstance(sgd_floor(0.01, 32, H_ex), float), "sgd_floor must return a float"
assert abs(sgd_floor(1e-7, 16, H_ex) / (1e-7 * np.trace(H_ex) / 64) - 1) < 1e-5, \
    "for ηλ ≪ 1 the floor must tend to η tr H/(4B) (eq-06-sgd-floor)"
assert abs(sgd_floor(0.1, 8, H_ex) - 2 * sgd_floor(0.1, 16, H_ex)) < 1e-12, \
    "the floor must be proportional to 1/B: each batch averages B independent gradients"
assert 0 < eta_max < 10, "eta_max must be a positive step"

# %%
# HIDDEN
# the stationary covariance of the linearised SGD q' = (I − ηH)q − ηn, Cov n = H/B, solved
# numerically (scipy's discrete Lyapunov solver, no eigen-decomposition), then ½ tr(HP), for
# H_ex and a random H at three steps (ηλ_max up to 1.87); solver round-off ~1e-14, tolerance
# 1e-9 relative; the near miss is off by a factor 3 at η = 0.4. η_max: the Lyapunov equation
# has a positive definite solution iff the spectral radius of I − ηH is below 1
from scipy.linalg import solve_discrete_lyapunov

_rng = np.random.default_rng(606)
_A = _rng.normal(size=(4, 4))
for _H, _etas in ((H_ex, (0.05, 0.4, 0.5)), (_A @ _A.T / 4 + 0.1 * np.eye(4), (0.01, 0.2, 0.3))):
    for _eta in _etas:
        for _B in (4, 16):
            _M = np.eye(len(_H)) - _eta * _H
            assert np.max(np.abs(np.linalg.eigvals(_M))) < 1
            _P = solve_discrete_lyapunov(_M, _eta**2 * _H / _B)
            _ref = 0.5 * np.trace(_H @ _P)
            assert abs(sgd_floor(_eta, _B, _H) - _ref) <= 1e-9 * _ref
_rho = lambda eta: np.max(np.abs(np.linalg.eigvals(np.eye(3) - eta * H_ex)))
assert _rho(eta_max * (1 - 1e-9)) < 1 < _rho(eta_max * (1 + 1e-9))

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q3
# points: 2

# %% [markdown]
# **Question 3** (a variant of Exercise ex-06-kernel, one step further). In C1 with the prior
# $\pi_+ = 0.7$ ($m_1 = (1, 0)$, $m_{-1} = (0, 1)$, $\Gamma = I$, so $w^* = (1, -1)$,
# $b^* = s_0$), take the point of $E_2$ with $r = 3$ and move by $\varepsilon$ along the flat
# direction $q_s = u = (0.6, 0.8)$, $q_w = -r\sigma'(s_0)u$. The valley floor is then
# $\mathcal F(r, \varepsilon u) = c_4\varepsilon^4 + O(\varepsilon^5)$ (prop-06-local, item 2).
# Using the expansion in its proof ($f - f^* = \frac12r\sigma''(s_0)\varepsilon^2(u^\top x)^2 +
# O(\varepsilon^3)$, and the floor minimises $\frac12\mathbb E[\sigma'(f^*)(f - f^* - a^\top X -
# c)^2]$ over the affine part), compute `c4` (a float) by Gauss–Hermite quadrature and a
# weighted least-squares fit.

# %% [raw]
# # BEGIN SOLUTION

# %%
pi_pos, r, u = 0.7, 3.0, np.array([0.6, 0.8])
s0 = np.log(pi_pos / (1 - pi_pos))
w_star, b_star = np.array([1.0, -1.0]), s0
# BEGIN SOLUTION
sig = expit(s0)
sig2 = sig * (1 - sig) * (1 - 2 * sig)  # σ''(s₀)


def weighted_fit(refit=True, n=60):
    """min over (a, c) of E[σ'(f*)((uᵀX)² − aᵀX − c)²], by an n² Gauss–Hermite rule per class"""
    Xs, Ws = [], []
    for m, p in (([1.0, 0.0], pi_pos), ([0.0, 1.0], 1 - pi_pos)):
        X, wts = gaussian_nodes(np.array(m), np.eye(2), n)
        f = X @ w_star + b_star
        Xs.append(X)
        Ws.append(p * wts * expit(f) * expit(-f))  # π_c × weight × σ'(f*)
    X, W = np.concatenate(Xs), np.concatenate(Ws)
    g = (X @ u) ** 2
    if not refit:
        return W @ g**2
    Phi = np.column_stack([np.ones(len(X)), X])
    coef = np.linalg.lstsq(np.sqrt(W)[:, None] * Phi, np.sqrt(W) * g, rcond=None)[0]
    return W @ (g - Phi @ coef) ** 2


# END SOLUTION
c4 = float(0.5 * (0.5 * r * sig2) ** 2 * weighted_fit())  # SOLUTION

# %% [raw]
# # END SOLUTION

# %% tags=["near-miss"]
# the affine part not refitted: the quartic term of the gate alone, ½E[σ'(f*)(½rσ''(uᵀX)²)²]
c4 = float(0.5 * (0.5 * r * sig2) ** 2 * weighted_fit(refit=False))

# %% tags=["book-method"]
# the chapter's route: gmmlib's valley_excess F(r, εu) (second order, refitted, 40-node rule)
# at ε = 0.02, 0.01, 0.005, divided by ε⁴ and Richardson-extrapolated twice (the error is a
# series in ε: the first two terms removed)
from gmmlib.lda import LDAModel
from gmmlib.lda.dynamics import valley_excess

_M = LDAModel(pi_pos, [1.0, 0.0], [0.0, 1.0], np.eye(2))
_eps = np.array([0.02, 0.01, 0.005])
_g = np.array([valley_excess(_M, r, e * u)[0] / e**4 for e in _eps])
_once = 2 * _g[1:] - _g[:-1]
c4 = float((4 * _once[1] - _once[0]) / 3)

# %% [raw]
# # BEGIN TESTS

# %%
assert isinstance(c4, float) and c4 > 0, "c4 must be a positive float: the floor is quartic"
_sig = expit(s0)
_bound = 0.5 * (0.5 * r * _sig * (1 - _sig) * (1 - 2 * _sig)) ** 2 * 0.25 * (
    pi_pos * (0.6**4 + 6 * 0.6**2 + 3) + (1 - pi_pos) * (0.8**4 + 6 * 0.8**2 + 3))  # E(uᵀX)⁴
assert c4 <= _bound, \
    "c4 cannot exceed ½(½rσ''(s₀))²·¼E[(uᵀX)⁴]: σ' ≤ ¼, and refitting (a, c) only lowers it"

# %%
# HIDDEN
# from the formula, independently: the weighted least-squares residual by gmmlib's expectation
# on the class mixture (80 nodes per axis), through the normal equations (the Gram matrix of
# 1, x₁, x₂ under σ'(f*)), not a lstsq on nodes. The ε-scan of valley_excess (ε = 0.02, 0.01,
# 0.005, Richardson twice: the book's method) is within 1.4e-6 relative of it; tolerance 1e-5
# relative; the near miss (no refit) is off by a factor 3.2, 2e5 tolerances
from gmmlib import GaussianMixture
from gmmlib.quadrature import expectation

_mix = GaussianMixture([0.7, 0.3], [[1.0, 0.0], [0.0, 1.0]], [np.eye(2), np.eye(2)])
_u = np.array([0.6, 0.8])
_sg = 0.7
_s2 = _sg * (1 - _sg) * (1 - 2 * _sg)


def _wt(X):
    f = X @ np.array([1.0, -1.0]) + np.log(0.7 / 0.3)
    return expit(f) * expit(-f)


def _feat(X):
    return np.column_stack([np.ones(len(X)), X])


_gram = expectation(lambda X: _wt(X)[:, None, None] * _feat(X)[:, :, None] * _feat(X)[:, None, :],
                    _mix, 80)
_rhs = expectation(lambda X: _wt(X)[:, None] * _feat(X) * ((X @ _u) ** 2)[:, None], _mix, 80)
_g2 = expectation(lambda X: _wt(X) * (X @ _u) ** 4, _mix, 80)
_min = _g2 - _rhs @ np.linalg.solve(_gram, _rhs)
_c4 = 0.5 * (0.5 * 3.0 * _s2) ** 2 * _min
assert abs(c4 - _c4) <= 1e-5 * _c4

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
# **Question 4** (free response; prop-06-local and the heuristic heur-06-rates). Redo Question 3
# in your head at $\pi_+ = \frac12$: $c_4$ is then $0$. (a) Why, and what sets the order of the
# valley floor instead? (b) What does the chapter's heuristic then predict for the decay of the
# distance to $\Theta_2$ and of the excess risk (give both exponents, using your Question 1)?
# (c) Why is this a heuristic and not a theorem: what does Łojasiewicz's inequality give, and
# what does it not? Four to six sentences.

# %% [raw]
# # BEGIN SOLUTION

# %% [markdown]
# **Reference answer.** (a) At $\pi_+ = \frac12$, $s_0 = 0$ and $\sigma''(0) = 0$ ($\sigma'' =
# \sigma'(1 - 2\sigma)$ and $\sigma(0) = \frac12$), so the quadratic term
# $\frac12r\sigma''(s_0)\varepsilon^2(u^\top x)^2$ of $f - f^*$ vanishes. The first non-affine term
# is the cubic $\frac16r\sigma^{(3)}(0)\varepsilon^3(u^\top x)^3$ with $\sigma^{(3)}(0) = -\frac18$;
# $(u^\top x)^3$ is not affine, so the refit cannot remove it, and the excess, quadratic in
# $f - f^*$, is of order $\varepsilon^6$ on the valley floor. (b) The valley
# $\mathcal F\approx c\,\varepsilon^{2k}$ with $k = 3$:
# $\varepsilon\sim t^{-1/(2k-2)} = t^{-1/4}$ for the distance, and
# $\mathcal F\sim t^{-k/(k-1)} = t^{-3/2}$ for the excess (against $t^{-1/2}$ and
# $t^{-2}$ for $\pi_+\neq\frac12$). (c) The heuristic assumes the flow has relaxed the normal
# directions and then moves along the valley floor with a bounded metric and a direction that
# does not turn; none of this is proved. The risk is real analytic, so Łojasiewicz's inequality
# holds with some exponent; with the exponent $\vartheta = 1/(2k) = \frac16$ that the model
# suggests (itself not proved here) it gives only an upper bound
# $R - R^*\le Ct^{-3/2}$ (and convergence to a point for a flow that stays near $\Theta_2$), not a
# matching lower bound, so the rate itself is not proved.
#
# **Rubric** (3 points).
# - 1 point: $\sigma''(0) = 0$ kills the quadratic term; the cubic term (not affine, survives the
#   refit) gives a floor of order $\varepsilon^6$.
# - 1 point: the exponents $t^{-1/4}$ (distance) and $t^{-3/2}$ (excess), from $k = 3$ in
#   $\varepsilon\sim t^{-1/(2k-2)}$ and $t^{-k/(k-1)}$ (half a point for one of the two).
# - 1 point: the heuristic's unproved assumptions (motion along the floor, bounded metric), and
#   Łojasiewicz gives an upper bound on the excess (with whatever exponent holds), not the rate
#   (half a point for either).

# %% [raw]
# # END SOLUTION

# %% [raw]
# # END QUESTION
