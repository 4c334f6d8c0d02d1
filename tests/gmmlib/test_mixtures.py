"""GaussianMixture against independent computations (scipy, Monte Carlo) and its invariants."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from scipy import integrate, stats

from gmmlib import GaussianMixture

from ..conftest import dims, ncomp, random_mixture, seeds


def test_log_prob_matches_scipy(mixture2d, rng):
    X = rng.normal(size=(50, 2))
    expected = np.log(sum(
        w * stats.multivariate_normal(m, c).pdf(X)
        for w, m, c in zip(mixture2d.weights, mixture2d.means, mixture2d.covs)
    ))
    np.testing.assert_allclose(mixture2d.log_prob(X), expected, rtol=1e-12)


def test_posterior_matches_bayes_rule(mixture2d, rng):
    X = rng.normal(size=(20, 2))
    joint = np.column_stack([
        w * stats.multivariate_normal(m, c).pdf(X)
        for w, m, c in zip(mixture2d.weights, mixture2d.means, mixture2d.covs)
    ])
    np.testing.assert_allclose(
        mixture2d.posterior(X), joint / joint.sum(1, keepdims=True), rtol=1e-10
    )


def test_moments_match_monte_carlo(mixture2d):
    X, labels = mixture2d.sample(400_000, 7)
    se = X.std(0) / np.sqrt(len(X))
    assert np.all(np.abs(X.mean(0) - mixture2d.mean()) < 5 * se)
    np.testing.assert_allclose(np.cov(X.T), mixture2d.covariance(), atol=0.01)
    np.testing.assert_allclose(np.bincount(labels) / len(labels), mixture2d.weights, atol=0.005)


def test_sample_is_reproducible(mixture2d):
    a, la = mixture2d.sample(100, 3)
    b, lb = mixture2d.sample(100, np.random.default_rng(3))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(la, lb)


def test_point_masses_sample_exactly():
    gm = GaussianMixture([0.5, 0.5], [[3.0, 0.0], [0.0, 3.0]], np.zeros((2, 2, 2)))
    X, labels = gm.sample(1000, 0)
    np.testing.assert_array_equal(X, gm.means[labels])
    with pytest.raises(ValueError, match="positive-definite"):
        gm.log_prob(X)


def test_tilt_of_one_dimensional_gaussian_by_quadrature():
    # Independent check: integrate e^{a x} p(x) numerically.
    gm = GaussianMixture([0.25, 0.75], [[-1.0], [2.0]], [[[0.5]], [[1.5]]])
    a = 0.7
    dens = lambda x: np.exp(gm.log_prob(np.array([[x]]))[0])  # noqa: E731
    Z = integrate.quad(lambda x: np.exp(a * x) * dens(x), -40, 40)[0]
    M1 = integrate.quad(lambda x: x * np.exp(a * x) * dens(x), -40, 40)[0] / Z
    tilted = gm.tilt([a])
    assert np.isclose(gm.log_mgf([a]), np.log(Z), rtol=1e-10)
    assert np.isclose(tilted.mean()[0], M1, rtol=1e-9)
    x = np.array([[0.3], [1.1], [-2.0]])
    np.testing.assert_allclose(
        np.exp(tilted.log_prob(x)), np.exp(a * x[:, 0]) * np.exp(gm.log_prob(x)) / Z, rtol=1e-10
    )


def test_affine_and_convolve():
    gm = GaussianMixture.isotropic([0.5, 0.5], [[1.0, 0.0], [0.0, 1.0]], 0.3)
    A = np.array([[1.0, 2.0], [0.0, 1.0], [1.0, 1.0]])
    b = np.array([0.5, -1.0, 0.0])
    g2 = gm.affine(A, b)
    np.testing.assert_allclose(g2.mean(), A @ gm.mean() + b)
    np.testing.assert_allclose(g2.covariance(), A @ gm.covariance() @ A.T, atol=1e-12)
    g3 = gm.convolve(0.5)
    np.testing.assert_allclose(g3.covariance(), gm.covariance() + 0.5 * np.eye(2))


def test_immutable(mixture2d):
    with pytest.raises(dataclasses.FrozenInstanceError):
        mixture2d.weights = np.array([0.5, 0.5])
    with pytest.raises(ValueError):
        mixture2d.means[0, 0] = 10.0


@settings(max_examples=40, deadline=None)
@given(seed=seeds, K=ncomp, d=dims)
def test_tilt_composes(seed, K, d):
    rng = np.random.default_rng(seed)
    gm = random_mixture(rng, K, d)
    a, b = rng.normal(size=d), rng.normal(size=d)
    lhs, rhs = gm.tilt(a).tilt(b), gm.tilt(a + b)
    np.testing.assert_allclose(lhs.weights, rhs.weights, rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(lhs.means, rhs.means, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(lhs.covs, rhs.covs)
    # the cumulant generating function is additive along tilts: K(a+b) = K(a) + K_a(b)
    assert np.isclose(
        gm.log_mgf(a + b), gm.log_mgf(a) + gm.tilt(a).log_mgf(b), rtol=1e-10, atol=1e-10
    )


@settings(max_examples=40, deadline=None)
@given(seed=seeds, K=ncomp, d=dims)
def test_posteriors_sum_to_one(seed, K, d):
    rng = np.random.default_rng(seed)
    gm = random_mixture(rng, K, d)
    P = gm.posterior(rng.normal(scale=5.0, size=(30, d)))
    assert np.all(P >= 0)
    np.testing.assert_allclose(P.sum(1), 1.0, rtol=1e-12)


def test_huge_tilt_stays_finite():
    gm = GaussianMixture.isotropic([0.5, 0.5], [[1.0, 0.0], [0.0, 1.0]], 0.1)
    t = gm.tilt([1e6, 0.0])
    assert np.all(np.isfinite(t.weights)) and np.all(np.isfinite(t.means))
    np.testing.assert_allclose(t.weights, [1.0, 0.0], atol=1e-300)


# ---------------------------------------------------------------- bad input
GOOD_W, GOOD_M, GOOD_C = [0.5, 0.5], [[0.0, 0.0], [1.0, 1.0]], [np.eye(2), np.eye(2)]


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(weights=[0.6, 0.6]), "weights"),  # not summing to 1
        (dict(weights=[1.5, -0.5]), "weights"),  # negative
        (dict(weights=[1.0]), "weights"),  # wrong shape
        (dict(weights=[np.nan, 0.5]), "weights"),
        (dict(means=[[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]), "covs"),  # d mismatch
        (dict(means=[0.0, 1.0]), "means"),  # 1-D
        (dict(means=[[0.0, np.inf], [1.0, 1.0]]), "means"),
        (dict(covs=[[[1.0, 0.5], [0.0, 1.0]], np.eye(2)]), "symmetric"),
        (dict(covs=[[[1.0, 0.0], [0.0, -1.0]], np.eye(2)]), "semi-definite"),
        (dict(covs=[np.eye(2)]), "covs"),
    ],
)
def test_bad_input_names_the_argument(kwargs, name):
    args = dict(weights=GOOD_W, means=GOOD_M, covs=GOOD_C) | kwargs
    with pytest.raises(ValueError, match=name):
        GaussianMixture(**args)


def test_bad_calls(mixture2d):
    with pytest.raises(ValueError, match="X"):
        mixture2d.log_prob(np.zeros((3, 5)))
    with pytest.raises(ValueError, match="a must"):
        mixture2d.tilt([1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="rng"):
        mixture2d.sample(3, "seed")
    with pytest.raises(TypeError, match="n"):
        mixture2d.sample(2.5, 0)


def test_shared_covariance_returns_the_one_covariance_or_names_the_argument():
    shared = GaussianMixture([0.5, 0.5], [[0.0, 0.0], [1.0, 0.0]], [np.eye(2), np.eye(2)])
    np.testing.assert_array_equal(shared.shared_covariance(), np.eye(2))
    other = GaussianMixture([0.5, 0.5], [[0.0, 0.0], [1.0, 0.0]], [np.eye(2), 2 * np.eye(2)])
    with pytest.raises(ValueError, match=r"x_mixture must have one covariance.*\(for the scores\)"):
        other.shared_covariance("x_mixture", "for the scores")
