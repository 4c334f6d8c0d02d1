"""Checks moved out of Chapter 3: the proof's algebra replayed on gmmlib's gates.

Issue 20, item 1. Moved: "second difference of log(αₖ/αⱼ) on 20 lines, 3 pairs" (claim
prop-03-gate-geometry, item 1). attention_gates computes the softmax arguments of
eq-03-gated-experts, whose pairwise differences are quadratics with Hessian
Uᵀ(Γₖ − Γⱼ)U by inspection; that the code's gates have this curvature tests the code. The
chapter checks items 3 and 4 on a grid of queries.
"""

from __future__ import annotations

import numpy as np

from gmmlib import GaussianMixture
from gmmlib.limits import attention_gates

MIX = GaussianMixture(
    [0.3, 0.3, 0.4],
    [[-2.0, -1.0], [2.0, -1.0], [0.0, 2.0]],
    [[[1.0, 0.5], [0.5, 0.8]], [[0.5, -0.2], [-0.2, 1.0]], 0.3 * np.eye(2)],
)
U = np.array([[0.8, 0.2], [-0.1, 0.6]])


def test_log_gate_ratios_are_quadratics_with_the_stated_hessian():
    rng = np.random.default_rng(3)
    step, pairs = 0.5, [(0, 1), (0, 2), (1, 2)]
    second_diff, predicted, scale = [], [], 0.0
    for _ in range(20):
        z0, h = rng.uniform(-2, 2, size=2), rng.normal(size=2)
        log_g = np.log(attention_gates(MIX, np.array([z0 - step * h, z0, z0 + step * h]), U))
        scale = max(scale, np.max(np.abs(log_g)))
        for k, j in pairs:
            lo = log_g[:, k] - log_g[:, j]
            second_diff.append((lo[0] - 2 * lo[1] + lo[2]) / step**2)
            predicted.append(h @ U.T @ (MIX.covs[k] - MIX.covs[j]) @ U @ h)
    second_diff, predicted = np.array(second_diff), np.array(predicted)
    # exact for a quadratic: round-off of 4 log-gates × (1, 2, 1) / step²
    tol = 32 * np.finfo(float).eps * scale / step**2
    np.testing.assert_allclose(second_diff, predicted, rtol=0, atol=tol)
    # near miss: the quadratic's coefficient read as its curvature (half the second derivative)
    assert np.abs(second_diff - predicted / 2).max() > 1e3 * tol
