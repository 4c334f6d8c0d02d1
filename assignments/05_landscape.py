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
# name: 05_landscape
# run_tests: false
# init_cell: true
# check_all_cell: true
# export_cell: false
# generate: true
# strip_solutions_from_all_cells: true

# %% [markdown]
# # Homework 5: the optimisation landscape
#
# Variants of the exercises of Chapter 5 (*The optimisation landscape*): the chapter's
# solutions teach the method, not these numbers. Fill in each `...`, run the cell, then the
# `grader.check` cell below it: its public tests check a property every right answer has and
# say what is wrong. The grade also counts hidden tests, which check the values (to about
# 1e-8). Write the quadratures yourself (`gaussian_nodes` gives the nodes and weights of a
# Gauss–Hermite rule for one Gaussian); gmmlib's risk functions are what the grader checks you
# against.
#
# The setting of this homework is **C1′**: C1 of the chapter with the prior $\pi_+ = 0.7$
# ($d = 2$, $m_1 = (1, 0)$, $m_{-1} = (0, 1)$, $\Gamma = I$), so $w^* = (1, -1)$ and
# $b^* = s_0 = \log(0.7/0.3)$.

# %%
import numpy as np
from scipy.special import expit

from gmmlib.quadrature import gaussian_nodes

pi_pos = 0.7
m_pos, m_neg, G = np.array([1.0, 0.0]), np.array([0.0, 1.0]), np.eye(2)
s0 = np.log(pi_pos / (1 - pi_pos))
w_star, b_star = np.array([1.0, -1.0]), s0
sig = expit(s0)  # σ(s₀) = π₊

# %% [raw]
# # BEGIN QUESTION
# name: q1
# points: 2

# %% [markdown]
# **Question 1** (a variant of Exercise ex-05-which). In C1′, compute the excess risks
# $\tilde R - R^*$ of the three effective heads $(w, b, r, s)$ of `heads` below, by
# Gauss–Hermite quadrature of each class ($R = \sum_c\pi_c\,\mathbb E[\ell(c f(X))\mid Y = c]$,
# lem-05-quadrature, with $f(x) = w^\top x + b + r\sigma(s_0 + s^\top x)$): `excess`, shape
# `(3,)`, accurate to 1e-8.

# %% [raw]
# # BEGIN SOLUTION

# %%
heads = [(w_star, b_star, 0.0, np.array([2.0, -1.0])),
         (w_star, b_star - 1.5 * sig, 1.5, np.array([0.4, 0.3])),
         (w_star, b_star - 0.75, 1.5, np.zeros(2))]


def risk(w, b, r, s, n=40):
    # BEGIN SOLUTION
    total = 0.0
    for c, m, p in ((1.0, m_pos, pi_pos), (-1.0, m_neg, 1 - pi_pos)):
        X, wts = gaussian_nodes(m, G, n)
        f = X @ w + b + r * expit(s0 + X @ s)
        total += p * (wts @ np.logaddexp(0.0, -c * f))
    return total
    # END SOLUTION


R_star = risk(w_star, b_star, 0.0, np.zeros(2))  # SOLUTION
excess = np.array([risk(*h) - R_star for h in heads])  # SOLUTION

# %% [raw]
# # END SOLUTION

# %% tags=["near-miss"]
# the gate σ(sᵀx) without its offset s₀ (as if π₊ = ½)
def risk(w, b, r, s, n=40):  # noqa: F811
    total = 0.0
    for c, m, p in ((1.0, m_pos, pi_pos), (-1.0, m_neg, 1 - pi_pos)):
        X, wts = gaussian_nodes(m, G, n)
        f = X @ w + b + r * expit(X @ s)
        total += p * (wts @ np.logaddexp(0.0, -c * f))
    return total


excess = np.array([risk(*h) - risk(w_star, b_star, 0.0, np.zeros(2)) for h in heads])

# %% tags=["book-method"]
# the chapter's rule of lem-05-quadrature: two correlated Gauss–Hermite axes for
# T = (wᵀX, sᵀX), 40 nodes per axis (risk_two_directions of the chapter)
def risk_two_directions(w, b, r, s, n=40):
    z, wz = np.polynomial.hermite_e.hermegauss(n)
    Z = np.stack(np.meshgrid(z, z))
    W = np.outer(wz, wz) / (2 * np.pi)
    P = np.stack([w, s])
    C = P @ G @ P.T
    # s = 0 (the Bayes head): the gate is constant and T₂ has no spread
    Lc = np.linalg.cholesky(C) if np.any(s) else np.diag([np.sqrt(C[0, 0]), 0.0])
    R = 0.0
    for c, m, p in ((1, m_pos, pi_pos), (-1, m_neg, 1 - pi_pos)):
        T1, T2 = (P @ m)[:, None, None] + np.einsum("ij,jkl->ikl", Lc, Z)
        R += p * np.sum(W * np.logaddexp(0.0, -c * (T1 + b + r * expit(s0 + T2))))
    return R


