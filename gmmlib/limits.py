r"""The infinite-prompt limit of attention, in closed form, and its finite-prompt error law.

For a prompt law :math:`\mu` and a query :math:`z`, write :math:`a = Uz`. Softmax attention
on an infinitely long prompt is the mean of the *tilted* law :math:`\mu_a \propto e^{a^\top x}\mu`,
mapped by :math:`V`:

.. math::

    T_{U,V}[\mu](z) = \frac{\int e^{x^\top a}\,Vx\,d\mu(x)}{\int e^{x^\top a}\,d\mu(x)} = V\,\mathbb E_{\mu_a}[X].

For :math:`\mu=\sum_k\pi_k\mathcal N(m_k,\Gamma_k)` this is a softmax-gated sum of affine experts,

.. math::

    T_{U,V}[\mu](z) = V\sum_k \alpha_k(z)\,(m_k + \Gamma_k U z),\qquad
    \alpha_k(z) = \operatorname{softmax}_k\big(\log\pi_k + m_k^\top Uz + \tfrac12 (Uz)^\top\Gamma_k (Uz)\big),

while linear attention's limit is :math:`T^{\mathrm{lin}}[\mu](z) = V\,\mathbb E_\mu[XX^\top]\,Uz`.

A finite prompt of :math:`L` i.i.d. tokens is a self-normalised importance sampler of
:math:`\mu_a` with weights :math:`w = e^{x^\top a}`; by the delta method

.. math::

    L\,\mathbb E\|T[\hat\mu_L](z) - T[\mu](z)\|^2 \to
    \frac{\mathbb E_\mu[w^2\,\|VX - T[\mu](z)\|^2]}{(\mathbb E_\mu w)^2}
    = e^{K(2a) - 2K(a)}\;\mathbb E_{\mu_{2a}}\|VX - T[\mu](z)\|^2,

with :math:`K(a) = \log\mathbb E_\mu e^{a^\top X}`. For a Gaussian :math:`\mathcal N(m,\Gamma)`
this is :math:`e^{\kappa}\,(\operatorname{tr}V\Gamma V^\top + \|V\Gamma a\|^2)`, :math:`\kappa = a^\top\Gamma a`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import logsumexp, softmax

from ._validation import (check_mixture, check_positive, check_queries, check_rng, check_U,
                          check_V)
from .mixtures import GaussianMixture

__all__ = [
    "attention_gates",
    "shared_covariance_limit",
    "component_linear_limits",
    "softmax_attention_limit",
    "linear_attention_limit",
    "finite_prompt_mse",
    "finite_prompt_mse_correction",
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
    return x[0] if single else x


def attention_gates(mixture: GaussianMixture, queries: Any, U: Any) -> np.ndarray:
    r"""The gates :math:`\alpha_k(z) = \operatorname{softmax}_k(\log\pi_k + m_k^\top Uz + \frac12 (Uz)^\top\Gamma_k Uz)`.

    They are the weights of the tilted mixture :math:`\mu_{Uz}`: the posterior probability
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
    return _out(softmax(mixture.tilt_logits(Q @ U.T), axis=-1), single)


