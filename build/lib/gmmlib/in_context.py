r"""The exact mean error of attention on a finite prompt, and its decay averaged over queries.

A prompt of :math:`L` i.i.d. tokens :math:`Z_j\sim\mu` turns a softmax head into a
self-normalised importance sampler: with :math:`a = Uz`, weights :math:`w_j = e^{a^\top Z_j}`,
:math:`B = \sum_j w_j` and :math:`D_j = VZ_j - T[\mu](z)`,

.. math::

    T[\hat\mu_L](z) - T[\mu](z) = \frac{\sum_j w_jD_j}{B}.

Writing :math:`1/B^2 = \int_0^\infty s\,e^{-sB}\,ds` and using the independence of the tokens
(the Laplace functional of the prompt), the mean square error over prompts is exact:

.. math::

    \mathbb E\|T[\hat\mu_L](z) - T[\mu](z)\|^2 = \int_0^\infty s\,\Big[L\,\mathcal
    B(s)\,\varphi(s)^{L-1}
    + L(L-1)\,\|\mathcal A(s)\|^2\,\varphi(s)^{L-2}\Big]\,ds,

with :math:`\varphi(s) = \mathbb E e^{-sw}`, :math:`\mathcal A(s) = \mathbb E[wDe^{-sw}]` and
:math:`\mathcal B(s) = \mathbb E[w^2\|D\|^2e^{-sw}]` (Chapter 10, :prf:ref:`prop-10-mean-error`).
For a Gaussian mixture these are one-dimensional integrals over the score :math:`x = a^\top Z`,
because given its component and its score a token's value is Gaussian.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import logsumexp

from ._validation import as_float_array, check_positive, check_queries, check_U, check_V
from .limits import softmax_attention_limit
from .mixtures import GaussianMixture, check_mixture

__all__ = ["GOLDEN_EXPONENT", "QUERY_TILT", "in_context_mse", "mean_in_context_mse", "local_slopes"]

#: The exponent of the query-averaged mean error, :math:`(\sqrt5 - 1)/2`: it decays like
#: :math:`L^{-(\sqrt5-1)/2 + o(1)}` (Chapter 10, heur-10-rate).
GOLDEN_EXPONENT = (np.sqrt(5.0) - 1.0) / 2.0
#: The queries that carry the mean sit at :math:`t = 5^{-1/4}M`, :math:`M = \sqrt{2\log L}`.
QUERY_TILT = 5.0 ** -0.25


def _kernels(v: np.ndarray) -> tuple[np.ndarray, ...]:
    """The s-kernels in log units v = log(s w̃): 1 − e^(−e^v), e^v(1 − e^(−e^v)), e^(v − e^v), e^(2v
    − e^v)."""
    ev = np.exp(np.minimum(v, 300.0))
    k0 = -np.expm1(-ev)
    return k0, ev * k0, np.exp(v - ev), np.exp(2.0 * v - ev)


def _one_query(
    mixture: GaussianMixture,
    a: np.ndarray,
    V: np.ndarray,
    T: np.ndarray,
    lengths: np.ndarray,
    step: float,
    max_length: float,
    cross: bool,
) -> np.ndarray:
    """The exact mean square error at one tilt a ≠ 0, for every length (see the module
    docstring)."""
    pi, m, S = mixture.weights, mixture.means, mixture.covs
    mu = m @ a  # score means a·m_k
    Sa = S @ a  # (K, d): S_k a
    kappa = Sa @ a  # score variances aᵀ S_k a
    sig = np.sqrt(kappa)
    b = m @ V.T - T  # (K, p): V m_k − T
    c = (Sa @ V.T) / kappa[:, None]  # (K, p): V S_k a / κ_k
    tau = np.einsum("pi,kij,pj->k", V, S, V) - np.sum((Sa @ V.T) ** 2, 1) / kappa
    ell = float(logsumexp(np.log(pi) + mu + kappa / 2))  # Λ(a) = log E e^(aᵀZ)
    top = np.sqrt(2.0 * np.log(max_length))
    lo = float(np.min(mu - 12.0 * sig))
    hi = float(np.max(mu + sig * (np.minimum(2.0 * sig, top) + 12.0)))
    h = min(step, 0.5 * float(sig.min()))
    x = lo + h * np.arange(int(np.ceil((hi - lo) / h)) + 1)
    dx = x[None] - mu[:, None]  # (K, n)
    dens = (
        pi[:, None] * np.exp(-(dx**2) / (2 * kappa[:, None])) / np.sqrt(2 * np.pi * kappa[:, None])
    )
    f0 = dens.sum(0)
    f1 = np.einsum("kn,kp->np", dens, b) + np.einsum("kn,kp->np", dens * dx, c)
    f2 = (
        dens * (np.sum(b**2, 1) + tau)[:, None]
        + 2 * dens * dx * np.sum(b * c, 1)[:, None]
        + dens * dx**2 * np.sum(c**2, 1)[:, None]
    ).sum(0)
    # log s covers every token's scale and the typical normaliser s ≈ 1/L of the longest prompt
    u_lo, u_hi = lo - ell - 12.0, max(hi - ell, np.log(max_length)) + 28.0
    if h == step:  # log s on the same step as x: every sum over tokens is one discrete correlation
        u = u_lo + h * np.arange(int(np.ceil((u_hi - u_lo) / h)) + 1)
        # x_i − ℓ − u_j, all offsets
        v = (x[0] - ell - u[-1]) + h * np.arange(x.size + u.size - 1)
        k0, k1, kd, k2 = _kernels(v)

        def over_tokens(kern: np.ndarray, f: np.ndarray) -> np.ndarray:
            # Σ_i f_i K(x_i − ℓ − u_j) h for every j (direct sums: full relative accuracy)
            return h * np.correlate(kern, f, "valid")[::-1]
    else:  # narrow scores (small tilt): a finer x grid, u on the coarser step
        u = np.arange(u_lo, u_hi + step, step)
        k0, k1, kd, k2 = _kernels(x[None, :] - ell - u[:, None])

        def over_tokens(kern: np.ndarray, f: np.ndarray) -> np.ndarray:
            return h * (kern @ f)

    q = np.clip(over_tokens(k0, f0), 0.0, 1.0)  # 1 − φ(s)
    # s𝒜(s) = E[s w̃ e^(−s w̃) D] = −E[s w̃ (1 − e^(−s w̃)) D] (as E[w̃ D] = 0): at each s the form
    # whose terms are smaller in size, so that the rounding of their sum is smallest
    size = np.abs(f1).sum(1)
    direct = over_tokens(kd, size) <= over_tokens(k1, size)
    sA = np.stack(
        [
            np.where(direct, over_tokens(kd, f1[:, p]), -over_tokens(k1, f1[:, p]))
            for p in range(f1.shape[1])
        ],
        1,
    )
    s2B = over_tokens(k2, f2)  # s² ℬ(s)
    with np.errstate(divide="ignore"):
        log_phi = np.log1p(-np.minimum(q, 1.0 - 1e-300))
    a2 = np.sum(sA**2, 1)
    out = np.empty(lengths.size)
    for i, L in enumerate(lengths):
        diag = L * s2B * (np.exp((L - 1) * log_phi) if L > 1 else 1.0)
        pairs = L * (L - 1) * a2 * (np.exp((L - 2) * log_phi) if L > 2 else 1.0) if cross else 0.0
        out[i] = (u[1] - u[0]) * np.sum(diag + pairs)
    return out


def in_context_mse(
    mixture: GaussianMixture,
    queries: Any,
    U: Any,
    V: Any,
    *,
    lengths: Any,
    step: float = 0.5,
    cross: bool = True,
) -> np.ndarray:
    r"""The exact :math:`\mathbb E\|T[\hat\mu_L](z) - T[\mu](z)\|^2` over prompts of :math:`L`
    i.i.d. tokens.

    Implements :prf:ref:`prop-10-mean-error` (Chapter 10). For a Gaussian mixture :math:`\mu =
    \sum_k\pi_k\mathcal N(m_k, S_k)`, a query :math:`z` and :math:`a = Uz`, the score of a token of
    component :math:`k` is :math:`x\sim\mathcal N(a^\top m_k, \kappa_k)`, :math:`\kappa_k = a^\top
    S_ka`, and given :math:`x` its centred value :math:`D = VZ - T` has mean :math:`b_k + c_k(x -
    a^\top m_k)` (:math:`b_k = Vm_k - T`, :math:`c_k = VS_ka/\kappa_k`) and covariance trace
    :math:`\tau_k = \operatorname{tr}VS_kV^\top - \|VS_ka\|^2/\kappa_k`. Then, with :math:`\tilde w
    = e^{x - \Lambda(a)}` and :math:`s = e^{-u}`,

    .. math::

        \mathbb E\|T[\hat\mu_L] - T[\mu]\|^2 = \int_{\mathbb R}\Big[L\,s^2\mathcal B\,\varphi^{L-1}
        + L(L-1)\,\|s\mathcal A\|^2\,\varphi^{L-2}\Big]\,du,

    :math:`1 - \varphi = \mathbb E[1 - e^{-s\tilde w}]`, :math:`s\mathcal A = -\mathbb E[s\tilde w(1
    - e^{-s\tilde w})D]` (as :math:`\mathbb E[\tilde wD] = 0`; this form has no cancellation at
    small :math:`s`) and :math:`s^2\mathcal B = \mathbb E[(s\tilde w)^2e^{-s\tilde w}\|D\|^2]`.
    Every integral is a trapezoidal sum on one uniform grid of scores and of :math:`u` (step
    ``step``, at most half the smallest score deviation), so each is a discrete correlation of
    positive kernels of :math:`x - \Lambda(a) - u`: accurate to about 1e-6 relative at the default
    step and to round-off at half of it (the tests compare two steps and Monte Carlo) for any
    length, however large. Scores are covered from 12 deviations below each component's mean to 12
    beyond the tilt :math:`\min(2\kappa_k, \sqrt{\kappa_k}\sqrt{2\log L_{\max}})`.

    Parameters
    ----------
    mixture : GaussianMixture
        The prompt law :math:`\mu`.
    queries : array_like, shape (n, d) or (d,)
    U : array_like, shape (d, d)
    V : array_like, shape (p, d)
    lengths : int or array_like of int
        Prompt lengths :math:`L\ge 1` (real values are accepted, as for a Poisson-like
        interpolation; the formula is exact at integers).
    step : float
        Grid step in score units (0.5: about 1e-6 relative; 0.25: round-off).
    cross : bool
        Keep the pair term :math:`L(L-1)\|\mathcal A\|^2\varphi^{L-2}` (the squared bias of the
        ratio). ``False`` gives the diagonal term alone, a plausible wrong formula for tests.

    Returns
    -------
    ndarray, shape (n, len(lengths)) (or (len(lengths),) for one query)
    """
    mixture = check_mixture(mixture)
    d = mixture.dim
    Q, single = check_queries(queries, d)
    U, V = check_U(U, d), check_V(V, d)
    Ls = np.atleast_1d(as_float_array(lengths, "lengths", ndim=(0, 1)))
    if Ls.size == 0 or np.any(Ls < 1):
        raise ValueError(f"lengths must be at least 1, got {Ls}")
    check_positive(step, "step")
    T = softmax_attention_limit(mixture, Q, U, V)
    out = np.empty((Q.shape[0], Ls.size))
    for i, (z, t) in enumerate(zip(Q, T)):
        a = U @ z
        # equal weights: a plain mean of L values
        if float(np.max(a @ mixture.covs @ a)) <= 1e-24:
            spread = np.einsum("k,kp->", mixture.weights, (mixture.means @ V.T - t) ** 2)
            spread += np.einsum("k,pi,kij,pj->", mixture.weights, V, mixture.covs, V)
            out[i] = spread / Ls
            continue
        out[i] = _one_query(mixture, a, V, t, Ls, float(step), float(Ls.max()), bool(cross))
    if not np.all(np.isfinite(out)):
        raise ValueError("the mean error overflows the float range: the query or U is too large")
    return out[0] if single else out


def mean_in_context_mse(
    shift: float, lengths: Any, *, query_step: float = 0.3, step: float = 0.5
) -> np.ndarray:
    r"""The query-averaged exact mean error in noise units: tokens and query i.i.d. :math:`\mathcal
    N(c, 1)`.

    .. math::

        \bar E_L(c) = \mathbb E_{z\sim\mathcal N(c,1)}\;\mathbb E\Big|\frac{\sum_j
        e^{zY_j}Y_j}{\sum_j e^{zY_j}}
        - (c + z)\Big|^2,\qquad Y_1,\dots,Y_L\sim\mathcal N(c, 1),

    the one-dimensional model of Chapter 10's heuristic heur-10-rate (the component's mean at
    projection :math:`c` in units of the prompt's spread :math:`\nu`). The inner mean is
    :func:`in_context_mse`; the outer one is a trapezoidal sum over queries
    :math:`|z - c|\le 6 + \sqrt{2\log L_{\max}}` with step ``query_step`` (the integrand is
    smooth and its mass sits near :math:`z = \pm5^{-1/4}\sqrt{2\log L}`, so the sum converges
    geometrically; compare two steps).

    Returns
    -------
    ndarray, shape (len(lengths),)
    """
    c = float(as_float_array(shift, "shift", ndim=0))
    Ls = np.atleast_1d(as_float_array(lengths, "lengths", ndim=(0, 1)))
    if Ls.size == 0 or np.any(Ls < 1):
        raise ValueError(f"lengths must be at least 1, got {Ls}")
    check_positive(query_step, "query_step")
    top = np.sqrt(2.0 * np.log(max(float(Ls.max()), 2.0)))
    reach = 6.0 + top
    z = np.arange(c - reach, c + reach + query_step / 2, query_step)
    law = GaussianMixture.isotropic([1.0], [[c]], 1.0)
    mse = in_context_mse(law, z[:, None], np.eye(1), np.eye(1), lengths=Ls, step=step)
    dens = np.exp(-((z - c) ** 2) / 2) / np.sqrt(2 * np.pi)
    return query_step * (dens @ mse)


def local_slopes(lengths: Any, values: Any) -> np.ndarray:
    r"""Local log-log slopes :math:`\Delta\log E/\Delta\log L` between consecutive lengths."""
    Ls = as_float_array(lengths, "lengths", ndim=1)
    E = as_float_array(values, "values", ndim=1)
    if Ls.shape != E.shape or Ls.size < 2 or np.any(Ls <= 0) or np.any(E <= 0):
        raise ValueError(
            "lengths and values must be positive arrays of one shape, at least two entries"
        )
    return np.diff(np.log(E)) / np.diff(np.log(Ls))
