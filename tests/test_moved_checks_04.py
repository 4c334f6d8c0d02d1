"""Checks moved out of Chapter 4: special cases of gmmlib's general routines.

Issue 20, item 1. Moved:
- "r of construction 2 = 2s₀/(2π₊−1) (C1), 2(s₀−1)/(2π₊−1) (m₋₁ = 0)"
  (claim prop-04-constructions): the general r of construction 2 at two mean configurations;
- "construction 1 at the origin: C = 2b*² + 2t², 41 values of t" (claim eq-04-origin):
  Chapter 1's finite_prompt_mse at a special case;
- the comparison of the warm-up's w*, b* at π₊ = 0.75 with LDAModel.bayes_params (claim
  ex-04-warmup-prior), whose chapter check now uses Bayes' formula with densities.
"""

from __future__ import annotations

import numpy as np

from gmmlib.lda import LDAModel, construction_r0, construction_s0, effective_params
from gmmlib.limits import finite_prompt_mse

C1 = LDAModel(0.6, [1.0, 0.0], [0.0, 1.0], np.eye(2))


def _matrices(theta):
    """(U, V) of a head's blocks, whichever of head()/matrices() gmmlib provides."""
    return tuple(theta.head()) if hasattr(theta, "head") else theta.matrices()


def _r_constant_gate(m_neg, pi_pos: float) -> float:
    model = LDAModel(pi_pos, [1.0, 0.0], m_neg, np.eye(2))
    return effective_params(model, construction_s0(model)).r


def test_construction_2_r_closed_forms():
    priors = np.array([0.6, 0.51, 0.501, 0.5001])
    s0s, odd = np.log(priors / (1 - priors)), 2 * priors - 1
    r_C1 = np.array([_r_constant_gate(C1.m_neg, p) for p in priors])
    r_m0 = np.array([_r_constant_gate([0.0, 0.0], p) for p in priors])
    got = np.concatenate([r_C1, r_m0])
    claimed = np.concatenate([2 * s0s / odd, 2 * (s0s - 1) / odd])
    # v₂₂ divides a difference of size ~(2π₊−1) by 2π₊−1: relative round-off ~ε/(2π₊−1)
    np.testing.assert_allclose(got, claimed, rtol=1e-9)
    # near miss: r bounded in both cases (the C1 formula for m₋₁ = 0 too)
    assert np.all(np.abs(r_m0 - 2 * s0s / odd) > 1.0)


def test_construction_1_noise_at_the_origin():
    _, b_star = C1.bayes_params()
    ts = np.linspace(-2, 2, 41)
    origin = np.zeros((1, 3))
    C = []
    for t in ts:
        U, V = _matrices(construction_r0(C1, v21=b_star * np.ones(2) + t * np.array([1.0, -1.0])))
        C.append(finite_prompt_mse(C1.token_mixture(), origin, U, V[-1:])[0])
    C = np.array(C)
    np.testing.assert_allclose(C, 2 * b_star**2 + 2 * ts**2, rtol=1e-12, atol=1e-12)
    # near miss: without the intercept part 2b*²
    assert np.abs(C - 2 * ts**2).min() > 1e3 * 1e-12


def test_warmup_prior_bayes_params():
    w, b = LDAModel(0.75, [1.0, 0.0], [0.0, 1.0], np.eye(2)).bayes_params()
    np.testing.assert_allclose(np.append(w, b), [1.0, -1.0, np.log(3)], atol=1e-12)
    assert abs(b - np.log(0.75)) > 1.0      # the log-prior, not the log-odds
