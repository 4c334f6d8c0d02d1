"""The closed-form limits against long finite prompts, quadrature and their special cases."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate

from gmmlib import (
    GaussianMixture,
    linear_attention,
    linear_attention_limit,
    softmax_attention,
    softmax_attention_limit,
)
from gmmlib.limits import attention_gates, effective_sample_fraction, finite_prompt_mse
from gmmlib.runtime.checks import converged_quadrature
from gmmlib.quadrature import expectation

from ..conftest import ncomp, random_mixture, seeds


def test_gaussian_limit_is_affine(rng):
    m, G = np.array([0.5, -0.3]), np.array([[1.0, 0.3], [0.3, 0.5]])
    gm = GaussianMixture.gaussian(m, G)
    U, V = rng.normal(size=(2, 2)), rng.normal(size=(3, 2))
    Q = rng.normal(size=(6, 2))
    np.testing.assert_allclose(
        softmax_attention_limit(gm, Q, U, V), (m + Q @ U.T @ G) @ V.T, rtol=1e-12
    )
    gm0 = GaussianMixture.gaussian(np.zeros(2), G)
    np.testing.assert_allclose(
        softmax_attention_limit(gm0, Q, U, V),
        linear_attention_limit(gm0, Q, U, V),
        rtol=1e-12,
        atol=1e-14,
    )


def test_one_dimensional_limit_by_quadrature():
    gm = GaussianMixture([0.4, 0.6], [[-1.0], [1.5]], [[[0.3]], [[0.8]]])
    U, V = np.array([[0.9]]), np.array([[2.0]])
    for z in (-1.0, 0.2, 1.3):
        a = U[0, 0] * z
        dens = lambda x: np.exp(gm.log_prob(np.array([[x]]))[0])  # noqa: E731
        num = integrate.quad(lambda x: np.exp(a * x) * V[0, 0] * x * dens(x), -30, 30)[0]
        den = integrate.quad(lambda x: np.exp(a * x) * dens(x), -30, 30)[0]
        assert np.isclose(softmax_attention_limit(gm, [z], U, V)[0], num / den, rtol=1e-9)


def _tensor_hermite(gm: GaussianMixture, f, n: int = 20):
    """E f(X) under the mixture by tensor Gauss–Hermite rules on each component (numpy's
    probabilists' nodes, X = m + Lξ with LLᵀ = Γ): no tilting, no closed form."""
    xi, w = np.polynomial.hermite_e.hermegauss(n)
    w = w / w.sum()
    d = gm.dim
    grid = np.stack(np.meshgrid(*[xi] * d, indexing="ij"), -1).reshape(-1, d)
    weight = np.prod(np.stack(np.meshgrid(*[w] * d, indexing="ij"), -1).reshape(-1, d), axis=1)
    total = 0.0
    for pi, m, G in zip(gm.weights, gm.means, gm.covs):
        X = m + grid @ np.linalg.cholesky(G).T
        total = total + pi * np.tensordot(weight, f(X), axes=1)
    return total


@settings(max_examples=30, deadline=None)
@given(seed=seeds, K=ncomp, d=st.integers(min_value=1, max_value=3))
def test_limit_is_the_ratio_of_expectations_by_quadrature(seed, K, d):
    """T[μ](z) = E[e^{XᵀUz} VX] / E[e^{XᵀUz}], both sides by a quadrature of the mixture itself
    (an independent reference: the library tilts each component in closed form); the gates
    are the components' shares of the denominator."""
    rng = np.random.default_rng(seed)
    gm = random_mixture(rng, K, d)
    U = 0.4 * rng.normal(size=(d, d)) / np.sqrt(d)  # tilts that 20 nodes resolve to 1e-9
    V, z = rng.normal(size=(2, d)), rng.normal(size=d)
    a = U @ z
    num = _tensor_hermite(gm, lambda X: np.exp(X @ a)[:, None] * (X @ V.T))
    den = _tensor_hermite(gm, lambda X: np.exp(X @ a))
    np.testing.assert_allclose(softmax_attention_limit(gm, z, U, V), num / den, rtol=1e-9,
                               atol=1e-12)
    shares = [pi * _tensor_hermite(GaussianMixture.gaussian(m, G), lambda X: np.exp(X @ a)) / den
              for pi, m, G in zip(gm.weights, gm.means, gm.covs)]
    np.testing.assert_allclose(attention_gates(gm, z, U), shares, rtol=1e-9, atol=1e-15)


def test_long_prompt_converges(mixture2d, rng):
    U, V = np.array([[0.8, 0.1], [0.0, 0.6]]), np.array([[1.0, 0.5]])
    Q = rng.normal(size=(5, 2))
    X, _ = mixture2d.sample(10**6, 11)
    T = softmax_attention_limit(mixture2d, Q, U, V)
    C = finite_prompt_mse(mixture2d, Q, U, V)
    # |T_L - T| is about sqrt(C / L); allow 5 of those.
    assert np.all(np.abs(softmax_attention(X, Q, U, V) - T)[:, 0] < 5 * np.sqrt(C / 10**6))
    np.testing.assert_allclose(
        linear_attention(X, Q, U, V), linear_attention_limit(mixture2d, Q, U, V), atol=0.02
    )


def test_finite_prompt_law_gaussian_special_case(rng):
    G = np.array([[1.0, 0.3], [0.3, 0.5]])
    gm = GaussianMixture.gaussian([0.5, -0.3], G)
    U, V, Q = rng.normal(size=(2, 2)), rng.normal(size=(3, 2)), rng.normal(size=(4, 2))
    A = Q @ U.T
    kappa = np.einsum("ni,ij,nj->n", A, G, A)
    expected = np.exp(kappa) * (np.trace(V @ G @ V.T) + np.sum((A @ G @ V.T) ** 2, axis=1))
    np.testing.assert_allclose(finite_prompt_mse(gm, Q, U, V), expected, rtol=1e-10)
    np.testing.assert_allclose(effective_sample_fraction(gm, Q, U), np.exp(-kappa), rtol=1e-10)


def test_finite_prompt_law_mixture_monte_carlo(mixture2d):
    U, V = np.array([[0.8, 0.1], [0.0, 0.6]]), np.array([[1.0, 0.5]])
    z = np.array([[0.7, -0.4]])
    T = softmax_attention_limit(mixture2d, z, U, V)
    L, R = 2000, 1000
    rng = np.random.default_rng(5)
    X = np.stack([mixture2d.sample(L, rng)[0] for _ in range(R)])
    err = L * np.sum((softmax_attention(X, z, U, V)[:, 0] - T) ** 2, axis=-1)
    assert (
        abs(err.mean() - finite_prompt_mse(mixture2d, z, U, V)[0])
        < 4 * err.std() / np.sqrt(R) + 0.01
    )


def test_extreme_scales_finite(mixture2d):
    U = 1e6 * np.eye(2)
    Q = np.array([[1.0, 0.0], [-1.0, 2.0]])
    assert np.all(np.isfinite(softmax_attention_limit(mixture2d, Q, U, np.eye(2))))
    assert np.all(np.isfinite(attention_gates(mixture2d, Q, U)))
    assert np.all(effective_sample_fraction(mixture2d, Q, U) >= 0)


def test_bad_input(mixture2d):
    with pytest.raises(TypeError, match="mixture"):
        softmax_attention_limit("gm", np.zeros((1, 2)), np.eye(2), np.eye(2))
    with pytest.raises(ValueError, match="queries"):
        softmax_attention_limit(mixture2d, np.zeros((1, 3)), np.eye(2), np.eye(2))
    with pytest.raises(ValueError, match="U"):
        linear_attention_limit(mixture2d, np.zeros((1, 2)), np.eye(3), np.eye(2))
    with pytest.raises(ValueError, match="V"):
        softmax_attention_limit(mixture2d, np.zeros((1, 2)), np.eye(2), np.eye(3))


def test_prompt_errors_and_correction_against_monte_carlo():
    # kappa = 1 Gaussian prompt: L * MSE at L = 300 should match C + c1 / L within 4 standard
    # errors.
    from gmmlib.limits import finite_prompt_mse_correction, prompt_errors

    gm, z, U, V = _kappa_one_gaussian()
    G = gm.covs[0]
    L = 300
    err = L * prompt_errors(gm, z, U, V, length=L, n_prompts=3000, rng=4)[:, 0]
    C, c1 = finite_prompt_mse(gm, z, U, V), finite_prompt_mse_correction(gm, z, U, V)
    assert abs(err.mean() - (C + c1 / L)) < 4 * err.std() / np.sqrt(err.size)
    t, g = np.trace(V @ G @ V.T), np.sum((V @ G @ (U @ z)) ** 2)
    expected_c1 = -2 * (np.exp(3) * (t + 4 * g) - C) + 3 * (C * (np.e - 1) + 2 * np.exp(2) * g)
    assert np.isclose(c1, expected_c1, rtol=1e-10)


def test_sample_tokens_shape_and_seed(mixture2d):
    P = mixture2d.sample_tokens(3, 5, 0)
    assert P.shape == (3, 5, 2)
    np.testing.assert_array_equal(P, mixture2d.sample_tokens(3, 5, 0))


def _kappa_one_gaussian():
    G = np.array([[1.0, 0.4], [0.4, 0.6]])
    gm = GaussianMixture.gaussian([0.5, -0.5], G)
    z, V = np.array([1.0, 0.5]), np.array([[1.0, 0.0], [0.5, 1.0]])
    U0 = np.array([[1.0, 0.0], [0.3, 1.0]])
    a0 = U0 @ z
    return gm, z, U0 / np.sqrt(a0 @ G @ a0), V  # kappa = 1


def test_exact_finite_prompt_error_against_monte_carlo():
    """Proposition prop-01-exact: the exact L·E‖T_L − T‖² agrees with Monte Carlo at short
    prompts."""
    from gmmlib.limits import finite_prompt_mse_exact, prompt_errors

    gm, z, U, V = _kappa_one_gaussian()
    for L in (2, 10, 50):
        err = L * prompt_errors(gm, z, U, V, length=L, n_prompts=20000, rng=L)[:, 0]
        exact = finite_prompt_mse_exact(gm, z, U, V, length=L)
        assert abs(err.mean() - exact) < 4.5 * err.std() / np.sqrt(err.size)


def test_exact_finite_prompt_error_limits():
    """The exact error tends to C(z), its expansion gives C₁, it converges in n_points, and κ = 0 is
    exact."""
    from gmmlib.limits import finite_prompt_mse_correction, finite_prompt_mse_exact

    gm, z, U, V = _kappa_one_gaussian()
    C, c1 = finite_prompt_mse(gm, z, U, V), finite_prompt_mse_correction(gm, z, U, V)
    h = lambda L: L * (finite_prompt_mse_exact(gm, z, U, V, length=L) - C)
    L = 20000
    assert abs((2 * h(2 * L) - h(L)) / c1 - 1) < 1e-3
    assert np.isclose(finite_prompt_mse_exact(gm, z, U, V, length=10**6), C + c1 / 10**6, rtol=1e-8)
    a = finite_prompt_mse_exact(gm, z, U, V, length=30, n_points=120)
    b = finite_prompt_mse_exact(gm, z, U, V, length=30, n_points=240)
    assert np.isclose(a, b, rtol=1e-12)
    # U = 0: uniform weights, the error of a plain mean is exactly tr(VΓVᵀ) at every L
    assert np.isclose(
        finite_prompt_mse_exact(gm, z, 0 * U, V, length=7), np.trace(V @ gm.covs[0] @ V.T)
    )
    both = finite_prompt_mse_exact(gm, np.stack([z, -z]), U, V, length=30)
    assert both.shape == (2,) and np.isclose(both[0], a, rtol=1e-12)
    with pytest.raises(ValueError, match="single Gaussian"):
        finite_prompt_mse_exact(
            GaussianMixture([0.5, 0.5], [[0, 0], [1, 1]], [np.eye(2)] * 2), z, U, V, length=5
        )
    with pytest.raises(ValueError, match="length"):
        finite_prompt_mse_exact(gm, z, U, V, length=1)


def test_correction_gaussian_closed_form():
    """eq-01-correction-gaussian: C₁ = −2e^{3κ}(t_V + 4g) + 3e^{2κ}(t_V + 3g) − e^{κ}(t_V + g)."""
    from gmmlib.limits import finite_prompt_mse_correction

    G = np.array([[1.0, 0.4], [0.4, 0.6]])
    gm = GaussianMixture.gaussian([0.5, -0.5], G)
    z, V = np.array([1.0, 0.5]), np.array([[1.0, 0.0], [0.5, 1.0]])
    for scale in (0.3, 0.7, 1.2):
        U = scale * np.array([[1.0, 0.0], [0.3, 1.0]])
        a = U @ z
        k, tV, g = a @ G @ a, np.trace(V @ G @ V.T), np.sum((V @ G @ a) ** 2)
        closed = (
            -2 * np.exp(3 * k) * (tV + 4 * g)
            + 3 * np.exp(2 * k) * (tV + 3 * g)
            - np.exp(k) * (tV + g)
        )
        assert np.isclose(finite_prompt_mse_correction(gm, z, U, V), closed, rtol=1e-12)


def test_exact_error_accurate_at_very_long_prompts():
    """finite_prompt_mse_exact keeps L·(L·MSE − C) accurate up to L ~ 10⁸ (log1p/expm1 for φ)."""
    from gmmlib.limits import finite_prompt_mse_correction, finite_prompt_mse_exact

    gm, z, U, V = _kappa_one_gaussian()
    C, c1 = finite_prompt_mse(gm, z, U, V), finite_prompt_mse_correction(gm, z, U, V)
    h = lambda L: L * (finite_prompt_mse_exact(gm, z, U, V, length=L) - C)
    L = 10**7
    R1 = [2 * h(2 * n) - h(n) for n in (L, 2 * L)]
    assert abs((4 * R1[1] - R1[0]) / 3 / c1 - 1) < 1e-5
    assert abs(h(10**8) / c1 - 1) < 1e-3


def test_exact_error_is_finite_at_two_tokens():
    """At L = 2, φ^(L−2) = 1 even where φ underflows (it once gave 0·(−inf) = NaN)."""
    import warnings

    from gmmlib.limits import finite_prompt_mse_exact, prompt_errors

    g = GaussianMixture([1.0], [[0.0, 0.0]], [np.eye(2)])
    q, V = np.array([[1.0, 0.5]]), np.eye(2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exact = finite_prompt_mse_exact(g, q, 0.5 * np.eye(2), V, length=2)[0]
    err = prompt_errors(g, q, 0.5 * np.eye(2), V, length=2, n_prompts=200_000, rng=3)
    se = err.std() / np.sqrt(err.size)
    assert np.isfinite(exact)
    assert abs(exact / 2 - err.mean()) < 5 * se  # the function returns L·E‖T_L − T‖²
    assert abs(exact - err.mean()) > 50 * se  # …not E‖T_L − T‖² itself


# ---------------------------------------------------------------- the finite-prompt law on one
# Gaussian
M_GAUSS = np.array([0.5, -0.5])
GAMMA = np.array([[1.0, 0.4], [0.4, 0.6]])
Z0 = np.array([1.0, 0.5])
U0 = np.array([[1.0, 0.0], [0.3, 1.0]])
V_GAUSS = np.array([[1.0, 0.0], [0.5, 1.0]])
KAPPAS = np.array([0.5, 1.0, 2.0, 3.0])


def _U(kappa: float) -> np.ndarray:
    a0 = U0 @ Z0
    return U0 * np.sqrt(kappa / (a0 @ GAMMA @ a0))


def _law_by_quadrature(gauss: GaussianMixture, n: int) -> np.ndarray:
    """C(z) and (E w)²/E w² for each κ, from moments of w = exp(aᵀX)."""
    out = []
    for k in KAPPAS:
        a = _U(k) @ Z0
        Ew, Ew2 = (expectation(lambda X, p=p, a=a: np.exp(p * X @ a), gauss, n) for p in (1, 2))
        T = expectation(lambda X, a=a: np.exp(X @ a)[:, None] * (X @ V_GAUSS.T), gauss, n) / Ew
        # noqa: E731
        wsq = lambda X, a=a, T=T: np.exp(2 * X @ a) * np.sum((X @ V_GAUSS.T - T) ** 2, axis=1)
        out.append((expectation(wsq, gauss, n) / Ew**2, Ew**2 / Ew2))
    return np.array(out)


def test_gmmlib_finite_prompt_law_on_a_gaussian_matches_quadrature():
    gauss = GaussianMixture.gaussian(M_GAUSS, GAMMA)
    quad = converged_quadrature(lambda n: _law_by_quadrature(gauss, n), 60, 90, dim=2)
    C = np.array([finite_prompt_mse(gauss, Z0, _U(k), V_GAUSS) for k in KAPPAS])
    frac = np.array([effective_sample_fraction(gauss, Z0, _U(k)) for k in KAPPAS])
    got = np.c_[C, frac]
    tol = quad.error.max()
    assert np.all(np.abs(got - quad.value) <= tol)
    # the chapter's control: C without its factor e^κ
    wrong = np.c_[C * np.exp(-KAPPAS), frac]
    assert np.abs(wrong - quad.value).max() > 1e3 * tol


# ---------------------------------------------------------------- the gates' geometry
GATE_MIX = GaussianMixture(
    [0.3, 0.3, 0.4],
    [[-2.0, -1.0], [2.0, -1.0], [0.0, 2.0]],
    [[[1.0, 0.5], [0.5, 0.8]], [[0.5, -0.2], [-0.2, 1.0]], 0.3 * np.eye(2)],
)
U_GATE = np.array([[0.8, 0.2], [-0.1, 0.6]])


def test_log_gate_ratios_are_quadratics_with_the_stated_hessian():
    rng = np.random.default_rng(3)
    step, pairs = 0.5, [(0, 1), (0, 2), (1, 2)]
    second_diff, predicted, scale = [], [], 0.0
    for _ in range(20):
        z0, h = rng.uniform(-2, 2, size=2), rng.normal(size=2)
        log_g = np.log(
            attention_gates(GATE_MIX, np.array([z0 - step * h, z0, z0 + step * h]), U_GATE)
        )
        scale = max(scale, np.max(np.abs(log_g)))
        for k, j in pairs:
            lo = log_g[:, k] - log_g[:, j]
            second_diff.append((lo[0] - 2 * lo[1] + lo[2]) / step**2)
            predicted.append(h @ U_GATE.T @ (GATE_MIX.covs[k] - GATE_MIX.covs[j]) @ U_GATE @ h)
    second_diff, predicted = np.array(second_diff), np.array(predicted)
    # exact for a quadratic: round-off of 4 log-gates × (1, 2, 1) / step²
    tol = 32 * np.finfo(float).eps * scale / step**2
    np.testing.assert_allclose(second_diff, predicted, rtol=0, atol=tol)
    # near miss: the quadratic's coefficient read as its curvature (half the second derivative)
    assert np.abs(second_diff - predicted / 2).max() > 1e3 * tol


def test_finite_prompt_law_mixture_written_out():
    """Chapter 1's law C(z) = e^{Λ(2a) − 2Λ(a)} E_{μ^(2a)}‖VX − T‖² written out in
    numpy for a three-component mixture agrees with finite_prompt_mse to round-off, and the gates of
    the tilt by a (instead of 2a) do not."""
    from scipy.special import softmax

    mix = GaussianMixture(weights=[0.5, 0.3, 0.2], means=[[-1.0, 0.0], [1.0, 1.0], [0.5, -1.5]],
                          covs=[[[0.4, 0.1], [0.1, 0.3]], [[0.2, 0.0], [0.0, 0.5]],
                                [[0.3, -0.1], [-0.1, 0.2]]])
    U, V = np.array([[0.8, 0.3], [-0.2, 0.6]]), np.eye(2)
    angles = np.linspace(0, 2 * np.pi, 8, endpoint=False)
    queries = np.column_stack([np.cos(angles), np.sin(angles)])
    T = softmax_attention_limit(mix, queries, U, V)

    def written_out(a, t, s=2.0):
        pi, m, G = mix.weights, mix.means, mix.covs
        quad = np.einsum("i,kij,j->k", a, G, a)
        lam = lambda c: np.log(np.sum(pi * np.exp(c * m @ a + 0.5 * c**2 * quad)))  # noqa: E731
        gates = softmax(np.log(pi) + s * m @ a + 0.5 * s**2 * quad)
        means = m + 2 * np.einsum("kij,j->ki", G, a)
        spread = np.einsum("pi,kij,pj->k", V, G, V) + np.sum((means @ V.T - t) ** 2, axis=1)
        return np.exp(lam(2) - 2 * lam(1)) * gates @ spread

    C = finite_prompt_mse(mix, queries, U, V)
    A = queries @ U.T
    np.testing.assert_allclose([written_out(a, t) for a, t in zip(A, T)], C, rtol=1e-12)
    wrong = np.array([written_out(a, t, s=1.0) for a, t in zip(A, T)])
    assert np.max(np.abs(wrong / C - 1)) > 1e-3