def softmax_attention_limit(mixture: GaussianMixture, queries: Any, U: Any, V: Any) -> np.ndarray:
    r"""Infinite-prompt softmax attention :math:`T_{U,V}[\mu](z) = V\sum_k\alpha_k(z)(m_k + \Gamma_k Uz)`.

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
    A = Q @ U.T
    gates = softmax(mixture.tilt_logits(A), axis=-1)  # (n, K)
    experts = mixture.means[None, :, :] + np.einsum("kij,nj->nki", mixture.covs, A)  # (n, K, d)
    return _out(np.einsum("nk,nkd->nd", gates, experts) @ V.T, single)


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
    G = mixture.covs[0]
    scale = max(1.0, float(np.max(np.abs(mixture.covs))))
    if np.max(np.abs(mixture.covs - G[None])) > 1e-12 * scale:
        raise ValueError("mixture must have one covariance shared by all components for the shared-covariance form")
    A = Q @ U.T
    with np.errstate(divide="ignore"):
        logits = np.log(mixture.weights)[None, :] + A @ mixture.means.T
    alpha = softmax(logits, axis=1)
    out = (A @ G + alpha @ mixture.means) @ V.T
    return out[0] if single else out


def component_linear_limits(mixture: GaussianMixture, queries: Any, U: Any, V: Any) -> np.ndarray:
    r"""Linear attention's limit on each component: :math:`T^{\mathrm{lin}}[\mu_k](z) = V(\Gamma_k + m_km_k^\top)Uz`.

    Returns
    -------
    ndarray, shape (K, n, p)
        Linear attention on the whole mixture is :math:`\sum_k\pi_k` times these, whatever the query.
    """
    Q, U, V, _ = _check_inputs(mixture, queries, U, V)
    M = mixture.covs + np.einsum("ki,kj->kij", mixture.means, mixture.means)
    return np.einsum("ni,kji,pj->knp", Q @ U.T, M, V)


def linear_attention_limit(mixture: GaussianMixture, queries: Any, U: Any, V: Any) -> np.ndarray:
    r"""Infinite-prompt linear attention :math:`T^{\mathrm{lin}}_{U,V}[\mu](z) = V\,\mathbb E_\mu[XX^\top]\,Uz`.

    For a mixture, :math:`\mathbb E XX^\top = \sum_k\pi_k(\Gamma_k + m_km_k^\top)`: the components
    are mixed with the fixed weights :math:`\pi_k`, whatever the query.

    Returns
    -------
    ndarray, shape (n, p) (or (p,) for one query)
    """
    Q, U, V, single = _check_inputs(mixture, queries, U, V)
    return _out(Q @ U.T @ mixture.second_moment() @ V.T, single)


def effective_sample_fraction(mixture: GaussianMixture, queries: Any, U: Any) -> np.ndarray:
    r"""Kish's effective sample fraction :math:`(\mathbb E w)^2/\mathbb E w^2 = e^{2K(a) - K(2a)}`, :math:`w = e^{a^\top X}`, :math:`a = Uz`.

    A prompt of :math:`L` tokens weighs like :math:`L \cdot` this many equally weighted
    tokens. For a Gaussian :math:`\mathcal N(m, \Gamma)` it equals :math:`e^{-a^\top\Gamma a}`.

    Returns
    -------
    ndarray, shape (n,) (or a float for one query)
    """
    Q, U, _, single = _check_inputs(mixture, queries, U)
    A = Q @ U.T
    log_frac = 2.0 * mixture.log_mgf(A) - mixture.log_mgf(2.0 * A)
    out = np.exp(np.minimum(log_frac, 0.0))
    return float(out[0]) if single else out


def _tilted_spread(mixture: GaussianMixture, A: np.ndarray, k: float, T: np.ndarray, V: np.ndarray):
    r"""For the tilt by :math:`ka`: :math:`K(ka) - kK(a)`, :math:`\mathbb E_{\mu_{ka}}\|VX - T\|^2` and :math:`V\mathbb E_{\mu_{ka}}X - T`."""
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
    r"""The finite-prompt error constant :math:`C(z) = \lim_{L\to\infty} L\,\mathbb E\|T[\hat\mu_L](z) - T[\mu](z)\|^2`.

    .. math::

        C(z) = e^{K(2a) - 2K(a)}\;\mathbb E_{\mu_{2a}}\|VX - T[\mu](z)\|^2, \qquad a = Uz,

    where :math:`\mu_{2a}` is the mixture tilted by :math:`2a`: with gates
    :math:`\beta_k` of that tilt, :math:`\mathbb E_{\mu_{2a}}\|VX - T\|^2 = \sum_k\beta_k
    [\operatorname{tr}(V\Gamma_kV^\top) + \|V(m_k + 2\Gamma_k a) - T\|^2]`. For a Gaussian
    it reduces to :math:`e^{\kappa}(\operatorname{tr}V\Gamma V^\top + \|V\Gamma a\|^2)`,
    :math:`\kappa = a^\top\Gamma a`.

    Returns
    -------
    ndarray, shape (n,) (or a float for one query)
    """
    Q, U, V, single = _check_inputs(mixture, queries, U, V)
    log_ratio, spread, _ = _tilted_spread(mixture, Q @ U.T, 2.0, softmax_attention_limit(mixture, Q, U, V), V)
    out = np.exp(log_ratio) * spread
    return float(out[0]) if single else out


def finite_prompt_mse_correction(mixture: GaussianMixture, queries: Any, U: Any, V: Any) -> np.ndarray:
    r"""The next term :math:`c_1(z)` of :math:`L\,\mathbb E\|T[\hat\mu_L](z) - T[\mu](z)\|^2 = C(z) + c_1(z)/L + O(L^{-2})`.

    With normalised weights :math:`\tilde w = e^{a^\top X}/\mathbb E e^{a^\top X}` and
    :math:`f = VX - T[\mu](z)`, expanding :math:`1/D^2` around the mean of the
    denominator :math:`D = \frac1L\sum_j\tilde w_j` gives

    .. math::

        c_1 = -2\big(\mathbb E[\tilde w^3\|f\|^2] - C\big)
              + 3\big(C\operatorname{Var}\tilde w + 2\|\mathbb E[\tilde w^2 f]\|^2\big),

    each moment computed by tilting: :math:`\mathbb E[\tilde w^k g(X)] = e^{K(ka) - kK(a)}\,
    \mathbb E_{\mu_{ka}} g(X)`. For a Gaussian the leading part is
    :math:`-2e^{3\kappa}(\operatorname{tr}V\Gamma V^\top + 4\|V\Gamma a\|^2)`: the
    relative correction :math:`c_1/(CL)` is of order :math:`e^{2\kappa}/L`, so the law
    :math:`C/L` is accurate only once :math:`L \gg e^{2\kappa}`.

    Returns
    -------
    ndarray, shape (n,) (or a float for one query)
    """
    Q, U, V, single = _check_inputs(mixture, queries, U, V)
    A = Q @ U.T
    T = softmax_attention_limit(mixture, Q, U, V)
    lr2, spread2, bias2 = _tilted_spread(mixture, A, 2.0, T, V)
    lr3, spread3, _ = _tilted_spread(mixture, A, 3.0, T, V)
    C = np.exp(lr2) * spread2
    third = np.exp(lr3) * spread3
    var_w = np.expm1(lr2)
    cross = np.exp(2.0 * lr2) * np.sum(bias2**2, axis=-1)
    out = -2.0 * (third - C) + 3.0 * (C * var_w + 2.0 * cross)
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
    r"""Monte Carlo squared errors :math:`\|T[\hat\mu_L](z) - T[\mu](z)\|^2` over independent prompts.

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
        X = mixture.sample_prompts(b, int(length), rng)
        errors.append(np.sum((softmax_attention(X, Q, U, V) - T[None]) ** 2, axis=-1))
    return np.concatenate(errors, axis=0)
