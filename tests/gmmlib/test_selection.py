"""gmmlib.selection against independent computations: closed forms, naive loops, scipy, Monte
Carlo."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from gmmlib import (
    GaussianMixture,
    linear_attention_limit,
    softmax_attention,
    softmax_attention_limit,
)
from gmmlib.denoising import bayes_denoiser
from gmmlib.runtime.checks import replicate_mean_se
from gmmlib.limits import component_linear_limits, shared_covariance_limit
from gmmlib.attention import Head, PromptBatch
from gmmlib.selection import (
    TIE,
    LabelledPromptBatch,
    alignment_attention,
    alignment_attention_limit,
    decide,
    gaussian_kernel_log_alignment,
    onehot_task,
    readout_construction,
    sample_prompts,
    softmax_log_alignment,
    token_mixture,
    xor_posterior_mean,
    xor_task,
)

from ..conftest import dims, ncomp, random_mixture, random_spd, seeds


def shared_mixture(rng, K, d):
    G = random_spd(rng, d, 0.5)
    return GaussianMixture(
        rng.dirichlet(np.ones(K) * 2), rng.normal(size=(K, d)), np.stack([G] * K)
    )


@settings(max_examples=25, deadline=None)
@given(seed=seeds, K=ncomp, d=dims)
def test_shared_covariance_form_matches_gated_experts(seed, K, d):
    rng = np.random.default_rng(seed)
    gm = shared_mixture(rng, K, d)
    U, V, Q = rng.normal(size=(d, d)), rng.normal(size=(2, d)), rng.normal(size=(4, d))
    np.testing.assert_allclose(
        shared_covariance_limit(gm, Q, U, V),
        softmax_attention_limit(gm, Q, U, V),
        rtol=1e-9,
        atol=1e-10,
    )


def test_shared_covariance_form_rejects_unequal_covariances(mixture2d):
    with pytest.raises(ValueError, match="shared"):
        shared_covariance_limit(mixture2d, np.zeros(2), np.eye(2), np.eye(2))


def test_shared_covariance_form_is_finite_for_huge_U(rng):
    gm = shared_mixture(rng, 3, 2)
    out = shared_covariance_limit(gm, rng.normal(size=(5, 2)), 1e6 * np.eye(2), np.eye(2))
    assert np.all(np.isfinite(out))


@settings(max_examples=20, deadline=None)
@given(seed=seeds, K=ncomp, d=st.integers(min_value=1, max_value=2))
def test_softmax_alignment_decomposition_is_gated_experts(seed, K, d):
    rng = np.random.default_rng(seed)
    gm = random_mixture(rng, K, d)
    U, V, Q = 0.5 * rng.normal(size=(d, d)), rng.normal(size=(2, d)), rng.normal(size=(3, d))
    dec = alignment_attention_limit(gm, Q, softmax_log_alignment(U), V, n_points=40)
    np.testing.assert_allclose(
        dec.output, softmax_attention_limit(gm, Q, U, V), rtol=1e-8, atol=1e-9
    )
    A = Q @ U.T
    logits = gm.tilt_logits(A)
    gates = np.exp(logits - logits.max(axis=1, keepdims=True))
    np.testing.assert_allclose(
        dec.responsibilities, gates / gates.sum(axis=1, keepdims=True), atol=1e-9
    )
    experts = (gm.means[None] + np.einsum("kij,nj->nki", gm.covs, A)) @ V.T
    np.testing.assert_allclose(dec.component_outputs, experts, rtol=1e-8, atol=1e-9)


def test_kernel_alignment_is_the_bayes_denoiser(mixture2d, rng):
    Q = rng.normal(size=(6, 2)) * 2
    for h in (0.8, 1.5, 2.5):  # kernels smooth on the components' scale (the quadrature's domain)
        dec = alignment_attention_limit(
            mixture2d, Q, gaussian_kernel_log_alignment(h), np.eye(2), n_points=50
        )
        np.testing.assert_allclose(dec.output, bayes_denoiser(mixture2d, h, Q), atol=1e-9)
        np.testing.assert_allclose(dec.responsibilities.sum(axis=1), 1.0, atol=1e-14)


def test_alignment_decomposition_in_one_dimension_by_scipy_quad():
    # a non-exponential positive alignment: a(z, z') = 1 + (z z')^2
    gm = GaussianMixture([0.4, 0.6], [[-1.0], [1.5]], [[[0.3]], [[0.8]]])
    ell = lambda Q, K: np.log1p((Q @ K.T) ** 2)  # noqa: E731
    for z in (-0.7, 0.4, 1.9):
        dens = lambda x: np.exp(gm.log_prob(np.array([[x]]))[0])  # noqa: E731
        num = integrate.quad(lambda x: (1 + (z * x) ** 2) * x * dens(x), -30, 30)[0]
        den = integrate.quad(lambda x: (1 + (z * x) ** 2) * dens(x), -30, 30)[0]
        dec = alignment_attention_limit(gm, [z], ell, [[1.0]], n_points=20)
        assert np.isclose(dec.output[0, 0], num / den, rtol=1e-9)


def test_alignment_attention_matches_a_naive_loop(rng):
    Z, Q, V = rng.normal(size=(50, 3)), rng.normal(size=(4, 3)), rng.normal(size=(2, 3))
    ell = gaussian_kernel_log_alignment(0.7)
    out = alignment_attention(Z, Q, ell, V)
    for i, q in enumerate(Q):
        w = np.array([np.exp(-np.sum((q - z) ** 2) / (2 * 0.49)) for z in Z])
        np.testing.assert_allclose(out[i], V @ (w @ Z) / w.sum(), rtol=1e-10)
    # the softmax alignment reproduces softmax attention
    U = rng.normal(size=(3, 3))
    np.testing.assert_allclose(
        alignment_attention(Z, Q, softmax_log_alignment(U), V),
        softmax_attention(Z, Q, U, V),
        rtol=1e-10,
    )


def test_alignment_attention_is_finite_at_extreme_scales(rng):
    Z, Q = rng.normal(size=(100, 2)), rng.normal(size=(3, 2))
    out = alignment_attention(Z, Q, softmax_log_alignment(1e8 * np.eye(2)), np.eye(2))
    assert np.all(np.isfinite(out))
    out = alignment_attention(Z, Q, gaussian_kernel_log_alignment(1e-6), np.eye(2))
    assert np.all(np.isfinite(out))


def test_alignment_finite_prompt_converges_to_the_decomposition(mixture2d, rng):
    Q = rng.normal(size=(3, 2))
    ell = gaussian_kernel_log_alignment(0.8)
    X, _ = mixture2d.sample(200_000, 7)
    dec = alignment_attention_limit(mixture2d, Q, ell, np.eye(2), n_points=40)
    np.testing.assert_allclose(alignment_attention(X, Q, ell, np.eye(2)), dec.output, atol=0.02)


def test_linear_attention_mixes_with_fixed_weights(mixture2d, rng):
    U, V, Q = rng.normal(size=(2, 2)), rng.normal(size=(3, 2)), rng.normal(size=(5, 2))
    per = component_linear_limits(mixture2d, Q, U, V)
    assert per.shape == (2, 5, 3)
    np.testing.assert_allclose(
        np.einsum("k,knp->np", mixture2d.weights, per),
        linear_attention_limit(mixture2d, Q, U, V),
        rtol=1e-12,
        atol=1e-12,
    )
    # the single-component value, by a naive formula
    G, m = mixture2d.covs[1], mixture2d.means[1]
    np.testing.assert_allclose(per[1], Q @ U.T @ (G + np.outer(m, m)) @ V.T, rtol=1e-12)


# ----------------------------------------------------------------------------- tasks
def test_token_mixture_and_sampling():
    gm, C = onehot_task([0.5, 0.3, 0.2], [[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]], np.eye(2))
    tm = token_mixture(gm, C)
    assert tm.dim == 5 and tm.n_components == 3
    np.testing.assert_array_equal(tm.covs[:, 2:, :], 0.0)
    batch = sample_prompts(gm, C, n_prompts=4, length=30, n_queries=7, rng=3)
    assert isinstance(batch, PromptBatch) and isinstance(batch, LabelledPromptBatch)
    assert batch.tokens.shape == (4, 30, 5) and batch.queries.shape == (4, 7, 5)
    assert batch.components.shape == (4, 7) and batch.targets.shape == (4, 7, 3)
    np.testing.assert_array_equal(batch.queries[..., 2:], 0.0)
    assert np.all(batch.tokens[..., 2:].sum(-1) == 1.0)
    np.testing.assert_array_equal(batch.targets, C[batch.components])
    np.testing.assert_array_equal(decide(batch.targets), batch.components)
    again = sample_prompts(gm, C, n_prompts=4, length=30, n_queries=7, rng=3)
    np.testing.assert_array_equal(batch.tokens, again.tokens)
    t = sample_prompts(gm, C, n_prompts=2, length=5, n_queries=3, rng=0, as_torch=True)
    assert isinstance(t.tokens, torch.Tensor) and t.tokens.dtype == torch.float64
    assert isinstance(t.targets, torch.Tensor) and isinstance(t.components, np.ndarray)
    # the token law is the token mixture: label frequencies match the weights
    big = sample_prompts(gm, C, n_prompts=1, length=200_000, n_queries=1, rng=1)
    np.testing.assert_allclose(big.tokens[0, :, 2:].mean(axis=0), gm.weights, atol=5e-3)


def test_decide_scalar_and_onehot():
    assert np.array_equal(decide(np.array([[0.3], [-2.0]])), [1.0, -1.0])
    assert np.array_equal(decide(np.array([[0.1, 0.7, 0.2], [0.5, 0.1, 0.4]])), [1, 0])
    # ties count as errors: no class (TIE) for a vector, 0 (no label) for a scalar
    assert np.array_equal(decide(np.zeros((2, 3))), [TIE, TIE])
    assert np.array_equal(decide(np.array([[0.5, 0.5, 0.1], [0.1, 0.5, 0.5]])), [TIE, TIE])
    assert np.array_equal(decide(np.array([[0.0]])), [0.0])
    assert np.array_equal(decide(torch.tensor([[[-0.5]]])), [[-1.0]])
    with pytest.raises(ValueError, match="readout"):
        decide(np.zeros((3, 0)))


@settings(max_examples=20, deadline=None)
@given(seed=seeds, K=st.integers(min_value=2, max_value=5), d=st.integers(min_value=1, max_value=3))
def test_label_readout_is_the_bayes_posterior_for_equal_mahalanobis_norms(seed, K, d):
    rng = np.random.default_rng(seed)
    G = random_spd(rng, d)
    raw = rng.normal(size=(K, d))
    # scale each mean to Mahalanobis norm 1.3
    means = raw / np.sqrt(np.einsum("ki,ij,kj->k", raw, np.linalg.inv(G), raw))[:, None] * 1.3
    gm, C = onehot_task(rng.dirichlet(np.ones(K)), means, G)
    U, V = readout_construction(G, K)
    X = gm.sample(20, rng)[0]
    out = softmax_attention_limit(token_mixture(gm, C), np.hstack([X, np.zeros((20, K))]), U, V)
    np.testing.assert_allclose(out, gm.posterior(X), atol=1e-10)


def test_label_readout_uses_the_tilted_prior_otherwise(rng):
    G = np.diag([1.0, 0.25])
    gm, C = onehot_task([0.5, 0.3, 0.2], [[1.0, 0.0], [0.0, 1.0], [-0.6, -0.8]], G)
    U, V = readout_construction(G, 3)
    X = gm.sample(50, rng)[0]
    out = softmax_attention_limit(token_mixture(gm, C), np.hstack([X, np.zeros((50, 3))]), U, V)
    maha = np.einsum("ki,ij,kj->k", gm.means, np.linalg.inv(G), gm.means)
    prior = gm.weights * np.exp(maha / 2)
    tilted = GaussianMixture(prior / prior.sum(), gm.means, gm.covs)
    np.testing.assert_allclose(out, tilted.posterior(X), atol=1e-10)
    assert np.max(np.abs(out - gm.posterior(X))) > 0.05


def test_readout_construction_and_softmax_xor_readout():
    gm, C = xor_task()
    head = readout_construction(0.5 * np.eye(2), 1)
    assert isinstance(head, Head)
    U, V = head
    np.testing.assert_allclose(U[:2, :2], 2 * np.eye(2))
    assert V.shape == (1, 3) and V[0, 2] == 1.0
    X = gm.sample(100, 2)[0]
    out = softmax_attention_limit(token_mixture(gm, C), np.hstack([X, np.zeros((100, 1))]), U, V)[
        :, 0
    ]
    np.testing.assert_allclose(out, xor_posterior_mean(X), atol=1e-12)
    # U -> omega U: the readout is tanh(4 omega x1) tanh(4 omega x2) (exercise ex-07-scale)
    U3, V3 = readout_construction(0.5 * np.eye(2), 1, omega=3.0)
    out3 = softmax_attention_limit(
        token_mixture(gm, C), np.hstack([X, np.zeros((100, 1))]), U3, V3
    )[:, 0]
    np.testing.assert_allclose(out3, np.tanh(12 * X[:, 0]) * np.tanh(12 * X[:, 1]), atol=1e-12)


def test_xor_linear_cross_moment_vanishes():
    gm, C = xor_task()
    M = token_mixture(gm, C).second_moment()
    np.testing.assert_allclose(M[:2, 2], 0.0, atol=1e-15)


def test_every_nonzero_intercept_free_sign_rule_scores_one_half_on_xor(rng):
    """cor-07-xor item 2 as an identity: for w ≠ 0 the ±m pairing of the XOR components gives
    Φ(a) + Φ(−a) = 1 in each pair, so the exact accuracy is ½ whatever w (up to round-off);
    a chapter check of it could not fail. w = 0 never predicts a sign: accuracy 0. The same rules
    on the separable labels sign(m_k1) are not at ½ (the identity needs the XOR labels)."""
    from gmmlib.classification import sign_rule_accuracy

    gm, C = xor_task(offset=2.0, gamma=np.sqrt(0.5))
    separable = np.sign(gm.means[:, :1])
    scaled = rng.normal(size=(200, 2)) * np.exp(rng.uniform(-6, 6, size=(200, 1)))
    ws = np.vstack([scaled, np.eye(2), [[1.0, 1.0], [1.0, -1.0]]])
    acc = np.array([sign_rule_accuracy(gm, C, w) for w in ws])
    np.testing.assert_allclose(acc, 0.5, atol=8 * np.finfo(float).eps)
    acc_sep = np.array([sign_rule_accuracy(gm, separable, w) for w in ws[:200]])
    assert np.all(np.abs(acc_sep - 0.5) > 1e-6)
    assert sign_rule_accuracy(gm, C, np.zeros(2)) == 0.0


# ----------------------------------------------------------------------------- replicate
# statistics, validation, gates
def test_replicate_mean_se_against_scipy(rng):
    x = rng.normal(size=(20, 3, 2))
    mean, se, k = replicate_mean_se(x, familywise_alpha=0.01)
    np.testing.assert_allclose(mean, x.mean(axis=0))
    np.testing.assert_allclose(se, stats.sem(x, axis=0))
    assert np.isclose(k, stats.t.ppf(1 - 0.01 / 12, 19))


def test_validation_errors(mixture2d):
    with pytest.raises(TypeError, match="mixture"):
        shared_covariance_limit("not a mixture", np.zeros(2), np.eye(2), np.eye(2))
    with pytest.raises(ValueError, match="queries"):
        alignment_attention_limit(
            mixture2d, np.zeros((3, 5)), softmax_log_alignment(np.eye(2)), np.eye(2)
        )
    with pytest.raises(TypeError, match="log_alignment"):
        alignment_attention(np.zeros((4, 2)), np.zeros(2), "nope", np.eye(2))
    with pytest.raises(ValueError, match="V"):
        alignment_attention(
            np.zeros((4, 2)), np.zeros(2), softmax_log_alignment(np.eye(2)), np.eye(3)
        )
    with pytest.raises(ValueError, match="log_alignment"):
        alignment_attention(np.zeros((4, 2)), np.zeros(2), lambda Q, K: np.zeros((1, 1)), np.eye(2))
    with pytest.raises(ValueError, match="noise_std"):
        gaussian_kernel_log_alignment(0.0)
    with pytest.raises(ValueError, match="label_vectors"):
        token_mixture(mixture2d, np.eye(3))
    with pytest.raises(ValueError, match="cov"):
        readout_construction(-np.eye(2), 1)
    with pytest.raises(ValueError, match="samples"):
        replicate_mean_se(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="offset"):
        xor_task(offset=-1.0)
    with pytest.raises(TypeError, match="n_prompts"):
        sample_prompts(mixture2d, np.eye(2), n_prompts=1.5, length=3, n_queries=3, rng=0)
    with pytest.raises(TypeError):
        sample_prompts(mixture2d, np.eye(2), 1, 3, 3, 0)  # keywords only
    with pytest.raises(ValueError, match="omega"):
        readout_construction(np.eye(2), 1, omega=0.0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gates_at_zero_scale_are_the_priors(seed):
    """Chapter 3, prop-03-gate-geometry item 2 (moved from the chapter): at ω = 0, αₖ(z) = πₖ."""
    from gmmlib.limits import attention_gates

    rng = np.random.default_rng(seed)
    gm = random_mixture(rng, 3, 2)
    Q = rng.normal(size=(50, 2))
    np.testing.assert_allclose(
        attention_gates(gm, Q, np.zeros((2, 2))), np.tile(gm.weights, (50, 1)), atol=1e-15
    )


# ---------------------------------------------------------------- XOR's cross moment
def test_xor_cross_moment_vanishes_both_ways():
    nu = 2.0
    xor_x, xor_labels = xor_task(offset=nu, gamma=np.sqrt(0.5))
    tokens = token_mixture(xor_x, xor_labels)
    direct = xor_x.weights @ (xor_labels * xor_x.means)
    cross = tokens.second_moment()[:2, 2]
    tol = 4 * np.finfo(float).eps * nu
    np.testing.assert_allclose(direct, 0.0, atol=tol)
    np.testing.assert_allclose(cross, 0.0, atol=tol)
    # near miss: the same moment for the separable labels sign(m_k1) is ν·(1, 0)
    separable = np.sign(xor_x.means[:, :1])
    sep_tokens = token_mixture(xor_x, separable)
    np.testing.assert_allclose(sep_tokens.second_moment()[:2, 2], [nu, 0.0], atol=tol)
    np.testing.assert_allclose(xor_x.weights @ (separable * xor_x.means), [nu, 0.0], atol=tol)
