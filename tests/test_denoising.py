"""gmmlib.denoising against independent computations: Tweedie's formula, Monte Carlo, scipy, numpy loops."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq
from scipy.stats import truncnorm

from gmmlib import GaussianMixture, softmax_attention_limit
from gmmlib.attention import Head
from gmmlib.limits import finite_prompt_mse
from gmmlib.quadrature import mixture_nodes
from gmmlib.training import train
from gmmlib.denoising import (
    MixtureAttentionLimit,
    ResidualLayer,
    bayes_denoiser,
    bayes_mse,
    best_affine_denoiser,
    best_linear_denoiser,
    excess_risk,
    fit_heads,
    heads_squared_error,
    iterate_denoiser,
    key_bias_attention,
    key_bias_parameters,
    multihead_finite_prompt_mse,
    multihead_limit,
    noisy_mixture,
    one_head_construction,
    online_sgd_heads,
    random_heads,
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
    Z, _ = noisy_mixture(gm, xi).sample(50, rng)
    for variant in ("book", "paper"):  # eq-08-two-heads and the paper's Appendix C.6
        heads = two_head_construction(gm.means, gamma, xi, variant=variant)
        assert len(heads) == 2 and all(isinstance(h, Head) for h in heads)
        np.testing.assert_allclose(multihead_limit(noisy_mixture(gm, xi), Z, heads), bayes_denoiser(gm, xi, Z),
                                   atol=1e-9 * (1 + np.abs(Z).max()))
    with pytest.raises(ValueError, match="variant"):
        two_head_construction(gm.means, gamma, xi, variant="other")


def test_one_head_exact_iff_equal_variances():
    gm = GaussianMixture.isotropic([0.4, 0.6], [[3.0, 0.0], [0.0, 3.0]], 1.5**2)
    head = one_head_construction(gm.means, 1.5, 1.5)
    assert isinstance(head, Head)
    Z, _ = noisy_mixture(gm, 1.5).sample(100, 0)
    np.testing.assert_allclose(softmax_attention_limit(noisy_mixture(gm, 1.5), Z, *head),
                               bayes_denoiser(gm, 1.5, Z), atol=1e-12)
    with pytest.raises(ValueError, match="gamma"):
        one_head_construction(gm.means, 1.0, 2.0)


@settings(max_examples=25, deadline=None)
@given(seed=seeds, d=st.integers(2, 5), xi=st.floats(0.3, 2.0), opposite=st.booleans())
def test_one_head_for_point_masses(seed, d, xi, opposite):
    # Remark rem-08-point-masses: for gamma = 0 one head is exact iff m1 = -m2 or d >= 3
    rng = np.random.default_rng(seed)
    m1 = rng.normal(size=d)
    m1 *= rng.uniform(0.5, 3.0) / np.linalg.norm(m1)
    m2 = -m1 if opposite else rng.normal(size=d)
    m2 *= np.linalg.norm(m1) / np.linalg.norm(m2)
    gm = GaussianMixture.isotropic([0.3, 0.7], [m1, m2], 0.0)
    if d == 2 and not opposite:
        with pytest.raises(ValueError, match="m1 = -m2 or d >= 3"):
            one_head_construction(gm.means, 0.0, xi)
        return
    U, V = one_head_construction(gm.means, 0.0, xi)
    np.testing.assert_allclose(V @ U, 0.0, atol=1e-12)  # no linear term
    np.testing.assert_allclose(V @ gm.means.T, gm.means.T, atol=1e-12)
    Z, _ = noisy_mixture(gm, xi).sample(50, rng)
    np.testing.assert_allclose(softmax_attention_limit(noisy_mixture(gm, xi), Z, U, V),
                               bayes_denoiser(gm, xi, Z), atol=1e-10)


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
    layer = residual_construction(2, gamma, xi)
    for _ in range(5):
        r = rng.uniform(0.5, 3)
        a, b = rng.uniform(0, 2 * np.pi, 2)
        gm = GaussianMixture.isotropic([0.3, 0.7], r * np.array([[np.cos(a), np.sin(a)], [np.cos(b), np.sin(b)]]),
                                       gamma**2)
        Z, _ = noisy_mixture(gm, xi).sample(40, rng)
        np.testing.assert_allclose(residual_limit(noisy_mixture(gm, xi), Z, layer), bayes_denoiser(gm, xi, Z),
                                   atol=1e-12)
    # the finite-prompt model tends to the limit
    tokens, _ = noisy_mixture(gm, xi).sample(200_000, 1)
    err = np.linalg.norm(residual_denoiser(tokens, Z[:5], layer) - bayes_denoiser(gm, xi, Z[:5]), axis=1)
    U1, V1 = layer.heads[0]
    rmse = np.sqrt(finite_prompt_mse(noisy_mixture(gm, xi), Z[:5], U1, V1) / tokens.shape[0])
    assert np.all(err < 5 * rmse)  # the finite-prompt error law of gmmlib.limits


def test_residual_layer_is_a_frozen_container_of_heads(rng):
    layer = residual_construction(3, 0.5, 1.0)
    assert isinstance(layer, ResidualLayer) and len(layer.heads) == 2 and layer.dim == 3
    assert all(isinstance(h, Head) for h in layer.heads)
    with pytest.raises(ValueError):
        layer.W_out[0, 0] = 1.0  # read-only
    with pytest.raises(dataclasses.FrozenInstanceError):
        layer.W_out = np.zeros((3, 6))  # frozen
    # a numpy loop over the definition W_out (z + T_1, z + T_2) on a small prompt
    tokens, Z = rng.normal(size=(30, 3)), rng.normal(size=(4, 3))
    branches = []
    for U, V in layer.heads:
        w = np.exp(Z @ U.T @ tokens.T)
        branches.append(Z + (w @ tokens) @ V.T / w.sum(1, keepdims=True))
    np.testing.assert_allclose(residual_denoiser(tokens, Z, layer), np.hstack(branches) @ layer.W_out.T, atol=1e-12)
    with pytest.raises(ValueError, match="W_out"):
        ResidualLayer(layer.heads, np.zeros((3, 3)))
    with pytest.raises(TypeError, match="ResidualLayer"):
        residual_denoiser(tokens, Z, {"U1": np.eye(3)})


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
    np.testing.assert_allclose(traj[-1], [[0, 3 * tanh_fixed_point(1.5)], [0, -3 * tanh_fixed_point(1.5)]],
                               atol=1e-12)


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
        mode = minimize_scalar(lambda y: -noisy.log_prob(np.array([[y, 1.0]]))[0], bounds=(0.1, 3.0),
                               method="bounded", options={"xatol": 1e-10}).x
        assert abs(mode - expected) < 1e-6  # an argmax is located to ~sqrt(eps) only
        np.testing.assert_allclose(final, [[expected, 1.0], [-expected, 1.0], [expected, 1.0]], atol=1e-10)


def test_key_bias_parameters_is_a_head():
    head = key_bias_parameters(2, 0.5)
    assert isinstance(head, Head) and head.U.shape == (3, 3) and head.V.shape == (2, 3)
    assert head.U[2, 2] == -0.5 / 0.25


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


def _shared_law(rng):
    return noisy_mixture(GaussianMixture.isotropic([0.3, 0.7], rng.normal(size=(2, 2)) * 2, 1.0), 1.5)


def test_heads_squared_error_matches_autograd(rng):
    law = _shared_law(rng)
    model = MixtureAttentionLimit(law, 3, init_std=0.5, seed=4)
    Z, Y, w = rng.normal(size=(30, 2)) * 3, rng.normal(size=(30, 2)), rng.uniform(size=30)
    loss, gU, gV = heads_squared_error(law, model.heads(), Z, Y, w)
    ref = (torch.tensor(w) * ((model(torch.tensor(Z)) - torch.tensor(Y)) ** 2).sum(1)).sum()
    ref.backward()
    assert np.isclose(loss, ref.item(), rtol=1e-13)
    np.testing.assert_allclose(gU, model.U.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gV, model.V.grad.numpy(), rtol=1e-10, atol=1e-12)
    with torch.no_grad():
        out = model(torch.tensor(Z)).numpy()
    assert np.isclose(heads_squared_error(law, model.heads(), Z, Y)[0], np.mean(np.sum((out - Y) ** 2, 1)))
    two_covs = GaussianMixture([0.5, 0.5], [[0.0, 0.0], [1.0, 1.0]], [np.eye(2), 2 * np.eye(2)])
    with pytest.raises(ValueError, match="shared"):
        heads_squared_error(two_covs, model.heads(), Z, Y)


def test_online_sgd_heads_is_the_training_loop(rng):
    # the same steps as gmmlib.training.train with SGD and clipping on MixtureAttentionLimit
    law = _shared_law(rng)
    prior = GaussianMixture.isotropic(law.weights, law.means, 1.0)

    def sample(r, n):
        Z, _ = law.sample(n, r)
        return Z, bayes_denoiser(prior, 1.5, Z)

    start = random_heads(2, 2, 5, 0.3)
    heads, hist = online_sgd_heads(law, start, sample, steps=200, lr=2e-2, batch_size=16, seed=9,
                                   clip_norm=1.0, chunk_steps=1, log_every=50,
                                   eval_fn=lambda h: {"n": float(len(h))})
    model = MixtureAttentionLimit(law, 2, heads=start)

    def batch(r):
        return tuple(torch.tensor(a) for a in sample(r, 16))

    ref = train(model, batch, lambda m, b: ((m(b[0]) - b[1]) ** 2).sum(1).mean(), steps=200, lr=2e-2, seed=9,
                optimizer="sgd", clip_norm=1.0, log_every=50, progress=False)
    for h, g in zip(heads, model.heads()):
        np.testing.assert_allclose(h.U, g.U, atol=1e-12)
        np.testing.assert_allclose(h.V, g.V, atol=1e-12)
    np.testing.assert_allclose(hist.loss, ref.loss, rtol=1e-12)
    assert hist.step == ref.step == [0, 50, 100, 150, 199] and hist.metrics["n"] == [2.0] * 5
    # drawing the batches in chunks changes which points are drawn, not the protocol
    chunked, _ = online_sgd_heads(law, start, sample, steps=200, lr=2e-2, batch_size=16, seed=9, clip_norm=1.0)
    assert all(np.all(np.isfinite(h.U)) for h in chunked)


def test_fit_heads_finds_an_exact_two_head_denoiser(rng):
    gm = GaussianMixture.isotropic([0.5, 0.5], [[3.0, 0.0], [0.0, 3.0]], 1.0)
    law = noisy_mixture(gm, 2.0)
    nodes, weights, _ = mixture_nodes(law, 12)
    target = bayes_denoiser(gm, 2.0, nodes)
    exact = two_head_construction(gm.means, 1.0, 2.0)
    assert heads_squared_error(law, exact, nodes, target, weights)[0] < 1e-28
    start = tuple(Head(U + 0.05 * rng.normal(size=(2, 2)), V + 0.05 * rng.normal(size=(2, 2))) for U, V in exact)
    heads, result = fit_heads(law, start, nodes, target, weights, f_target=1e-14)
    assert result.history[-1] <= 1e-14 and len(result.history) == result.nit
    # the fitted heads are exact everywhere, not only on the rule's nodes
    assert excess_risk(lambda Z: multihead_limit(law, Z, heads), gm, 2.0, 30) < 1e-10


def test_multihead_finite_prompt_mse(rng):
    gm = GaussianMixture.isotropic([0.5, 0.5], [[3.0, 0.0], [0.0, 3.0]], 1.0)
    law = noisy_mixture(gm, 2.0)
    heads = two_head_construction(gm.means, 1.0, 2.0)
    Zq = rng.normal(size=(5, 2)) * 2
    np.testing.assert_allclose(multihead_finite_prompt_mse(law, Zq, heads[:1]), finite_prompt_mse(law, Zq, *heads[0]),
                               rtol=1e-12)
    # E‖Σ_h ψ_h(Z)‖² by Gauss–Hermite quadrature, ψ_h(x) = exp(a_hᵀx − Λ(a_h)) (V_h x − T_h)
    X, w, _ = mixture_nodes(law, 60)
    ref = []
    for z in Zq:
        psi = sum(np.exp(X @ (U @ z) - law.log_mgf(U @ z))[:, None]
                  * (X @ V.T - softmax_attention_limit(law, z[None], U, V)[0]) for U, V in heads)
        ref.append(np.sum(w * np.sum(psi**2, axis=1)))
    np.testing.assert_allclose(multihead_finite_prompt_mse(law, Zq, heads), ref, rtol=1e-9)


def test_random_heads_are_seeded():
    a, b = random_heads(3, 4, 7, 0.2), random_heads(3, 4, 7, 0.2)
    assert len(a) == 3 and all(h.U.shape == h.V.shape == (4, 4) for h in a)
    assert all(np.array_equal(x.U, y.U) and np.array_equal(x.V, y.V) for x, y in zip(a, b))


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
