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
# name: 09_iterated_denoiser
# run_tests: false
# init_cell: true
# check_all_cell: true
# export_cell: false
# generate: true
# strip_solutions_from_all_cells: true

# %% [markdown]
# # Homework 9: iterating the denoiser
#
# Variants of the exercises of Chapter 9 (*Iterating the denoiser: a clustering transition*):
# the chapter's solutions teach the method, not these answers. Replace each `...` with your
# answer, run the cell, then the `grader.check` cell below it: its public tests check values and
# properties a right answer must have, and say what is wrong when one fails. The grade also
# counts hidden tests, which compare your values with independent computations. The last
# question asks *why*, in words; it is graded by hand. Use `gmmlib` for the pieces around an
# answer (mixtures, the denoiser), not for the quantity a question asks you to compute.

# %%
import math

import numpy as np

from gmmlib import GaussianMixture
from gmmlib.denoising import bayes_denoiser, iterate_denoiser

# %% [raw]
# # BEGIN QUESTION
# name: q1
# points: 2

# %% [markdown]
# **Question 1** (a variant of Exercise ex-09-warmup-gamma, warm-up). Two balanced Gaussian
# components with spread $\gamma = 0.7$, noise $\xi = 0.5$ and half-distance
# $\|\Delta\|/2 = 0.8$. Compute `nu` $= \nu$, the separation `lam` $= \lambda$ of
# prop-09-modes and the rate `rate` $= \Psi'(0)$ at which the iterates approach the midpoint along
# $\Delta$ (floats), and set `collapse` (a bool) to whether every iterate collapses to the
# midpoint.

# %% [raw]
# # BEGIN SOLUTION

# %%
gamma, xi, half = 0.7, 0.5, 0.8
nu = math.sqrt(gamma**2 + xi**2)  # SOLUTION
lam = half / nu  # SOLUTION
rate = 1 - (xi**2 / nu**2) * (1 - lam**2)  # SOLUTION
collapse = bool(lam <= 1)  # SOLUTION

# %% [raw]
# # END SOLUTION

# %% tags=["near-miss"]
# the point-mass rate λ² per step (the spread γ of the components forgotten in the rate)
rate = lam**2

# %% tags=["book-method"]
# the chapter's measurement: iterate the 2-D denoiser and take u_(t+1)/u_t at t = 100
prior = GaussianMixture.isotropic([0.5, 0.5], [[half, 0.0], [-half, 0.0]], gamma**2)
u = iterate_denoiser(prior, xi, np.array([[0.5, 0.3]]), 101)[:, 0, 0]  # Δ along the 1st axis
rate = float(u[101] / u[100])

# %% [raw]
# # BEGIN TESTS

# %%
assert all(isinstance(x, float) for x in (nu, lam, rate)), "nu, lam and rate must be floats"
assert isinstance(collapse, (bool, np.bool_)), "collapse must be a bool"
assert lam**2 < rate < 1, (
    "with γ > 0 and λ < 1 the step along Δ mixes staying put (weight γ²/ν²) with the point-mass "
    "step of slope λ², so its rate lies strictly between λ² and 1")

# %%
# HIDDEN
# closed forms: ν² = γ² + ξ² = 0.74, λ = 0.8/ν, Ψ'(0) = 1 − (ξ²/ν²)(1 − λ²). Tolerances: 1e-12
# for ν and λ (round-off); 1e-5 for the rate, above the error of the chapter's measurement
# (u_(t+1)/u_t at t = 100 of the 2-D iterates: ~2e-6, the O(u_t²) term) and 9000 times below
# the near miss λ² (0.09 away)
_nu2 = 0.7**2 + 0.5**2
_lam = 0.8 / math.sqrt(_nu2)
assert abs(nu - math.sqrt(_nu2)) <= 1e-12 and abs(lam - _lam) <= 1e-12, "nu or lam is off"
assert abs(rate - (1 - 0.25 / _nu2 * (1 - _lam**2))) <= 1e-5, "rate is not Ψ'(0)"
assert collapse, "λ < 1 here"

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q2
# points: 3

# %% [markdown]
# **Question 2** (a variant of Exercise ex-09-critical, computation). Critical slowing down with
# Gaussian components: $\gamma = \xi = 1$ and half-distance $\|\Delta\|/2 = \sqrt2$, so that
# $\lambda = 1$ (prop-09-modes). Iterate the reduced map $u\mapsto\Psi(u)$ of prop-09-modes
# from $u_1 = 0.9$ and give `t_hit`, the first step $t$ (steps numbered from $t = 1$) with
# $u_t < 10^{-2}$ (an int), and `t_pred`, the count that the asymptotic law
# $u_t^{-2}\approx u_1^{-2} + \frac{2\xi^2}{3\nu^2}(t - 1)$ predicts (a float, not rounded).

# %% [raw]
# # BEGIN SOLUTION

