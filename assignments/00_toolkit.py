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
# name: 00_toolkit
# run_tests: false
# init_cell: true
# check_all_cell: true
# export_cell: false
# generate: true
# strip_solutions_from_all_cells: true

# %% [markdown]
# # Homework 0: the toolkit
#
# Variants of the exercises of Chapter 0 (*The toolkit*): the chapter's solutions teach the
# method, not these answers. Replace each `...` by your code, run the cell, then the
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
# **Question 1** (a variant of Exercise ex-00-kappa: a mean, a value matrix, and one step
# further). Let $\mu = \mathcal N(m, \Gamma)$ on $\mathbb R^d$, with interaction matrix $U$ and
# value matrix $V$. Write three functions of numpy arrays, computed from the tilt lemma by hand
# (no gmmlib limit):
#
# - `sharpness(Gamma, U, z)`: $\kappa = a^\top\Gamma a$ with $a = Uz$ (a float);
# - `softmax_limit(m, Gamma, U, V, z)`: the infinite-prompt output $T_{U,V}[\mu](z)$ (shape
#   `(p,)`);
# - `tilted_draws(Gamma, U, V, z, L)`: how many independent draws from the tilted law a prompt
#   of $L$ tokens is worth, that is the $n$ for which $\operatorname{tr}(V\Gamma V^\top)/n$ equals
#   the finite-prompt law's error $C(z)/L$ (a float; see the solution of the exercise).
#
# For instance at $m = (0.5, -1)$, $\Gamma = \begin{pmatrix}1 & 0.3\\ 0.3 & 0.5\end{pmatrix}$,
# $U = \begin{pmatrix}1 & 0.5\\ 0 & 1\end{pmatrix}$,
# $V = \begin{pmatrix}1 & 0\\ 0.5 & 1\end{pmatrix}$, $z = (0.8, 0.6)$ and $L = 2000$.

# %% [raw]
# # BEGIN SOLUTION

# %%
def sharpness(Gamma, U, z):
    # BEGIN SOLUTION
    a = np.asarray(U) @ np.asarray(z)
    return float(a @ np.asarray(Gamma) @ a)
    # END SOLUTION


def softmax_limit(m, Gamma, U, V, z):
    # BEGIN SOLUTION
    a = np.asarray(U) @ np.asarray(z)
    return np.asarray(V) @ (np.asarray(m) + np.asarray(Gamma) @ a)
    # END SOLUTION


def tilted_draws(Gamma, U, V, z, L):
    # BEGIN SOLUTION
    Gamma, V = np.asarray(Gamma), np.asarray(V)
    a = np.asarray(U) @ np.asarray(z)
    t_V = np.trace(V @ Gamma @ V.T)
    C = np.exp(a @ Gamma @ a) * (t_V + np.sum((V @ Gamma @ a) ** 2))
    return float(L * t_V / C)
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% tags=["near-miss"]
# the centred case's answers reused: the mean m forgotten in the output, and Kish's count
# L e^{-κ} taken for the number of tilted draws
def softmax_limit(m, Gamma, U, V, z):  # noqa: F811
    return np.asarray(V) @ np.asarray(Gamma) @ np.asarray(U) @ np.asarray(z)


def tilted_draws(Gamma, U, V, z, L):  # noqa: F811
    return float(L * np.exp(-sharpness(Gamma, U, z)))


# %% tags=["book-method"]
# the chapter's way: tilt the law (GaussianMixture.tilt, lem-00-gaussian-tilt) and take its
# mean; the draws from the finite-prompt law of cor-01-gaussian quoted by the solution
def softmax_limit(m, Gamma, U, V, z):  # noqa: F811
    law = GaussianMixture.gaussian(np.asarray(m, float), np.asarray(Gamma, float))
    return np.asarray(V) @ law.tilt(np.asarray(U) @ np.asarray(z)).mean()


def tilted_draws(Gamma, U, V, z, L):  # noqa: F811
    Gamma, V = np.asarray(Gamma), np.asarray(V)
    a = np.asarray(U) @ np.asarray(z)
    kappa = a @ Gamma @ a
    t_V, q_V = np.trace(V @ Gamma @ V.T), np.sum((V @ Gamma @ a) ** 2)
    return float(L * np.exp(-kappa) * t_V / (t_V + q_V))


# %% [raw]
# # BEGIN TESTS

# %%
_G, _V, _m = np.array([[1.0, 0.3], [0.3, 0.5]]), np.array([[1.0, 0.0], [0.5, 1.0]]), np.ones(2)
assert abs(sharpness(_G, np.eye(2), np.zeros(2))) < 1e-12, "κ must be 0 at the query z = 0"
assert np.isclose(sharpness(_G, 2 * np.eye(2), np.ones(2)), 4 * sharpness(_G, np.eye(2),
                                                                         np.ones(2))), \
    "κ must be quadratic in the scale of U: doubling U multiplies κ by 4"
