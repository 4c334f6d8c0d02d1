"""Checks moved out of Chapter 8: a special case of gmmlib's general Bayes denoiser.

Issue 20, item 1. Moved: "two point masses: E[X | Z = z] = m tanh(mᵀz/ξ²)" against
gmmlib.denoising.bayes_denoiser (claim ex-08-tanh), the general gated-affine formula
eq-08-bayes at Γ = 0. The chapter now checks the warm-up's answer against Tweedie's formula,
z + ξ²∇log p_Z(z) by finite differences, evidence of a different kind.
"""

from __future__ import annotations

import numpy as np

from gmmlib import GaussianMixture
from gmmlib.denoising import bayes_denoiser


def test_two_point_masses_tanh_is_the_bayes_denoiser():
    m, xi = np.array([1.5, -0.5]), 0.7
    two_points = GaussianMixture.isotropic([0.5, 0.5], [m, -m], 0.0)
    z = np.random.default_rng(8).normal(size=(50, 2))
    tanh_form = np.tanh(z @ m / xi**2)[:, None] * m
    np.testing.assert_allclose(bayes_denoiser(two_points, xi, z), tanh_form, rtol=0, atol=1e-12)
    # near miss: the whole logit difference inside tanh (a factor 2)
    wrong = np.tanh(2 * z @ m / xi**2)[:, None] * m
    assert np.abs(bayes_denoiser(two_points, xi, z) - wrong).max() > 1e-2
