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
# Variants of the exercises of Chapter 3 (*Softmax-gated affine experts*): the chapter's
# solutions teach the method, not these answers. Replace each `...` by your code, run the cell,
# then the `grader.check` cell below it: the public tests check properties every right answer
# has and say what is wrong; the grade also counts hidden tests, which check the values. Use
# numpy, scipy and the `gmmlib` names imported below for the pieces; keep the names the
# questions ask for. The last question is answered in words and graded by hand.

# %%
import numpy as np
from scipy.special import logsumexp

from gmmlib import GaussianMixture

# %% [raw]
# # BEGIN QUESTION
# name: q1
# points: 3

# %% [markdown]
# **Question 1** (a variant of Exercise ex-03-warmup-gates: covariances that differ). For a
# mixture $\sum_k\pi_k\mathcal N(m_k, \Gamma_k)$ given by arrays `weights` (shape `(K,)`),
# `means` (`(K, d)`) and `covs` (`(K, d, d)`), write from thm-03-gated-experts (no gmmlib
# limit or gate):
#
# - `gates(weights, means, covs, U, z)`: the gates $\alpha_k(z)$ of softmax attention's limit
#   (shape `(K,)`);
# - `T_limit(weights, means, covs, U, V, z)`: the limit $T_{U,V}[\mu](z)$ (shape `(p,)`).

# %% [raw]
# # BEGIN SOLUTION

# %%
def gates(weights, means, covs, U, z):
    # BEGIN SOLUTION
    a = np.asarray(U) @ np.asarray(z)
    logits = (np.log(weights) + np.asarray(means) @ a
              + 0.5 * np.einsum("i,kij,j->k", a, np.asarray(covs), a))
    return np.exp(logits - logsumexp(logits))
    # END SOLUTION


def T_limit(weights, means, covs, U, V, z):
    # BEGIN SOLUTION
    a = np.asarray(U) @ np.asarray(z)
    experts = np.asarray(means) + np.asarray(covs) @ a          # m_k + Γ_k a, shape (K, d)
    return np.asarray(V) @ (gates(weights, means, covs, U, z) @ experts)
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% tags=["near-miss"]
# the shared-covariance gates of cor-03-shared used with unequal covariances: the term
# ½(Uz)ᵀΓ_k(Uz) dropped from the logits
def gates(weights, means, covs, U, z):  # noqa: F811
    a = np.asarray(U) @ np.asarray(z)
    logits = np.log(weights) + np.asarray(means) @ a
    return np.exp(logits - logsumexp(logits))


# %% tags=["book-method"]
# the chapter's route: the tilted mixture (GaussianMixture.tilt, lem-03-tilt-mixture): its
# weights are the gates, V times its mean is the limit
def gates(weights, means, covs, U, z):  # noqa: F811
    mix = GaussianMixture(weights, means, covs)
    return mix.tilt(np.asarray(U) @ np.asarray(z)).weights


def T_limit(weights, means, covs, U, V, z):  # noqa: F811
    mix = GaussianMixture(weights, means, covs)
    return np.asarray(V) @ mix.tilt(np.asarray(U) @ np.asarray(z)).mean()


# %% [raw]
# # BEGIN TESTS

# %%
_w, _m = np.array([0.25, 0.75]), np.array([[1.0, 0.0], [0.0, 0.0]])
_c = np.array([np.eye(2), np.diag([2.0, 0.5])])
_U, _z = np.array([[0.8, 0.2], [-0.1, 0.6]]), np.array([0.4, -1.1])
assert np.shape(gates(_w, _m, _c, _U, _z)) == (2,), "gates returns shape (K,)"
assert np.isclose(np.sum(gates(_w, _m, _c, _U, _z)), 1), "your gates do not sum to 1"
assert np.allclose(gates(_w, _m, _c, np.zeros((2, 2)), _z), _w), \
    "at U = 0 the gates must be the proportions π_k (linear attention's fixed mixing)"
_shared = np.array([np.eye(2), np.eye(2)])
_g = gates(_w, _m, _shared, _U, _z)
assert np.isclose(_g[0] / _g[1], (0.25 / 0.75) * np.exp((_m[0] - _m[1]) @ _U @ _z)), \
    "with a shared covariance α₁/α₂ = (π₁/π₂) e^{(m₁ − m₂)ᵀUz} (cor-03-shared)"
assert np.allclose(T_limit([1.0], _m[:1], _c[:1], _U, np.eye(2), _z), _m[0] + _c[0] @ _U @ _z), \
    "with one component the limit must be the tilted Gaussian's mean m + ΓUz"

