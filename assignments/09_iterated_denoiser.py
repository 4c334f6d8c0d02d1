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
# Questions from the exercises of Chapter 9 (*Iterating the denoiser: a clustering transition*).
# Fill in each `...`, run the cell, then the `grader.check` cell below it: it runs the public
# tests (shape, type, a sanity bound). The grade also counts hidden tests, which check the
# values. Use `gmmlib` wherever it helps; keep the names the questions ask for.

# %%
import math

import numpy as np

from gmmlib import GaussianMixture
from gmmlib.denoising import iterate_denoiser, separation

# %% [raw]
# # BEGIN QUESTION
# name: q1
# points: 2

# %% [markdown]
# **Question 1** (Exercise ex-09-warmup-gamma, warm-up). Take two balanced Gaussian components
# with $\gamma = 0.6$, noise $\xi = 1$ and half-distance $\|\Delta\|/2 = 1.05$. Compute `nu`
# $= \nu$, the separation `lam` $= \lambda$ and the rate `rate` $= g'(0)$ at which the iterates
# approach the midpoint along $\Delta$ (prop-09-modes), all floats.

# %%
gamma, xi, half = 0.6, 1.0, 1.05
means = np.array([[half, 0.0], [-half, 0.0]])
nu = math.sqrt(gamma**2 + xi**2)  # SOLUTION
lam = separation(means, xi, gamma)  # SOLUTION
rate = 1 - (1 - lam**2) / nu**2  # SOLUTION

# %% tags=["near-miss"]
# the point-mass rate λ² per step (the spread γ of the components forgotten)
rate = lam**2

# %% [raw]
# # BEGIN TESTS

# %%
assert all(isinstance(x, float) for x in (nu, lam, rate))
assert 0 < lam < 1 and 0 < rate < 1

# %%
# HIDDEN
# ν and λ in closed form (1000 ulp); the rate measured by iterating the Bayes denoiser from
# 10⁻³ off the midpoint: the ratio of successive displacements after 60 steps, tolerance
# 10 × its last change plus 1000 ulp
tol = 1000 * np.finfo(float).eps
assert abs(nu - math.sqrt(1.36)) <= tol and abs(lam - 1.05 / math.sqrt(1.36)) <= tol
prior = GaussianMixture.isotropic([0.5, 0.5], [[1.05, 0.0], [-1.05, 0.0]], 0.36)
u = iterate_denoiser(prior, 1.0, np.array([[1e-3, 0.0]]), 60)[:, 0, 0]
ratios = u[1:] / u[:-1]
assert abs(rate - ratios[-1]) <= 10 * abs(ratios[-1] - ratios[-2]) + tol

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q2
# points: 2

# %% [markdown]
# **Question 2** (Exercise ex-09-warmup-perp, warm-up). With $\gamma = \xi$, give the factor
# `shrink` (a float) by which one step of the iterated denoiser multiplies the component
# $z_\perp$ of $z - \bar m$ orthogonal to $\Delta$, and `steps` (an int), the number of steps
# that bring it below $10^{-6}$ of its start.

# %%
shrink = 0.5  # SOLUTION
steps = math.ceil(math.log(1e6) / math.log(1 / shrink))  # SOLUTION

# %% tags=["near-miss"]
# the ratio of standard deviations γ/ν for the ratio of variances γ²/ν²
shrink = 1 / math.sqrt(2)
steps = math.ceil(math.log(1e6) / math.log(1 / shrink))

# %% [raw]
# # BEGIN TESTS

# %%
assert isinstance(shrink, float) and 0 <= shrink < 1
assert isinstance(steps, (int, np.integer)) and steps > 0

# %%
# HIDDEN
# the orthogonal coordinate of 30 steps of the Bayes denoiser (γ = ξ = 1, means (±1.2, 0)):
# each ratio within 1000 ulp of shrink, and the first step below 10⁻⁶ of the start
prior = GaussianMixture.isotropic([0.5, 0.5], [[1.2, 0.0], [-1.2, 0.0]], 1.0)
perp = iterate_denoiser(prior, 1.0, np.array([[0.4, 1.0]]), 30)[:, 0, 1]
assert np.all(np.abs(perp[1:] / perp[:-1] - shrink) <= 1000 * np.finfo(float).eps)
assert steps == int(np.argmax(np.abs(perp) < 1e-6 * abs(perp[0])))

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q3
# points: 2