assert np.allclose(softmax_limit(_m, _G, np.zeros((2, 2)), _V, np.ones(2)), _V @ _m), \
    "at U = 0 the weights are equal and attention averages the prompt: the limit must be Vm"
assert np.isclose(tilted_draws(_G, np.zeros((2, 2)), _V, np.ones(2), 2000), 2000), \
    "at U = 0 the weights are equal: a prompt of L tokens is worth L draws"

# %%
# HIDDEN
# expected values from gmmlib's closed forms, computed here: softmax_attention_limit (the
# tilted mean) and finite_prompt_mse (C(z) of cor-01-gaussian); the answers are closed forms,
# exact up to round-off (~1e-15 relative), the book's method too; rtol 1e-9 is far above that
# and 1e7 times below the near miss (the mean forgotten: off by ‖Vm‖ ≥ 0.42; Kish's count:
# off by a factor 1 + ‖VΓa‖²/tr(VΓVᵀ) of 2.59 and 1.06 at these inputs)
from gmmlib import softmax_attention_limit
from gmmlib.limits import finite_prompt_mse

_cases = [
    (np.array([0.5, -1.0]), np.array([[1.0, 0.3], [0.3, 0.5]]),
     np.array([[1.0, 0.5], [0.0, 1.0]]), np.array([[1.0, 0.0], [0.5, 1.0]]),
     np.array([0.8, 0.6]), 2000),
    (np.array([-0.7, 0.2, 1.1]), np.array([[0.9, 0.2, 0.0], [0.2, 0.6, -0.1], [0.0, -0.1, 0.4]]),
     np.array([[0.6, 0.1, 0.0], [0.0, 0.8, 0.3], [-0.2, 0.0, 0.5]]),
     np.array([[1.0, 0.0, 0.4], [0.3, -0.6, 0.0]]), np.array([0.5, -0.9, 1.2]), 750),
]
for _m, _G, _U, _V, _z, _L in _cases:
    _law = GaussianMixture.gaussian(_m, _G)
    _a = _U @ _z
    assert np.isclose(sharpness(_G, _U, _z), _a @ _G @ _a, rtol=1e-9, atol=0), \
        "sharpness: κ = aᵀΓa with a = Uz"
    assert np.allclose(softmax_limit(_m, _G, _U, _V, _z),
                       softmax_attention_limit(_law, _z, _U, _V), rtol=1e-9, atol=1e-12), \
        "softmax_limit: the tilted law of N(m, Γ) by a is N(m + Γa, Γ)"
    _draws = _L * np.trace(_V @ _G @ _V.T) / finite_prompt_mse(_law, _z, _U, _V)
    assert np.isclose(tilted_draws(_G, _U, _V, _z, _L), _draws, rtol=1e-9, atol=0), \
        "tilted_draws: the law's error is C(z)/L with C = e^κ(tr VΓVᵀ + ‖VΓa‖²)"

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q2
# points: 2

# %% [markdown]
# **Question 2** (a variant of Exercise ex-00-pairings, one order further). For
# $X\sim\mathcal N(0, \Gamma)$ in $\mathbb R^2$, write `sixth_moments(Gamma)`, which returns the
# array $(\mathbb E X_1^6,\ \mathbb E[X_1^4X_2^2],\ \mathbb E[X_1^3X_2^3])$ (shape `(3,)`) for
# any covariance `Gamma` of shape `(2, 2)`, by counting the pairings of Isserlis' theorem
# (thm-00-isserlis) by hand.

# %% [raw]
# # BEGIN SOLUTION

# %%
def sixth_moments(Gamma):
    # BEGIN SOLUTION
    G = np.asarray(Gamma, dtype=float)
    g11, g12, g22 = G[0, 0], G[0, 1], G[1, 1]
    return np.array([15 * g11**3,                              # 5!! = 15 pairings
                     3 * g11**2 * g22 + 12 * g11 * g12**2,     # X₂X₂ paired, or both to X₁s
                     9 * g11 * g12 * g22 + 6 * g12**3])        # one cross pair, or three
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% tags=["near-miss"]
# the two cross pairings of E[X₁⁴X₂²] counted as unordered: 6 instead of 4·3 = 12
def sixth_moments(Gamma):  # noqa: F811
    G = np.asarray(Gamma, dtype=float)
    g11, g12, g22 = G[0, 0], G[0, 1], G[1, 1]
    return np.array([15 * g11**3, 3 * g11**2 * g22 + 6 * g11 * g12**2,
                     9 * g11 * g12 * g22 + 6 * g12**3])