# %%
# BEGIN SOLUTION
def first_below(u=0.9, level=1e-2):
    """The first step t with u_t < level, for the reduced map of prop-09-modes at λ = 1,
    γ² = ξ² = ν²/2: Ψ(u) = ½u + ½tanh(u)."""
    t = 1
    while u >= level:
        u, t = 0.5 * u + 0.5 * math.tanh(u), t + 1
    return t


# END SOLUTION
t_hit = first_below()  # SOLUTION
t_pred = 1 + 1.5 * 2 * (1e4 - 0.9**-2)  # SOLUTION

# %% [raw]
# # END SOLUTION

# %% tags=["near-miss"]
# the point-mass recursion u ↦ tanh(u) and its law u_t⁻² ≈ u₁⁻² + (2/3)(t − 1): γ forgotten
u, t_hit = 0.9, 1
while u >= 1e-2:
    u, t_hit = math.tanh(u), t_hit + 1
t_pred = 1 + 1.5 * (1e4 - 0.9**-2)

# %% tags=["book-method"]
# the chapter's method: the scalar recursion over a stored path (here of the reduced map of
# prop-09-modes), the first index below 10⁻²
u_path = np.empty(40_000)
u_path[0] = 0.9
for i in range(1, len(u_path)):
    u_path[i] = 0.5 * u_path[i - 1] + 0.5 * math.tanh(u_path[i - 1])
t_hit = int(np.argmax(u_path < 1e-2)) + 1
t_pred = 1 + 3 * (1e4 - 0.9**-2)

# %% [raw]
# # BEGIN TESTS

# %%
assert isinstance(t_hit, (int, np.integer)), "t_hit must be an int"
assert isinstance(t_pred, float), "t_pred must be a float"
assert abs(t_hit - t_pred) < 0.01 * t_pred, (
    f"the count {t_hit} and the prediction {t_pred:.1f} differ by more than 1 %: the law "
    "u_t⁻² ≈ u₁⁻² + (2ξ²/(3ν²))(t − 1) should predict the count to within a few steps")

# %%
# HIDDEN
# the recursion u ↦ (γ²/ν²)u + (ξ²/ν²)tanh(λ²u), γ = ξ = λ = 1, run here (exact integers; the
# 2-D denoiser iterated from 0.9·Δ/2 gives the same count, 30002); the prediction to 1e-6
# (round-off); the near miss (point masses) is off by ~15000 steps
def _count():
    _u, _t = 0.9, 1
    while _u >= 1e-2:
        _u, _t = 0.5 * _u + 0.5 * math.tanh(_u), _t + 1
    return _t


assert t_hit == _count(), "t_hit is not the first step below 10⁻² of the reduced map"
assert abs(t_pred - (1 + 3 * (1e4 - 1 / 0.81))) <= 1e-6, "t_pred does not follow the law"

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q3
# points: 3

# %% [markdown]
# **Question 3** (a variant of Exercise ex-09-unbalanced, derivation). Two point masses
# $m_1 = (0, 2)$ (weight $\pi_1$) and $m_2 = (0, -2)$ (weight $1 - \pi_1$), noise $\xi = 1.6$.
# Give `pi_crit` (a float): the weight $\pi_1$ of the upper mass below which the iterated
# denoiser has a single fixed point on the line of the means (every start ends near the lower
# mass), and above which (up to $\frac12$) it has three. A closed form or the chapter's bisection
# both serve; give it to within $10^{-6}$.

# %% [raw]
# # BEGIN SOLUTION

# %%
xi = 1.6
# BEGIN SOLUTION
lam_3 = 2.0 / xi  # λ = ‖Δ‖/(2ξ)
u_sn = math.sqrt(1 - 1 / lam_3**2)  # where φ(u) = artanh(u) − λ²u has its minimum
b_c = math.atanh(u_sn) - lam_3**2 * u_sn  # b = ½ log(π₁/π₂) at the saddle-node
# END SOLUTION
pi_crit = 1 / (1 + math.exp(-2 * b_c))  # SOLUTION

# %% [raw]
# # END SOLUTION

# %% tags=["near-miss"]
# b read as log(π₁/π₂), not half of it: π₁ = σ(b_c) instead of σ(2b_c)
pi_crit = 1 / (1 + math.exp(-b_c))

# %% tags=["book-method"]
# the chapter's method: bisection on b of the number of fixed points on the line of the means
# (sign changes of e₂ᵀf(ye₂) − y on a grid of spacing 10⁻³), 26 halvings
y_sn = np.linspace(-3, 3, 6000)


def n_fixed_points(b):
    p1 = 1 / (1 + np.exp(-2 * b))
    prior = GaussianMixture.isotropic([p1, 1 - p1], [[0.0, 2.0], [0.0, -2.0]], 0.0)
    z = np.column_stack([np.zeros_like(y_sn), y_sn])
    return np.count_nonzero(np.diff(np.sign(bayes_denoiser(prior, xi, z)[:, 1] - y_sn)))


lo, hi = -(lam_3**2), 0.0
for _ in range(26):
    mid = (lo + hi) / 2
    lo, hi = (mid, hi) if n_fixed_points(mid) == 1 else (lo, mid)
