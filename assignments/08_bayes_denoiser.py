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
# name: 08_bayes_denoiser
# run_tests: false
# init_cell: true
# check_all_cell: true
# export_cell: false
# generate: true
# strip_solutions_from_all_cells: true

# %% [markdown]
# # Homework 8: the Bayes denoiser is a gated affine map
#
# Variants of the exercises of Chapter 8 (*The Bayes denoiser is a gated affine map*): the
# chapter's solutions teach the method, not these answers. Replace each `...` with your answer,
# run the cell, then the `grader.check` cell below it: its public tests check values and
# properties a right answer must have, and say what is wrong when one fails. The grade also
# counts hidden tests, which compare your values with independent computations. The last
# question asks *why*, in words; it is graded by hand. Use `gmmlib` for the pieces around an
# answer (mixtures, gates, posteriors), not for the quantity a question asks you to compute.

# %%
import numpy as np
from scipy.optimize import minimize_scalar

from gmmlib import GaussianMixture
from gmmlib.denoising import noisy_mixture
from gmmlib.limits import attention_gates

# %% [raw]
# # BEGIN QUESTION
# name: q1
# points: 2

# %% [markdown]
# **Question 1** (a variant of Exercise ex-08-tanh, warm-up). Now the two point masses are
# *unbalanced*: $X = m$ with probability $p$ and $X = -m$ with probability $1 - p$, and
# $Z = X + \varepsilon$, $\varepsilon\sim\mathcal N(0, \xi^2 I)$. Derive $\mathbb E[X\mid Z = z]$
# from eq-08-bayes (with $\Gamma = 0$) and write `two_point_denoiser(Z, m, xi, p)`: it takes the
# queries `Z` of shape `(n, 2)`, the vector `m` of shape `(2,)`, the floats `xi` and `p`, and
# returns the posterior means, shape `(n, 2)`, in closed form.

# %% [raw]
# # BEGIN SOLUTION

# %%
def two_point_denoiser(Z, m, xi, p):
    # BEGIN SOLUTION
    Z = np.asarray(Z, dtype=float)
    return np.tanh(Z @ m / xi**2 + 0.5 * np.log(p / (1 - p)))[:, None] * m
    # END SOLUTION


# %% [raw]
# # END SOLUTION

# %% tags=["near-miss"]
# the whole log-odds log(p/(1 − p)) inside tanh, where tanh takes half of the logit difference
def two_point_denoiser(Z, m, xi, p):  # noqa: F811
    Z = np.asarray(Z, dtype=float)
    return np.tanh(Z @ m / xi**2 + np.log(p / (1 - p)))[:, None] * m


# %% tags=["book-method"]
# the chapter's check of ex-08-tanh: Tweedie's formula z + ξ²∇log p_Z(z), the score by
# Richardson-extrapolated differences of the noisy mixture's log density
from gmmlib.runtime import richardson_derivative


def two_point_denoiser(Z, m, xi, p):  # noqa: F811
    Z = np.asarray(Z, dtype=float)
    law = noisy_mixture(GaussianMixture.isotropic([p, 1 - p], [m, -m], 0.0), xi)
    score = [richardson_derivative(law.log_prob, Z, np.tile(e, (len(Z), 1)), h=1e-3).value
             for e in np.eye(2)]
    return Z + xi**2 * np.stack(score, axis=1)


# %% [raw]
# # BEGIN TESTS

# %%
m_try = np.array([1.2, 0.8])
Z_try = np.array([[0.0, 0.0], [0.8, -1.2], [1.0, 2.0]])
out = two_point_denoiser(Z_try, m_try, 0.9, 0.3)
assert np.shape(out) == (3, 2), f"the output must have shape (3, 2), not {np.shape(out)}"
assert np.allclose(out[:2], (2 * 0.3 - 1) * m_try), (
    "at a query orthogonal to m the noise tells nothing about the sign, so the posterior mean "
    "must be the prior mean (2p − 1)m; check the constant term of your tanh")

# %%
# HIDDEN
# gmmlib's Bayes denoiser (the sum of the posterior-weighted experts, no tanh) at 50 queries and
# two priors; tolerance 1e-9: above the error of the chapter's Tweedie route (Richardson
# differences, ~5e-12 here) and 5·10⁸ times below the near miss's distance (~0.5)
from gmmlib.denoising import bayes_denoiser

