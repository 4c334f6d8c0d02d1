"""Tests of gmmlib.in_context: the exact mean error of attention on a finite prompt (Chapter 10)."""

import numpy as np
import pytest

from gmmlib import GaussianMixture
from gmmlib.attention import softmax_attention
from gmmlib.in_context import (GOLDEN_EXPONENT, QUERY_TILT, in_context_mse, local_slopes,
                               mean_in_context_mse)
from gmmlib.limits import (finite_prompt_mse, finite_prompt_mse_correction, finite_prompt_mse_exact,
                           prompt_errors)

GAUSS = GaussianMixture.isotropic([1.0], [[0.3, -0.2]], 0.7)
MIX = GaussianMixture(
    [0.3, 0.7], [[1.0, 0.5], [-1.0, 0.2]], [np.eye(2) * 0.5, [[0.8, 0.2], [0.2, 0.4]]]
)
Q = np.array([[0.5, 0.1], [1.5, -1.0], [-1.2, 0.7]])
U = np.array([[1.0, 0.2], [0.1, 0.8]])
V = np.array([[0.5, 0.1], [0.0, 1.2]])


@pytest.mark.parametrize("L", [10, 100, 1000])
def test_matches_the_gaussian_formula_of_chapter_1(L):
    ours = in_context_mse(GAUSS, Q, U, V, lengths=[L], step=0.25)[:, 0]
    theirs = finite_prompt_mse_exact(GAUSS, Q, U, V, length=L) / L
    np.testing.assert_allclose(ours, theirs, rtol=1e-11)


def test_two_grid_steps_agree():
    lengths = [2, 30, 1e4, 1e8]
    fine = in_context_mse(MIX, Q, U, V, lengths=lengths, step=0.25)
    np.testing.assert_allclose(
        in_context_mse(MIX, Q, U, V, lengths=lengths, step=0.125), fine, rtol=1e-12
    )
    np.testing.assert_allclose(in_context_mse(MIX, Q, U, V, lengths=lengths), fine, rtol=1e-6)


@pytest.mark.parametrize("L", [1, 5, 50])
def test_matches_monte_carlo_on_a_mixture(L):
    rng = np.random.default_rng(20)
    errors = prompt_errors(MIX, Q, U, V, length=L, n_prompts=100_000, rng=rng)
    mean, se = errors.mean(0), errors.std(0, ddof=1) / np.sqrt(len(errors))
    exact = in_context_mse(MIX, Q, U, V, lengths=[L])[:, 0]
    assert np.all(np.abs(exact - mean) <= 4.5 * se), (exact, mean, se)
    wrong = in_context_mse(MIX, Q, U, V, lengths=[L], cross=False)[:, 0]
    if L > 1:  # the pair term (squared bias of the ratio) is resolved by these draws
        assert np.any(np.abs(wrong - mean) > 4.5 * se)


def test_tends_to_the_finite_prompt_law_with_its_correction():
    L = 1e7
    C, C1 = finite_prompt_mse(MIX, Q, U, V), finite_prompt_mse_correction(MIX, Q, U, V)
    exact = in_context_mse(MIX, Q, U, V, lengths=[L], step=0.25)[:, 0]
    np.testing.assert_allclose(L * exact, C + C1 / L, rtol=1e-9)


def test_zero_tilt_is_a_plain_mean():
    out = in_context_mse(MIX, np.zeros(2), U, V, lengths=[1, 10])
    spread = np.trace(V @ MIX.covariance() @ V.T)
    np.testing.assert_allclose(out, spread / np.array([1, 10]), rtol=1e-12)


def test_query_averaged_mean_matches_monte_carlo():
    rng = np.random.default_rng(5)
    L, n = 100, 40_000
    z = rng.standard_normal(n)
    y = rng.standard_normal((n, L))
    s = z[:, None] * y
    w = np.exp(s - s.max(1, keepdims=True))
    err2 = ((w * y).sum(1) / w.sum(1) - z) ** 2
    exact = mean_in_context_mse(0.0, [L])[0]
    assert abs(exact - err2.mean()) <= 4.5 * err2.std(ddof=1) / np.sqrt(n)


def test_query_averaged_mean_converges_in_its_steps_and_slope_tends_to_golden_ratio():
    lengths = 10.0 ** np.array([3, 4, 60, 80])
    coarse = mean_in_context_mse(0.0, lengths)
    fine = mean_in_context_mse(0.0, lengths, query_step=0.15, step=0.25)
    np.testing.assert_allclose(coarse, fine, rtol=1e-6)
    slope = local_slopes(lengths[2:], fine[2:])[0]
    assert abs(slope + GOLDEN_EXPONENT) < 1 / np.log(1e70)
    assert abs(slope + 2 / 3) > 1 / np.log(1e70)
    assert QUERY_TILT == pytest.approx(0.6687, abs=1e-4)


def test_inputs_are_validated():
    with pytest.raises(ValueError, match="lengths"):
        in_context_mse(MIX, Q, U, V, lengths=[0])
    with pytest.raises(ValueError, match="step"):
        in_context_mse(MIX, Q, U, V, lengths=[3], step=0.0)
    with pytest.raises(ValueError):
        local_slopes([1.0, 10.0], [1.0])
    with pytest.raises(ValueError, match="lengths"):
        mean_in_context_mse(0.0, [0.5])


def test_softmax_attention_is_the_estimator_it_describes():
    # the quantity of in_context_mse is the error of gmmlib.attention.softmax_attention
    rng = np.random.default_rng(1)
    X = MIX.sample_tokens(4, 7, rng)
    out = softmax_attention(X, Q, U, V)
    assert out.shape == (4, 3, 2)
