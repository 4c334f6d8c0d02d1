"""gmmlib.classification against independent computations: Monte Carlo, scipy, rules by hand, random
rules."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from scipy import integrate, stats

from gmmlib import GaussianMixture
from gmmlib.classification import (
    bayes_scores,
    best_cone_rule,
    linear_rule_accuracy,
    sector_probability,
    sign_rule_accuracy,
)
from gmmlib.selection import onehot_task, xor_bayes_accuracy, xor_posterior_mean, xor_task

from ..conftest import random_mixture, random_spd, seeds


def test_bayes_scores_give_the_posterior(rng):
    gm, _ = onehot_task([0.2, 0.5, 0.3], rng.normal(size=(3, 2)), random_spd(rng, 2))
    W, b = bayes_scores(gm)
    X = gm.sample(30, rng)[0]
    s = X @ W.T + b
    p = np.exp(s - s.max(axis=1, keepdims=True))
    np.testing.assert_allclose(p / p.sum(axis=1, keepdims=True), gm.posterior(X), atol=1e-12)


def test_linear_rule_accuracy_two_classes_by_hand(rng):
    gm = GaussianMixture(
        [0.3, 0.7], [[1.0, 0.0], [-0.5, 0.5]], [np.eye(2), [[0.5, 0.1], [0.1, 0.3]]]
    )
    W, b = rng.normal(size=(2, 2)), rng.normal(size=2)
    w, c = W[0] - W[1], b[0] - b[1]
    p0 = stats.norm.cdf((w @ gm.means[0] + c) / np.sqrt(w @ gm.covs[0] @ w))
    p1 = stats.norm.cdf(-(w @ gm.means[1] + c) / np.sqrt(w @ gm.covs[1] @ w))
    assert np.isclose(linear_rule_accuracy(gm, W, b), 0.3 * p0 + 0.7 * p1, rtol=1e-13)


@pytest.mark.parametrize("K", [3, 4])
def test_linear_rule_accuracy_against_monte_carlo(K):
    rng = np.random.default_rng(K)
    gm = random_mixture(rng, K, 2)
    W, b = rng.normal(size=(K, 2)), rng.normal(size=K)
    n = 400_000
    X, k = gm.sample(n, rng)
    emp = np.mean(np.argmax(X @ W.T + b, axis=1) == k)
    acc = linear_rule_accuracy(gm, W, b)
    assert abs(emp - acc) < 4 * np.sqrt(acc * (1 - acc) / n)


def test_linear_rule_accuracy_degenerate_rows():
    gm, _ = onehot_task([0.5, 0.5], [[1.0, 0.0], [-1.0, 0.0]], np.eye(2))
    # identical scores up to a positive intercept gap: class 0 is always chosen
    assert np.isclose(linear_rule_accuracy(gm, np.zeros((2, 2)), np.array([1.0, 0.0])), 0.5)
    assert np.isclose(linear_rule_accuracy(gm, np.zeros((2, 2)), np.array([0.0, 1.0])), 0.5)


def test_sign_rule_accuracy_against_monte_carlo_and_by_hand(rng):
    gm = random_mixture(rng, 3, 2)
    y = np.array([1.0, -1.0, 1.0])
    w, b = rng.normal(size=2), 0.3
    n = 400_000
    X, k = gm.sample(n, rng)
    emp = np.mean(np.sign(X @ w + b) == y[k])
    acc = sign_rule_accuracy(gm, y, w, b)
    assert abs(emp - acc) < 4 * np.sqrt(acc * (1 - acc) / n)
    # one component, by hand
    g1 = GaussianMixture.gaussian([1.0, 0.0], np.diag([4.0, 1.0]))
    assert np.isclose(
        sign_rule_accuracy(g1, [-1], [1.0, 0.0], 0.5), stats.norm.cdf(-1.5 / 2.0), rtol=1e-14
    )
    # a point mass: correct iff the margin is positive; w = 0 never predicts a label
    pm = GaussianMixture([0.5, 0.5], [[1.0, 0.0], [-1.0, 0.0]], np.zeros((2, 2, 2)))
    assert sign_rule_accuracy(pm, [1, -1], [1.0, 0.0]) == 1.0
    assert sign_rule_accuracy(pm, [1, -1], [0.0, 0.0]) == 0.0
    with pytest.raises(ValueError, match="labels"):
        sign_rule_accuracy(pm, [1, 0], [1.0, 0.0])
    with pytest.raises(ValueError, match="w"):
        sign_rule_accuracy(pm, [1, -1], [1.0, 0.0, 0.0])


@settings(max_examples=20, deadline=None)
@given(seed=seeds)
def test_every_sign_rule_is_at_chance_on_xor(seed):
    rng = np.random.default_rng(seed)
    gm, C = xor_task(rng.uniform(0.5, 3.0), rng.uniform(0.2, 2.0))
    assert np.isclose(sign_rule_accuracy(gm, C, rng.normal(size=2)), 0.5, atol=1e-15)


def test_xor_closed_forms():
    gm, C = xor_task(2.0, np.sqrt(0.5))
    X, k = gm.sample(5000, 1)
    np.testing.assert_allclose(xor_posterior_mean(X), gm.posterior(X) @ C[:, 0], atol=1e-12)
    t = 2.0 / np.sqrt(0.5)
    assert np.isclose(
        xor_bayes_accuracy(), 1 - 2 * stats.norm.cdf(t) * stats.norm.cdf(-t), rtol=1e-14
    )
    # independent: integrate max_y p(x, y) over the plane for a softer XOR
    gm1, C1 = xor_task(1.0, 1.0)

    def joint_max(x2, x1):
        p = np.exp(gm1.component_log_prob(np.array([[x1, x2]]))[0]) * gm1.weights
        return max(p[C1[:, 0] > 0].sum(), p[C1[:, 0] < 0].sum())

    val = sum(
        integrate.dblquad(joint_max, a, b, c, d, epsabs=1e-10)[0]
        for a, b in ((-12, 0), (0, 12))
        for c, d in ((-12, 0), (0, 12))
    )
    assert np.isclose(val, xor_bayes_accuracy(1.0, 1.0), atol=1e-7)


def test_xor_bayes_accuracy_against_monte_carlo():
    gm, C = xor_task(1.5, 0.8)
    n = 400_000
    X, k = gm.sample(n, 5)
    emp = np.mean(np.sign(xor_posterior_mean(X, 1.5, 0.8)) == C[k, 0])
    acc = xor_bayes_accuracy(1.5, 0.8)
    assert abs(emp - acc) < 4 * np.sqrt(acc * (1 - acc) / n)


def test_sector_probability_against_monte_carlo_and_complements():
    rng = np.random.default_rng(11)
    m, G = np.array([0.4, -0.7]), np.array([[1.0, 0.3], [0.3, 0.5]])
    X = rng.multivariate_normal(m, G, size=400_000)
    theta = np.mod(np.arctan2(X[:, 1], X[:, 0]) - 0.3, 2 * np.pi)
    for arc in (0.7 * np.pi, np.pi, 1.6 * np.pi):
        p = sector_probability(m, G, 0.3, 0.3 + arc)
        hat = np.mean(theta < arc)
        assert abs(p - hat) < 5 * np.sqrt(hat * (1 - hat) / len(X))
        q = sector_probability(m, G, 0.3 + arc, 0.3 + 2 * np.pi)
        assert np.isclose(p + q, 1.0, atol=1e-12)
    assert sector_probability(m, G, 1.0, 1.0) == 0.0
    assert sector_probability(m, G, 1.0, 1.0 + 2 * np.pi) == 1.0
    # a half-plane: Φ of the signed distance of the mean in the Mahalanobis norm of the normal
    n = np.array([-np.sin(0.3), np.cos(0.3)])
    assert np.isclose(
        sector_probability(m, G, 0.3, 0.3 + np.pi),
        stats.norm.cdf(n @ m / np.sqrt(n @ G @ n)),
        atol=1e-12,
    )
    with pytest.raises(ValueError, match="stop - start"):
        sector_probability(m, G, 1.0, 0.5)
    with pytest.raises(ValueError, match="cov"):
        sector_probability(m, -G, 0.0, 1.0)


def test_best_cone_rule_is_the_bayes_rule_when_it_has_no_intercepts():
    """Equal priors and equal norms: the Bayes rule is intercept-free, so the supremum is
    attained."""
    angles = 0.2 + 2 * np.pi * np.arange(3) / 3
    gm, _ = onehot_task(np.full(3, 1 / 3), 1.3 * np.c_[np.cos(angles), np.sin(angles)], np.eye(2))
    W, b = bayes_scores(gm)
    rule = best_cone_rule(gm)
    assert rule.attained and np.all(rule.arcs < np.pi)
    assert np.isclose(rule.accuracy, linear_rule_accuracy(gm, W, b), atol=1e-8)


@pytest.mark.parametrize("seed", [0, 1])
def test_no_intercept_free_rule_beats_best_cone_rule(seed):
    rng = np.random.default_rng(seed)
    angles = rng.uniform(0, 2 * np.pi, size=3)
    gm, _ = onehot_task(
        rng.dirichlet(np.ones(3)), np.c_[np.cos(angles), np.sin(angles)], random_spd(rng, 2, 0.5)
    )
    rule = best_cone_rule(gm)
    accs = [linear_rule_accuracy(gm, rng.normal(size=(3, 2))) for _ in range(200)]
    assert max(accs) <= rule.accuracy + 1e-6
    with pytest.raises(ValueError, match="x_mixture"):
        best_cone_rule(random_mixture(rng, 2, 2))


def test_classification_validation_errors(mixture2d):
    with pytest.raises(ValueError, match="W"):
        linear_rule_accuracy(mixture2d, np.zeros((3, 2)))
    with pytest.raises(ValueError, match="shared"):
        bayes_scores(mixture2d)
    with pytest.raises(ValueError, match="cov"):
        sector_probability([0.0, 0.0], [[1.0, 2.0], [2.0, 1.0]], 0.0, 1.0)  # indefinite