# %%
# HIDDEN
# gmmlib's attention_gates and softmax_attention_limit (closed forms: round-off, ~1e-15),
# computed here at the chapter's running example and a second mixture; atol 1e-10 on the gates,
# rtol 1e-9 on the limit, 9e7 times below the near miss (the quadratic term dropped: gates off
# by 0.009 to 0.21 at these queries, up to 0.05 and 0.21 on the two mixtures)
from gmmlib import softmax_attention_limit
from gmmlib.limits import attention_gates

_mixes = [
    GaussianMixture([0.3, 0.3, 0.4], [[-2.0, -1.0], [2.0, -1.0], [0.0, 2.0]],
                    [[[1.0, 0.5], [0.5, 0.8]], [[0.5, -0.2], [-0.2, 1.0]], 0.3 * np.eye(2)]),
    GaussianMixture([0.5, 0.2, 0.3], [[0.5, 1.0], [-1.0, 0.0], [1.5, -1.5]],
                    [np.diag([0.4, 1.5]), [[0.9, -0.3], [-0.3, 0.6]], 2.0 * np.eye(2)]),
]
_U = np.array([[0.8, 0.2], [-0.1, 0.6]])
_V = np.array([[1.0, 0.0], [0.5, 1.0]])
for _mix in _mixes:
    for _z in (np.array([1.0, 1.0]), np.array([-1.5, 0.5]), np.array([2.0, -2.5])):
        _args = (_mix.weights, _mix.means, _mix.covs)
        assert np.allclose(gates(*_args, _U, _z), attention_gates(_mix, _z, _U), rtol=0,
                           atol=1e-10), \
            f"gates at z = {_z.tolist()}: with unequal covariances the logits keep ½(Uz)ᵀΓ_k(Uz)"
        assert np.allclose(T_limit(*_args, _U, _V, _z), softmax_attention_limit(_mix, _z, _U, _V),
                           rtol=1e-9, atol=1e-12), \
            f"T_limit at z = {_z.tolist()}: V Σ_k α_k(z)(m_k + Γ_k Uz)"

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q2
# points: 2

# %% [markdown]
# **Question 2** (a variant of Exercise ex-03-quadric: a rotated, scaled $U$). Two components
# with $\Gamma_k = \gamma_k^2 I$ in the plane ($\gamma_1\ne\gamma_2$), proportions $\pi_1$ and
# $1 - \pi_1$, and an interaction matrix with $U^\top U = \omega^2 I$ (a rotation times
# $\omega > 0$). Write `boundary_circle(pi1, m1, m2, gamma1, gamma2, U)`, which returns the centre
# (shape `(2,)`) and the radius (a float) of the circle $\{z : \alpha_1(z) = \alpha_2(z)\}$
# (assume it exists).

# %% [raw]
# # BEGIN SOLUTION

# %%
def boundary_circle(pi1, m1, m2, gamma1, gamma2, U):
    # BEGIN SOLUTION
    U = np.asarray(U, dtype=float)
    omega2 = (U.T @ U)[0, 0]
    g = 0.5 * (gamma1**2 - gamma2**2) * omega2              # log-odds: g‖z‖² + vᵀz + log(π₁/π₂)
    v = U.T @ (np.asarray(m1) - np.asarray(m2))
    centre = -v / (2 * g)
    radius = np.sqrt(v @ v / (4 * g**2) - np.log(pi1 / (1 - pi1)) / g)
    return centre, float(radius)
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% tags=["near-miss"]
# U for Uᵀ in the linear term: (m₁ − m₂)ᵀUz read as (U(m₁ − m₂))ᵀz
def boundary_circle(pi1, m1, m2, gamma1, gamma2, U):  # noqa: F811
    U = np.asarray(U, dtype=float)
    g = 0.5 * (gamma1**2 - gamma2**2) * (U.T @ U)[0, 0]
    v = U @ (np.asarray(m1) - np.asarray(m2))
    return -v / (2 * g), float(np.sqrt(v @ v / (4 * g**2) - np.log(pi1 / (1 - pi1)) / g))


# %% tags=["book-method"]
# the exercise's circle in the variable u = Uz (its solution, with U = I), mapped back by
# z = U⁻¹u: the centre to U⁻¹c_u, the radius divided by ω
def boundary_circle(pi1, m1, m2, gamma1, gamma2, U):  # noqa: F811
    U = np.asarray(U, dtype=float)
    dm, dg = np.asarray(m1) - np.asarray(m2), gamma1**2 - gamma2**2
    c_u = -dm / dg
    r_u = np.sqrt(dm @ dm / dg**2 - 2 * np.log(pi1 / (1 - pi1)) / dg)
    return np.linalg.solve(U, c_u), float(r_u / np.sqrt((U.T @ U)[0, 0]))