# %% [markdown]
# **Question 3** (Exercise ex-09-critical, computation). At $\lambda = 1$ iterate
# $u_{t+1} = \tanh(u_t)$ from $u_1 = 0.9$. Give `t_hit`, the first step $t$ (steps numbered from
# $t = 1$) with $u_t < 10^{-2}$, and `t_hit_09`, the same count for $\lambda = 0.9$,
# $u_{t+1} = \tanh(\lambda^2u_t)$ (ints).

# %%
# BEGIN SOLUTION
def first_below(lam2, u=0.9, level=1e-2):
    t = 1
    while u >= level:
        u = math.tanh(lam2 * u)
        t += 1
    return t


# END SOLUTION
t_hit = first_below(1.0)  # SOLUTION
t_hit_09 = first_below(0.81)  # SOLUTION

# %% tags=["near-miss"]
# the asymptotic count 1 + (3/2)(10⁴ − u₁⁻²) rounded, and the linearised 0.81^(t−1)·0.9 < 10⁻²
t_hit = round(1 + 1.5 * (1e4 - 0.9**-2))
t_hit_09 = 1 + math.ceil(math.log(1e-2 / 0.9) / math.log(0.81))

# %% [raw]
# # BEGIN TESTS

# %%
assert all(isinstance(t, (int, np.integer)) for t in (t_hit, t_hit_09))
assert t_hit_09 < 100 < t_hit

# %%
# HIDDEN
# the recursion itself, run to its first step below 10⁻² (exact integers)
def _count(a, u=0.9):
    t = 1
    while u >= 1e-2:
        u = math.tanh(a * u)
        t += 1
    return t


assert t_hit == _count(1.0) and t_hit_09 == _count(0.81)

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION

# %% [raw]
# # BEGIN QUESTION
# name: q4
# points: 2

# %% [markdown]
# **Question 4** (Exercise ex-09-unbalanced, derivation). With unbalanced point masses the
# reduction is $u_{t+1} = \tanh(\lambda^2u_t + b)$, $b = \frac12\log(\pi_1/\pi_2)$. For
# $\lambda > 1$ the fixed point on the lighter side disappears when $b$ falls below a critical
# value $b_c(\lambda) < 0$. Write `b_crit(lam)` (a float, for $\lambda > 1$).

# %%
def b_crit(lam):
    u_sn = math.sqrt(1 - 1 / lam**2)  # SOLUTION
    return math.atanh(u_sn) - lam**2 * u_sn  # SOLUTION


# %% tags=["near-miss"]
# the normal form of the imperfect pitchfork −(2/3)u_sn³ (leading term only)
def b_crit(lam):  # noqa: F811
    u_sn = math.sqrt(1 - 1 / lam**2)
    return -2 / 3 * u_sn**3


# %% [raw]
# # BEGIN TESTS

# %%
assert isinstance(b_crit(1.5), float) and b_crit(1.5) < 0

# %%
# HIDDEN
# the number of fixed points of u = tanh(λ²u + b), counted as sign changes on a grid of
# 2·10⁵ points of (−1, 1): three just above b_c, one just below (b_c ± 10⁻⁶; the two merging
# roots are then ~10⁻³ apart, fifty grid cells)
u_grid = np.linspace(-1 + 1e-9, 1 - 1e-9, 200_001)
for lam_t in (1.2, 1.5, 2.0):
    bc = b_crit(lam_t)

    def _n_fixed(b):
        return np.count_nonzero(np.diff(np.sign(np.tanh(lam_t**2 * u_grid + b) - u_grid)))

    assert _n_fixed(bc + 1e-6) == 3 and _n_fixed(bc - 1e-6) == 1

# %% [raw]
# # END TESTS

# %% [raw]
# # END QUESTION
