"""Tests of gmmlib.regression against independent computations (Monte Carlo, scipy, autograd)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from gmmlib import linear_attention, softmax_attention_limit
from gmmlib import regression as reg

from ..conftest import random_spd, seeds

SIGMA = np.array([[1.0, 0.3], [0.3, 0.5]])


def test_sample_prompts_shapes_and_labels():
    batch = reg.sample_prompts(SIGMA, n_prompts=7, length=5, rng=0)
    assert batch.tokens.shape == (7, 5, 3) and batch.queries.shape == (7, 1, 3)
    assert batch.targets.shape == (7,) and batch.w.shape == (7, 2)
    np.testing.assert_allclose(
        batch.tokens[..., -1], np.einsum("bld,bd->bl", batch.tokens[..., :2], batch.w)
    )
    np.testing.assert_allclose(
        batch.targets, np.einsum("bd,bd->b", batch.queries[:, 0, :2], batch.w)
    )
    assert np.all(batch.queries[..., -1] == 0)
    again = reg.sample_prompts(SIGMA, n_prompts=7, length=5, rng=0)
    np.testing.assert_array_equal(batch.tokens, again.tokens)


def test_sample_prompts_covariance_monte_carlo():
    batch = reg.sample_prompts(SIGMA, n_prompts=20000, length=2, rng=1)
    X = batch.tokens[..., :2].reshape(-1, 2)
    se = np.sqrt((SIGMA**2 + np.outer(np.diag(SIGMA), np.diag(SIGMA))) / X.shape[0])
    assert np.all(np.abs(X.T @ X / X.shape[0] - SIGMA) < 5 * se)


def test_token_covariance_matches_sampled_tokens():
    w = np.array([0.5, -1.2])
    G = reg.token_covariance(SIGMA, w)
    rng = np.random.default_rng(2)
    X = rng.multivariate_normal(np.zeros(2), SIGMA, size=200000)
    Z = np.column_stack([X, X @ w])
    np.testing.assert_allclose(Z.T @ Z / len(Z), G, atol=0.03)
    assert reg.token_law(SIGMA, w).dim == 3


def test_limit_prediction_equals_tilted_mean():
    """b wᵀΣA x_q equals the last coordinate of the softmax limit on N(0, Γ_w) (mixture tilt)."""
    rng = np.random.default_rng(3)
    A, b = rng.normal(size=(2, 2)), 0.8
    U, V = reg.embed_parameters(A, b)
    for _ in range(5):
        w, xq = rng.normal(size=2), rng.normal(size=(4, 2))
        queries = np.column_stack([xq, np.zeros(4)])
        ref = softmax_attention_limit(reg.token_law(SIGMA, w), queries, U, V)[:, -1]
        np.testing.assert_allclose(
            reg.limit_prediction(SIGMA, A, b, w, xq), ref, rtol=1e-12, atol=1e-12
        )


def test_population_risk_monte_carlo():
    rng = np.random.default_rng(4)
    A, b = rng.normal(size=(2, 2)), -0.6
    n = 200000
    w = rng.standard_normal((n, 2))
    xq = rng.multivariate_normal(np.zeros(2), SIGMA, size=n)
    err = (reg.limit_prediction(SIGMA, A, b, w, xq) - np.einsum("nd,nd->n", w, xq)) ** 2
    assert abs(err.mean() - reg.population_risk(SIGMA, A, b)) < 5 * err.std() / np.sqrt(n)


def test_population_risk_grad_autograd():
    rng = np.random.default_rng(5)
    A, b = rng.normal(size=(3, 3)), 0.9
    S = random_spd(rng, 3)
    At = torch.tensor(A, requires_grad=True)
    bt = torch.tensor(b, dtype=torch.float64, requires_grad=True)
    St = torch.tensor(S)
    N = bt * St @ At - torch.eye(3, dtype=torch.float64)
    torch.trace(N @ St @ N.T).backward()
    risk, (gA, gb) = reg.population_risk_grad(S, A, b)
    assert risk == reg.population_risk(S, A, b)
    np.testing.assert_allclose(gA, At.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gb, bt.grad.item(), rtol=1e-12, atol=1e-12)


def test_optimal_parameters_exact_and_balanced():
    A, b = reg.optimal_parameters(SIGMA)
    np.testing.assert_allclose(b * SIGMA @ A, np.eye(2), atol=1e-14)
    assert reg.population_risk(SIGMA, A, b) < 1e-28
    assert np.isclose(np.linalg.norm(A), b, rtol=1e-14)


@pytest.mark.parametrize("L", [2, 7, 30])
def test_finite_prompt_linear_risk_monte_carlo(L):
    rng = np.random.default_rng(6 + L)
    A, b = rng.normal(size=(2, 2)), 0.7
    U, V = reg.embed_parameters(A, b)
    batch = reg.sample_prompts(SIGMA, n_prompts=40000, length=L, rng=rng)
    err = (linear_attention(batch.tokens, batch.queries, U, V)[:, 0, -1] - batch.targets) ** 2
    se = err.std() / np.sqrt(err.size)
    assert abs(err.mean() - reg.finite_prompt_linear_risk(SIGMA, A, b, L)) < 4.5 * se


def test_finite_prompt_optimum_scipy():
    """The closed-form minimiser and minimum agree with a numerical minimisation over M = bA."""
    S = random_spd(np.random.default_rng(7), 3)
    L = 6

    def f(m):
        return reg.finite_prompt_linear_risk(S, m.reshape(3, 3), 1.0, L)

    res = minimize(f, np.zeros(9), method="BFGS", options={"gtol": 1e-12})
    np.testing.assert_allclose(res.x.reshape(3, 3), reg.optimal_linear_map(S, L), atol=1e-6)
    assert np.isclose(res.fun, reg.optimal_finite_prompt_linear_risk(S, L), rtol=1e-9)


def test_identity_covariance_formula():
    for d in (1, 2, 5):
        for L in (1, 10, 1000):
            assert np.isclose(
                reg.optimal_finite_prompt_linear_risk(np.eye(d), L), d * (d + 1) / (L + d + 1)
            )
    assert np.allclose(reg.optimal_linear_map(SIGMA), np.linalg.inv(SIGMA))


def test_gradient_flow_reaches_optimum_and_conserves_balance():
    eps = 1e-2
    A0 = eps * np.eye(2) / np.sqrt(2.0)
    t = np.r_[0.0, np.geomspace(0.2, 200.0, 50)]
    flow = reg.gradient_flow(SIGMA, (A0, eps), t)
    A_star, b_star = reg.optimal_parameters(SIGMA)
    assert flow.t[0] == 0.0 and flow.nfev > 0 and len(flow.thetas) == t.size
    assert max(abs(th.balance()) for th in flow.thetas) < 1e-10
    np.testing.assert_allclose(flow.stack("A")[0], A0)
    assert (
        np.max(np.abs(flow.stack("A")[-1] - A_star)) < 1e-8
        and abs(flow.stack("b")[-1] - b_star) < 1e-8
    )
    risk = [reg.population_risk(SIGMA, *th) for th in flow.thetas]
    assert np.all(np.diff(risk) <= 1e-12)
    np.testing.assert_allclose(flow.thetas[-1].head().U[:2, :2], flow.thetas[-1].A)
    with pytest.raises(ValueError, match="t_eval"):
        reg.gradient_flow(SIGMA, (A0, eps), [1.0, 0.5])
    with pytest.raises(ValueError, match="name"):
        flow.stack("U")


@settings(max_examples=25, deadline=None)
@given(seed=seeds, d=st.integers(1, 4), L=st.integers(1, 200))
def test_finite_risk_properties(seed, d, L):
    rng = np.random.default_rng(seed)
    S = random_spd(rng, d)
    A, b = rng.normal(size=(d, d)), float(rng.normal())
    r_L = reg.finite_prompt_linear_risk(S, A, b, L)
    assert r_L >= reg.optimal_finite_prompt_linear_risk(S, L) - 1e-9 * (1 + abs(r_L))
    # Finite prompts only add variance: R_L(A, b) >= R(A, b), and R_L decreases in L.
    assert r_L >= reg.population_risk(S, A, b) - 1e-9 * (1 + abs(r_L))
    assert reg.finite_prompt_linear_risk(S, A, b, L + 1) <= r_L + 1e-9 * (1 + abs(r_L))
    assert reg.optimal_finite_prompt_linear_risk(S, L) >= 0


def test_validation_errors():
    with pytest.raises(ValueError, match="cov"):
        reg.population_risk(np.array([[1.0, 2.0], [0.0, 1.0]]), np.eye(2), 1.0)
    with pytest.raises(ValueError, match="cov"):
        reg.population_risk(-np.eye(2), np.eye(2), 1.0)
    with pytest.raises(ValueError, match="A"):
        reg.population_risk(SIGMA, np.eye(3), 1.0)
    with pytest.raises(TypeError, match="b"):
        reg.population_risk(SIGMA, np.eye(2), "x")
    with pytest.raises(ValueError, match="length"):
        reg.finite_prompt_linear_risk(SIGMA, np.eye(2), 1.0, 0)
    with pytest.raises(TypeError, match="length"):
        reg.optimal_linear_map(SIGMA, 2.5)
    with pytest.raises(ValueError, match="noise_std"):
        reg.population_risk(SIGMA, np.eye(2), 1.0, noise_std=-1.0)
    with pytest.raises(ValueError, match="w"):
        reg.token_covariance(SIGMA, np.ones(3))
    with pytest.raises(ValueError, match="n_prompts"):
        reg.sample_prompts(SIGMA, n_prompts=0, length=3, rng=0)
    with pytest.raises(TypeError):
        reg.sample_prompts(7, 5, SIGMA, 0)  # the counts are keyword-only


def test_head_limit_risk_matches_block_form_and_quadrature_order():
    rng = np.random.default_rng(8)
    A, b = rng.normal(size=(2, 2)), 0.4
    U, V = reg.embed_parameters(A, b)
    assert np.isclose(
        reg.head_limit_risk(SIGMA, U, V), reg.population_risk(SIGMA, A, b), rtol=1e-12
    )
    U, V = rng.normal(size=(3, 3)), rng.normal(size=(2, 3))
    assert np.isclose(
        reg.head_limit_risk(SIGMA, U, V, n_points=3),
        reg.head_limit_risk(SIGMA, U, V, n_points=7),
        rtol=1e-12,
    )


def test_head_limit_risk_monte_carlo_full_head():
    """A full head: the tilted-law prediction averaged by Monte Carlo over (w, x_q)."""
    rng = np.random.default_rng(9)
    U, V = 0.5 * rng.normal(size=(3, 3)), rng.normal(size=(1, 3))
    n = 3000
    w, xq = rng.standard_normal((n, 2)), rng.multivariate_normal(np.zeros(2), SIGMA, size=n)
    sq = np.array(
        [
            (softmax_attention_limit(reg.token_law(SIGMA, wi), np.r_[x, 0.0], U, V)[-1] - wi @ x)
            ** 2
            for wi, x in zip(w, xq)
        ]
    )
    assert abs(sq.mean() - reg.head_limit_risk(SIGMA, U, V)) < 4 * sq.std() / np.sqrt(n)


def test_softmax_variance_constant_against_error_law():
    """Average of gmmlib.limits.finite_prompt_mse over (w, x_q), and the closed form on the family A
    = cΣ⁻¹."""
    from gmmlib.limits import finite_prompt_mse

    rng = np.random.default_rng(10)
    c = np.sqrt(0.05)
    A, b = c * np.linalg.inv(SIGMA), 1.0 / c
    U, V = reg.embed_parameters(A, b)
    n = 3000
    w, xq = rng.standard_normal((n, 2)), rng.multivariate_normal(np.zeros(2), SIGMA, size=n)
    vals = np.array(
        [
            finite_prompt_mse(reg.token_law(SIGMA, wi), np.r_[x, 0.0], U, V[-1:])
            for wi, x in zip(w, xq)
        ]
    )
    C = reg.softmax_variance_constant(SIGMA, A, b)
    assert abs(vals.mean() - C) < 4 * vals.std() / np.sqrt(n)
    family = np.trace(SIGMA) * (1 - c**2) / (c**2 * (1 - 2 * c**2) ** 2)
    assert np.isclose(C, family, rtol=1e-12)
    assert np.isclose(reg.softmax_family_constant(SIGMA, c**2), family, rtol=1e-12)
    assert reg.softmax_variance_constant(SIGMA, 2.0 * np.linalg.inv(SIGMA), 1.0) == float("inf")


def test_head_risk_validation():
    with pytest.raises(ValueError, match="U"):
        reg.head_limit_risk(SIGMA, np.eye(2), np.eye(3))
    with pytest.raises(ValueError, match="V"):
        reg.head_limit_risk(SIGMA, np.eye(3), np.eye(2))
    with pytest.raises(ValueError, match="n_points"):
        reg.head_limit_risk(SIGMA, np.eye(3), np.eye(3), n_points=2)


@pytest.mark.parametrize("d", [1, 2, 4])
def test_softmax_family_constant_matches_general_formula(d):
    """The family expression against the general C̄(A, b) at A = cΣ⁻¹, b = 1/c, for a random Σ."""
    S = random_spd(np.random.default_rng(11 + d), d)
    c2 = np.array([0.01, 0.1, 0.2, 0.3, 0.45])
    fam = reg.softmax_family_constant(S, c2)
    assert fam.shape == c2.shape
    general = [
        reg.softmax_variance_constant(S, np.sqrt(s) * np.linalg.inv(S), 1 / np.sqrt(s)) for s in c2
    ]
    np.testing.assert_allclose(fam, general, rtol=1e-10)
    assert isinstance(reg.softmax_family_constant(S, 0.1), float)
    for bad in (0.0, 0.5, -0.1, [0.1, 0.7], np.nan):
        with pytest.raises(ValueError, match="c2"):
            reg.softmax_family_constant(S, bad)


@pytest.mark.parametrize("L", [3, 20])
def test_noisy_labels_finite_prompt_risk_monte_carlo(L):
    """With label noise ξ the closed-form risk, its minimiser Γ*_L and the sampler agree."""
    rng = np.random.default_rng(20 + L)
    xi = 0.7
    A, b = rng.normal(size=(2, 2)), 0.6
    U, V = reg.embed_parameters(A, b)
    batch = reg.sample_prompts(SIGMA, n_prompts=40000, length=L, rng=rng, noise_std=xi)
    resid = batch.tokens[..., -1] - np.einsum("bld,bd->bl", batch.tokens[..., :2], batch.w)
    assert abs(resid.std() - xi) < 0.01
    err = (linear_attention(batch.tokens, batch.queries, U, V)[:, 0, -1] - batch.targets) ** 2
    se = err.std() / np.sqrt(err.size)
    assert abs(err.mean() - reg.finite_prompt_linear_risk(SIGMA, A, b, L, noise_std=xi)) < 4.5 * se
    G = reg.optimal_linear_map(SIGMA, L, noise_std=xi)
    f = lambda m: reg.finite_prompt_linear_risk(SIGMA, m.reshape(2, 2), 1.0, L, noise_std=xi)
    res = minimize(f, np.zeros(4), method="BFGS", options={"gtol": 1e-12})
    np.testing.assert_allclose(res.x.reshape(2, 2), G, atol=1e-6)
    assert np.isclose(
        res.fun, reg.optimal_finite_prompt_linear_risk(SIGMA, L, noise_std=xi), rtol=1e-9
    )


def test_noisy_labels_limits():
    """Noise adds ξ² to the infinite-prompt risk and ξ² to the softmax constant's trace term."""
    from gmmlib.limits import finite_prompt_mse

    xi = 0.5
    rng = np.random.default_rng(30)
    A, b = 0.3 * rng.normal(size=(2, 2)), 0.9
    U, V = reg.embed_parameters(A, b)
    assert np.isclose(
        reg.head_limit_risk(SIGMA, U, V, noise_std=xi),
        reg.population_risk(SIGMA, A, b, noise_std=xi),
    )
    assert np.isclose(
        reg.population_risk(SIGMA, A, b, noise_std=xi) - reg.population_risk(SIGMA, A, b), xi**2
    )
    n = 3000
    w, xq = rng.standard_normal((n, 2)), rng.multivariate_normal(np.zeros(2), SIGMA, size=n)
    vals = np.array(
        [
            finite_prompt_mse(reg.token_law(SIGMA, wi, noise_std=xi), np.r_[x, 0.0], U, V[-1:])
            for wi, x in zip(w, xq)
        ]
    )
    C = reg.softmax_variance_constant(SIGMA, A, b, noise_std=xi)
    assert abs(vals.mean() - C) < 4 * vals.std() / np.sqrt(n)
    c2 = 0.1
    fam = reg.softmax_family_constant(SIGMA, c2, noise_std=xi)
    general = reg.softmax_variance_constant(
        SIGMA, np.sqrt(c2) * np.linalg.inv(SIGMA), 1 / np.sqrt(c2), noise_std=xi
    )
    assert np.isclose(fam, general, rtol=1e-12)