pi_crit = float(1 / (1 + np.exp(-(lo + hi))))

# %% [raw]
# # BEGIN TESTS

# %%
assert isinstance(pi_crit, float) and 0 < pi_crit < 0.5, (
    "pi_crit must be a float below ½: the fixed point that disappears is the lighter mass's")
_u = np.linspace(-1 + 1e-9, 1 - 1e-9, 20_001)


def _n_fixed(p1):
    _b = 0.5 * math.log(p1 / (1 - p1))
    return np.count_nonzero(np.diff(np.sign(np.tanh(1.5625 * _u + _b) - _u)))


assert _n_fixed(pi_crit + 0.01) == 3, "just above pi_crit the map should have three fixed points"
assert _n_fixed(pi_crit - 0.01) == 1, (
    "just below pi_crit the upper fixed point should be gone (one fixed point left): check how "
    "the weights enter the logit difference, b = ½ log(π₁/π₂)")

# %%
# HIDDEN
# the saddle-node of u = tanh(λ²u + b): b_c = artanh(u_sn) − λ²u_sn, u_sn = √(1 − 1/λ²), here
# λ = 1.25, and π₁ = σ(2b_c). Tolerance 1e-6: above the error of the chapter's bisection on the
# 2-D denoiser (~1.3e-8 in π₁) and 59000 times below the near miss σ(b_c) (0.059 away)
_lam = 2.0 / 1.6
_usn = math.sqrt(1 - 1 / _lam**2)
_bc = math.atanh(_usn) - _lam**2 * _usn
assert abs(pi_crit - 1 / (1 + math.exp(-2 * _bc))) <= 1e-6, "pi_crit is off the saddle-node"

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
# **Question 4** (free response; on Question 1 and prop-09-modes). In Question 1 the point-mass
# separation $\|\Delta\|/(2\xi) = 1.6$ exceeds 1, yet the iterates collapse. In a few sentences:
# (a) why is the threshold set by $\nu = \sqrt{\gamma^2 + \xi^2}$ and not by $\xi$? Use what one
# step of the iterated denoiser does to the noisy density $p_Z$. (b) Why is the collapse slower
# than the point-mass rate $\lambda^2$ per step?

# %% [raw]
# # BEGIN SOLUTION

# %% [markdown]
# **Reference answer.** (a) By Tweedie's formula one step is $f(z) = z + \xi^2\nabla\log p_Z(z)$, a
# gradient-ascent step on $\log p_Z$ (for $\gamma = 0$ a mean-shift step; for $\gamma > 0$ the
# convex combination $(\gamma^2/\nu^2)z + (\xi^2/\nu^2)\times$(the mean-shift point)):
# $p_Z(f(z))\ge p_Z(z)$, with equality only at
# fixed points, so the fixed points are the critical points of $p_Z$ and the attractors its
# modes. The noisy observations follow
# $\frac12\mathcal N(m_1,\nu^2I) + \frac12\mathcal N(m_2,\nu^2I)$: the spread $\gamma$ of the
# components adds to the noise. A balanced mixture of two Gaussians with common variance $\nu^2$
# is bimodal if and only if its means are more than $2\nu$ apart, i.e.
# $\lambda = \|\Delta\|/(2\nu) > 1$. Here $\lambda = 0.8/0.86\approx0.93 < 1$: $p_Z$ is
# unimodal, with its mode at the midpoint, and every run climbs to it.
# (b) Along $\Delta$ the step is $\Psi(u) = (\gamma^2/\nu^2)u + (\xi^2/\nu^2)\tanh(\lambda^2u)$: the
# Bayes denoiser keeps the fraction $\Gamma S^{-1} = \gamma^2/\nu^2$ of the observation and moves
# the rest, $\xi^2/\nu^2$, by the point-mass map. Its slope at 0 is the average
# $\gamma^2/\nu^2 + (\xi^2/\nu^2)\lambda^2 = 1 - (\xi^2/\nu^2)(1 - \lambda^2)$, which lies
# between $\lambda^2$ and 1, so each step contracts less than $\lambda^2$.
#
# **Rubric** (4 points).
# - (a) 1 point: one step is a gradient step on $\log p_Z$ (Tweedie / mean shift), so the
#   attractors are the modes of $p_Z$.
# - (a) 1 point: $p_Z$ is a mixture of $\mathcal N(m_k,\nu^2I)$ with $\nu^2 = \gamma^2 + \xi^2$,
#   bimodal iff $\|\Delta\| > 2\nu$ (here it is not).
# - (b) 1 point: the step keeps the fraction $\gamma^2/\nu^2$ of $u$ (the linear term
#   $\Gamma S^{-1}z$) and applies the point-mass map with weight $\xi^2/\nu^2$.
# - (b) 1 point: hence the slope $1 - (\xi^2/\nu^2)(1 - \lambda^2)$, strictly between $\lambda^2$
#   and 1 when $\gamma > 0$ and $\lambda < 1$.

# %% [raw]
# # END SOLUTION

# %% [raw]
# # END QUESTION
