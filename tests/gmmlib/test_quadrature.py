"""Gauss–Hermite quadrature against closed forms and Monte Carlo."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate
from scipy.special import expit

from gmmlib import GaussianMixture
from gmmlib.quadrature import (
    expectation,
    gauss_hermite,
    gaussian_nodes,
    graded_normal_rule,
    mixture_nodes,
)


def test_moments_exact(mixture2d):
    m2 = expectation(lambda X: np.einsum("ni,nj->nij", X, X), mixture2d, 8)
    np.testing.assert_allclose(m2, mixture2d.second_moment(), rtol=1e-13)
    np.testing.assert_allclose(expectation(lambda X: X, mixture2d, 3), mixture2d.mean(), rtol=1e-13)


def test_log_partition_of_tilt(mixture2d):
    a = np.array([0.7, -0.4])
    Z = expectation(lambda X: np.exp(X @ a), mixture2d, 30)
    assert abs(np.log(Z) - mixture2d.log_mgf(a)) < 1e-12


def test_smooth_nonpolynomial_matches_monte_carlo(mixture2d):
    f = lambda X: np.log1p(np.exp(-(X[:, 0] - 0.5 * X[:, 1])))  # noqa: E731  a logistic loss
    q = expectation(f, mixture2d, 40)
    X, _ = mixture2d.sample(2_000_000, 1)
    v = f(X)
    assert abs(q - v.mean()) < 4 * v.std() / np.sqrt(v.size)
    assert abs(q - expectation(f, mixture2d, 60)) < 1e-12  # converged


def test_weights_and_degenerate():
    x, w = gauss_hermite(10, 2)
    assert x.shape == (100, 2) and np.isclose(w.sum(), 1.0) and np.all(w > 0)
    nodes, w = gaussian_nodes([1.0, 2.0], np.zeros((2, 2)), 5)
    np.testing.assert_allclose(nodes, np.tile([1.0, 2.0], (25, 1)))
    gm = GaussianMixture([0.2, 0.8], [[0.0], [1.0]], [[[1.0]], [[0.0]]])
    nodes, w, lab = mixture_nodes(gm, 7)
    assert np.isclose(w[lab == 0].sum(), 0.2) and np.isclose(w @ nodes[:, 0], 0.8)


def test_bad_input(mixture2d):
    with pytest.raises(ValueError, match="n_points"):
        gauss_hermite(0)
    with pytest.raises(TypeError, match="mixture"):
        mixture_nodes("x")
    with pytest.raises(ValueError, match="first axis"):
        expectation(lambda X: np.zeros(3), mixture2d, 4)


def test_attention_by_quadrature_matches_the_closed_form(mixture2d):
    from gmmlib import softmax_attention_limit
    from gmmlib.quadrature import attention_by_quadrature

    U, V = np.array([[0.8, 0.3], [-0.2, 0.6]]), np.array([[1.0, 0.5], [0.0, 2.0], [1.0, 1.0]])
    Q = np.random.default_rng(3).normal(size=(7, 2))
    np.testing.assert_allclose(
        attention_by_quadrature(mixture2d, Q, U, V, 40),
        softmax_attention_limit(mixture2d, Q, U, V),
        rtol=1e-11,
        atol=1e-12,
    )
    with pytest.raises(ValueError, match="queries"):
        attention_by_quadrature(mixture2d, np.zeros((2, 3)), U, V)


@pytest.mark.parametrize("sharpness", [0.5, 10.0, 1e3])
def test_graded_rule_integrates_sharp_logistics(sharpness):
    from scipy.integrate import quad
    from scipy.special import expit

    offset = 0.3
    centre = -offset / sharpness
    pieces = [
        quad(
            lambda z: np.exp(-0.5 * z * z) / np.sqrt(2 * np.pi) * expit(offset + sharpness * z),
            lo,
            hi,
            epsabs=1e-15,
            epsrel=1e-12,
            limit=200,
        )[0]  # split at the transition
        for lo, hi in (
            (-12, centre - 40 / sharpness),
            (centre - 40 / sharpness, centre),
            (centre, centre + 40 / sharpness),
            (centre + 40 / sharpness, 12),
        )
    ]
    ref = sum(pieces)
    z, w = graded_normal_rule([-offset / sharpness], [np.pi / sharpness], 8)
    assert w[0] @ expit(offset + sharpness * z[0]) == pytest.approx(ref, abs=1e-13)
    # Gauss–Hermite with 80 nodes cannot follow the sharp ones
    x, wh = gauss_hermite(80)
    if sharpness > 5:
        assert abs(wh @ expit(offset + sharpness * x[:, 0]) - ref) > 1e-6


def test_graded_rule_shapes_and_mass():
    z, w = graded_normal_rule(np.zeros((3, 2)), np.array([[0.1, np.nan]] * 3), 6)
    assert z.shape == w.shape and z.shape[0] == 3
    np.testing.assert_allclose(w.sum(axis=1), 1.0, atol=1e-13)
    np.testing.assert_allclose((w * z**2).sum(axis=1), 1.0, atol=1e-12)  # the variance
    with pytest.raises(ValueError, match="same shape"):
        graded_normal_rule([0.0, 1.0], [0.1], 6)
    with pytest.raises(ValueError, match="n_points"):
        graded_normal_rule([0.0], [0.1], 0)


# ---------------------------------------------------------------- a rule against QUADPACK
B_GATE = 0.7


def _logistic_normal_gh(n_points: int, sharpness: np.ndarray) -> np.ndarray:
    t, w = gauss_hermite(n_points)
    return np.array([w @ expit(B_GATE + s * t[:, 0]) for s in sharpness])


def _logistic_normal_quadpack(s: float) -> tuple[float, float]:
    def f(g):
        return expit(B_GATE + s * g) * np.exp(-(g**2) / 2) / np.sqrt(2 * np.pi)

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