excess = np.array([risk_two_directions(*h) - risk_two_directions(w_star, b_star, 0.0, np.zeros(2))
                   for h in heads])

# %% [raw]
# # BEGIN TESTS

# %%
assert np.shape(excess) == (3,), "excess must have shape (3,): one excess risk per head"
assert np.all(np.isfinite(excess)), "excess must be finite: check the quadrature"
assert np.all(excess > -1e-10), \
    "an excess risk cannot be negative: R* is the least logistic risk (prop-04-bayes-score)"

# %%
# HIDDEN
# gmmlib's adaptive rule (graded Gauss–Legendre panels along the gate, 8 nodes per panel; a
# different rule from Gauss–Hermite), which agrees with the 40² Gauss–Hermite rule to 1e-13
# here (widths √2 and 0.5 are moderate). Tolerance 1e-8: 1e5 times the rules' disagreement; the
# near miss (gate without s₀) is off by 2.8e-3 and 6.2e-3 on heads 2 and 3, 2.8e5 tolerances
from gmmlib.lda import EffectiveParams, LDAModel, population_risk

_M = LDAModel(0.7, [1.0, 0.0], [0.0, 1.0], np.eye(2))
_w, _b = _M.bayes_params()
_sg = expit(_M.s0)
_heads = [EffectiveParams(_w, _b, 0.0, np.array([2.0, -1.0])),
          EffectiveParams(_w, _b - 1.5 * _sg, 1.5, np.array([0.4, 0.3])),
          EffectiveParams(_w, _b - 0.75, 1.5, np.zeros(2))]
_Rs = _M.bayes_risk(8, rule="adaptive")
_ref = np.array([population_risk(_M, h, 8, rule="adaptive") - _Rs for h in _heads])
assert np.all(np.abs(np.asarray(excess) - _ref) <= 1e-8)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q2
# points: 2

# %% [markdown]
# **Question 2** (a variant of Exercise ex-05-kernel-sym). In C1′ the means are not
# symmetric, so $J(\theta)^\top$ is injective unless $v_{21} = 0$ (prop-05-adjoint). Take the head
# `theta` below, which has $v_{21} = 0$. Using the formula for $J^\top\phi$ in the proof of
# prop-05-adjoint, find the vector `phi` $= (\phi_w, \phi_b, \phi_r, \phi_s)$ (shape `(6,)`,
# in the order $(w, b, r, s)$) with $\phi_r = 1$ and $J(\theta)^\top\phi = 0$.

# %% [raw]
# # BEGIN SOLUTION

# %%
U11 = np.array([[1.0, 0.5], [-0.3, 0.8]])
u21, v21, v22 = np.array([0.2, -0.4]), np.zeros(2), 0.7
theta = (U11, u21, v21, v22)  # the blocks (U₁₁, u₂₁, v₂₁, v₂₂)
# BEGIN SOLUTION
# the blocks of Jᵀφ: u₂₁ gives φ_s = 0, v₂₂ gives φ_b = 2φ_r, v₂₁ gives ΓU₁₁φ_w = −(m₁ + m₋₁)φ_r
phi_w = -np.linalg.solve(G @ U11, m_pos + m_neg)
# END SOLUTION
phi = np.concatenate([phi_w, [2.0, 1.0], np.zeros(2)])  # SOLUTION

# %% [raw]
# # END SOLUTION

# %% tags=["near-miss"]
# U₁₁ᵀ for U₁₁ (the paper's block convention, the slip the chapter's dictionary guards against)
phi = np.concatenate([-np.linalg.solve(G @ U11.T, m_pos + m_neg), [2.0, 1.0], np.zeros(2)])

# %% tags=["book-method"]
# the chapter's route: the kernel of Jᵀ from the SVD of gmmlib's attention_jacobian
from gmmlib.lda import LDABlocks, LDAModel, attention_jacobian

_J = attention_jacobian(LDAModel(0.7, m_pos, m_neg, G), LDABlocks(U11, u21, v21, v22))
phi = np.linalg.svd(_J.T)[2][-1]
phi = phi / phi[3]

# %% [raw]
# # BEGIN TESTS

