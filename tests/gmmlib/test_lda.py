"""gmmlib.lda against independent computations: the attention limit, long prompts, posteriors,
Monte Carlo, full-dimensional quadrature, torch autograd and finite differences."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar
from scipy.special import expit

from gmmlib import softmax_attention, softmax_attention_limit, linear_attention_limit
from gmmlib.attention import Head
from gmmlib.lda import (
    LDABlocks,
    EffectiveParams,
    LDAModel,
    attention_jacobian,
    attention_risk_grad,
    construction_r0,
    construction_s0,
    effective_params,
    effective_predictor,
    logistic_loss,
    excess_risk_estimate,
    population_risk,
    population_risk_grad,
)
from gmmlib.lda.landscape import best_linear_attention, minimiser_distances, zeta_sequence
from gmmlib.lda.autograd import LDABlocksModule, QuadratureRisk
from gmmlib.lda.dynamics import (
    population_gradient_descent,
    gradient_flow,
    _draw_batch,
    sgd_chains,
    sgd_excess_floor,
    valley_excess,
)
from gmmlib.limits import finite_prompt_mse
from gmmlib.quadrature import expectation

from ..conftest import random_spd, seeds

C1 = LDAModel(0.6, [1.0, 0.0], [0.0, 1.0], np.eye(2))


def random_model(rng: np.random.Generator, d: int) -> LDAModel:
    return LDAModel(
        float(rng.uniform(0.2, 0.8)),
        rng.normal(size=d),
        rng.normal(size=d),
        random_spd(rng, d, 0.7),
    )


def random_theta(rng: np.random.Generator, d: int, scale: float = 0.5) -> LDABlocks:
    return LDABlocks(
        scale * rng.normal(size=(d, d)),
        scale * rng.normal(size=d),
        scale * rng.normal(size=d),
        float(scale * rng.normal()),
    )


def flat(e: EffectiveParams) -> np.ndarray:
    return np.concatenate([e.w, [e.b, e.r], e.s])


@settings(max_examples=30, deadline=None)
@given(seed=seeds, d=st.integers(1, 4))
def test_effective_predictor_is_the_attention_limit(seed, d):
    rng = np.random.default_rng(seed)
    model, theta = random_model(rng, d), random_theta(rng, d, 1.0)
    U, V = theta.head()
    X = rng.normal(size=(7, d))
    queries = np.column_stack([X, np.zeros(7)])
    limit = softmax_attention_limit(model.token_mixture(), queries, U, V)[:, -1]
    np.testing.assert_allclose(
        effective_predictor(model, effective_params(model, theta), X), limit, rtol=1e-10, atol=1e-10
    )
    assert LDABlocks.from_head(Head(U, V)).vector() == pytest.approx(theta.vector())


def test_effective_predictor_matches_a_long_prompt(rng):
    theta = random_theta(rng, 2, 0.6)
    U, V = theta.head()
    X = rng.normal(size=(5, 2))
    queries = np.column_stack([X, np.zeros(5)])
    L = 200_000
    tokens = C1.sample_tokens(1, L, 3)[0]
    finite = softmax_attention(tokens, queries, U, V)[:, -1]
    C = finite_prompt_mse(C1.token_mixture(), queries, U, V[-1:])
    f = effective_predictor(C1, effective_params(C1, theta), X)
    assert np.all(np.abs(finite - f) < 5 * np.sqrt(C / L))


def test_bayes_score_is_the_posterior_log_odds(rng):
    model = random_model(rng, 3)
    X = rng.normal(size=(20, 3))
    post = model.class_mixture().posterior(X)
    np.testing.assert_allclose(
        model.bayes_score(X), np.log(post[:, 0] / post[:, 1]), rtol=1e-10, atol=1e-10
    )


def test_constructions_realise_the_bayes_score(rng):
    for model in (C1, random_model(rng, 3)):
        w_star, b_star = model.bayes_params()
        X = rng.normal(size=(9, model.dim))
        for theta in (construction_r0(model, s=rng.normal(size=model.dim)), construction_s0(model)):
            eff = effective_params(model, theta)
            np.testing.assert_allclose(eff.w, w_star, atol=1e-12)
            U, V = theta.head()
            limit = softmax_attention_limit(
                model.token_mixture(), np.column_stack([X, np.zeros(len(X))]), U, V
            )
            np.testing.assert_allclose(limit[:, -1], model.bayes_score(X), atol=1e-10)
        assert effective_params(model, construction_r0(model)).r == pytest.approx(0, abs=1e-14)
        assert np.allclose(effective_params(model, construction_s0(model)).s, 0)


def test_risk_against_monte_carlo_and_full_quadrature(rng):
    model = random_model(rng, 2)
    eff = effective_params(model, random_theta(rng, 2, 0.5))
    q = population_risk(model, eff, 60)
    X, Y = model.sample(1_000_000, 5)
    loss = logistic_loss(Y * effective_predictor(model, eff, X))
    assert abs(q - loss.mean()) < 4 * loss.std() / np.sqrt(loss.size)

    def f(Z):  # the full two-dimensional quadrature, per component: the independent rule
        return np.stack(
            [
                logistic_loss(effective_predictor(model, eff, Z)),
                logistic_loss(-effective_predictor(model, eff, Z)),
            ],
            axis=1,
        )

    gm = model.class_mixture()
    full = (
        model.pi_pos * expectation(f, type(gm).gaussian(model.m_pos, model.cov), 60)[0]
        + (1 - model.pi_pos) * expectation(f, type(gm).gaussian(model.m_neg, model.cov), 60)[1]
    )
    assert abs(q - full) < 1e-10


def test_gradients_against_autograd_and_finite_differences(rng):
    theta = random_theta(rng, 2, 0.5)
    vec = torch.tensor(theta.vector(), requires_grad=True)
    risk_t = QuadratureRisk(C1, 60).attention(vec)
    (grad_t,) = torch.autograd.grad(risk_t, vec)
    risk, grad = attention_risk_grad(C1, theta, 60)
    assert abs(risk - risk_t.item()) < 1e-11
    np.testing.assert_allclose(grad.vector(), grad_t.numpy(), atol=1e-10)
    # d = 4: central finite differences of the effective risk
    model = random_model(rng, 4)
    # moderate widths: the rule has converged
    eff = effective_params(model, random_theta(rng, 4, 0.25))
    _, g = population_risk_grad(model, eff, 100)
    x0, h = flat(eff), 1e-5

    def R(x):
        return population_risk(model, EffectiveParams(x[:4], x[4], x[5], x[6:]), 100)

    fd = np.array([(R(x0 + h * e) - R(x0 - h * e)) / (2 * h) for e in np.eye(x0.size)])
    np.testing.assert_allclose(flat(g), fd, atol=1e-8)


def test_jacobian_and_chain_rule(rng):
    model = random_model(rng, 3)
    theta = random_theta(rng, 3)
    J = attention_jacobian(model, theta)
    x0, h = theta.vector(), 1e-6
    fd = np.stack(
        [
            (
                flat(effective_params(model, LDABlocks.from_vector(x0 + h * e, 3)))
                - flat(effective_params(model, LDABlocks.from_vector(x0 - h * e, 3)))
            )
            / (2 * h)
            for e in np.eye(x0.size)
        ],
        axis=1,
    )
    np.testing.assert_allclose(J, fd, atol=1e-8)
    _, g_eff = population_risk_grad(model, effective_params(model, theta), 40, tol=None)
    _, g_theta = attention_risk_grad(model, theta, 40, tol=None)
    np.testing.assert_allclose(g_theta.vector(), J.T @ flat(g_eff), atol=1e-14)


def test_linear_attention(rng):
    beta, risk = best_linear_attention(C1)
    _, g = population_risk_grad(C1, EffectiveParams(beta, 0.0, 0.0, np.zeros(2)), 40)
    assert np.max(np.abs(g.w)) < 1e-9 and risk > C1.bayes_risk() + 1e-3
    sym = LDAModel(0.5, [1.0, 0.5], [-1.0, -0.5], np.eye(2))  # b* = 0: linear attention is optimal
    # |w*| = √5: 80 nodes per axis for a converged rule (40 leave errors ~1e-8 at this width)
    assert best_linear_attention(sym, 80)[1] == pytest.approx(sym.bayes_risk(80), abs=1e-12)
    # the limit of linear attention on the tokens is linear in x with no intercept
    U, V = random_theta(rng, 2).head()
    out = linear_attention_limit(C1.token_mixture(), np.zeros((1, 3)), U, V)
    assert out[0, -1] == 0.0


def test_best_linear_attention_from_any_start(rng):
    sym = LDAModel(0.5, [1.0, 0.5], [-1.0, -0.5], np.eye(2))  # b* = 0: the minimiser is w*
    w_star = sym.bayes_params()[0]
    for start in (None, rng.normal(size=2), 3 * rng.normal(size=2)):
        beta, _ = best_linear_attention(sym, 80, start=start)
        np.testing.assert_allclose(beta, w_star, atol=1e-9)
    with pytest.raises(ValueError, match="start"):
        best_linear_attention(sym, 40, start=np.zeros(3))


def test_population_gradient_descent(rng):
    theta0 = random_theta(rng, 2, 0.5)
    seen = []
    end = population_gradient_descent(
        C1, theta0, 0.5, 5, 30, callback=lambda k, th, R, g: seen.append((k, th.vector(), R))
    )
    vec = theta0.vector()
    for k in range(6):  # the explicit iteration, step by step
        R, g = attention_risk_grad(C1, LDABlocks.from_vector(vec, 2), 30)
        assert seen[k][0] == k and seen[k][2] == pytest.approx(R, abs=1e-15)
        np.testing.assert_allclose(seen[k][1], vec, atol=1e-15)
        if k < 5:
            vec = vec - 0.5 * g.vector()
    np.testing.assert_allclose(end.vector(), vec, atol=1e-15)
    assert all(a[2] > b[2] for a, b in zip(seen, seen[1:]))  # small steps decrease the risk
    np.testing.assert_allclose(
        population_gradient_descent(C1, theta0, 0.5, 5, 30).vector(), vec, atol=1e-15
    )
    with pytest.raises(ValueError, match="lr"):
        population_gradient_descent(C1, theta0, -1.0, 5)


def test_minimiser_distances_and_zeta(rng):
    for theta in (construction_r0(C1, s=np.array([1.0, 2.0])), construction_s0(C1)):
        assert min(minimiser_distances(C1, effective_params(C1, theta))) < 1e-12
    eff = effective_params(C1, random_theta(rng, 2))
    w_star, b_star = C1.bayes_params()
    q = expit(C1.s0)
    best = minimize_scalar(lambda p: (eff.b - b_star + p * q) ** 2 + (eff.r - p) ** 2).fun
    d2 = np.sqrt(np.sum((eff.w - w_star) ** 2) + eff.s @ eff.s + best)
    assert minimiser_distances(C1, eff)[1] == pytest.approx(d2, rel=1e-10)
    excess = [
        population_risk(C1, zeta_sequence(C1, np.array([1.0, -0.5]), R)) - C1.bayes_risk()
        for R in (10, 20, 40)
    ]
    assert excess[0] > excess[1] > excess[2] > 0
    assert excess[1] / excess[2] == pytest.approx(4.0, rel=0.1)  # O(1/R²)


def test_effective_head(rng):
    theta = random_theta(rng, 3)
    model = random_model(rng, 3)
    head = LDABlocksModule(model, theta)
    X = rng.normal(size=(6, 3))
    out = head(torch.tensor(X)).detach().numpy()
    np.testing.assert_allclose(
        out, effective_predictor(model, effective_params(model, theta), X), rtol=1e-12
    )
    assert head.blocks().vector() == pytest.approx(theta.vector())


def test_bad_input():
    with pytest.raises(ValueError, match="pi_pos"):
        LDAModel(1.0, [0.0], [1.0], np.eye(1))
    with pytest.raises(ValueError, match="cov"):
        LDAModel(0.5, [0.0, 1.0], [1.0, 0.0], -np.eye(2))
    with pytest.raises(ValueError, match="m_neg"):
        LDAModel(0.5, [0.0, 1.0], [1.0], np.eye(2))
    with pytest.raises(TypeError, match="model"):
        population_risk("C1", EffectiveParams(np.zeros(2), 0.0, 0.0, np.zeros(2)))
    with pytest.raises(ValueError, match="w and s"):
        population_risk(C1, EffectiveParams(np.zeros(3), 0.0, 0.0, np.zeros(2)))
    with pytest.raises(ValueError, match="vec"):
        LDABlocks.from_vector(np.zeros(5), 2)
    with pytest.raises(ValueError, match="r = 0"):
        construction_r0(LDAModel(0.6, [1.0, 0.0], [-1.0, 0.0], np.eye(2)))


def test_extreme_scales_stay_finite_or_refuse():
    eff = EffectiveParams(np.array([1e6, -1e6]), 1e6, -1e6, np.array([1e6, 1e6]))
    with pytest.raises(ValueError, match="not converged"):  # Gauss–Hermite says it cannot
        population_risk(C1, eff, 20)
    assert np.isfinite(population_risk(C1, eff, 20, tol=None))
    assert np.isfinite(population_risk(C1, eff, 8, rule="adaptive"))
    assert np.all(np.isfinite(flat(population_risk_grad(C1, eff, 8, rule="adaptive")[1])))


def test_paper_block_convention_gives_the_same_map(rng):
    """The paper's eq. (7) on the blocks of Uᵀ (its eq. (12)) is the book's eq-04-map on the blocks
    of U."""
    d = 3
    model = random_model(rng, d)
    U, V = rng.normal(size=(d + 1, d + 1)), rng.normal(size=(d + 1, d + 1))
    theta = LDABlocks.from_head(Head(U, V))
    eff = effective_params(model, theta)
    U11_paper, u12_paper = U.T[:d, :d], U.T[:d, d]  # the paper partitions Uᵀ
    v21 = V[-1, :d]
    np.testing.assert_allclose(eff.w, U11_paper @ model.cov @ v21, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(
        eff.s, 2 * u12_paper + U11_paper @ model.delta, rtol=1e-12, atol=1e-12
    )
    # the paper's formula applied to the book's blocks is a different (wrong) map
    assert not np.allclose(theta.U11 @ model.cov @ v21, eff.w)


def test_best_linear_attention_checks_its_rule_at_the_minimiser():
    balanced = LDAModel(0.5, [1.0, 0.0], [0.0, 1.0], np.eye(2))
    # the start is wide enough for the rule to refuse it; the search goes on, the minimiser is w*
    beta, risk = best_linear_attention(balanced, 100, start=np.array([3.0, -4.0]))
    np.testing.assert_allclose(beta, [1.0, -1.0], atol=1e-9)
    assert risk == pytest.approx(balanced.bayes_risk(100), abs=1e-12)
    with pytest.raises(ValueError, match="converged"):  # too few nodes at the minimiser itself
        best_linear_attention(LDAModel(0.6, [2.5, 0.0], [0.0, 2.5], np.eye(2)), 20)


def _risk_quadpack(model, eff, z_max=12.0):
    """An independent reference: nested scipy.integrate.quad in standardised coordinates (gate
    first)."""
    import math

    from scipy.integrate import quad

    w, b, r, s = eff
    P = np.stack([w, s])
    C = P @ model.cov @ P.T
    a = math.sqrt(C[1, 1])
    beta = C[0, 1] / a
    gam = math.sqrt(max(C[0, 0] - beta**2, 0.0))
    total = 0.0
    for c, m, pc in ((1.0, model.m_pos, model.pi_pos), (-1.0, model.m_neg, 1 - model.pi_pos)):
        mu1, mu2 = float(w @ m), float(s @ m)

        def inner(z1, c=c, mu1=mu1, mu2=mu2):
            F = mu1 + beta * z1 + b + r / (1 + math.exp(-(model.s0 + mu2 + a * z1)))

            def f(z2):
                u = c * (F + gam * z2)
                return math.exp(-0.5 * z2 * z2) * (math.log1p(math.exp(-abs(u))) + max(-u, 0.0))

            kink = min(max(-F / gam, -z_max), z_max)
            return (
                math.exp(-0.5 * z1 * z1)
                * quad(f, -z_max, z_max, points=[kink], epsabs=1e-15, epsrel=1e-13, limit=200)[0]
                / (2 * math.pi)
            )

        gate = min(max((-model.s0 - mu2) / a, -z_max), z_max)
        total += (
            pc * quad(inner, -z_max, z_max, points=[gate], epsabs=1e-15, epsrel=1e-13, limit=200)[0]
        )
    return total


def test_adaptive_rule_at_a_sharp_gate_against_quadpack():
    eff = EffectiveParams(np.array([1.1, -0.9]), 0.4, 0.3, np.array([21.2, 18.8]))  # |s| ≈ 28
    ref = _risk_quadpack(C1, eff)
    assert population_risk(C1, eff, 8, rule="adaptive") == pytest.approx(ref, abs=1e-13)
    assert abs(population_risk(C1, eff, 80, tol=None) - ref) > 1e-4  # Gauss–Hermite is lost
    with pytest.raises(ValueError, match="rule='adaptive'"):
        population_risk(C1, eff, 80)


def test_adaptive_rule_on_random_models(rng):
    for _ in range(3):
        model = random_model(rng, 3)
        eff = effective_params(model, random_theta(rng, 3, 0.4))
        R_ad, g_ad = population_risk_grad(model, eff, 10, rule="adaptive")
        assert R_ad == pytest.approx(_risk_quadpack(model, eff), abs=1e-12)
        _, g_gh = population_risk_grad(model, eff, 100)  # where Gauss–Hermite converges
        np.testing.assert_allclose(flat(g_ad), flat(g_gh), atol=1e-9)


def test_adaptive_gradient_against_finite_differences():
    eff = EffectiveParams(np.array([1.1, -0.9]), 0.4, 0.3, np.array([6.0, 8.0]))
    _, g = population_risk_grad(C1, eff, 10, rule="adaptive")
    x0, h = flat(eff), 1e-5

    def R(x):
        return population_risk(C1, EffectiveParams.from_vector(x, 2), 10, rule="adaptive")

    fd = np.array([(R(x0 + h * e) - R(x0 - h * e)) / (2 * h) for e in np.eye(x0.size)])
    np.testing.assert_allclose(flat(g), fd, atol=1e-8)


def test_excess_risk_estimate_and_rules():
    eff = EffectiveParams(np.array([1.0, -1.0]), C1.bayes_params()[1], 0.2, np.array([9.0, 3.0]))
    est = excess_risk_estimate(C1, eff, 8)
    assert est.value > 0 and est.error < 1e-12
    assert est.value == pytest.approx(_risk_quadpack(C1, eff) - C1.bayes_risk(40), abs=1e-12)
    with pytest.raises(ValueError, match="rule"):
        population_risk(C1, eff, 8, rule="simpson")


def test_parameter_vectors_and_balance(rng):
    eff = EffectiveParams(rng.normal(size=3), 0.5, -1.5, rng.normal(size=3))
    back = EffectiveParams.from_vector(eff.vector(), 3)
    np.testing.assert_array_equal(back.vector(), eff.vector())
    with pytest.raises(ValueError, match="2d \\+ 2"):
        EffectiveParams.from_vector(np.zeros(7), 3)
    theta = random_theta(rng, 3)
    assert theta.balance() == pytest.approx(np.sum(theta.U11**2) - np.sum(theta.v21**2))
    assert zeta_sequence(C1, np.ones(2), rho=5.0).r == 5.0


def test_gradient_flow_matches_small_step_descent(rng):
    theta0 = random_theta(rng, 2, 0.5)
    flow = gradient_flow(C1, theta0, [0.0, 0.5, 1.0], 30, rtol=1e-10, atol=1e-12)
    assert flow.t[0] == 0.0 and flow.nfev > 0
    np.testing.assert_allclose(flow.thetas[0].vector(), theta0.vector())
    ends = [
        population_gradient_descent(C1, theta0, lr, int(round(1.0 / lr)), 30).vector()
        for lr in (0.01, 0.005)
    ]
    # explicit Euler is first order: halving the step halves its distance to the flow
    err = [np.linalg.norm(e - flow.thetas[-1].vector()) for e in ends]
    assert err[1] < 0.6 * err[0] and err[1] < 1e-3
    with pytest.raises(ValueError, match="t_eval"):
        gradient_flow(C1, theta0, [1.0, 0.5])


def test_valley_excess_is_the_refitted_excess_to_second_order():
    from scipy.optimize import minimize

    theta2 = construction_s0(C1)
    r = effective_params(C1, theta2).r
    w_star, b_star = C1.bayes_params()
    values = []
    for eps in (0.1, 0.05, 0.025):
        s = eps * np.array([0.6, 0.8])
        V, remainder = valley_excess(C1, r, s)

        def f(x, s=s):
            R, g = population_risk_grad(C1, EffectiveParams(x[:2], x[2], r, s), 40)
            return R, np.concatenate([g.w, [g.b]])

        best = minimize(
            f,
            np.concatenate([w_star, [b_star - 0.6 * r]]),
            jac=True,
            method="BFGS",
            options={"gtol": 1e-13},
        ).fun - C1.bayes_risk(40)
        assert abs(best - V) <= remainder + 1e-13
        assert valley_excess(C1, r, s, refit=False)[0] > 10 * V
        values.append(V)
    ratios = np.array(values[:-1]) / np.array(values[1:])  # 16(1 + O(ε)): extrapolate
    assert 2 * ratios[1] - ratios[0] == pytest.approx(16, rel=0.05)  # quartic when σ''(s0) ≠ 0
    balanced = LDAModel(0.5, [1.0, 0.0], [-1.0, 0.0], np.eye(2))
    ratio = (
        valley_excess(balanced, 1.0, [0.2, 0.1])[0] / valley_excess(balanced, 1.0, [0.1, 0.05])[0]
    )
    assert ratio == pytest.approx(64, rel=0.1)  # sixth order at π+ = 1/2


def test_sgd_excess_floor_is_the_hessian_trace_formula():
    """(η/4B) Σ λ/(1 − ηλ/2) with the λ of a finite-difference Hessian of the quadrature risk."""
    model = LDAModel(0.6, np.array([1.0, 0.0]), np.array([0.0, 1.0]), np.eye(2))
    theta = construction_r0(model, s=np.array([0.7, -0.4]))
    x0 = theta.vector()

    def grad(x):
        return attention_risk_grad(model, LDABlocks.from_vector(x, 2), 40)[1].vector()

    h = 1e-5
    H = np.stack([(grad(x0 + h * e) - grad(x0 - h * e)) / (2 * h) for e in np.eye(x0.size)])
    lam = np.clip(np.linalg.eigvalsh((H + H.T) / 2), 0.0, None)
    expected = 0.05 / (4 * 32) * np.sum(lam / (1 - 0.05 * lam / 2))
    floor = sgd_excess_floor(model, theta, 0.05, 32, np.random.default_rng(0), n_samples=400_000)
    assert floor == pytest.approx(expected, rel=0.02)  # Monte Carlo error of F, ~n^(-1/2)
    with pytest.raises(ValueError, match="unstable"):
        sgd_excess_floor(model, theta, 1e3, 32, np.random.default_rng(0))
    with pytest.raises(TypeError, match="batch"):
        sgd_excess_floor(model, theta, 0.05, 3.5, np.random.default_rng(0))


def test_sgd_chains_is_the_torch_sgd_of_the_effective_head(rng):
    """sgd_chains (numpy, written-out gradient) against gmmlib.training.train (torch autograd)."""
    from gmmlib.training import train

    model = LDAModel(0.6, [1.0, 0.5, 0.0], [0.0, -1.0, 0.3], np.diag([1.0, 2.0, 0.5]))
    theta0 = random_theta(rng, 3, 0.5)
    run = sgd_chains(model, theta0, 0.05, 16, 25, np.random.default_rng(3), record_every=5)
    replay, chol = np.random.default_rng(3), np.linalg.cholesky(model.cov)
    batches = [_draw_batch(model, chol, (1, 16), replay) for _ in range(25)]
    it = ((X[0], Y[0]) for X, Y in batches)

    def sample_xy(_n, _rng):
        X, Y = next(it)
        return torch.tensor(X), torch.tensor(Y)

    def loss_fn(head, batch):
        X, Y = batch
        return torch.nn.functional.softplus(-Y * head(X)).mean()

    head = LDABlocksModule(model, theta0)
    train(
        head,
        sample_xy,
        loss_fn,
        batch_size=16,
        steps=25,
        lr=0.05,
        rng=0,
        optimizer="sgd",
        progress=False,
    )
    np.testing.assert_allclose(run.thetas[-1][0].vector(), head.blocks().vector(), atol=1e-12)
    assert list(run.steps) == [0, 5, 10, 15, 20, 25]
    two = sgd_chains(model, theta0, 0.05, 16, 3, np.random.default_rng(4), n_chains=2)
    assert not np.allclose(two.thetas[-1][0].vector(), two.thetas[-1][1].vector())
    with pytest.raises(ValueError, match="n_chains"):
        sgd_chains(model, theta0, 0.05, 16, 3, rng, n_chains=0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_origin_constant_is_the_variance_of_the_value(seed):
    """Chapter 4, eq-04-origin: at x = 0 attention is uniform, so C(0) is the variance of the value,
    v₂₁ᵀΓv₂₁ + r²π₊(1 − π₊), for any head (moved from the chapter: closed form vs
    finite_prompt_mse)."""
    rng = np.random.default_rng(seed)
    model = random_model(rng, 3)
    pq = model.pi_pos * (1 - model.pi_pos)
    for theta in (construction_s0(model), random_theta(rng, 3, 0.7)):
        U, V = theta.head()
        r = effective_params(model, theta).r
        C0 = finite_prompt_mse(model.token_mixture(), np.zeros((1, 4)), U, V[-1:])[0]
        np.testing.assert_allclose(C0, theta.v21 @ model.cov @ theta.v21 + r**2 * pq, rtol=1e-10)


def test_blocks_head_and_token_samplers(rng):
    """LDABlocks <-> Head round trip; sample_tokens draws the same tokens as sample, reshaped."""
    theta = random_theta(rng, 2)
    head = theta.head()
    assert isinstance(head, Head) and head.U.shape == (3, 3) and head.V.shape == (3, 3)
    np.testing.assert_array_equal(LDABlocks.from_head(head).vector(), theta.vector())
    with pytest.raises(TypeError, match="head"):
        LDABlocks.from_head(tuple(head))
    tokens = C1.sample_tokens(4, 5, 7)
    X, Y = C1.sample(20, 7)
    assert tokens.shape == (4, 5, 3)
    np.testing.assert_array_equal(tokens.reshape(20, 3), np.column_stack([X, Y]))
    P = C1.class_mixture().sample_tokens(4, 5, 7)
    assert P.shape == (4, 5, 2)


# ---------------------------------------------------------------- the constructions' special cases
def _r_constant_gate(m_neg, pi_pos: float) -> float:
    model = LDAModel(pi_pos, [1.0, 0.0], m_neg, np.eye(2))
    return effective_params(model, construction_s0(model)).r


def test_construction_2_r_closed_forms():
    priors = np.array([0.6, 0.51, 0.501, 0.5001])
    s0s, odd = np.log(priors / (1 - priors)), 2 * priors - 1
    r_C1 = np.array([_r_constant_gate(C1.m_neg, p) for p in priors])
    r_m0 = np.array([_r_constant_gate([0.0, 0.0], p) for p in priors])
    got = np.concatenate([r_C1, r_m0])
    claimed = np.concatenate([2 * s0s / odd, 2 * (s0s - 1) / odd])
    # v₂₂ divides a difference of size ~(2π₊−1) by 2π₊−1: relative round-off ~ε/(2π₊−1)
    np.testing.assert_allclose(got, claimed, rtol=1e-9)
    # near miss: r bounded in both cases (the C1 formula for m₋₁ = 0 too)
    assert np.all(np.abs(r_m0 - 2 * s0s / odd) > 1.0)


def test_construction_1_noise_at_the_origin():
    _, b_star = C1.bayes_params()
    ts = np.linspace(-2, 2, 41)
    origin = np.zeros((1, 3))
    C = []
    for t in ts:
        U, V = construction_r0(C1, v21=b_star * np.ones(2) + t * np.array([1.0, -1.0])).head()
        C.append(finite_prompt_mse(C1.token_mixture(), origin, U, V[-1:])[0])
    C = np.array(C)
    np.testing.assert_allclose(C, 2 * b_star**2 + 2 * ts**2, rtol=1e-12, atol=1e-12)
    # near miss: without the intercept part 2b*²
    assert np.abs(C - 2 * ts**2).min() > 1e3 * 1e-12


def test_warmup_prior_bayes_params():
    w, b = LDAModel(0.75, [1.0, 0.0], [0.0, 1.0], np.eye(2)).bayes_params()
    np.testing.assert_allclose(np.append(w, b), [1.0, -1.0, np.log(3)], atol=1e-12)
    assert abs(b - np.log(0.75)) > 1.0  # the log-prior, not the log-odds