_Z = np.random.default_rng(808).normal(scale=1.5, size=(50, 2))
for _m, _xi, _p in [(np.array([1.2, 0.8]), 0.9, 0.3), (np.array([-0.5, 1.5]), 1.4, 0.85)]:
    _prior = GaussianMixture.isotropic([_p, 1 - _p], [_m, -_m], 0.0)
    _gap = np.abs(two_point_denoiser(_Z, _m, _xi, _p) - bayes_denoiser(_prior, _xi, _Z))
    assert np.all(_gap <= 1e-9), f"off the posterior mean by up to {_gap.max():.3g}"

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q2
# points: 3

# %% [markdown]
# **Question 2** (a variant of Exercise ex-08-affine-floor, warm-up). Three components with a
# common $\Gamma = \gamma^2 I$, $\gamma = 0.5$: weights $(0.2, 0.3, 0.5)$ and means
# $(2, 0)$, $(0, 2)$, $(1, -1)$, observed with noise $\xi = 1.3$. By the law of total covariance,
# compute `Sigma_X` $= \operatorname{Cov}X$ (shape `(2, 2)`), then the affine floor `R_aff` and
# the linear floor `R_lin` of eq-08-floors (floats). Compute them from the weights and means
# below, as the exercise does by hand, not with a gmmlib function that returns them.

# %% [raw]
# # BEGIN SOLUTION

# %%
weights = np.array([0.2, 0.3, 0.5])
means = np.array([[2.0, 0.0], [0.0, 2.0], [1.0, -1.0]])
gamma, xi = 0.5, 1.3
# BEGIN SOLUTION
m_bar = weights @ means
centred = means - m_bar
between = centred.T @ (weights[:, None] * centred)  # Σ_k π_k (m_k − m̄)(m_k − m̄)ᵀ


def floor(C):
    """ξ² tr(C(C + ξ²I)⁻¹), eq-08-floors."""
    return float(xi**2 * np.trace(C @ np.linalg.inv(C + xi**2 * np.eye(2))))


# END SOLUTION
Sigma_X = gamma**2 * np.eye(2) + between  # SOLUTION
R_aff = floor(Sigma_X)  # SOLUTION
R_lin = floor(Sigma_X + np.outer(m_bar, m_bar))  # SOLUTION

# %% [raw]
# # END SOLUTION

# %% tags=["near-miss"]
# the means not centred: E[XXᵀ] = Γ + Σ_k π_k m_k m_kᵀ taken for Cov X
Sigma_X = gamma**2 * np.eye(2) + means.T @ (weights[:, None] * means)
R_aff = floor(Sigma_X)

# %% tags=["book-method"]
# the exercise's hand computation is the reference itself: repeated
Sigma_X = gamma**2 * np.eye(2) + between
R_aff = floor(Sigma_X)
R_lin = floor(Sigma_X + np.outer(m_bar, m_bar))

# %% [raw]
# # BEGIN TESTS

# %%
assert np.shape(Sigma_X) == (2, 2), f"Sigma_X must have shape (2, 2), not {np.shape(Sigma_X)}"
assert np.allclose(Sigma_X, np.transpose(Sigma_X)), "a covariance matrix is symmetric"
assert np.all(np.linalg.eigvalsh(Sigma_X - 0.25 * np.eye(2)) > -1e-12), (
    "Cov X = Γ + (between-component part) ⪰ Γ = 0.25 I: an eigenvalue is below 0.25")
assert isinstance(R_aff, float) and isinstance(R_lin, float)
assert R_aff < R_lin - 1e-6, (
    "the mean m̄ = Σ_k π_k m_k is not 0 here, so the affine floor must be strictly below the "
    "linear one: did you use E[XXᵀ] in place of Cov X?")

# %%
# HIDDEN
# Cov X = E[XXᵀ] − m̄m̄ᵀ (another route than the law of total covariance) and gmmlib's closed
# forms of both floors; tolerance 1e-9 relative: the hand computation is exact up to round-off
# (~1e-15), and the near miss (E[XXᵀ] for Cov X) is 0.34 away on R_aff
from gmmlib.denoising import best_affine_denoiser, best_linear_denoiser