# %% [raw]
# # BEGIN TESTS

# %%
_c, _r = boundary_circle(0.4, np.array([1.0, 0.0]), np.array([0.0, 1.0]), 1.5, 1.0, np.eye(2))
assert np.shape(_c) == (2,) and isinstance(_r, float) and _r > 0, \
    "return the centre (shape (2,)) and a positive radius (a float)"
assert np.allclose(_c, -np.array([1.0, -1.0]) / 1.25), \
    "with U = I the centre must be −(m₁ − m₂)/(γ₁² − γ₂²) (Exercise ex-03-quadric)"
_c2, _r2 = boundary_circle(0.4, np.array([1.0, 0.0]), np.array([0.0, 1.0]), 1.5, 1.0,
                           2 * np.eye(2))
assert np.allclose(_c2, _c / 2) and np.isclose(_r2, _r / 2), \
    "with U = ωI the circle must shrink by ω: α depends on z only through Uz"

# %%
# HIDDEN
# independent evidence, computed here: gmmlib's attention_gates at 64 points of the returned
# circle must give α₁ = α₂ (round-off ~1e-15: atol 1e-9), and the centre and radius must match
# completing the square in Uz (rtol 1e-9); the near miss (U for Uᵀ) moves the centre by ≥ 1.5
# here and makes |α₁ − α₂| reach 0.999 on its circle, 1e9 times the tolerance
from gmmlib.limits import attention_gates


def _rotation(t):
    return np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])


_cases = [(0.35, np.array([1.0, -0.5]), np.array([-0.5, 0.8]), 1.2, 0.7, 1.5 * _rotation(0.6)),
          (0.7, np.array([0.3, 1.2]), np.array([1.4, -0.2]), 0.6, 1.1, 0.8 * _rotation(-1.1))]
_phi = np.linspace(0, 2 * np.pi, 64, endpoint=False)
for _pi1, _m1, _m2, _g1, _g2, _U in _cases:
    _mix = GaussianMixture([_pi1, 1 - _pi1], [_m1, _m2], [_g1**2 * np.eye(2), _g2**2 * np.eye(2)])
    _centre, _radius = boundary_circle(_pi1, _m1, _m2, _g1, _g2, _U)
    _pts = np.asarray(_centre) + _radius * np.stack([np.cos(_phi), np.sin(_phi)], axis=1)
    _alpha = attention_gates(_mix, _pts, _U)
    assert np.max(np.abs(_alpha[:, 0] - _alpha[:, 1])) <= 1e-9, \
        "the gates are not equal on your circle: the linear term of the log-odds is (Uᵀ(m₁ − m₂))ᵀz"
    _om2, _dg = (_U.T @ _U)[0, 0], _g1**2 - _g2**2
    _ref_c = -_U.T @ (_m1 - _m2) / (_om2 * _dg)
    _ref_r = np.sqrt(_ref_c @ _ref_c - 2 * np.log(_pi1 / (1 - _pi1)) / (_om2 * _dg))
    assert np.allclose(_centre, _ref_c, rtol=1e-9, atol=1e-12) and np.isclose(_radius, _ref_r,
                                                                              rtol=1e-9), \
        "centre and radius"

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q3
# points: 3

# %% [markdown]
# **Question 3** (a variant of Exercise ex-03-kish: another query, and by hand). Write
# `kish_fraction(weights, means, covs, a)`: Kish's effective sample fraction
# $(\mathbb E w)^2/\mathbb E w^2$ of the weights $w = e^{a^\top X}$, $X\sim\mu$, for the mixture
# $\mu$ given by arrays as in Question 1 (a float), from the mixture's log-moment generating
# function (no gmmlib fraction). Then set `fractions` (shape `(4,)`): the fractions for the
# chapter's running example (`mix`, `U` below) with $U$ replaced by $\omega U$, at the query
# $z = (-1, -1)$, for $\omega\in\{0.5, 1, 2, 3\}$.