# %% tags=["book-method"]
# the chapter's Gauss–Hermite rule (sec-00-quadrature): 10 nodes per axis integrate every
# polynomial of degree ≤ 19 exactly
from gmmlib import quadrature


def sixth_moments(Gamma):  # noqa: F811
    X, w = quadrature.gaussian_nodes(np.zeros(2), np.asarray(Gamma, dtype=float), 10)
    x1, x2 = X[:, 0], X[:, 1]
    return w @ np.stack([x1**6, x1**4 * x2**2, x1**3 * x2**3], axis=1)


# %% [raw]
# # BEGIN TESTS

# %%
assert np.shape(sixth_moments(np.eye(2))) == (3,), "return the three moments as an array"
assert np.allclose(sixth_moments(np.eye(2)), [15.0, 3.0, 0.0]), \
    "for Γ = I: E X₁⁶ = 15 (5!! pairings), E X₁⁴ E X₂² = 3, and odd moments of X₂ vanish"
_G = np.array([[1.0, 0.2], [0.2, 0.7]])
assert np.allclose(sixth_moments(2 * _G), 8 * sixth_moments(_G)), \
    "a sixth moment is a sum of products of three covariances: doubling Γ multiplies it by 8"

# %%
# HIDDEN
# the three moments by Gauss–Hermite quadrature at correlated Γ, computed here; the rule is
# exact on these degree-6 polynomials from 4 nodes per axis, so its error is round-off:
# converged_quadrature's bound (10 × the change from 10 to 20 nodes + 100 ulp) is ~1e-13; the
# near miss is off by 6Γ₁₁Γ₁₂² ≥ 0.5 here, 1e12 times more
from gmmlib.runtime import converged_quadrature
from gmmlib.quadrature import gaussian_nodes

for _G in (np.array([[1.3, 0.6], [0.6, 0.8]]), np.array([[0.7, -0.45], [-0.45, 1.9]])):
    def _by_quadrature(n):
        X, w = gaussian_nodes(np.zeros(2), _G, n)
        x1, x2 = X[:, 0], X[:, 1]
        return w @ np.stack([x1**6, x1**4 * x2**2, x1**3 * x2**3], axis=1)

    _ref = converged_quadrature(_by_quadrature, 10, dim=2)
    _err = np.abs(sixth_moments(_G) - _ref.value)
    assert np.all(_err <= _ref.error), \
        f"sixth_moments: off by {_err} at Γ = {_G.tolist()}; count the pairings again"

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q3
# points: 3

# %% [markdown]
# **Question 3** (a variant of Exercise ex-00-tanh: two points that are not symmetric). Let
# $X = m_1$ with probability $p$ and $X = m_2$ with probability $1 - p$ ($m_1\ne m_2$ real),
# and $Z = X + \xi\varepsilon$ with $\varepsilon\sim\mathcal N(0, 1)$ independent. Write
# `two_point_denoiser(z, m1, m2, p, xi)`, the posterior mean $\mathbb E[X\mid Z = z]$ by Bayes'
# rule, for an array `z` of any shape (returned with that shape).

# %% [raw]
# # BEGIN SOLUTION

# %%
def two_point_denoiser(z, m1, m2, p, xi):
    # BEGIN SOLUTION
    z = np.asarray(z, dtype=float)
    # posterior log-odds of X = m₁: the prior odds plus the log-likelihood ratio
    logit = np.log(p / (1 - p)) + ((z - m2) ** 2 - (z - m1) ** 2) / (2 * xi**2)
    return m2 + (m1 - m2) / (1 + np.exp(-logit))
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% tags=["near-miss"]
# the likelihood ratio alone: the prior odds log(p/(1 − p)) dropped
def two_point_denoiser(z, m1, m2, p, xi):  # noqa: F811
    z = np.asarray(z, dtype=float)
    logit = ((z - m2) ** 2 - (z - m1) ** 2) / (2 * xi**2)
    return m2 + (m1 - m2) / (1 + np.exp(-logit))


# %% tags=["book-method"]
# the chapter's check of eq-00-tweedie: z + ξ² (log p_Z)′(z), the derivative by Richardson
# extrapolation of central differences (richardson_derivative, h = 1e-3)
from gmmlib.runtime import richardson_derivative


def two_point_denoiser(z, m1, m2, p, xi):  # noqa: F811
    z = np.asarray(z, dtype=float)
    prior = GaussianMixture([p, 1 - p], [[m1], [m2]], [[[0.0]], [[0.0]]])
    noisy = prior.convolve(xi**2)
    flat = z.ravel()
    score = richardson_derivative(lambda u: noisy.log_prob(u[:, None]), flat, np.ones_like(flat))
    return (flat + xi**2 * score.value).reshape(z.shape)


# %% [raw]
# # BEGIN TESTS

