"""Checks moved out of Chapter 0 (the toolkit): two quadratures of the same integrand.

Issue 20, item 1: a check whose two sides are the same formula computed twice tests gmmlib,
not a sentence of the text; it lives here. Moved: "E σ(b + sG): Gauss–Hermite vs adaptive
rule, s = 1, 3" (claim sec-00-quadrature).
"""

from __future__ import annotations

import numpy as np
from scipy import integrate
from scipy.special import expit

from gmmlib.quadrature import gauss_hermite

B_GATE = 0.7


def _logistic_normal_gh(n_points: int, sharpness: np.ndarray) -> np.ndarray:
    t, w = gauss_hermite(n_points)
    return np.array([w @ expit(B_GATE + s * t[:, 0]) for s in sharpness])


def _logistic_normal_quadpack(s: float) -> tuple[float, float]:
    def f(g):
        return expit(B_GATE + s * g) * np.exp(-g**2 / 2) / np.sqrt(2 * np.pi)

    return integrate.quad(f, -np.inf, np.inf, epsabs=1e-14, epsrel=1e-13)


def test_gauss_hermite_logistic_normal_matches_quadpack():
    """E σ(b + sG), s = 1, 3: the 160-node rule against QUADPACK, as Chapter 0 had it."""
    sharp = np.array([1.0, 3.0])
    coarse, fine = _logistic_normal_gh(80, sharp), _logistic_normal_gh(160, sharp)
    tol = 10 * np.abs(fine - coarse).max() + 100 * np.finfo(float).eps
    runs = [_logistic_normal_quadpack(s) for s in sharp]
    ref = np.array([v for v, _ in runs])
    err = np.array([e for _, e in runs]) + 1e-15
    assert np.all(np.abs(fine - ref) <= tol + err)
    # the near miss the chapter rejected: the probit approximation (about 1 % off)
    probit = expit(B_GATE / np.sqrt(1 + np.pi * sharp**2 / 8))
    assert np.all(np.abs(probit - ref) > 100 * (tol + err))
    # and the plug-in value σ(b)
    assert np.all(np.abs(expit(B_GATE) - ref) > 100 * (tol + err))