# %%
mix = GaussianMixture(
    [0.3, 0.3, 0.4],
    [[-2.0, -1.0], [2.0, -1.0], [0.0, 2.0]],
    [[[1.0, 0.5], [0.5, 0.8]], [[0.5, -0.2], [-0.2, 1.0]], 0.3 * np.eye(2)],
)
U = np.array([[0.8, 0.2], [-0.1, 0.6]])
mix_arrays = (mix.weights, mix.means, mix.covs)
omegas = np.array([0.5, 1.0, 2.0, 3.0])
z_q = np.array([-1.0, -1.0])

# %% [raw]
# # BEGIN SOLUTION

# %%
def kish_fraction(weights, means, covs, a):
    # BEGIN SOLUTION
    a = np.asarray(a, dtype=float)

    def log_mgf(b):        # Λ(b) = log Σ_k π_k exp(m_kᵀb + ½ bᵀΓ_k b)
        return logsumexp(np.log(weights) + np.asarray(means) @ b
                         + 0.5 * np.einsum("i,kij,j->k", b, np.asarray(covs), b))

    return float(np.exp(2 * log_mgf(a) - log_mgf(2 * a)))
    # END SOLUTION


fractions = np.array([kish_fraction(*mix_arrays, w * U @ z_q) for w in omegas])  # SOLUTION

# %% [raw]
# # END SOLUTION

# %% tags=["near-miss"]
# the mixture taken for one Gaussian with its covariance: e^{−aᵀ Cov(μ) a}
def kish_fraction(weights, means, covs, a):  # noqa: F811
    cov = GaussianMixture(weights, means, covs).covariance()
    return float(np.exp(-np.asarray(a) @ cov @ np.asarray(a)))


fractions = np.array([kish_fraction(mix.weights, mix.means, mix.covs, w * U @ z_q)
                      for w in omegas])

# %% tags=["book-method"]
# the chapter's solution: gmmlib.limits.effective_sample_fraction, e^{2Λ(a) − Λ(2a)}
from gmmlib.limits import effective_sample_fraction


def kish_fraction(weights, means, covs, a):  # noqa: F811
    return float(effective_sample_fraction(GaussianMixture(weights, means, covs),
                                           np.asarray(a, dtype=float), np.eye(len(a))))


fractions = np.array([effective_sample_fraction(mix, z_q, w * U) for w in omegas])

# %% [raw]
# # BEGIN TESTS

# %%
_G = np.array([[[1.0, 0.3], [0.3, 0.5]]])
assert np.isclose(kish_fraction([1.0], [[0.5, -0.5]], _G, np.array([0.8, 0.6])),
                  np.exp(-np.array([0.8, 0.6]) @ _G[0] @ np.array([0.8, 0.6]))), \
    "for one Gaussian the fraction must be e^{−aᵀΓa} (Kish's fraction of Chapter 1)"
assert np.isclose(kish_fraction(mix.weights, mix.means, mix.covs, np.zeros(2)), 1), \
    "at a = 0 the weights are equal: the fraction must be 1"
assert np.shape(fractions) == (4,) and np.all((0 < fractions) & (fractions <= 1)), \
    "fractions: four numbers in (0, 1]"
assert np.all(np.diff(fractions) < 0), "sharper attention (larger ω) means fewer effective tokens"

# %%
# HIDDEN
# two independent references, computed here: (E w)²/E w² by Gauss–Hermite quadrature of the
# mixture (10 × the change from 60 to 120 nodes per axis + round-off: ≤ 2e-6 relative), and
# gmmlib's effective_sample_fraction (closed form, round-off); the answer is a closed form, so
# rtol 1e-8 against the latter, far below the near miss (one Gaussian: off by ≥ 15 % of the
# value, and by a factor 1e7 at ω = 3)
from gmmlib.runtime import converged_quadrature
from gmmlib.limits import effective_sample_fraction
from gmmlib.quadrature import mixture_nodes

_A = np.array([w * U @ np.array([-1.0, -1.0]) for w in (0.5, 1.0, 2.0, 3.0)])


def _fraction(n):
    X, w, _ = mixture_nodes(mix, n)
    s = X @ _A.T - (X @ _A.T).max(0)
    return (w @ np.exp(s)) ** 2 / (w @ np.exp(2 * s))


_ref = converged_quadrature(_fraction, 60, dim=2)
assert np.all(np.abs(fractions - _ref.value) <= _ref.error), \
    "fractions: e^{2Λ(a) − Λ(2a)} with Λ the log-MGF of the mixture, not of one Gaussian"
_exact = np.array([effective_sample_fraction(mix, np.array([-1.0, -1.0]), w * U)
                   for w in (0.5, 1.0, 2.0, 3.0)])