# %%
assert np.shape(phi) == (6,), "phi must have shape (6,), in the order (φ_w, φ_b, φ_r, φ_s)"
assert phi[3] == 1, "normalise phi so that φ_r = phi[3] = 1"
assert np.allclose(phi[4:], 0, atol=1e-12), \
    "the u₂₁ block of Jᵀφ is 2φ_s: φ_s = phi[4:] must vanish"

# %%
# HIDDEN
# the kernel of Jᵀ from the SVD of gmmlib's attention_jacobian (itself tested against finite
# differences), normalised to φ_r = 1: one singular value is ~1e-17, the next 0.71, so the kernel
# is a line and its vector is accurate to ~1e-15. Tolerance 1e-9; the near miss (U₁₁ᵀ) is off
# by 0.84 in φ_w
from gmmlib.lda import LDABlocks, LDAModel, attention_jacobian

_J = attention_jacobian(LDAModel(0.7, [1.0, 0.0], [0.0, 1.0], np.eye(2)),
                        LDABlocks([[1.0, 0.5], [-0.3, 0.8]], [0.2, -0.4], [0.0, 0.0], 0.7))
_sv = np.linalg.svd(_J.T)
assert _sv[1][-1] < 1e-12 < _sv[1][-2]
_phi = _sv[2][-1] / _sv[2][-1][3]
assert np.allclose(np.asarray(phi, dtype=float), _phi, rtol=0, atol=1e-9)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q3
# points: 2

# %% [markdown]
# **Question 3** (a variant of Exercise ex-05-zeta-theta and prop-05-zeta). Along the diverging
# minimising sequence $\zeta_\rho$ of prop-05-zeta in C1′ with $q = (0.5, 1)$, the excess risk
# decays like $K/\rho^2$. Compute the constant $K$ of eq-05-zeta (`K_zeta`, a float, accurate
# to a relative 1e-8) by Gauss–Hermite quadrature in $x$-space, with $\sigma''(s_0)$ computed
# from $\sigma' = \sigma(1-\sigma)$.

# %% [raw]
# # BEGIN SOLUTION

# %%
q_dir = np.array([0.5, 1.0])
sig2 = sig * (1 - sig) * (1 - 2 * sig)  # SOLUTION
moment = 0.0  # SOLUTION
# BEGIN SOLUTION
for m, p in ((m_pos, pi_pos), (m_neg, 1 - pi_pos)):
    X, wts = gaussian_nodes(m, G, 60)
    f = X @ w_star + b_star
    moment += p * (wts @ (expit(f) * expit(-f) * (X @ q_dir) ** 4))
# END SOLUTION
K_zeta = float(sig2**2 / 8 * moment)  # SOLUTION

# %% [raw]
# # END SOLUTION

# %% tags=["near-miss"]
# the ½ of the second-order excess ½E[σ'(f*)u²] forgotten: σ''(s₀)²/4
K_zeta = float(sig2**2 / 4 * moment)

# %% tags=["book-method"]
# the chapter's computation: gmmlib's x-space rule at 30 and 60 nodes (converged_quadrature)
from gmmlib.runtime import converged_quadrature
from gmmlib.lda import LDAModel
from gmmlib.quadrature import expectation

_M = LDAModel(0.7, m_pos, m_neg, G)
_moment = converged_quadrature(lambda n: expectation(
    lambda X: expit(_M.bayes_score(X)) * expit(-_M.bayes_score(X)) * (X @ q_dir) ** 4,
    _M.class_mixture(), n), 30, 60)
K_zeta = float(sig2**2 / 8 * _moment.value)

# %% [raw]
# # BEGIN TESTS

# %%
assert isinstance(K_zeta, float) and K_zeta > 0, \
    "K must be a positive float: an expectation of σ'(f*)(qᵀX)⁴ > 0 times σ''(s₀)²/8"
# given the class, qᵀX ~ N(qᵀm_c, |q|²): E(qᵀX)⁴ = μ⁴ + 6μ²v + 3v²
_mu, _v = np.array([q_dir @ m_pos, q_dir @ m_neg]), q_dir @ q_dir
_m4 = np.array([pi_pos, 1 - pi_pos]) @ (_mu**4 + 6 * _mu**2 * _v + 3 * _v**2)
_s2 = sig * (1 - sig) * (1 - 2 * sig)
assert K_zeta <= _s2**2 / 8 * _m4 / 4, \
    "K cannot exceed σ''(s₀)²/8 · ¼E[(qᵀX)⁴], since σ' ≤ ¼: check the constant in front"