_w = np.array([0.2, 0.3, 0.5])
_m = np.array([[2.0, 0.0], [0.0, 2.0], [1.0, -1.0]])
_second = 0.25 * np.eye(2) + np.einsum("k,ki,kj->ij", _w, _m, _m)
_cov = _second - np.outer(_w @ _m, _w @ _m)
assert np.allclose(Sigma_X, _cov, rtol=0, atol=1e-9), "Sigma_X is not Cov X"
_prior = GaussianMixture.isotropic(_w, _m, 0.25)
_R_aff, _R_lin = best_affine_denoiser(_prior, 1.3)[2], best_linear_denoiser(_prior, 1.3)[1]
assert abs(R_aff - _R_aff) <= 1e-9 * _R_aff, "R_aff is not the affine floor"
assert abs(R_lin - _R_lin) <= 1e-9 * _R_lin, "R_lin is not the linear floor"

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q3
# points: 3

# %% [markdown]
# **Question 3** (a variant of Exercise ex-08-unequal-norms, derivation). Unequal norms *and*
# unequal weights: $\pi = (0.3, 0.7)$, $m_1 = (2, 1)$, $m_2 = (-1, 0)$, $\gamma = 0.5$, $\xi = 1$,
# $\nu^2 = \gamma^2 + \xi^2$, and the head $U = I/\nu^2$ on the noisy prompt (`unequal` below).
# Along the line of the means, $z = t\Delta/\|\Delta\|^2$ with $\Delta = m_1 - m_2$ (so that
# $\Delta^\top z = t$), give `gate_gap`, the largest gate error $|\alpha_1(z) - \beta_1(z)|$
# between the attention gates and the posterior, and `t_star`, the $t$ where it is attained
# (floats, each to within $10^{-6}$). A closed form or the chapter's maximisation both serve.

# %% [raw]
# # BEGIN SOLUTION

# %%
gamma, xi = 0.5, 1.0
nu2 = gamma**2 + xi**2
m1, m2 = np.array([2.0, 1.0]), np.array([-1.0, 0.0])
unequal = noisy_mixture(GaussianMixture.isotropic([0.3, 0.7], [m1, m2], gamma**2), xi)
# BEGIN SOLUTION
# logit differences along the line: attention c₀ + t/ν², Bayes c₀ + t/ν² − δ
shift = (m1 @ m1 - m2 @ m2) / (2 * nu2)  # δ, the missing offset
c0 = np.log(0.3 / 0.7)
# max over x of σ(x) − σ(x − δ) is at x = δ/2: σ(δ/2) − σ(−δ/2) = tanh(δ/4)
# END SOLUTION
gate_gap = float(np.tanh(shift / 4))  # SOLUTION
t_star = float(nu2 * (shift / 2 - c0))  # SOLUTION

# %% [raw]
# # END SOLUTION

# %% tags=["near-miss"]
# the largest gap placed at the balanced switch x = δ/2, the log-weights c₀ forgotten
t_star = float(nu2 * shift / 2)

# %% tags=["book-method"]
# the chapter's method: Brent's maximisation of the gate error along the line, xatol 1e-9
Delta = m1 - m2


def gate_error(t):
    z = t * Delta[None] / (Delta @ Delta)
    alpha = attention_gates(unequal, z, np.eye(2) / nu2)[0, 0]
    return abs(alpha - unequal.posterior(z)[0, 0])


best = minimize_scalar(lambda t: -gate_error(t), bounds=(-20, 20), method="bounded",
                       options={"xatol": 1e-9})
gate_gap, t_star = float(gate_error(best.x)), float(best.x)

# %% [raw]
# # BEGIN TESTS

