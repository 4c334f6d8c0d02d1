"""gmmlib.denoising against independent computations: Tweedie's formula, Monte Carlo, least squares,
root finding."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import brentq

from gmmlib import GaussianMixture
from gmmlib.denoising import (
    bayes_denoiser,
    bayes_mse,
    best_affine_denoiser,
    best_linear_denoiser,
    excess_risk,
    iterate_denoiser,
    noisy_mixture,
    separation,
    tanh_fixed_point,
)

from ..conftest import random_mixture


def test_bayes_denoiser_is_tweedie(rng):
    gm = random_mixture(rng, 3, 2)
    xi = 0.7
    noisy = noisy_mixture(gm, xi)
    Z = rng.normal(size=(20, 2))
    h = 1e-5
    grad = np.stack(
        [(noisy.log_prob(Z + h * e) - noisy.log_prob(Z - h * e)) / (2 * h) for e in np.eye(2)],
        axis=1,
    )
    np.testing.assert_allclose(bayes_denoiser(gm, xi, Z), Z + xi**2 * grad, atol=1e-7)


def test_bayes_denoiser_point_masses_and_single_point():
    gm = GaussianMixture.isotropic([0.5, 0.5], [[0.0, 3.0], [0.0, -3.0]], 0.0)
    z = np.array([0.3, 0.4])
    u = np.tanh(3 * 0.4 / 4.0)  # (β1 - β2) with ξ = 2
    np.testing.assert_allclose(bayes_denoiser(gm, 2.0, z), [0.0, 3 * u], atol=1e-14)


def test_bayes_mse_matches_monte_carlo(rng):
    gm = random_mixture(rng, 2, 2)
    xi = 0.8
    X, _ = gm.sample(400_000, 1)
    Z = X + xi * np.random.default_rng(2).standard_normal(X.shape)
    err = np.sum((X - bayes_denoiser(gm, xi, Z)) ** 2, axis=1)
    assert abs(bayes_mse(gm, xi, 30) - err.mean()) < 4 * err.std() / np.sqrt(err.size)


def test_linear_and_affine_floors_match_least_squares(rng):
    gm = GaussianMixture.isotropic([0.5, 0.5], [[3.0, 0.0], [0.0, 3.0]], 1.0)
    xi = 2.0
    X, _ = gm.sample(300_000, 3)
    Z = X + xi * np.random.default_rng(4).standard_normal(X.shape)
    A_ls = np.linalg.lstsq(Z, X, rcond=None)[0].T
    A, r_lin = best_linear_denoiser(gm, xi)
    np.testing.assert_allclose(A, A_ls, atol=0.01)
    Zb = np.hstack([Z, np.ones((Z.shape[0], 1))])
    coef = np.linalg.lstsq(Zb, X, rcond=None)[0].T
    A2, b2, r_aff = best_affine_denoiser(gm, xi)
    np.testing.assert_allclose(A2, coef[:, :2], atol=0.01)
    np.testing.assert_allclose(b2, coef[:, 2], atol=0.03)
    e = np.sum((X - Z @ A.T) ** 2, axis=1)
    assert abs(e.mean() - r_lin) < 4 * e.std() / np.sqrt(e.size)
    e = np.sum((X - Z @ A2.T - b2) ** 2, axis=1)
    assert abs(e.mean() - r_aff) < 4 * e.std() / np.sqrt(e.size)
    assert bayes_mse(gm, xi) < r_aff < r_lin


def test_excess_risk_of_bayes_is_zero_and_per_component_sums(rng):
    gm = random_mixture(rng, 2, 2)
    assert excess_risk(lambda Z: bayes_denoiser(gm, 0.5, Z), gm, 0.5, 10) == 0.0
    f = lambda Z: 0.9 * Z  # noqa: E731
    parts = excess_risk(f, gm, 0.5, 20, per_component=True)
    assert parts.shape == (2,) and np.isclose(parts.sum(), excess_risk(f, gm, 0.5, 20))
    # excess = total risk - Bayes risk (Monte Carlo on the total risk)
    X, _ = gm.sample(300_000, 5)
    Z = X + 0.5 * np.random.default_rng(6).standard_normal(X.shape)
    e = np.sum((X - f(Z)) ** 2, axis=1)
    assert abs(e.mean() - bayes_mse(gm, 0.5) - parts.sum()) < 4 * e.std() / np.sqrt(e.size)


def test_iterated_denoiser_and_tanh_fixed_point():
    for lam in (0.5, 1.0, 1.2, 1.5, 3.0):
        u = tanh_fixed_point(lam)
        if lam <= 1:
            assert u == 0.0
        else:
            assert abs(u - brentq(lambda t: t - np.tanh(lam**2 * t), 1e-6, 1.0, xtol=1e-15)) < 1e-12
    xi = 3.0 / 1.5
    gm = GaussianMixture.isotropic([0.5, 0.5], [[0.0, 3.0], [0.0, -3.0]], 0.0)
    assert np.isclose(separation(gm.means, xi), 1.5)
    # gamma > 0: the threshold ||m1 - m2||^2 / 4 = gamma^2 + xi^2 (Proposition prop-09-modes)
    assert np.isclose(separation([[0.0, 1.5], [0.0, -1.5]], 1.0, gamma=1.0), 1.5 / np.sqrt(2))
    with pytest.raises(ValueError, match="means"):
        separation([[0.0, 1.0]], 1.0)
    traj = iterate_denoiser(gm, xi, np.array([[0.5, 0.2], [-1.0, -0.1]]), 200)
    np.testing.assert_allclose(
        traj[-1], [[0, 3 * tanh_fixed_point(1.5)], [0, -3 * tanh_fixed_point(1.5)]], atol=1e-12
    )


def test_iterated_denoiser_climbs_to_the_modes_of_the_noisy_density():
    """gamma = xi = 1: collapse at half-distance 1.3, attractors at the modes +-0.8268 at 1.5."""
    from scipy.optimize import minimize_scalar

    Z0 = np.array([[0.3, 0.4], [-2.0, -0.1], [1.0, 2.0]])
    for half, expected in ((1.3, 0.0), (1.5, 0.8267837434893535)):
        gm = GaussianMixture.isotropic([0.5, 0.5], [[half, 1.0], [-half, 1.0]], 1.0)
        final = iterate_denoiser(gm, 1.0, Z0, 600)[-1]
        noisy = noisy_mixture(gm, 1.0)
        if expected == 0.0:
            np.testing.assert_allclose(final, [[0.0, 1.0]] * 3, atol=1e-12)
            continue
        mode = minimize_scalar(
            lambda y: -noisy.log_prob(np.array([[y, 1.0]]))[0],
            bounds=(0.1, 3.0),
            method="bounded",
            options={"xatol": 1e-10},
        ).x
        assert abs(mode - expected) < 1e-6  # an argmax is located to ~sqrt(eps) only
        np.testing.assert_allclose(
            final, [[expected, 1.0], [-expected, 1.0], [expected, 1.0]], atol=1e-10
        )


def test_input_validation():
    gm = GaussianMixture.isotropic([0.5, 0.5], [[1.0, 0.0], [0.0, 1.0]], 1.0)
    with pytest.raises(ValueError, match="noise_std"):
        bayes_mse(gm, 0.0)
    with pytest.raises(TypeError, match="mixture"):
        best_linear_denoiser("gm", 1.0)
    with pytest.raises(ValueError, match="Z0"):
        iterate_denoiser(gm, 1.0, np.zeros((3, 3)), 2)
    with pytest.raises(ValueError, match="predict"):
        excess_risk(lambda Z: Z[:, :1], gm, 1.0, 5)
    with pytest.raises(ValueError, match="finite"):
        bayes_denoiser(gm, 1.0, np.array([[np.nan, 0.0]]))


def test_extreme_scales_stay_finite():
    gm = GaussianMixture.isotropic([0.5, 0.5], [[1e3, 0.0], [-1e3, 0.0]], 1.0)
    out = bayes_denoiser(gm, 1e-3, np.array([[1e4, 5.0], [-3.0, 0.0]]))
    assert np.all(np.isfinite(out))


# ---------------------------------------------------------------- two point masses
def test_two_point_masses_tanh_is_the_bayes_denoiser():
    m, xi = np.array([1.5, -0.5]), 0.7
    two_points = GaussianMixture.isotropic([0.5, 0.5], [m, -m], 0.0)
    z = np.random.default_rng(8).normal(size=(50, 2))
    tanh_form = np.tanh(z @ m / xi**2)[:, None] * m
    np.testing.assert_allclose(bayes_denoiser(two_points, xi, z), tanh_form, rtol=0, atol=1e-12)
    # near miss: the whole logit difference inside tanh (a factor 2)
    wrong = np.tanh(2 * z @ m / xi**2)[:, None] * m
    assert np.abs(bayes_denoiser(two_points, xi, z) - wrong).max() > 1e-2
