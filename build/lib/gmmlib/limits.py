r"""The infinite-prompt limit of attention, in closed form, and its finite-prompt error law.

For a prompt law :math:`\mu` and a query :math:`z`, write :math:`a = Uz`. Softmax attention
on an infinitely long prompt is the mean of the *tilted* law :math:`\mu_a \propto e^{a^\top x}\mu`,
mapped by :math:`V`:

.. math::

    T_{U,V}[\mu](z) = \frac{\int e^{x^\top a}\,Vx\,d\mu(x)}{\int e^{x^\top a}\,d\mu(x)} = V\,\mathbb
    E_{\mu_a}[X].

For :math:`\mu=\sum_k\pi_k\mathcal N(m_k,\Gamma_k)` this is a softmax-gated sum of affine experts,

.. math::

    T_{U,V}[\mu](z) = V\sum_k \alpha_k(z)\,(m_k + \Gamma_k U z),\qquad
    \alpha_k(z) = \operatorname{softmax}_k\big(\log\pi_k + m_k^\top Uz + \tfrac12 (Uz)^\top\Gamma_k
    (Uz)\big),

while linear attention's limit is :math:`T^{\mathrm{lin}}[\mu](z) = V\,\mathbb E_\mu[XX^\top]\,Uz`.

A finite prompt of :math:`L` i.i.d. tokens is a self-normalised importance sampler of
:math:`\mu_a` with weights :math:`w = e^{x^\top a}`; by the delta method

.. math::

    L\,\mathbb E\|T[\hat\mu_L](z) - T[\mu](z)\|^2 \to
    \frac{\mathbb E_\mu[w^2\,\|VX - T[\mu](z)\|^2]}{(\mathbb E_\mu w)^2}
    = e^{\Lambda(2a) - 2\Lambda(a)}\;\mathbb E_{\mu^{(2a)}}\|VX - T[\mu](z)\|^2,

with :math:`\Lambda(a) = \log\mathbb E_\mu e^{a^\top X}` the cumulant generating function and
:math:`\mu^{(b)}` the tilt of :math:`\mu` by :math:`b` (Chapter 1: :prf:ref:`lem-01-tilt`,
:prf:ref:`prop-01-clt`). For a Gaussian :math:`\mathcal N(m,\Gamma)` this is
:math:`e^{\kappa}\,(\operatorname{tr}V\Gamma V^\top + \|V\Gamma a\|^2)`, :math:`\kappa =
a^\top\Gamma a`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import logsumexp, softmax

from ._validation import (check_positive, check_queries, check_rng, check_U,
                          check_V)
from .mixtures import GaussianMixture, check_mixture

__all__ = [
    "attention_gates",
    "shared_covariance_limit",
    "component_linear_limits",
    "softmax_attention_limit",
    "linear_attention_limit",
    "finite_prompt_mse",
    "finite_prompt_mse_correction",
    "finite_prompt_mse_exact",
    "effective_sample_fraction",
    "prompt_errors",
]


def _check_inputs(mixture: Any, queries: Any, U: Any, V: Any | None = None):
    mixture = check_mixture(mixture)
    d = mixture.dim
    Q, single = check_queries(queries, d)
    U = check_U(U, d)
    V = None if V is None else check_V(V, d)
    return Q, U, V, single


def _out(x: np.ndarray, single: bool) -> np.ndarray:
    if not np.all(np.isfinite(x)):
        raise ValueError("the result overflows the float range (the inputs are too large for it)")
    return x[0] if single else x


def _finite_tilt(Q: np.ndarray, U: np.ndarray) -> np.ndarray:
    """The tilts a = Uz of the queries, refused with a ValueError where they overflow."""
    with np.errstate(over="ignore", invalid="ignore"):
        A = Q @ U.T
    if not np.all(np.isfinite(A)):
        raise ValueError("the tilt a = Uz overflows the float range: U or the query is too large")
    return A


def attention_gates(mixture: GaussianMixture, queries: Any, U: Any) -> np.ndarray:
    r"""The gates :math:`\alpha_k(z) = \operatorname{softmax}_k(\log\pi_k + m_k^\top Uz + \frac12
    (Uz)^\top\Gamma_k Uz)`.

    They are the weights of the tilted mixture :math:`\mu^{(Uz)}`: the posterior probability
    of component :math:`k` under the tilt.

    Parameters
    ----------
    mixture : GaussianMixture
    queries : array_like, shape (n, d) or (d,)
    U : array_like, shape (d, d)

    Returns
    -------
    ndarray, shape (n, K) (or (K,) for one query)
    """
    Q, U, _, single = _check_inputs(mixture, queries, U)
    A = _finite_tilt(Q, U)
    return _out(mixture.tilt_weights(A), single)  # saturates, finite, where the logits overflow


def softmax_attention_limit(mixture: GaussianMixture, queries: Any, U: Any, V: Any) -> np.ndarray:
    r"""Infinite-prompt softmax attention :math:`T_{U,V}[\mu](z) = V\sum_k\alpha_k(z)(m_k + \Gamma_k
    Uz)`.

    Parameters
    ----------
    mixture : GaussianMixture
        The prompt law :math:`\mu`.
    queries : array_like, shape (n, d) or (d,)
    U : array_like, shape (d, d)
    V : array_like, shape (p, d)

    Returns
    -------
    ndarray, shape (n, p) (or (p,) for one query)
    """
    Q, U, V, single = _check_inputs(mixture, queries, U, V)
    A = _finite_tilt(Q, U)
    gates = mixture.tilt_weights(A)  # (n, K); saturates, finite, where the logits overflow
    with np.errstate(over="ignore", invalid="ignore"):  # _out refuses a result that overflows
        experts = mixture.means[None, :, :] + np.einsum("kij,nj->nki", mixture.covs, A)  # (n, K, d)
        out = np.einsum("nk,nkd->nd", gates, experts) @ V.T
    return _out(out, single)


def shared_covariance_limit(mixture: GaussianMixture, queries: Any, U: Any, V: Any) -> np.ndarray:
    r"""Softmax attention's limit on a mixture with one shared covariance :math:`\Gamma`.

    .. math::

        T_{U,V}[\mu](z) = V\Gamma Uz + V\sum_k \alpha_k(z)\,m_k,\qquad
        \alpha_k(z) = \operatorname{softmax}_k\big(\log\pi_k + m_k^\top Uz\big):

    a linear map plus a gated choice among the means (the term :math:`\frac12(Uz)^\top\Gamma Uz`
    is common to all components and cancels in the softmax).

    Raises
    ------
    ValueError
        If the components' covariances differ.
    """
    Q, U, V, single = _check_inputs(mixture, queries, U, V)
    G = mixture.shared_covariance("mixture", "for the shared-covariance form")
    A = Q @ U.T
    with np.errstate(divide="ignore"):
        logits = np.log(mixture.weights)[None, :] + A @ mixture.means.T
    alpha = softmax(logits, axis=1)
    out = (A @ G + alpha @ mixture.means) @ V.T
    return out[0] if single else out


def component_linear_limits(mixture: GaussianMixture, queries: Any, U: Any, V: Any) -> np.ndarray:
    r"""Linear attention's limit on each component: :math:`T^{\mathrm{lin}}[\mu_k](z) = V(\Gamma_k +
    m_km_k^\top)Uz`.

    Returns
    -------
    ndarray, shape (K, n, p)
        Linear attention on the whole mixture is :math:`\sum_k\pi_k` times these, whatever the
        query.
    """
    Q, U, V, _ = _check_inputs(mixture, queries, U, V)
    M = mixture.covs + np.einsum("ki,kj->kij", mixture.means, mixture.means)
    return np.einsum("ni,kji,pj->knp", Q @ U.T, M, V)


def linear_attention_limit(mixture: GaussianMixture, queries: Any, U: Any, V: Any) -> np.ndarray:
    r"""Infinite-prompt linear attention :math:`T^{\mathrm{lin}}_{U,V}[\mu](z) = V\,\mathbb
    E_\mu[XX^\top]\,Uz`.

    For a mixture, :math:`\mathbb E XX^\top = \sum_k\pi_k(\Gamma_k + m_km_k^\top)`: the components
    are mixed with the fixed weights :math:`\pi_k`, whatever the query.

    Returns
    -------
    ndarray, shape (n, p) (or (p,) for one query)
    """
    Q, U, V, single = _check_inputs(mixture, queries, U, V)
    with np.errstate(over="ignore", invalid="ignore"):  # _out refuses a result that overflows
        out = Q @ U.T @ mixture.second_moment() @ V.T
    return _out(out, single)


def effective_sample_fraction(mixture: GaussianMixture, queries: Any, U: Any) -> np.ndarray:
    r"""Kish's effective sample fraction :math:`(\mathbb E w)^2/\mathbb E w^2 = e^{2\Lambda(a) -
    \Lambda(2a)}`, :math:`w = e^{a^\top X}`, :math:`a = Uz`.

    A prompt of :math:`L` tokens weighs like :math:`L \cdot` this many equally weighted
    tokens. For a Gaussian :math:`\mathcal N(m, \Gamma)` it equals :math:`e^{-a^\top\Gamma a}`.

    Returns
    -------
    ndarray, shape (n,) (or a float for one query)
    """
    Q, U, _, single = _check_inputs(mixture, queries, U)
    A = _finite_tilt(Q, U)
    with np.errstate(over="ignore", invalid="ignore"):
        lam1, lam2 = mixture._tilt_logits(A), mixture._tilt_logits(2.0 * A)
    finite = np.all(np.isfinite(lam2) | (mixture.weights == 0)[None, :], axis=1)
    log_frac = np.zeros(len(A))
    if np.any(finite):
        log_frac[finite] = 2.0 * logsumexp(lam1[finite], axis=-1) - logsumexp(
            lam2[finite], axis=-1)
    for i in np.flatnonzero(~finite):
        # Λ(2a) overflows: 2Λ(a) − Λ(2a) ≈ −max_k aᵀΓ_k a (over the weighted components) → −∞
        quad = np.einsum(
            "i,kij,j->k", A[i] / np.max(np.abs(A[i])), mixture.covs, A[i] / np.max(np.abs(A[i]))
        )
        with np.errstate(over="ignore"):
            kappa = np.max(quad[mixture.weights > 0]) * np.max(np.abs(A[i])) ** 2
        if not kappa > 1e3:
            raise ValueError(
                "the cumulant generating function overflows along a direction in which the "
                "mixture has (almost) no variance: the query or U is too large"
            )
        log_frac[i] = -np.inf
    out = np.exp(np.minimum(log_frac, 0.0))
    return float(out[0]) if single else out


def _exp_ratio(log_ratio: np.ndarray, factor: Any = 1.0) -> np.ndarray:
    r""":math:`e^{\Lambda(ka) - k\Lambda(a)}\cdot\mathrm{factor}`, formed in log space and refused
    with a ValueError where the product overflows (a finite ratio times a large factor can)."""
    f = np.broadcast_to(np.asarray(factor, dtype=float), np.shape(log_ratio))
    with np.errstate(over="ignore", divide="ignore"):
        out = np.sign(f) * np.exp(log_ratio + np.log(np.abs(f)))
    if not np.all(np.isfinite(out)):
        worst = float(np.max(log_ratio))
        raise ValueError(
            f"the finite-prompt error law overflows the float range (Λ(2a) − 2Λ(a) = {worst:.3g}): "
            "the query or U is so large that no representable prompt length makes it small"
        )
    return out


def _tilted_spread(mixture: GaussianMixture, A: np.ndarray, k: float, T: np.ndarray, V: np.ndarray):
    r"""For the tilt by :math:`ka`: :math:`\Lambda(ka) - k\Lambda(a)`, :math:`\mathbb
    E_{\mu^{(ka)}}\|VX - T\|^2` and :math:`V\mathbb E_{\mu^{(ka)}}X - T`."""
    # a ValueError where they overflow: the law is then unbounded
    logits = mixture.tilt_logits(k * A)
    beta = softmax(logits, axis=-1)  # (n, K)
    means = mixture.means[None] + k * np.einsum("kij,nj->nki", mixture.covs, A)  # (n, K, d)
    trace = np.einsum("pi,kij,pj->k", V, mixture.covs, V)  # (K,)
    resid = means @ V.T - T[:, None, :]  # (n, K, p)
    spread = np.einsum("nk,nk->n", beta, trace[None, :] + np.sum(resid**2, axis=-1))
    bias = np.einsum("nk,nkp->np", beta, resid)
    log_ratio = logsumexp(logits, axis=-1) - k * logsumexp(mixture.tilt_logits(A), axis=-1)
    return log_ratio, spread, bias


def finite_prompt_mse(mixture: GaussianMixture, queries: Any, U: Any, V: Any) -> np.ndarray:
    r"""The finite-prompt error constant :math:`C(z) = \lim_{L\to\infty} L\,\mathbb
    E\|T[\hat\mu_L](z) - T[\mu](z)\|^2`.

    .. math::

        C(z) = e^{\Lambda(2a) - 2\Lambda(a)}\;\mathbb E_{\mu^{(2a)}}\|VX - T[\mu](z)\|^2, \qquad a =
        Uz,

    (:prf:ref:`prop-01-clt`, eq. :eq:`eq-01-clt`, and :prf:ref:`cor-01-gaussian` of Chapter 1),
    where :math:`\mu^{(2a)}` is the mixture tilted by :math:`2a`: with gates :math:`\beta_k` of that
    tilt, :math:`\mathbb E_{\mu^{(2a)}}\|VX - T\|^2 = \sum_k\beta_k
    [\operatorname{tr}(V\Gamma_kV^\top) + \|V(m_k + 2\Gamma_k a) - T\|^2]`. For a Gaussian it
    reduces to :math:`e^{\kappa}(\operatorname{tr}V\Gamma V^\top + \|V\Gamma a\|^2)`, :math:`\kappa
    = a^\top\Gamma a`.

    Returns
    -------
    ndarray, shape (n,) (or a float for one query)
    """
    Q, U, V, single = _check_inputs(mixture, queries, U, V)
    T = softmax_attention_limit(mixture, Q, U, V)
    log_ratio, spread, _ = _tilted_spread(mixture, Q @ U.T, 2.0, T, V)
    out = _exp_ratio(log_ratio, spread)
    return float(out[0]) if single else out


def finite_prompt_mse_correction(
    mixture: GaussianMixture, queries: Any, U: Any, V: Any
) -> np.ndarray:
    r"""The next term :math:`C_1(z)` of :math:`L\,\mathbb E\|T[\hat\mu_L](z) - T[\mu](z)\|^2 = C(z)
    + C_1(z)/L + O(L^{-2})`.

    Implements :prf:ref:`prop-01-correction`, eq. :eq:`eq-01-correction`, of Chapter 1.

    With normalised weights :math:`\tilde w = e^{a^\top X}/\mathbb E e^{a^\top X}` and
    :math:`f = VX - T[\mu](z)`, expanding :math:`1/D^2` around the mean of the
    denominator :math:`D = \frac1L\sum_j\tilde w_j` gives

    .. math::

        C_1 = -2\big(\mathbb E[\tilde w^3\|f\|^2] - C\big)
              + 3\big(C\operatorname{Var}\tilde w + 2\|\mathbb E[\tilde w^2 f]\|^2\big),

    each moment computed by tilting: :math:`\mathbb E[\tilde w^k g(X)] = e^{\Lambda(ka) -
    k\Lambda(a)}\, \mathbb E_{\mu^{(ka)}} g(X)`. For a Gaussian, with :math:`t_V =
    \operatorname{tr}V\Gamma V^\top` and :math:`g = \|V\Gamma a\|^2` (eq.
    :eq:`eq-01-correction-gaussian`), :math:`C_1 = -2e^{3\kappa}(t_V + 4g) + 3e^{2\kappa}(t_V + 3g)
    - e^{\kappa}(t_V + g)`: the relative correction :math:`C_1/(CL)` is of order
    :math:`e^{2\kappa}/L`, so the law :math:`C/L` is accurate only once :math:`L \gg e^{2\kappa}`.

    Returns
    -------
    ndarray, shape (n,) (or a float for one query)
    """
    Q, U, V, single = _check_inputs(mixture, queries, U, V)
    A = Q @ U.T
    T = softmax_attention_limit(mixture, Q, U, V)
    lr2, spread2, bias2 = _tilted_spread(mixture, A, 2.0, T, V)
    lr3, spread3, _ = _tilted_spread(mixture, A, 3.0, T, V)
    C = _exp_ratio(lr2, spread2)
    third = _exp_ratio(lr3, spread3)
    with np.errstate(over="ignore"):  # an overflow here is refused with the sum below
        var_w = np.expm1(lr2)
    cross = _exp_ratio(2.0 * lr2, np.sum(bias2**2, axis=-1))
    with np.errstate(over="ignore", invalid="ignore"):
        out = -2.0 * (third - C) + 3.0 * (C * var_w + 2.0 * cross)
    if not np.all(np.isfinite(out)):
        raise ValueError(
            "the correction C₁(z) overflows the float range: the query or U is too large"
        )
    return float(out[0]) if single else out


def finite_prompt_mse_exact(
    mixture: GaussianMixture, queries: Any, U: Any, V: Any, *, length: int, n_points: int = 160
) -> np.ndarray:
    r"""The exact :math:`L\,\mathbb E\|T[\hat\mu_L](z) - T[\mu](z)\|^2` on a Gaussian prompt, for
    any :math:`L \ge 2`.

    Implements :prf:ref:`prop-01-exact`, eq. :eq:`eq-01-exact`, of Chapter 1. For :math:`\mu =
    \mathcal N(m,\Gamma)`, :math:`a = Uz`, :math:`\kappa = a^\top\Gamma a > 0`, write the score of a
    token as :math:`a^\top m + \sqrt\kappa\,\xi` with :math:`\xi\sim\mathcal N(0, 1)`, its
    normalised weight :math:`\tilde w = e^{\sqrt\kappa\,\xi - \kappa/2}`, :math:`r =
    \xi/\sqrt\kappa`, :math:`g = \|V\Gamma a\|^2` and :math:`\varsigma^2 = \operatorname{tr}(V\Gamma
    V^\top) - g/\kappa`. Given its score, a centred value :math:`f = VX - T[\mu](z)` is
    :math:`V\Gamma a\,(r - 1)` plus a fluctuation of covariance trace :math:`\varsigma^2`; with
    :math:`1/S^2 = \int_0^\infty t e^{-tS}\,dt` and independence of the tokens,

    .. math::

        L\,\mathbb E\|T[\hat\mu_L](z) - T[\mu](z)\|^2 = \int_0^\infty u\,\Big[\varphi^{L-1} \psi_2
        + (L - 1)\,\varphi^{L-2}\,g\,\psi_1^2\Big]\Big(\frac uL\Big)\,du,

    :math:`\varphi(t) = \mathbb E e^{-t\tilde w}`, :math:`\psi_2(t) = \mathbb E[\tilde w^2
    e^{-t\tilde w} (g(r-1)^2 + \varsigma^2)]`, :math:`\psi_1(t) = \mathbb E[\tilde w e^{-t\tilde
    w}(r - 1)]`. The expectations over :math:`\xi` use the ``n_points``-node Gauss–Hermite rule, the
    integral over :math:`u = s/(1 - s)` the ``n_points``-node Gauss–Legendre rule on :math:`s\in(0,
    1)` (about 1e-13 relative accuracy at the default; compare two values of ``n_points`` to
    estimate it). As :math:`L\to\infty` the value tends to :math:`C(z)` of
    :func:`finite_prompt_mse`.

    Parameters
    ----------
    mixture : GaussianMixture
        A single Gaussian (one component).
    queries : array_like, shape (n, d) or (d,)
    U : array_like, shape (d, d)
    V : array_like, shape (p, d)
    length : int
        The prompt length :math:`L \ge 2`.
    n_points : int
        Nodes of both one-dimensional rules.

    Returns
    -------
    ndarray, shape (n,) (or a float for one query)

    Raises
    ------
    ValueError
        If ``mixture`` has more than one component, or ``length < 2``.
    """
    Q, U, V, single = _check_inputs(mixture, queries, U, V)
    if mixture.n_components != 1:
        raise ValueError(
            "finite_prompt_mse_exact needs a single Gaussian prompt law (one component)"
        )
    check_positive(length, "length", integer=True)
    check_positive(n_points, "n_points", integer=True)
    L = int(length)
    if L < 2:
        raise ValueError(
            f"length must be at least 2, got {L} (at L = 1 the error is tr VΓVᵀ + ‖VΓa‖²)"
        )
    G = mixture.covs[0]
    xi, wq = np.polynomial.hermite_e.hermegauss(int(n_points))
    wq = wq / wq.sum()
    s, ws = np.polynomial.legendre.leggauss(int(n_points))
    s, ws = 0.5 * (s + 1.0), 0.5 * ws
    u, du = s / (1.0 - s), ws / (1.0 - s) ** 2
    out = np.empty(Q.shape[0])
    for i, a in enumerate(Q @ U.T):
        kappa = float(a @ G @ a)
        g2 = float(np.sum((V @ G @ a) ** 2))
        if kappa <= 1e-300:  # constant weights: the error is a plain mean of L centred values
            out[i] = float(np.trace(V @ G @ V.T))
            continue
        tau = float(np.trace(V @ G @ V.T)) - g2 / kappa
        sk = np.sqrt(kappa)
        w = np.exp(sk * xi - 0.5 * kappa)
        r1 = xi / sk - 1.0
        Em1 = np.expm1(-(u[:, None] / L) * w[None, :])  # e^{-tw} − 1, (n_u, n_xi)
        E = Em1 + 1.0
        with np.errstate(divide="ignore"):  # φ underflows to 0 far out in u: log φ = −inf
            log_phi = np.log1p(Em1 @ wq)  # log φ without cancellation when u/L is small
        A = E @ (wq * w * w * (g2 * r1 * r1 + tau))
        b = E @ (wq * w * r1)
        # φ^k with φ^0 = 1 even where φ underflows (log φ = −inf, and 0·(−inf) would be NaN)
        phi_l1 = np.exp((L - 1) * log_phi)
        phi_l2 = np.exp((L - 2) * log_phi) if L > 2 else np.ones_like(log_phi)
        f = u * (phi_l1 * A + (L - 1) * phi_l2 * g2 * b * b)
        out[i] = float(du @ f)
    return float(out[0]) if single else out


def prompt_errors(
    mixture: GaussianMixture,
    queries: Any,
    U: Any,
    V: Any,
    *,
    length: int,
    n_prompts: int,
    rng: Any,
    max_tokens: int = 2_000_000,
) -> np.ndarray:
    r"""Monte Carlo squared errors :math:`\|T[\hat\mu_L](z) - T[\mu](z)\|^2` over independent
    prompts.

    Draws ``n_prompts`` prompts of ``length`` i.i.d. tokens from ``mixture`` (at most
    ``max_tokens`` tokens in memory at once), runs finite softmax attention
    (:func:`gmmlib.attention.softmax_attention`) and compares with the closed-form limit
    :func:`softmax_attention_limit`.

    Returns
    -------
    ndarray, shape (n_prompts, n)
        One squared error per prompt and query; their mean estimates
        :math:`\mathbb E\|T[\hat\mu_L](z) - T[\mu](z)\|^2`, their standard deviation over
        :math:`\sqrt{\text{n\_prompts}}` its standard error.
    """
    from .attention import softmax_attention

    Q, U, V, _ = _check_inputs(mixture, queries, U, V)
    check_positive(length, "length", integer=True)
    check_positive(n_prompts, "n_prompts", integer=True)
    check_positive(max_tokens, "max_tokens", integer=True)
    rng = check_rng(rng)
    T = softmax_attention_limit(mixture, Q, U, V)
    per_batch = max(1, int(max_tokens) // int(length))
    errors = []
    for start in range(0, int(n_prompts), per_batch):
        b = min(per_batch, int(n_prompts) - start)
        X = mixture.sample_tokens(b, int(length), rng)
        errors.append(np.sum((softmax_attention(X, Q, U, V) - T[None]) ** 2, axis=-1))
    return np.concatenate(errors, axis=0)
