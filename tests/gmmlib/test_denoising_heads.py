"""gmmlib.denoising.heads against independent computations: the Bayes denoiser, quadrature, numpy
loops, truncated normals."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import truncnorm

from gmmlib import GaussianMixture, softmax_attention_limit
from gmmlib.attention import Head
from gmmlib.denoising import bayes_denoiser, noisy_mixture
from gmmlib.denoising.heads import (
    ResidualLayer,
    key_bias_attention,
    key_bias_parameters,
    multihead_finite_prompt_mse,
    multihead_limit,
    one_head_construction,
    residual_construction,
    residual_denoiser,
    residual_limit,
    two_head_construction,
)
from gmmlib.limits import finite_prompt_mse
from gmmlib.quadrature import mixture_nodes

from ..conftest import seeds


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
        np.testing.assert_allclose(
            multihead_limit(noisy_mixture(gm, xi), Z, heads),
            bayes_denoiser(gm, xi, Z),
            atol=1e-9 * (1 + np.abs(Z).max()),
        )
    with pytest.raises(ValueError, match="variant"):
        two_head_construction(gm.means, gamma, xi, variant="other")


def test_one_head_exact_iff_equal_variances():
    gm = GaussianMixture.isotropic([0.4, 0.6], [[3.0, 0.0], [0.0, 3.0]], 1.5**2)
    head = one_head_construction(gm.means, 1.5, 1.5)
    assert isinstance(head, Head)
    Z, _ = noisy_mixture(gm, 1.5).sample(100, 0)
    np.testing.assert_allclose(
        softmax_attention_limit(noisy_mixture(gm, 1.5), Z, *head),
        bayes_denoiser(gm, 1.5, Z),
        atol=1e-12,
    )
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
    np.testing.assert_allclose(
        softmax_attention_limit(noisy_mixture(gm, xi), Z, U, V),
        bayes_denoiser(gm, xi, Z),
        atol=1e-10,
    )


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
        gm = GaussianMixture.isotropic(
            [0.3, 0.7], r * np.array([[np.cos(a), np.sin(a)], [np.cos(b), np.sin(b)]]), gamma**2
        )
        Z, _ = noisy_mixture(gm, xi).sample(40, rng)
        np.testing.assert_allclose(
            residual_limit(noisy_mixture(gm, xi), Z, layer), bayes_denoiser(gm, xi, Z), atol=1e-12
        )
    # the finite-prompt model tends to the limit
    tokens, _ = noisy_mixture(gm, xi).sample(200_000, 1)
    err = np.linalg.norm(
        residual_denoiser(tokens, Z[:5], layer) - bayes_denoiser(gm, xi, Z[:5]), axis=1
    )
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
    np.testing.assert_allclose(
        residual_denoiser(tokens, Z, layer), np.hstack(branches) @ layer.W_out.T, atol=1e-12
    )
    with pytest.raises(ValueError, match="W_out"):
        ResidualLayer(layer.heads, np.zeros((3, 3)))
    with pytest.raises(TypeError, match="ResidualLayer"):
        residual_denoiser(tokens, Z, {"U1": np.eye(3)})


def test_key_bias_parameters_is_a_head():
    head = key_bias_parameters(2, 0.5)
    assert isinstance(head, Head) and head.U.shape == (3, 3) and head.V.shape == (2, 3)
    assert head.U[2, 2] == -0.5 / 0.25


def test_key_bias_attention_is_kernel_smoother_and_converges():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(300_000, 2))
    xi = 0.5
    z = np.array([[0.3, -0.8], [1.2, 0.1]])
    # independent: posterior mean of a uniform prior on the square, coordinate-wise truncated
    # normals
    ref = np.stack(
        [
            [truncnorm.mean((-1 - zi) / xi, (1 - zi) / xi, loc=zi, scale=xi) for zi in row]
            for row in z
        ]
    )
    np.testing.assert_allclose(key_bias_attention(X, z, xi), ref, atol=0.01)
    # a numpy loop over tokens on a small prompt
    Xs = X[:50]
    w = np.exp(-np.sum((z[:, None] - Xs[None]) ** 2, -1) / (2 * xi**2))
    np.testing.assert_allclose(
        key_bias_attention(Xs, z, xi), (w @ Xs) / w.sum(1, keepdims=True), atol=1e-12
    )


def test_multihead_finite_prompt_mse(rng):
    gm = GaussianMixture.isotropic([0.5, 0.5], [[3.0, 0.0], [0.0, 3.0]], 1.0)
    law = noisy_mixture(gm, 2.0)
    heads = two_head_construction(gm.means, 1.0, 2.0)
    Zq = rng.normal(size=(5, 2)) * 2
    np.testing.assert_allclose(
        multihead_finite_prompt_mse(law, Zq, heads[:1]),
        finite_prompt_mse(law, Zq, *heads[0]),
        rtol=1e-12,
    )
    # E‖Σ_h ψ_h(Z)‖² by Gauss–Hermite quadrature, ψ_h(x) = exp(a_hᵀx − Λ(a_h)) (V_h x − T_h)
    X, w, _ = mixture_nodes(law, 60)
    ref = []
    for z in Zq:
        psi = sum(
            np.exp(X @ (U @ z) - law.log_mgf(U @ z))[:, None]
            * (X @ V.T - softmax_attention_limit(law, z[None], U, V)[0])
            for U, V in heads
        )
        ref.append(np.sum(w * np.sum(psi**2, axis=1)))
    np.testing.assert_allclose(multihead_finite_prompt_mse(law, Zq, heads), ref, rtol=1e-9)


def test_two_heads_stay_finite_at_extreme_scales():
    gm = GaussianMixture.isotropic([0.5, 0.5], [[1e3, 0.0], [-1e3, 0.0]], 1.0)
    heads = two_head_construction(gm.means, 1.0, 1e-2)
    Z = np.array([[1e3, 2.0], [-1e3, 1.0]])
    assert np.all(np.isfinite(multihead_limit(noisy_mixture(gm, 1e-2), Z, heads)))