# %%
assert isinstance(gate_gap, float) and isinstance(t_star, float)
assert 0 < gate_gap < 1, "a difference of two probabilities lies in (0, 1) here"
_D = np.array([3.0, 1.0])
_z = t_star * _D[None] / (_D @ _D)
_a = attention_gates(unequal, _z, np.eye(2) / nu2)[0, 0]
_b = unequal.posterior(_z)[0, 0]
assert abs(_a + _b - 1) < 1e-4, (
    f"at t_star the gates are α₁ = {_a:.4f} and β₁ = {_b:.4f}: where |σ(x) − σ(x − δ)| is "
    "largest they sit symmetrically about ½ (α₁ + β₁ = 1), so t_star is not the maximiser")
assert abs(gate_gap - abs(_a - _b)) < 1e-6, "gate_gap is not the gate error at t_star"

# %%
# HIDDEN
# the closed forms: with δ = (‖m₁‖² − ‖m₂‖²)/(2ν²) and c₀ = log(π₁/π₂), the gap is
# σ(δ/2) − σ(−δ/2) = tanh(δ/4) at c₀ + t/ν² = δ/2. Tolerances 1e-6: above the error of the
# chapter's Brent maximisation (~1e-16 on the value, ~3e-8 on the maximiser, where the maximum
# is flat), and the near misses are 0.28 (tanh(δ/2)) and 1.06 (c₀ forgotten) away
_delta = (5.0 - 1.0) / (2 * 1.25)
assert abs(gate_gap - np.tanh(_delta / 4)) <= 1e-6, "gate_gap is not the largest gate error"
assert abs(t_star - 1.25 * (_delta / 2 - np.log(3 / 7))) <= 1e-6, "t_star is not the maximiser"

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
# **Question 4** (free response; on Question 3 and prop-08-noisy-prompt). In a few sentences:
# (a) why does the largest gate error of Question 3 not depend on the weights $\pi$, while the
# place $t^\star$ where it occurs does? (b) Why can no interaction matrix $U$ of a single head
# on the noisy prompt make its gates equal to the Bayes gates for these unequal norms? Say what
# each gate is as a function of $z$.

# %% [raw]
# # BEGIN SOLUTION

# %% [markdown]
# **Reference answer.** (a) For two components each gate is the logistic function of a logit
# difference. Along the line of the means the attention logit difference is
# $c_0 + t/\nu^2$ and the Bayes one is $c_0 + t/\nu^2 - \delta$, with
# $c_0 = \log(\pi_1/\pi_2)$ and $\delta = (\|m_1\|^2 - \|m_2\|^2)/(2\nu^2)$. In $x = c_0 + t/\nu^2$
# the gap is $|\sigma(x) - \sigma(x - \delta)|$, whose maximum over $x$,
# $\sigma(\delta/2) - \sigma(-\delta/2) = \tanh(\delta/4)$, does not involve $c_0$. The weights
# only translate both curves along the line: the maximum sits at $x = \delta/2$, that is at
# $t^\star = \nu^2(\delta/2 - c_0)$.
# (b) By prop-08-noisy-prompt the gate logit difference of a head is $c_0 + \Delta^\top Uz$: an
# affine function of $z$ whose constant term is $c_0$ for every $U$. The Bayes logit difference is
# $c_0 + \Delta^\top z/\nu^2 - \delta$. For two components the gates are $\sigma$ of the logit
# difference, and $\sigma$ is one-to-one, so equal gates for every $z$ need equal logit
# differences: the same slope ($U^\top\Delta = \Delta/\nu^2$) and the same constant, which would
# need $\delta = 0$, i.e. equal norms. A head's gates have no query-independent offset besides
# $\log\pi_k$: that is the first obstruction of the chapter.
#
# **Rubric** (4 points).
# - (a) 1 point: along the line both logit differences have the same slope and differ by the
#   constant $\delta$ (equivalently: the gates are the Bayes gates at a shifted query).
# - (a) 1 point: the weights add the same $c_0$ to both, which translates the gap and leaves its
#   maximum $\tanh(\delta/4)$ unchanged; the place moves with $c_0$.
# - (b) 1 point: a head's logit difference is $c_0 + \Delta^\top Uz$, with no other constant term
#   (prop-08-noisy-prompt), whatever $U$.
# - (b) 1 point: equal gates need equal logit differences (σ is one-to-one), so the constant
#   $-\delta\ne 0$ cannot be matched.

# %% [raw]
# # END SOLUTION

# %% [raw]
# # END QUESTION