def test_head_map_is_the_odd_part_of_the_prediction():
    """The prediction's part odd in w is wᵀΣPx_q with P = v_y U_xx + v_x u_yxᵀ (bA for a block
    head)."""
    rng = np.random.default_rng(31)
    A, b = rng.normal(size=(2, 2)), 0.8
    np.testing.assert_allclose(reg.head_map(*reg.embed_parameters(A, b)), b * A)
    U, V = rng.normal(size=(3, 3)), rng.normal(size=(1, 3))
    P = reg.head_map(U, V)
    w, xq = rng.normal(size=2), rng.normal(size=(4, 2))
    queries = np.column_stack([xq, np.zeros(4)])
    f = lambda w: softmax_attention_limit(reg.token_law(SIGMA, w), queries, U, V)[:, -1]
    np.testing.assert_allclose((f(w) - f(-w)) / 2, xq @ P.T @ SIGMA @ w, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("L", [4, 16, 64, 1000])
def test_optimal_finite_risk_equals_eigenvalue_sum(L):
    """eq-02-finite-optimum: tr Σ − tr(Σ²Γ*_L) = Σᵢ λᵢ(λᵢ + trΣ)/((L + 1)λᵢ + trΣ) (moved from
    Chapter 2)."""
    Sigma = np.array([[1.0, 0.3], [0.3, 0.5]])
    lam, t = np.linalg.eigvalsh(Sigma), np.trace(Sigma)
    eig_sum = np.sum(lam * (lam + t) / ((L + 1) * lam + t))
    assert np.isclose(reg.optimal_finite_prompt_linear_risk(Sigma, L), eig_sum, rtol=1e-12)
    wrong = np.sum(lam * (lam + t) / (L * lam + t))  # L in place of L + 1
    assert not np.isclose(reg.optimal_finite_prompt_linear_risk(Sigma, L), wrong, rtol=1e-6)


def test_finite_prompt_linear_risk_written_out():
    """Chapter 2's R_L(A, b) of eq-02-finite-risk written out in traces agrees
    with finite_prompt_linear_risk to round-off; forgetting the pairing (1 for 1 + 1/L) does not."""
    Sigma = np.array([[1.0, 0.3], [0.3, 0.5]])
    A, b = np.array([[0.3, -0.7], [0.5, 0.4]]), 0.8
    tS = np.trace(Sigma)

    def written_out(L, fourth):
        quad = fourth * np.trace(Sigma @ A @ Sigma @ A.T @ Sigma) + tS / L * np.trace(
            A @ Sigma @ A.T @ Sigma
        )
        return b**2 * quad - 2 * b * np.trace(Sigma @ A @ Sigma) + tS

    for L in (4, 16, 64):
        got = reg.finite_prompt_linear_risk(Sigma, A, b, L)
        np.testing.assert_allclose(written_out(L, 1 + 1 / L), got, rtol=1e-12)
        assert abs(written_out(L, 1.0) / got - 1) > 1e-4


@pytest.mark.parametrize("L", [10**2, 10**3, 10**4])
def test_optimal_finite_risk_asymptotics(L):
    """Chapter 2's 0 ≤ (d+1)trΣ − L·R*_L ≤ Σᵢ(λᵢ + trΣ)²/λᵢ/(L + 1), the bound
    of the proof of prop-02-finite-risk, which d·trΣ misses."""
    Sigma = np.array([[1.0, 0.3], [0.3, 0.5]])
    lam, tS, d = np.linalg.eigvalsh(Sigma), np.trace(Sigma), 2
    LR = L * reg.optimal_finite_prompt_linear_risk(Sigma, L)
    bound = np.sum((lam + tS) ** 2 / lam) / (L + 1)
    roundoff = 16 * L * np.finfo(float).eps * tS
    assert -roundoff <= (d + 1) * tS - LR <= bound + roundoff
    assert abs(d * tS - LR) > bound
