"""Checks moved out of Chapter 1: gmmlib's routines on a special case.

Issue 20, item 1. Moved: "gmmlib's finite_prompt_mse and effective_sample_fraction vs
quadrature" (claim prop-01-clt). The chapter checks the closed form of C(z) against
quadrature of its definition at a mixture, and Corollary cor-01-gaussian's formulas against
quadrature of the moments of w; that gmmlib's general routines reproduce them on one Gaussian
is a test of the code.
"""

from __future__ import annotations

import numpy as np

from gmmlib import GaussianMixture
from gmmlib.checks import converged_quadrature
from gmmlib.limits import effective_sample_fraction, finite_prompt_mse
from gmmlib.quadrature import expectation

M = np.array([0.5, -0.5])
GAMMA = np.array([[1.0, 0.4], [0.4, 0.6]])
Z0 = np.array([1.0, 0.5])
U0 = np.array([[1.0, 0.0], [0.3, 1.0]])
V = np.array([[1.0, 0.0], [0.5, 1.0]])
KAPPAS = np.array([0.5, 1.0, 2.0, 3.0])


def _U(kappa: float) -> np.ndarray:
    a0 = U0 @ Z0
    return U0 * np.sqrt(kappa / (a0 @ GAMMA @ a0))


def _law_by_quadrature(gauss: GaussianMixture, n: int) -> np.ndarray:
    """C(z) and (E w)²/E w² for each κ, from moments of w = exp(aᵀX)."""
    out = []
    for k in KAPPAS:
        a = _U(k) @ Z0
        Ew, Ew2 = (expectation(lambda X, p=p, a=a: np.exp(p * X @ a), gauss, n) for p in (1, 2))
        T = expectation(lambda X, a=a: np.exp(X @ a)[:, None] * (X @ V.T), gauss, n) / Ew
        wsq = lambda X, a=a, T=T: np.exp(2 * X @ a) * np.sum((X @ V.T - T) ** 2, axis=1)  # noqa: E731
        out.append((expectation(wsq, gauss, n) / Ew**2, Ew**2 / Ew2))
    return np.array(out)


def test_gmmlib_finite_prompt_law_on_a_gaussian_matches_quadrature():
    gauss = GaussianMixture.gaussian(M, GAMMA)
    quad = converged_quadrature(lambda n: _law_by_quadrature(gauss, n), 60, 90, dim=2)
    C = np.array([finite_prompt_mse(gauss, Z0, _U(k), V) for k in KAPPAS])
    frac = np.array([effective_sample_fraction(gauss, Z0, _U(k)) for k in KAPPAS])
    got = np.c_[C, frac]
    tol = quad.error.max()
    assert np.all(np.abs(got - quad.value) <= tol)
    # the chapter's control: C without its factor e^κ
    wrong = np.c_[C * np.exp(-KAPPAS), frac]
    assert np.abs(wrong - quad.value).max() > 1e3 * tol