# %%
# HIDDEN
# eq-05-zeta from the formula, with E[σ'(f*(X))(qᵀX)⁴] by gmmlib's expectation on the class
# mixture at 80 nodes per axis (a polynomial times a smooth weight: the 30-, 60- and 80-node
# rules agree to 1e-16). Independently, Richardson extrapolation of ρ²(R(ζ_ρ) − R*) over
# ρ = 10…640 gives the same to 1e-6 relative (see the report). Tolerance 1e-8 relative; the near
# miss (σ''²/4) is off by a factor 2
from gmmlib import GaussianMixture
from gmmlib.quadrature import expectation  # noqa: F811

_mix = GaussianMixture([0.7, 0.3], [[1.0, 0.0], [0.0, 1.0]], [np.eye(2), np.eye(2)])
_s = 0.7
_s2 = _s * (1 - _s) * (1 - 2 * _s)
_f = lambda X: X @ np.array([1.0, -1.0]) + np.log(0.7 / 0.3)
_mom = expectation(lambda X: expit(_f(X)) * expit(-_f(X)) * (X @ np.array([0.5, 1.0])) ** 4,
                   _mix, 80)
_K = _s2**2 / 8 * _mom
assert abs(K_zeta - _K) <= 1e-8 * _K

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
# **Question 4** (free response; thm-05-saddles). Let $\theta$ be a head with $v_{21} = 0$ and
# $U_{11}$ invertible, $\phi$ its kernel vector as in Question 2, and suppose the gradient of the
# effective risk is a multiple of it, $\nabla\tilde R(\Phi(\theta)) = c\,\phi$ with $c\neq0$ (such
# heads exist: the chapter builds one in C1; the head of Question 2 is not one). (a) Show that
# $\theta$ is then a
# critical point of $R = \tilde R\circ\Phi$. (b) Is it a minimum? Explain which direction of
# $\theta$ lowers the risk, and why it must move $U_{11}$ and $v_{21}$ together. (c) Why does this
# not contradict thm-05-landscape, which says $\tilde R$ has no spurious critical point?
# Four to six sentences.

# %% [raw]
# # BEGIN SOLUTION

# %% [markdown]
# **Reference answer.** (a) By the chain rule $\nabla_\theta R = J(\theta)^\top\nabla\tilde R =
# c\,J(\theta)^\top\phi = 0$, so $\theta$ is critical although $\nabla\tilde R\neq0$. (b) It is not
# a minimum: $\nabla\tilde R\neq0$ means $f_\theta\neq f^*$ (every critical point of $\tilde R$ is
# a global minimum, and $\Phi(\theta)$ is not critical), and thm-05-saddles shows it is a strict
# saddle. Take $\dot v\neq0$ and $D_t = (A_t, -\tfrac12A_t^\top\Delta, \dot v, 0)$ with $A_t =
# t\,\Gamma\dot v\,\phi_w^\top$ (here $c\,\phi_w$ is the $w$-block of the gradient): $w =
# U_{11}^\top\Gamma v_{21}$ is bilinear, so moving $U_{11}$ and $v_{21}$ together changes $w$ at
# second order by $\varepsilon^2A_t^\top\Gamma\dot v$, and the curvature along $D_t$ is the
# Gauss–Newton term (independent of $t$) plus $2tc\|\phi_w\|^2\|\Gamma\dot v\|^2$
# (eq-05-curvature), negative for $t$ of the sign opposite to $c$ and large enough. Moving $U_{11}$
# alone or $v_{21}$ alone has no such term: the second derivative of $\Phi$ along a direction is
# non-zero only if it moves both blocks ($\Phi$ is affine in each block separately). (c)
# thm-05-landscape is about critical points of $\tilde R$ in $(w, b, r, s)$; here $\Phi(\theta)$ is
# not one. The extra critical point comes from the reparameterisation: at $v_{21} = 0$, $J$ is not
# onto (prop-05-adjoint), so $J^\top$ can kill a non-zero gradient.
#
# **Rubric** (3 points).
# - 1 point: $\nabla_\theta R = J^\top\nabla\tilde R = cJ^\top\phi = 0$ (the chain rule and the
#   kernel of $J^\top$).
# - 1 point: not a minimum, a strict saddle, with a descent direction coupling $U_{11}$ and
#   $v_{21}$, justified by the bilinearity of $w = U_{11}^\top\Gamma v_{21}$ (the second-order
#   term of the map, curvature linear in $t$); half a point for "saddle" without the reason.
# - 1 point: no contradiction: $\Phi(\theta)$ is not a critical point of $\tilde R$; the
#   critical point is created by the singular Jacobian at $v_{21} = 0$.

# %% [raw]
# # END SOLUTION

# %% [raw]
# # END QUESTION