assert np.allclose(fractions, _exact, rtol=1e-8, atol=0), "fractions"
_other = GaussianMixture([0.5, 0.2, 0.3], [[0.5, 1.0], [-1.0, 0.0], [1.5, -1.5]],
                         [np.diag([0.4, 1.5]), [[0.9, -0.3], [-0.3, 0.6]], 2.0 * np.eye(2)])
for _a in (np.array([0.7, -0.2]), np.array([-1.1, 1.6])):
    _mine = kish_fraction(_other.weights, _other.means, _other.covs, _a)
    assert np.isclose(_mine, effective_sample_fraction(_other, _a, np.eye(2)), rtol=1e-8,
                      atol=0), f"kish_fraction at a = {_a.tolist()} on another mixture"

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
# **Question 4** (free response, about Question 3). At $\omega = 3$ your fraction is many orders
# of magnitude larger than the near miss $e^{-a^\top\operatorname{Cov}(\mu)a}$ that treats the
# mixture as one Gaussian. Explain *why*, from the log-moment generating function of a mixture,
# and show that for large $\omega$ the fraction behaves like
# $\pi_{k^\star}e^{-a^\top\Gamma_{k^\star}a}$ for one component $k^\star$: which one, and what
# does each factor mean for a finite prompt?
# Compare with your numbers.

# %% [raw]
# # BEGIN SOLUTION

# %% [markdown]
# **Reference answer.** The fraction is $e^{2\Lambda(a) - \Lambda(2a)}$, minus a second difference
# of the log-MGF. For one Gaussian $\Lambda(a) = m^\top a + \frac12 a^\top\operatorname{Cov}(\mu)a$,
# and $\operatorname{Cov}(\mu) = \sum_k\pi_k\Gamma_k + \operatorname{Cov}(\text{means})$ counts the
# spread of the means as curvature. For the mixture,
# $\Lambda(a) = \log\sum_k\pi_ke^{m_k^\top a + \frac12 a^\top\Gamma_k a}$: the means enter
# linearly in $a$, and for large $a = \omega Uz$ the sum is dominated by its largest term,
# $\Lambda(a)\approx\log\pi_{k^\star} + m_{k^\star}^\top a + \frac12a^\top\Gamma_{k^\star}a$, the
# same $k^\star$ for $a$ and $2a$ once the quadratic terms dominate (the component widest along
# $a$; here it also has the largest $m_k^\top a$: $k^\star$ = the first component, mean
# $(-2, -1)$, with $a_0^\top\Gamma_1 a_0 = 1.7$ for $a_0 = Uz = (-1, -0.5)$, and it is selected,
# gate $\approx 1$). The linear terms cancel in
# $2\Lambda(a) - \Lambda(2a)\approx\log\pi_{k^\star} - a^\top\Gamma_{k^\star}a$, so the fraction
# is $\pi_{k^\star}e^{-\omega^2a_0^\top\Gamma_{k^\star}a_0}$: only the selected component's tokens
# count (the factor $\pi_{k^\star}$, the share of the prompt they make up), and among them the
# weights are as uneven as for a single Gaussian with covariance $\Gamma_{k^\star}$ (the factor
# $e^{-\kappa_{k^\star}}$). The spread between the means costs nothing: the softmax selects a
# component, it does not have to reach into a Gaussian tail that spans all of them. Numbers:
# $0.3\,e^{-1.7\omega^2}$ gives $6.8\cdot10^{-8}$ at $\omega = 3$, as the fraction does (to
# three digits), while $e^{-a^\top\operatorname{Cov}(\mu)a}\approx2\cdot10^{-15}$; at
# $\omega = 0.5$ the approximation (0.196 against 0.328) is poor, the gates are still soft.
#
# **Rubric** (3 points).
# - 1 point: the fraction is $e^{2\Lambda(a)-\Lambda(2a)}$; the one-Gaussian answer wrongly turns
#   the spread of the means into curvature of $\Lambda$, while the mixture's $\Lambda$ is a
#   log-sum-exp in which the means are linear in $a$.
# - 1 point: the dominant-term argument, with the linear terms cancelling, giving
#   $\pi_{k^\star}e^{-a^\top\Gamma_{k^\star}a}$ with $k^\star$ the selected (widest along $a$)
#   component, identified here as the first.
# - 1 point: the meaning (share of tokens in the selected component × Kish's factor within it)
#   and the comparison with the numbers (agreement at $\omega = 3$, not at small $\omega$).

# %% [raw]
# # END SOLUTION

# %% [raw]
# # END QUESTION