# %%
_z = np.linspace(-3, 3, 13)
assert np.shape(two_point_denoiser(_z.reshape(13, 1), 1.0, -2.0, 0.3, 0.8)) == (13, 1), \
    "return an array of the shape of z"
assert np.allclose(two_point_denoiser(_z, 1.5, -1.5, 0.5, 0.8), 1.5 * np.tanh(1.5 * _z / 0.64)), \
    "with p = 1/2 and m₂ = −m₁ = −m your denoiser must be m tanh(mz/ξ²) (Exercise ex-00-tanh)"
_out = two_point_denoiser(_z, 1.0, -2.0, 0.3, 0.8)
assert np.all((_out >= -2.0) & (_out <= 1.0)), \
    "a posterior mean of X ∈ {m₁, m₂} lies between m₂ and m₁"

# %%
# HIDDEN
# gmmlib's Bayes denoiser of the two-point prior (posterior weights from the two Gaussian
# densities), computed here. The closed form is exact up to round-off (~1e-15); the book's
# method (Tweedie with a Richardson derivative, h = 1e-3) is off by at most 1.1e-11 on these
# inputs (its h⁴ term and the round-off 10u·|log p_Z|/h); atol = 1e-7 covers both and is 5e6
# times below the near miss (the prior odds dropped: off by 0.51 to 0.81 here)
from gmmlib.denoising import bayes_denoiser

_z = np.linspace(-4, 4, 33)
for _m1, _m2, _p, _xi in [(2.0, -0.5, 0.3, 0.9), (-1.2, 0.4, 0.8, 0.6), (1.0, 3.0, 0.15, 1.4)]:
    _prior = GaussianMixture([_p, 1 - _p], [[_m1], [_m2]], [[[0.0]], [[0.0]]])
    _ref = bayes_denoiser(_prior, _xi, _z[:, None])[:, 0]
    _err = np.max(np.abs(two_point_denoiser(_z, _m1, _m2, _p, _xi) - _ref))
    assert _err <= 1e-7, (f"two_point_denoiser: off by {_err:.3g} at m₁ = {_m1}, m₂ = {_m2}, "
                          f"p = {_p}, ξ = {_xi}; the posterior odds are prior odds × likelihood "
                          "ratio")

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
# **Question 4** (free response, about Question 3). Let the noise vanish, $\xi\to0$, with $p$,
# $m_1 > m_2$ fixed. What does your denoiser become? Where is the point $z^\star$ at which
# $P(X = m_1\mid Z = z^\star) = \frac12$, for $\xi > 0$ and in the limit? Explain *why* the prior
# probability $p$ stops mattering as $\xi\to0$, although it never cancels from Bayes' rule.
# Answer in a few sentences, with the formula for $z^\star$.

# %% [raw]
# # BEGIN SOLUTION

# %% [markdown]
# **Reference answer.** The posterior log-odds of $X = m_1$ are
# $\ell(z) = \log\frac{p}{1-p} + \frac{(m_1 - m_2)\,(2z - m_1 - m_2)}{2\xi^2}$, affine in $z$, so
# $\ell(z^\star) = 0$ at
# $z^\star = \frac{m_1 + m_2}2 - \frac{\xi^2}{m_1 - m_2}\log\frac{p}{1-p}$. The denoiser is
# $m_2 + (m_1 - m_2)\,\sigma(\ell(z))$, a smooth step from $m_2$ to $m_1$ centred at
# $z^\star$, of width of order $\xi^2/(m_1 - m_2)$. As $\xi\to0$ it tends to the step function
# equal to $m_1$ for $z > \frac{m_1+m_2}2$ and to $m_2$ for $z < \frac{m_1+m_2}2$: the nearest of
# the two points. The prior does not cancel, but its log-odds $\log\frac p{1-p}$ stay fixed while
# the log-likelihood ratio has slope $(m_1 - m_2)/\xi^2\to\infty$: the evidence of one
# observation outweighs any fixed prior, and the prior only shifts the step by
# $\xi^2\log\frac p{1-p}/(m_1 - m_2) = O(\xi^2)$ (towards the less likely point).
#
# **Rubric** (3 points).
# - 1 point: the limit is the step (nearest-point) map, $m_1$ above the midpoint, $m_2$ below.
# - 1 point: $z^\star = \frac{m_1+m_2}2 - \frac{\xi^2}{m_1-m_2}\log\frac p{1-p}$ (sign and factor
#   right), tending to the midpoint.
# - 1 point: why $p$ stops mattering: fixed prior log-odds against a log-likelihood ratio whose
#   slope grows like $1/\xi^2$ (a shift of order $\xi^2$); "because $p$ cancels" earns nothing.

# %% [raw]
# # END SOLUTION

# %% [raw]
# # END QUESTION
