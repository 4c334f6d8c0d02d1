"""gmmlib at extreme but valid inputs: finite and correct where the answer is finite, else a
ValueError.

Huge queries and U (where logits and squared distances overflow: the softmaxes saturate), huge
V, tiny noise, weights near 0 and 1, near-singular covariances. Every warning is an error here:
no overflow warning may escape.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import softmax

from gmmlib import GaussianMixture
from gmmlib import attention as att
from gmmlib import denoising as den
from gmmlib import limits as lim

pytestmark = pytest.mark.filterwarnings("error")

SETTINGS = settings(max_examples=40, deadline=None)
I2 = np.eye(2)

# a generic mixture (two different covariances) and one with a shared covariance
MIX = GaussianMixture([0.3, 0.7], [[1.0, 0.0], [-1.0, 0.5]], [0.5 * I2, [[0.3, 0.1], [0.1, 0.2]]])
SHARED = GaussianMixture.isotropic([0.4, 0.6], [[2.0, 0.0], [-2.0, 0.5]], 1.0)
POINT = GaussianMixture([0.5, 0.5], [[0.0, 0.0], [1.0, 1.0]], [np.zeros((2, 2)), I2])

angles = st.floats(0.0, 2 * np.pi, allow_nan=False)
exponents = st.integers(0, 300)  # |x| = 10**e
mixtures = st.sampled_from([MIX, SHARED])


def _direction(theta: float) -> np.ndarray:
    return np.array([np.cos(theta), np.sin(theta)])


def _winner_posterior(mixture: GaussianMixture, xhat: np.ndarray) -> int | None:
    """The component the posterior saturates on along xhat (None when too close to call)."""
    P = np.linalg.inv(mixture.covs)
    quad = np.einsum("i,kij,j->k", xhat, P, xhat)
    lead = np.flatnonzero(quad <= quad.min() + 1e-9)
    if len(lead) == 1:
        return int(lead[0]) if np.sort(quad)[1] - quad.min() > 1e-6 else None
    lin = np.einsum("i,kij,kj->k", xhat, P, mixture.means)[lead]
    order = np.sort(lin)
    return int(lead[np.argmax(lin)]) if order[-1] - order[-2] > 1e-6 else None


# ---------------------------------------------------------------- mixtures: posterior, tilt,
# densities
@SETTINGS
@given(mixtures, angles, exponents)
def test_posterior_is_a_finite_distribution_however_far_out(mixture, theta, e):
    x = 10.0**e * _direction(theta)
    post = mixture.posterior(x[None])
    assert np.all(np.isfinite(post)) and np.all(post >= 0)
    assert np.sum(post) == pytest.approx(1.0, abs=1e-12)


@SETTINGS
@given(mixtures, angles, st.integers(160, 300))
def test_posterior_saturates_on_the_right_component(mixture, theta, e):
    xhat = _direction(theta)
    k = _winner_posterior(mixture, xhat)
    if k is None:
        return
    post = mixture.posterior((10.0**e * xhat)[None])[0]
    assert post[k] == pytest.approx(1.0, abs=1e-12)


def test_posterior_far_out_agrees_with_the_direct_formula_where_both_work():
    # at |x| = 1e150 the squared distances (1e300) still fit: the direct path; at 1e200 they do not
    for mixture in (MIX, SHARED, POINT.convolve(0.25)):
        for theta in np.linspace(0.1, 6.2, 13):
            xhat = _direction(theta)
            np.testing.assert_allclose(mixture.posterior((1e150 * xhat)[None]),
                                       mixture.posterior((1e200 * xhat)[None]), atol=1e-12)


def test_log_densities_refuse_points_beyond_the_float_range():
    with pytest.raises(ValueError, match="below the float range"):
        MIX.log_prob(np.array([[1e200, 0.0]]))
    with pytest.raises(ValueError, match="below the float range"):
        MIX.component_log_prob(np.array([[1e200, 0.0]]))
    assert np.all(np.isfinite(MIX.log_prob(np.array([[1e100, 0.0]]))))


@SETTINGS
@given(mixtures, angles, exponents)
def test_tilt_weights_are_finite_and_agree_with_the_tilt(mixture, theta, e):
    a = 10.0**e * _direction(theta)
    w = mixture.tilt_weights(a)
    assert np.all(np.isfinite(w)) and np.sum(w) == pytest.approx(1.0, abs=1e-12)
    if e <= 5:  # moderate logits: the weights are their softmax
        logits = mixture.tilt_logits(a)
        np.testing.assert_allclose(w, softmax(logits), atol=1e-12)
    elif e > 160:  # aᵀΓa overflows: the log-MGF is beyond the float range
        with pytest.raises(ValueError, match="overflow the float range"):
            mixture.log_mgf(a)


def test_tilt_far_out_goes_to_the_widest_component_along_a():
    a = 1e200 * _direction(0.4)
    quad = np.einsum("i,kij,j->k", a / 1e200, MIX.covs, a / 1e200)
    w = MIX.tilt_weights(a)
    assert w[np.argmax(quad)] == 1.0
    np.testing.assert_allclose(MIX.tilt_weights(1e150 * _direction(0.4)), w, atol=1e-12)


def test_weights_near_zero_and_one():
    mix = GaussianMixture([1e-300, 1 - 1e-300], [[0.0, 0.0], [1.0, 1.0]], [I2, I2])
    post = mix.posterior(np.array([[0.0, 0.0], [1e200, -1e200]]))
    assert np.all(np.isfinite(post)) and np.allclose(post.sum(axis=1), 1.0)
    zero = GaussianMixture([0.0, 1.0], [[0.0, 0.0], [1.0, 1.0]], [I2, 2 * I2])
    assert zero.posterior(np.array([[1e200, 0.0]]))[0, 0] == 0.0
    assert np.all(np.isfinite(zero.tilt_weights(np.array([1e200, 0.0]))))


@SETTINGS
@given(st.floats(1e-12, 1e-3), angles, st.integers(0, 3))
def test_near_singular_covariances(eps, theta, e):
    cov = np.array([[1.0, 1.0 - eps], [1.0 - eps, 1.0]])
    mix = GaussianMixture([0.5, 0.5], [[0.0, 0.0], [1.0, -1.0]], [cov, I2])
    z = 10.0**e * _direction(theta)
    assert np.all(np.isfinite(mix.posterior(z[None])))
    assert np.all(np.isfinite(den.bayes_denoiser(mix, 1e-3, z)))


# ---------------------------------------------------------------- denoising
def test_bayes_denoiser_at_norm_1e200_is_the_saturated_expert():
    z = np.array([1e200, 0.5e200])
    for mixture, noise in ((MIX, 0.5), (SHARED, 0.5), (POINT, 0.5)):
        out = den.bayes_denoiser(mixture, noise, z)
        noisy = den.noisy_mixture(mixture, noise)
        k = _winner_posterior(noisy, z / 1e200)
        gain = mixture.covs[k] @ np.linalg.inv(noisy.covs[k])
        expert = mixture.means[k] + gain @ (z - mixture.means[k])
        np.testing.assert_allclose(out, expert, rtol=1e-12)


@SETTINGS
@given(mixtures, angles, exponents, st.floats(1e-6, 1e3))
def test_bayes_denoiser_is_finite_everywhere(mixture, theta, e, noise):
    out = den.bayes_denoiser(mixture, noise, 10.0**e * _direction(theta))
    assert np.all(np.isfinite(out))


@SETTINGS
@given(st.floats(1e-12, 1e2))
def test_bayes_mse_is_accurate_down_to_tiny_noise(noise):
    # one Gaussian N(0, I): the risk is d ξ²/(1 + ξ²), which E‖X‖² − E‖E[X|Z]‖² would lose in
    # rounding
    gauss = GaussianMixture.gaussian([0.0, 0.0], I2)
    assert den.bayes_mse(gauss, noise) == pytest.approx(2 * noise**2 / (1 + noise**2), rel=1e-9)


@SETTINGS
@given(st.sampled_from([1e-12, 1e-9, 1e-6, 1e-3, 1.0, 1e3]))
def test_bayes_mse_of_a_mixture_is_positive_and_at_most_the_noise(noise):
    r = den.bayes_mse(MIX, noise)
    # below the identity's risk d ξ² (to the quadrature's accuracy) and the prior's variance
    assert 0 < r <= min(2 * noise**2, float(np.trace(MIX.covariance()))) * (1 + 1e-6)


# ---------------------------------------------------------------- infinite-prompt limits
@SETTINGS
@given(mixtures, angles, st.integers(0, 150), st.integers(0, 150))
def test_gates_and_softmax_limit_finite_for_huge_queries_and_U(mixture, theta, e_query, e_U):
    z = 10.0**e_query * _direction(theta)
    U = 10.0**e_U * I2
    gates = lim.attention_gates(mixture, z, U)
    assert np.all(np.isfinite(gates)) and np.sum(gates) == pytest.approx(1.0, abs=1e-12)
    out = lim.softmax_attention_limit(mixture, z, U, I2)
    k = int(np.argmax(gates))
    if gates[k] == 1.0:  # saturated: the winning expert m_k + Γ_k U z
        expert = mixture.means[k] + mixture.covs[k] @ (U @ z)
        np.testing.assert_allclose(out, expert, rtol=1e-12, atol=1e-12 * np.max(np.abs(expert)))
    assert np.all(np.isfinite(out))


def test_limits_refuse_what_overflows_and_say_why():
    z = np.array([1e200, 1e200])
    with pytest.raises(ValueError, match="a = Uz overflows"):
        lim.softmax_attention_limit(MIX, z, 1e200 * I2, I2)
    with pytest.raises(ValueError, match="overflows the float range"):
        lim.softmax_attention_limit(MIX, np.array([10.0, 5.0]), I2, 1e308 * I2)
    with pytest.raises(ValueError, match="overflow"):
        lim.finite_prompt_mse(MIX, np.array([1.0, 0.5]), 100 * I2, I2)


@SETTINGS
@given(mixtures, angles, st.integers(0, 150))
def test_effective_sample_fraction_in_unit_interval(mixture, theta, e):
    frac = lim.effective_sample_fraction(mixture, 10.0**e * _direction(theta), I2)
    assert 0.0 <= frac <= 1.0


@SETTINGS
@given(mixtures, angles, st.floats(0.0, 40.0))
def test_finite_prompt_mse_finite_or_refused(mixture, theta, u):
    z = _direction(theta)
    for fn in (lim.finite_prompt_mse, lim.finite_prompt_mse_correction):
        try:
            value = fn(mixture, z, u * I2, I2)
        except ValueError as exc:
            assert "overflow" in str(exc)
        else:
            assert np.isfinite(value)


# ---------------------------------------------------------------- finite-prompt attention
TOKENS = np.random.default_rng(3).standard_normal((40, 2))


@SETTINGS
@given(angles, st.integers(0, 300), st.integers(0, 300))
def test_softmax_attention_huge_query_and_U_is_the_argmax_token(theta, e_query, e_U):
    q = 10.0**e_query * _direction(theta)
    U = 10.0**e_U * I2
    out = att.softmax_attention(TOKENS, q[None], U, I2)[0]
    assert np.all(np.isfinite(out))
    w = att.attention_weights(TOKENS, q, U)
    assert np.all(np.isfinite(w)) and np.sum(w) == pytest.approx(1.0, abs=1e-12)
    if e_query + e_U >= 6:  # scores of order 1e6: an argmax
        scores = TOKENS @ _direction(theta)
        top = np.sort(scores)
        if top[-1] - top[-2] > 1e-3:
            np.testing.assert_allclose(out, TOKENS[np.argmax(scores)], rtol=1e-12)


def test_softmax_attention_path_keeps_prefixes_that_underflow():
    q = np.array([[1e3, 5e2]])
    lengths = [1, 5, 20, 40]
    path = att.softmax_attention_path(TOKENS, q, I2, I2, lengths)
    for row, L in zip(path, lengths):
        np.testing.assert_allclose(row, att.softmax_attention(TOKENS[:L], q, I2, I2),
                                   rtol=1e-9, atol=1e-12)


def test_attention_refuses_results_beyond_the_float_range():
    with pytest.raises(ValueError, match="overflows the float range"):
        att.softmax_attention(100 * TOKENS, np.array([[1.0, 0.5]]), I2, 1e308 * I2)
    with pytest.raises(ValueError, match="overflows the float range"):
        att.linear_attention(TOKENS, np.array([[1e300, 1e300]]), 1e300 * I2, I2)
