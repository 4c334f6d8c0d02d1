"""gmmlib.denoising against independent computations: Tweedie's formula, Monte Carlo, scipy, numpy loops."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq
from scipy.stats import truncnorm

from gmmlib import GaussianMixture, softmax_attention_limit
from gmmlib.limits import finite_prompt_mse
from gmmlib.denoising import (
    MixtureAttentionLimit,
    bayes_denoiser,
    bayes_mse,
    best_affine_denoiser,
    best_linear_denoiser,
    excess_risk,
    iterate_denoiser,
    key_bias_attention,
    multihead_limit,
    noisy_mixture,
    one_head_construction,
    residual_construction,
    residual_denoiser,
    residual_limit,
    separation,
    tanh_fixed_point,
    two_head_construction,
)

from .conftest import random_mixture, seeds


def test_bayes_denoiser_is_tweedie(rng):
    gm = random_mixture(rng, 3, 2)
    xi = 0.7
    noisy = noisy_mixture(gm, xi)
    Z = rng.normal(size=(20, 2))
    h = 1e-5
    grad = np.stack([(noisy.log_prob(Z + h * e) - noisy.log_prob(Z - h * e)) / (2 * h) for e in np.eye(2)], axis=1)
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


@settings(max_examples=25, deadline=None)
@given(seed=seeds, d=st.integers(2, 4), gamma=st.floats(0.0, 2.0), xi=st.floats(0.3, 2.0),
       opposite=st.booleans())
def test_two_heads_are_exact(seed, d, gamma, xi, opposite):
    rng = np.random.default_rng(seed)
    m1 = rng.normal(size=d)
    m1 *= rng.uniform(0.5, 3.0) / np.linalg.norm(m1)
    if opposite:
        m2 = -m1
    else:
        m2 = rng.normal(size=d)
        m2 *= np.linalg.norm(m1) / np.linalg.norm(m2)
    p = rng.uniform(0.1, 0.9)
    gm = GaussianMixture.isotropic([p, 1 - p], [m1, m2], gamma**2)
    heads = two_head_construction(gm.means, gamma, xi)
    Z, _ = noisy_mixture(gm, xi).sample(50, rng)
    np.testing.assert_allclose(multihead_limit(noisy_mixture(gm, xi), Z, heads), bayes_denoiser(gm, xi, Z),
                               atol=1e-9 * (1 + np.abs(Z).max()))


def test_one_head_exact_iff_equal_variances():
    gm = GaussianMixture.isotropic([0.4, 0.6], [[3.0, 0.0], [0.0, 3.0]], 1.5**2)
    U, V = one_head_construction(2, 1.5, 1.5)
    Z, _ = noisy_mixture(gm, 1.5).sample(100, 0)
    np.testing.assert_allclose(softmax_attention_limit(noisy_mixture(gm, 1.5), Z, U, V),
                               bayes_denoiser(gm, 1.5, Z), atol=1e-12)
    with pytest.raises(ValueError, match="gamma"):
        one_head_construction(2, 1.0, 2.0)


def test_two_head_construction_validates():
    with pytest.raises(ValueError, match="equal norms"):
        two_head_construction([[1.0, 0.0], [0.0, 2.0]], 1.0, 1.0)
    with pytest.raises(ValueError, match="distinct"):
        two_head_construction([[1.0, 0.0], [1.0, 0.0]], 1.0, 1.0)
    with pytest.raises(ValueError, match="d >= 2"):
        two_head_construction([[1.0], [-1.0]], 1.0, 1.0)
    with pytest.raises(ValueError, match="noise_std"):
        two_head_construction([[1.0, 0.0], [0.0, 1.0]], 1.0, -1.0)


def test_residual_construction_exact_on_any_task(rng):
    gamma, xi = 0.8, 1.1
    params = residual_construction(2, gamma, xi)
    for _ in range(5):
        r = rng.uniform(0.5, 3)
        a, b = rng.uniform(0, 2 * np.pi, 2)
        gm = GaussianMixture.isotropic([0.3, 0.7], r * np.array([[np.cos(a), np.sin(a)], [np.cos(b), np.sin(b)]]),
                                       gamma**2)
        Z, _ = noisy_mixture(gm, xi).sample(40, rng)
        np.testing.assert_allclose(residual_limit(noisy_mixture(gm, xi), Z, params), bayes_denoiser(gm, xi, Z),
                                   atol=1e-12)
    # the finite-prompt model tends to the limit
    tokens, _ = noisy_mixture(gm, xi).sample(200_000, 1)
    err = np.linalg.norm(residual_denoiser(tokens, Z[:5], params) - bayes_denoiser(gm, xi, Z[:5]), axis=1)
    rmse = np.sqrt(finite_prompt_mse(noisy_mixture(gm, xi), Z[:5], params["U1"], params["V1"]) / tokens.shape[0])
    assert np.all(err < 5 * rmse)  # the finite-prompt error law of gmmlib.limits


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
    traj = iterate_denoiser(gm, xi, np.array([[0.5, 0.2], [-1.0, -0.1]]), 200)
    np.testing.assert_allclose(traj[-1], [[0, 3 * tanh_fixed_point(1.5)], [0, -3 * tanh_fixed_point(1.5)]],
                               atol=1e-12)


def test_key_bias_attention_is_kernel_smoother_and_converges():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(300_000, 2))
    xi = 0.5
    z = np.array([[0.3, -0.8], [1.2, 0.1]])
    # independent: posterior mean of a uniform prior on the square, coordinate-wise truncated normals
    ref = np.stack([[truncnorm.mean((-1 - zi) / xi, (1 - zi) / xi, loc=zi, scale=xi) for zi in row] for row in z])
    np.testing.assert_allclose(key_bias_attention(X, z, xi), ref, atol=0.01)
    # a numpy loop over tokens on a small prompt
    Xs = X[:50]
    w = np.exp(-np.sum((z[:, None] - Xs[None]) ** 2, -1) / (2 * xi**2))
    np.testing.assert_allclose(key_bias_attention(Xs, z, xi), (w @ Xs) / w.sum(1, keepdims=True), atol=1e-12)


def test_mixture_attention_limit_matches_numpy(rng):
    gm = random_mixture(rng, 3, 2)
    model = MixtureAttentionLimit(gm, 2, init_std=0.5, seed=3)
    Z = rng.normal(size=(7, 2))
    with torch.no_grad():
        out = model(torch.tensor(Z)).numpy()
    np.testing.assert_allclose(out, multihead_limit(gm, Z, model.heads()), atol=1e-12)
    res = MixtureAttentionLimit(gm, 1, heads=model.heads()[:1], residual=True)
    with torch.no_grad():
        np.testing.assert_allclose(res(Z).numpy(), Z + multihead_limit(gm, Z, model.heads()[:1]), atol=1e-12)
    with pytest.raises(ValueError, match="heads"):
        MixtureAttentionLimit(gm, 2, heads=model.heads()[:1])
    with pytest.raises(TypeError, match="mixture"):
        MixtureAttentionLimit("gm", 1)


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
    heads = two_head_construction(gm.means, 1.0, 1e-2)
    Z = np.array([[1e3, 2.0], [-1e3, 1.0]])
    assert np.all(np.isfinite(multihead_limit(noisy_mixture(gm, 1e-2), Z, heads)))
