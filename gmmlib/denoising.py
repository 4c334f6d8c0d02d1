r"""Denoising a Gaussian-mixture signal: the Bayes denoiser and what attention makes of it.

Data model: :math:`X\sim\sum_k\pi_k\mathcal N(m_k,\Gamma_k)`, :math:`Z = X + \xi\varepsilon`,
:math:`\varepsilon\sim\mathcal N(0, I_d)`. With :math:`S_k = \Gamma_k + \xi^2 I`, the noisy
observation is the mixture :math:`Z\sim\sum_k\pi_k\mathcal N(m_k, S_k)` and

.. math::

    \mathbb E[X\mid Z=z] = \sum_k \beta_k(z)\,\big(m_k + \Gamma_k S_k^{-1}(z - m_k)\big),
    \qquad \beta_k(z) = p(k\mid z) = \frac{\pi_k\mathcal N(z; m_k, S_k)}{\sum_j\pi_j\mathcal N(z; m_j, S_j)}.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import torch
from torch import nn

from ._validation import as_float_array, check_matrix, check_points, check_positive, check_rng
from .mixtures import check_mixture
from .attention import Head, softmax_attention
from .limits import softmax_attention_limit
from .mixtures import GaussianMixture
from .quadrature import expectation, mixture_nodes
from .training import History

__all__ = [
    "noisy_mixture",
    "bayes_denoiser",
    "bayes_mse",
    "excess_risk",
    "best_linear_denoiser",
    "best_affine_denoiser",
    "carrier_direction",
    "two_head_construction",
    "one_head_construction",
    "multihead_limit",
    "multihead_finite_prompt_mse",
    "random_heads",
    "heads_squared_error",
    "online_sgd_heads",
    "fit_heads",
    "ResidualLayer",
    "residual_construction",
    "residual_denoiser",
    "residual_limit",
    "iterate_denoiser",
    "separation",
    "tanh_fixed_point",
    "key_bias_tokens",
    "key_bias_parameters",
    "key_bias_attention",
    "MixtureAttentionLimit",
]


def noisy_mixture(mixture: GaussianMixture, noise_std: float) -> GaussianMixture:
    r"""The law of :math:`Z = X + \xi\varepsilon`: components :math:`\mathcal N(m_k, \Gamma_k + \xi^2 I)`."""
    if not isinstance(mixture, GaussianMixture):
        raise TypeError(f"mixture must be a GaussianMixture, got {type(mixture).__name__}")
    check_positive(noise_std, "noise_std")
    return mixture.convolve(float(noise_std) ** 2)


def bayes_denoiser(mixture: GaussianMixture, noise_std: float, Z: Any) -> np.ndarray:
    r"""The posterior mean :math:`\mathbb E[X\mid Z]` for a Gaussian-mixture prior.

    .. math::

        \mathbb E[X\mid Z=z] = \sum_k \beta_k(z)\big(m_k + \Gamma_k S_k^{-1}(z - m_k)\big),\quad
        S_k = \Gamma_k + \xi^2 I,\quad \beta_k(z) = p(k\mid z).

    Point masses (:math:`\Gamma_k = 0`) are allowed: their expert is the constant :math:`m_k`.

    Parameters
    ----------
    mixture : GaussianMixture
        The prior of the clean signal :math:`X`.
    noise_std : float
        The noise level :math:`\xi > 0`.
    Z : array_like, shape (n, d) or (d,)
        Noisy observations.

    Returns
    -------
    ndarray, shape (n, d) (or (d,) for one observation)
    """
    Zarr = as_float_array(Z, "Z", ndim=(1, 2))
    single = Zarr.ndim == 1
    Z2 = Zarr[None] if single else Zarr
    if Z2.shape[1] != mixture.dim:
        raise ValueError(f"Z must have shape (n, {mixture.dim}), got {Zarr.shape}")
    beta, experts = _posterior_experts(mixture, noise_std, Z2)
    out = np.einsum("nk,nkd->nd", beta, experts)
    if not np.all(np.isfinite(out)):
        raise ValueError("the posterior mean overflows the float range: Z is too large")
    return out[0] if single else out


def _posterior_experts(mixture: GaussianMixture, noise_std: float, Z2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The posterior β_k(z) (in log space: it saturates, finite, however far out z is) and the experts."""
    noisy = noisy_mixture(mixture, noise_std)
    beta = noisy.posterior(Z2)  # (n, K)
    gain = np.linalg.solve(noisy.covs, mixture.covs)  # S_k^{-1} Γ_k; its transpose is Γ_k S_k^{-1}
    diff = Z2[:, None, :] - mixture.means[None]  # (n, K, d)
    with np.errstate(over="ignore", invalid="ignore"):
        experts = mixture.means[None] + np.einsum("kji,nkj->nki", gain, diff)  # m_k + Γ_k S_k^{-1}(z - m_k)
    return beta, experts


# ---------------------------------------------------------------------------- helpers
# ---------------------------------------------------------------------------- risks
def bayes_mse(mixture: GaussianMixture, noise_std: float, n_points: int = 40) -> float:
    r"""The Bayes risk :math:`\mathbb E\|X - \mathbb E[X\mid Z]\|^2`, by Gauss–Hermite quadrature.

    .. math::

        \mathbb E\|X - \mathbb E[X\mid Z]\|^2 = \mathbb E_Z\operatorname{tr}\operatorname{Cov}(X\mid Z)
        = \mathbb E_Z\sum_k\beta_k(Z)\big(\xi^2\operatorname{tr}(\Gamma_kS_k^{-1})
          + \|e_k(Z) - \mathbb E[X\mid Z]\|^2\big),

    with the experts :math:`e_k(z) = m_k + \Gamma_kS_k^{-1}(z - m_k)` and
    :math:`\Gamma_k - \Gamma_kS_k^{-1}\Gamma_k = \xi^2\Gamma_kS_k^{-1}`: a sum of non-negative
    terms, accurate to relative rounding even when the risk is tiny (small :math:`\xi`), where
    :math:`\mathbb E\|X\|^2 - \mathbb E\|\mathbb E[X\mid Z]\|^2` would cancel. The expectation over
    :math:`Z` is integrated with ``n_points`` nodes per direction over each component of the law
    of :math:`Z` (the integrand is smooth, so the rule converges geometrically).
    """
    mixture = check_mixture(mixture)
    noisy = noisy_mixture(mixture, noise_std)
    xi2 = float(noise_std) ** 2
    within = xi2 * np.einsum("kij,kji->k", mixture.covs, np.linalg.inv(noisy.covs))  # ξ² tr(Γ_k S_k⁻¹)

    def conditional_variance(Z: np.ndarray) -> np.ndarray:
        beta, experts = _posterior_experts(mixture, noise_std, Z)
        mean = np.einsum("nk,nkd->nd", beta, experts)
        spread = np.sum((experts - mean[:, None, :]) ** 2, axis=-1)  # (n, K)
        return np.einsum("nk,nk->n", beta, within[None, :] + spread)

    return float(expectation(conditional_variance, noisy, n_points))


def excess_risk(
    predict: Callable[[np.ndarray], Any],
    mixture: GaussianMixture,
    noise_std: float,
    n_points: int = 40,
    *,
    per_component: bool = False,
) -> float | np.ndarray:
    r"""The excess risk :math:`\mathbb E\|X - g(Z)\|^2 - \mathbb E\|X - \mathbb E[X\mid Z]\|^2 = \mathbb E_Z\|g(Z) - \mathbb E[X\mid Z]\|^2`.

    The identity holds because :math:`X - \mathbb E[X\mid Z]` is orthogonal to every
    function of :math:`Z`. The right-hand side is integrated by Gauss–Hermite quadrature over
    each component :math:`\mathcal N(m_k, \Gamma_k + \xi^2 I)` of the law of :math:`Z`.

    Parameters
    ----------
    predict : callable
        ``g``: maps an (N, d) array of noisy points to (N, d) predictions (numpy or torch).
    mixture : GaussianMixture
        The prior of :math:`X`.
    noise_std : float
        :math:`\xi`.
    n_points : int
        Gauss–Hermite nodes per direction.
    per_component : bool
        Return the K contributions :math:`\pi_k\,\mathbb E_{Z\sim\mathcal N(m_k,S_k)}\|g(Z) - \mathbb E[X\mid Z]\|^2`
        (they sum to the excess risk) instead of their sum.
    """
    mixture = check_mixture(mixture)
    if not callable(predict):
        raise TypeError("predict must be callable")
    noisy = noisy_mixture(mixture, noise_std)
    nodes, weights, labels = mixture_nodes(noisy, n_points)
    pred = predict(nodes)
    pred = as_float_array(pred, "predict(Z)", ndim=2)
    if pred.shape != nodes.shape:
        raise ValueError(f"predict must return shape {nodes.shape}, got {pred.shape}")
    sq = np.sum((pred - bayes_denoiser(mixture, noise_std, nodes)) ** 2, axis=1)
    contrib = np.bincount(labels, weights=weights * sq, minlength=mixture.n_components)
    return contrib if per_component else float(contrib.sum())


def best_linear_denoiser(mixture: GaussianMixture, noise_std: float) -> tuple[np.ndarray, float]:
    r"""The best linear map :math:`z\mapsto Az` and its risk, in closed form.

    With :math:`M = \mathbb E XX^\top` and :math:`\mathbb E ZZ^\top = M + \xi^2 I`,
    :math:`\mathbb E XZ^\top = M`:

    .. math::

        A^\star = M(M + \xi^2 I)^{-1},\qquad
        R_{\mathrm{lin}} = \min_A\mathbb E\|X - AZ\|^2 = \xi^2\operatorname{tr}\big(M(M + \xi^2 I)^{-1}\big).

    Returns
    -------
    A : ndarray, shape (d, d)
    risk : float
    """
    mixture = check_mixture(mixture)
    check_positive(noise_std, "noise_std")
    M = mixture.second_moment()
    G = M + noise_std**2 * np.eye(mixture.dim)
    A = np.linalg.solve(G, M).T  # M G^{-1} (both symmetric)
    return A, float(noise_std**2 * np.trace(A))


def best_affine_denoiser(mixture: GaussianMixture, noise_std: float) -> tuple[np.ndarray, np.ndarray, float]:
    r"""The best affine map :math:`z\mapsto Az + b` and its risk, in closed form.

    With :math:`C = \operatorname{Cov}X` and :math:`\bar m = \mathbb E X`:

    .. math::

        A^\star = C(C + \xi^2 I)^{-1},\quad b^\star = (I - A^\star)\bar m,\qquad
        R_{\mathrm{aff}} = \xi^2\operatorname{tr}\big(C(C + \xi^2 I)^{-1}\big).

    Returns
    -------
    A : ndarray, shape (d, d)
    b : ndarray, shape (d,)
    risk : float
    """
    mixture = check_mixture(mixture)
    check_positive(noise_std, "noise_std")
    C = mixture.covariance()
    A = np.linalg.solve(C + noise_std**2 * np.eye(mixture.dim), C).T
    b = mixture.mean() - A @ mixture.mean()
    return A, b, float(noise_std**2 * np.trace(A))


# ---------------------------------------------------------------------------- constructions
def _two_means(means: Any) -> tuple[np.ndarray, np.ndarray]:
    m = as_float_array(means, "means", ndim=2)
    if m.shape[0] != 2:
        raise ValueError(f"means must have shape (2, d), got {m.shape}")
    if m.shape[1] < 2:
        raise ValueError("the two-head construction needs d >= 2 (a direction orthogonal to m1 - m2)")
    n1, n2 = np.linalg.norm(m[0]), np.linalg.norm(m[1])
    if abs(n1 - n2) > 1e-9 * max(1.0, n1, n2):
        raise ValueError(f"means must have equal norms, got {n1:.6g} and {n2:.6g}")
    if np.linalg.norm(m[0] - m[1]) <= 1e-12 * max(1.0, n1):
        raise ValueError("means must be distinct (m1 != m2)")
    return m[0], m[1]


def carrier_direction(means: Any) -> np.ndarray:
    r"""A unit vector :math:`e\perp m_1 - m_2`: :math:`(m_1+m_2)/\|m_1+m_2\|` if it is non-zero, else the
    first coordinate vector made orthogonal to :math:`m_1 - m_2` (Gram–Schmidt)."""
    m1, m2 = _two_means(means)
    s = m1 + m2
    if np.linalg.norm(s) > 1e-9 * max(1.0, np.linalg.norm(m1)):
        return s / np.linalg.norm(s)
    delta = (m1 - m2) / np.linalg.norm(m1 - m2)
    basis = np.eye(m1.size)
    j = int(np.argmin(np.abs(basis @ delta)))
    e = basis[j] - (basis[j] @ delta) * delta
    return e / np.linalg.norm(e)


def _paper_two_heads(m1: np.ndarray, m2: np.ndarray, gamma: float, noise_std: float) -> tuple[Head, Head]:
    """The construction of Gabet et al. (2026), Appendix C.6 (Proposition C.5), in the book's notation."""
    d = m1.size
    nu2 = gamma**2 + noise_std**2
    a = noise_std**2 / nu2
    delta = m1 - m2
    eye = np.eye(d)
    if np.linalg.matrix_rank(np.stack([m1, m2]), tol=1e-9 * np.linalg.norm(delta)) == 2:
        B = np.stack([m1, m2], axis=1)                      # (d, 2), a basis of E = span(m1, m2)
        dual = np.linalg.pinv(B)                            # rows r_i in E with r_i^T m_j = δ_ij
        P_perp = eye - B @ dual                             # orthogonal projection onto E^⊥
        heads = []
        for keep, other in ((0, 1), (1, 0)):
            mk, mo = B[:, keep], B[:, other]
            V = a * np.outer(mk, dual[keep]) + 0.5 * a * P_perp          # V m_keep = a m_keep, V m_other = 0
            U = gamma**2 / (noise_std**2 * nu2) * eye + (noise_std**2 - gamma**2) / (noise_std**2 * nu2) * (
                np.outer(mo, delta) / (mo @ delta))
            heads.append(Head(U, V))
        return heads[0], heads[1]
    m = m1                                                   # opposite means: m1 = -m2 = m
    e = m / np.linalg.norm(m)
    n = carrier_direction(np.stack([m1, m2]))                # a unit vector orthogonal to m
    P = np.outer(e, e)
    A = noise_std**2 / (2 * nu2) * P + gamma**2 / (2 * nu2) * (eye - P)
    Bm = (gamma**2 - noise_std**2) / (2 * nu2) * np.outer(e, n)
    return (Head((eye + np.outer(n, e)) / nu2, A + Bm), Head((eye - np.outer(n, e)) / nu2, A - Bm))


def two_head_construction(means: Any, gamma: float, noise_std: float, *, variant: str = "book") -> tuple[Head, Head]:
    r"""Two softmax heads whose sum, on the noisy prompt, is exactly :math:`\mathbb E[X\mid Z]`.

    Implements Theorem thm-08-two-heads (Chapter 8), eq. (eq-08-two-heads). Prior
    :math:`\pi_1\mathcal N(m_1,\gamma^2 I) + \pi_2\mathcal N(m_2,\gamma^2 I)` with
    :math:`\|m_1\| = \|m_2\|`, :math:`m_1\ne m_2`, any weights, :math:`d\ge 2`;
    :math:`\nu^2 = \gamma^2+\xi^2`, :math:`\hat\Delta = (m_1-m_2)/\|m_1-m_2\|`,
    :math:`P = I - \hat\Delta\hat\Delta^\top`, :math:`e` a unit vector orthogonal to
    :math:`\hat\Delta` (:func:`carrier_direction`):

    .. math::

        U_\pm = \frac{1}{\nu^2} I + \frac{\gamma^2-\xi^2}{\nu^2\xi^2}\big(P \pm e\hat\Delta^\top\big),\qquad
        V_\pm = \frac{\xi^2}{2\nu^2}\big(I \pm \hat\Delta e^\top\big).

    Both heads have the Bayes gates (:math:`\hat\Delta^\top U_\pm = \hat\Delta^\top/\nu^2`), their
    values add to :math:`\xi^2 I/\nu^2`, and their linear parts add to :math:`\gamma^2 I/\nu^2`.

    Parameters
    ----------
    means : array_like, shape (2, d)
    gamma, noise_std : float
        :math:`\gamma\ge 0` and :math:`\xi > 0`.
    variant : {"book", "paper"}
        ``"paper"``: the construction of Gabet et al. (2026), Appendix C.6 (one value matrix
        per mean for non-collinear means; a split along a direction orthogonal to :math:`m`
        for opposite means). Both are exact.

    Returns
    -------
    tuple of two :class:`~gmmlib.attention.Head`
    """
    m1, m2 = _two_means(means)
    check_positive(gamma, "gamma", allow_zero=True)
    check_positive(noise_std, "noise_std")
    if variant == "paper":
        return _paper_two_heads(m1, m2, float(gamma), float(noise_std))
    if variant != "book":
        raise ValueError(f"variant must be 'book' or 'paper', got {variant!r}")
    d = m1.size
    nu2 = gamma**2 + noise_std**2
    delta = (m1 - m2) / np.linalg.norm(m1 - m2)
    e = carrier_direction(np.stack([m1, m2]))
    P = np.eye(d) - np.outer(delta, delta)
    c = (gamma**2 - noise_std**2) / (nu2 * noise_std**2)
    heads = []
    for sign in (1.0, -1.0):
        U = np.eye(d) / nu2 + c * (P + sign * np.outer(e, delta))
        V = noise_std**2 / (2.0 * nu2) * (np.eye(d) + sign * np.outer(delta, e))
        heads.append(Head(U, V))
    return heads[0], heads[1]


def one_head_construction(means: Any, gamma: float, noise_std: float) -> Head:
    r"""A single softmax head equal to :math:`\mathbb E[X\mid Z]` on the noisy prompt, when one exists.

    Implements Theorem thm-08-one-head and Remark rem-08-point-masses (Chapter 8). Two
    components :math:`\mathcal N(m_k, \gamma^2 I)` with equal norms, :math:`\nu^2 = \gamma^2 + \xi^2`:

    * :math:`\gamma > 0`: one head is exact iff :math:`\gamma = \xi`; then
      :math:`U = I/\nu^2`, :math:`V = \tfrac12 I`.
    * :math:`\gamma = 0` (point masses): one head is exact iff :math:`m_1 = -m_2` or
      :math:`d\ge 3`; then, with :math:`\Delta = m_1 - m_2`, a vector :math:`u\notin E =
      \operatorname{span}(m_1, m_2)` with :math:`\Delta^\top u\ne 0` (here
      :math:`u = \Delta/\|\Delta\| + n`, :math:`n` a unit vector orthogonal to :math:`E`),

      .. math::

          U = \frac{u\,\Delta^\top}{\xi^2\,\Delta^\top u},\qquad
          V = \text{the projection onto } E \text{ along } \operatorname{span}(u)\oplus(E + \operatorname{span}(u))^\perp,

      so that :math:`VU = 0`, :math:`U^\top\Delta = \Delta/\xi^2` and :math:`Vm_k = m_k`.

    Raises ``ValueError`` in the other cases, where no single head is exact.

    Returns
    -------
    :class:`~gmmlib.attention.Head`
    """
    m1, m2 = _two_means(means)
    check_positive(gamma, "gamma", allow_zero=True)
    check_positive(noise_std, "noise_std")
    d = m1.size
    nu2 = gamma**2 + noise_std**2
    if gamma > 0:
        if abs(gamma**2 - noise_std**2) > 1e-12 * noise_std**2:
            raise ValueError(f"for gamma > 0 one head is exact only when gamma = noise_std; got gamma = {gamma}, "
                             f"noise_std = {noise_std} (Theorem thm-08-one-head)")
        return Head(np.eye(d) / nu2, 0.5 * np.eye(d))
    delta = m1 - m2
    Q, _ = np.linalg.qr(np.stack([m1, m2], axis=1))
    rank = np.linalg.matrix_rank(np.stack([m1, m2]), tol=1e-9 * np.linalg.norm(delta))
    E = Q[:, :rank]                                          # orthonormal basis of span(m1, m2)
    if rank == d:
        raise ValueError("for point masses (gamma = 0) one head is exact only when m1 = -m2 or d >= 3; "
                         f"got non-collinear means in d = {d} (Remark rem-08-point-masses)")
    full, _ = np.linalg.qr(np.hstack([E, np.eye(d)]))
    n = full[:, rank]                                        # a unit vector orthogonal to E
    u = delta / np.linalg.norm(delta) + n
    U = np.outer(u, delta) / (noise_std**2 * (delta @ u))
    rest, _ = np.linalg.qr(np.hstack([E, u[:, None], np.eye(d)]))
    B = np.hstack([E, u[:, None], rest[:, rank + 1:d]])      # basis: E, then u, then (E + span u)^⊥
    keep = np.zeros(d)
    keep[:rank] = 1.0
    V = np.linalg.solve(B.T, (B * keep).T).T                 # B diag(keep) B^{-1}
    return Head(U, V)


def multihead_limit(mixture: GaussianMixture, queries: Any, heads: Sequence[Any]) -> np.ndarray:
    r"""The infinite-prompt output :math:`\sum_h T_{U_h,V_h}[\mu](z)` of a sum of softmax heads on the prompt law ``mixture``.

    Implements eq. (eq-08-noisy-head) of Chapter 8 summed over heads (each head by
    :func:`gmmlib.limits.softmax_attention_limit`); ``heads`` holds :class:`~gmmlib.attention.Head`
    objects or (U, V) pairs.
    """
    mixture = check_mixture(mixture)
    if len(heads) == 0:
        raise ValueError("heads must hold at least one (U, V) pair")
    return sum(softmax_attention_limit(mixture, queries, U, V) for U, V in heads)


def multihead_finite_prompt_mse(mixture: GaussianMixture, queries: Any, heads: Sequence[Any]) -> np.ndarray:
    r"""The finite-prompt constant of a sum of heads reading one prompt:
    :math:`C(z) = \lim_L L\,\mathbb E\|\sum_h (T_h[\hat\mu_L](z) - T_h[\mu](z))\|^2`.

    Extends Proposition prop-01-clt (Chapter 1) to several heads on the same tokens (used for
    Theorem thm-08-two-heads on finite prompts). Each head's error is, to first order,
    :math:`\frac1L\sum_j\psi_h(Z_j)` with :math:`\psi_h(x) = e^{a_h^\top x - \Lambda(a_h)}(V_hx - T_h)`,
    :math:`a_h = U_hz`, so

    .. math::

        C(z) = \sum_{h,h'} e^{\Lambda(a_h + a_{h'}) - \Lambda(a_h) - \Lambda(a_{h'})}
        \sum_k\beta^{hh'}_k\Big[\operatorname{tr}(V_h\Gamma_kV_{h'}^\top)
        + (V_h\mu^{hh'}_k - T_h)^\top(V_{h'}\mu^{hh'}_k - T_{h'})\Big],

    with :math:`\beta^{hh'}` and :math:`\mu^{hh'}_k = m_k + \Gamma_k(a_h + a_{h'})` the weights and
    means of the mixture tilted by :math:`a_h + a_{h'}`. One head gives
    :func:`gmmlib.limits.finite_prompt_mse`.

    Returns
    -------
    ndarray, shape (n,)
    """
    from scipy.special import logsumexp, softmax

    mixture = check_mixture(mixture)
    Q = check_points(queries, mixture.dim, "queries")
    if len(heads) == 0:
        raise ValueError("heads must hold at least one (U, V) pair")
    pairs = [tuple(h) for h in heads]
    A = [Q @ np.asarray(U, dtype=float).T for U, _ in pairs]                     # a_h, (n, d)
    T = [softmax_attention_limit(mixture, Q, U, V) for U, V in pairs]            # (n, p)
    lam = [logsumexp(mixture.tilt_logits(a), axis=-1) for a in A]
    out = np.zeros(Q.shape[0])
    for h, (_, Vh) in enumerate(pairs):
        for g, (_, Vg) in enumerate(pairs):
            b = A[h] + A[g]
            logits = mixture.tilt_logits(b)                                          # (n, K)
            beta = softmax(logits, axis=-1)
            means = mixture.means[None] + np.einsum("kij,nj->nki", mixture.covs, b)  # (n, K, d)
            trace = np.einsum("pi,kij,pj->k", np.asarray(Vh), mixture.covs, np.asarray(Vg))
            rh = means @ np.asarray(Vh).T - T[h][:, None, :]
            rg = means @ np.asarray(Vg).T - T[g][:, None, :]
            inner = trace[None] + np.sum(rh * rg, axis=-1)
            out += np.exp(logsumexp(logits, axis=-1) - lam[h] - lam[g]) * np.sum(beta * inner, axis=-1)
    return out


@dataclass(frozen=True)
class ResidualLayer:
    r"""A residual multi-head layer followed by an output map (Chapter 10, eq. (eq-10-residual)).

    .. math::

        F[\mu](z) = W_{\mathrm{out}}\begin{pmatrix} z + T_{U_1,V_1}[\mu](z)\\ \vdots \\
        z + T_{U_H,V_H}[\mu](z)\end{pmatrix},

    the architecture of the paper's Proposition 4.4 (Gabet et al., 2026). Frozen; ``heads``
    is a tuple of :class:`~gmmlib.attention.Head` with (d, d) value matrices and ``W_out`` is
    (d, H·d), read-only.
    """

    heads: tuple[Head, ...]
    W_out: np.ndarray

    def __post_init__(self) -> None:
        heads = tuple(h if isinstance(h, Head) else Head(*h) for h in self.heads)
        if not heads:
            raise ValueError("heads must hold at least one Head")
        d = heads[0].U.shape[0]
        for h in heads:
            if h.U.shape != (d, d) or h.V.shape != (d, d):
                raise ValueError(f"every head of a residual layer must have (d, d) = ({d}, {d}) matrices U and V, "
                                 f"got {h.U.shape} and {h.V.shape}")
        W = check_matrix(self.W_out, "W_out", (d, len(heads) * d)).copy()
        W.setflags(write=False)
        object.__setattr__(self, "heads", heads)
        object.__setattr__(self, "W_out", W)

    @property
    def dim(self) -> int:
        """The token dimension d."""
        return int(self.W_out.shape[0])

    def combine(self, queries: np.ndarray, outputs: Sequence[np.ndarray]) -> np.ndarray:
        r""":math:`W_{\mathrm{out}}(z + T_1, \dots, z + T_H)` from the heads' outputs :math:`T_h` (..., d)."""
        d = self.dim
        return sum((queries + T) @ self.W_out[:, h * d:(h + 1) * d].T for h, T in enumerate(outputs))


def residual_construction(dim: int, gamma: float, noise_std: float) -> ResidualLayer:
    r"""The task-independent residual two-head denoiser of Chapter 10.

    Implements Theorem thm-10-residual (Chapter 10), eq. (eq-10-residual): the paper's
    Proposition 4.4 (Gabet et al., 2026). With :math:`\nu^2 = \gamma^2 + \xi^2`,

    .. math::

        U_1 = S^{-1} = \tfrac{1}{\nu^2}I,\quad V_1 = \tfrac{\xi^2}{\nu^2}I,\quad
        U_2 = V_2 = 0,\quad W_{\mathrm{out}} = \big(I,\ -\tfrac{2\xi^2}{\nu^2}I\big),

    so that :math:`W_{\mathrm{out}}(z + T_1, z + T_2) = \frac{\gamma^2}{\nu^2}z +
    \frac{\xi^2}{\nu^2}\sum_k\alpha_k(z)m_k`, the Bayes denoiser of every two-component task with
    equal norms :math:`\|m_1\| = \|m_2\|`.

    Returns
    -------
    ResidualLayer
        Two heads (``layer.heads``) and ``layer.W_out`` (d, 2d).
    """
    check_positive(dim, "dim", integer=True)
    check_positive(gamma, "gamma", allow_zero=True)
    check_positive(noise_std, "noise_std")
    nu2 = gamma**2 + noise_std**2
    eye = np.eye(dim)
    zero = np.zeros((dim, dim))
    return ResidualLayer((Head(eye / nu2, noise_std**2 / nu2 * eye), Head(zero, zero)),
                         np.hstack([eye, -2.0 * noise_std**2 / nu2 * eye]))


def _check_layer(layer: Any) -> ResidualLayer:
    if not isinstance(layer, ResidualLayer):
        raise TypeError(f"layer must be a ResidualLayer (e.g. from residual_construction), got {type(layer).__name__}")
    return layer


def residual_denoiser(tokens: Any, queries: Any, layer: ResidualLayer) -> np.ndarray:
    r"""The residual layer on a finite prompt:
    :math:`W_{\mathrm{out}}\big(z + T_{U_1,V_1}[\hat\mu_L](z), \dots, z + T_{U_H,V_H}[\hat\mu_L](z)\big)`.

    Implements eq. (eq-10-residual) of Chapter 10 on the empirical measure of the prompt (the
    in-context denoiser whose error eq. (eq-10-finite) describes).

    Parameters
    ----------
    tokens : array_like, shape (L, d) or (B, L, d)
        The noisy prompt(s).
    queries : array_like, shape (n, d) or (B, n, d)
    layer : ResidualLayer
        E.g. from :func:`residual_construction`.

    Returns
    -------
    ndarray, shape (n, d) or (B, n, d)
    """
    layer = _check_layer(layer)
    Q = as_float_array(queries, "queries", ndim=(2, 3))
    if Q.shape[-1] != layer.dim:
        raise ValueError(f"queries must have last dimension {layer.dim} (the layer's), got {Q.shape}")
    # np.array copies: torch warns on the read-only arrays that a frozen Head holds
    outputs = [np.zeros_like(Q) if not np.any(V) else softmax_attention(tokens, Q, np.array(U), np.array(V))
               for U, V in layer.heads]
    return layer.combine(Q, outputs)


def residual_limit(mixture: GaussianMixture, queries: Any, layer: ResidualLayer) -> np.ndarray:
    r"""The infinite-prompt limit of :func:`residual_denoiser` on the prompt law ``mixture``.

    Implements eq. (eq-10-residual) of Chapter 10 on the prompt law itself (Theorem
    thm-10-residual: it equals the task's Bayes denoiser).
    """
    layer = _check_layer(layer)
    mixture = check_mixture(mixture)
    Q = check_points(queries, mixture.dim, "queries")
    if mixture.dim != layer.dim:
        raise ValueError(f"the layer acts in dimension {layer.dim}, the mixture in {mixture.dim}")
    return layer.combine(Q, [softmax_attention_limit(mixture, Q, U, V) for U, V in layer.heads])


# ---------------------------------------------------------------------------- iterated denoiser
def iterate_denoiser(mixture: GaussianMixture, noise_std: float, Z0: Any, n_steps: int) -> np.ndarray:
    r"""Iterate the Bayes denoiser: :math:`z_{t+1} = f^\star(z_t) = \mathbb E[X\mid Z = z_t]`.

    The dynamics of Chapter 9 (Proposition prop-09-reduction, Theorem thm-09-transition and
    Proposition prop-09-modes; the paper's Proposition 4.3). By Tweedie's formula each step is
    :math:`z_{t+1} = z_t + \xi^2\nabla\log p_Z(z_t)`.

    Returns
    -------
    ndarray, shape (n_steps + 1, n, d)
        The trajectories, starting with ``Z0``.
    """
    mixture = check_mixture(mixture)
    check_positive(n_steps, "n_steps", integer=True, allow_zero=True)
    Z = check_points(Z0, mixture.dim, "Z0")
    out = [Z]
    for _ in range(int(n_steps)):
        out.append(bayes_denoiser(mixture, noise_std, out[-1]))
    return np.stack(out)


def separation(means: Any, noise_std: float, gamma: float = 0.0) -> float:
    r"""The separation of two balanced components in noise units (Chapter 9, eq. (eq-09-lambda)).

    .. math::

        \lambda = \frac{\|\Delta\|}{2\sqrt{\gamma^2 + \xi^2}},\qquad \Delta = m_1 - m_2,

    which is :math:`\|m_1 - m_2\|/(2\xi)` for point masses (:math:`\gamma = 0`, the paper's
    :math:`\lambda`); iterating the denoiser collapses to the midpoint iff :math:`\lambda\le 1`
    (Theorem thm-09-transition and Proposition prop-09-modes).
    """
    m = as_float_array(means, "means", ndim=2)
    if m.shape[0] != 2:
        raise ValueError(f"means must have shape (2, d), got {m.shape}")
    check_positive(noise_std, "noise_std")
    check_positive(gamma, "gamma", allow_zero=True)
    return float(np.linalg.norm(m[0] - m[1]) / (2.0 * np.sqrt(gamma**2 + noise_std**2)))


def tanh_fixed_point(lam: float) -> float:
    r"""The largest solution :math:`u^\star\ge 0` of :math:`u = \tanh(\lambda^2 u)`.

    The attractor of Theorem thm-09-transition (Chapter 9): it is 0 for :math:`\lambda\le 1`;
    for :math:`\lambda > 1` it is found by bisection on :math:`(0, 1]`, where
    :math:`u - \tanh(\lambda^2u)` changes sign once (to within one ulp of the root).
    """
    check_positive(lam, "lam", allow_zero=True)
    a = float(lam) ** 2
    if a <= 1.0:
        return 0.0
    lo, hi = 1e-300, 1.0
    # g(u) = u - tanh(a u) < 0 near 0+, g(1) >= 0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid - np.tanh(a * mid) < 0:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-16:
            break
    return 0.5 * (lo + hi)


# ---------------------------------------------------------------------------- clean prompts (Smart et al.)
def key_bias_tokens(X: Any) -> np.ndarray:
    r"""Clean tokens augmented with their squared norm: :math:`x\mapsto(x, \|x\|^2)`, shape (..., L, d+1).

    The token layout of Proposition prop-10-key-bias (Chapter 10), the key bias of Smart et al. (2025).
    """
    X = as_float_array(X, "X", ndim=(2, 3))
    return np.concatenate([X, np.sum(X**2, axis=-1, keepdims=True)], axis=-1)


def key_bias_parameters(dim: int, noise_std: float) -> Head:
    r"""The head on augmented tokens :math:`(x, \|x\|^2)` and queries :math:`(z, 1)` with scores
    :math:`x^\top z/\xi^2 - \|x\|^2/(2\xi^2)` and values :math:`x`.

    Implements Proposition prop-10-key-bias (Chapter 10), eq. (eq-10-key-bias), the construction
    of Smart et al. (2025):

    .. math::

        U = \begin{pmatrix} I/\xi^2 & 0\\ 0 & -1/(2\xi^2)\end{pmatrix},\qquad V = (I\ \ 0).

    The weights are :math:`\propto e^{-\|z-x_j\|^2/(2\xi^2)}`: a Gaussian kernel smoother.

    Returns
    -------
    Head
        ``U`` (d+1, d+1) and ``V`` (d, d+1).
    """
    check_positive(dim, "dim", integer=True)
    check_positive(noise_std, "noise_std")
    U = np.zeros((dim + 1, dim + 1))
    U[:dim, :dim] = np.eye(dim) / noise_std**2
    U[dim, dim] = -0.5 / noise_std**2
    V = np.hstack([np.eye(dim), np.zeros((dim, 1))])
    return Head(U, V)


def key_bias_attention(X: Any, queries: Any, noise_std: float) -> np.ndarray:
    r"""Attention of noisy queries over a clean prompt with the key bias :math:`-\|x\|^2/(2\xi^2)`.

    Implements Proposition prop-10-key-bias (Chapter 10), eq. (eq-10-key-bias):

    .. math::

        \hat f_L(z) = \frac{\sum_j e^{-\|z - x_j\|^2/(2\xi^2)}\,x_j}{\sum_j e^{-\|z - x_j\|^2/(2\xi^2)}}
        \xrightarrow[L\to\infty]{} \mathbb E[X\mid Z = z]\quad\text{for any prior of } X
        \text{ with } \mathbb E\|X\| < \infty.

    ``X`` is (L, d) or (B, L, d), ``queries`` (n, d) or (B, n, d).
    """
    T = key_bias_tokens(X)
    Q = as_float_array(queries, "queries", ndim=(2, 3))
    d = Q.shape[-1]
    if T.shape[-1] != d + 1:
        raise ValueError(f"X and queries must have the same dimension, got {T.shape[-1] - 1} and {d}")
    Qa = np.concatenate([Q, np.ones(Q.shape[:-1] + (1,))], axis=-1)
    U, V = key_bias_parameters(d, noise_std)
    return softmax_attention(T, Qa, U, V)


# ---------------------------------------------------------------------------- trainable limit model
class MixtureAttentionLimit(nn.Module):
    r"""Trainable heads evaluated on an infinite prompt with Gaussian-mixture law (torch, differentiable).

    .. math::

        f(z) = \sum_{h=1}^H V_h\sum_k\alpha^h_k(z)\,(m_k + S_kU_hz),\qquad
        \alpha^h_k(z) = \operatorname{softmax}_k\big(\log\pi_k + m_k^\top U_hz + \tfrac12(U_hz)^\top S_k(U_hz)\big),

    the closed form of :func:`gmmlib.limits.softmax_attention_limit` (numpy) written in torch
    so that it can be trained; ``residual=True`` adds the query, :math:`z + f(z)`.

    Parameters
    ----------
    prompt_law : GaussianMixture
        The law :math:`\sum_k\pi_k\mathcal N(m_k, S_k)` of the prompt's tokens.
    n_heads : int
    init_std : float
        Standard deviation of the i.i.d. Gaussian initial entries (private seeded generator).
    seed : int
    heads : sequence of (U, V), optional
        Initial values instead of the random ones.
    residual : bool
    """

    def __init__(self, prompt_law: GaussianMixture, n_heads: int = 1, *, init_std: float = 0.1, seed: int = 0,
                 heads: Sequence[tuple[Any, Any]] | None = None, residual: bool = False) -> None:
        super().__init__()
        prompt_law = check_mixture(prompt_law)
        check_positive(n_heads, "n_heads", integer=True)
        check_positive(init_std, "init_std", allow_zero=True)
        d = prompt_law.dim
        gen = torch.Generator().manual_seed(int(seed))
        if heads is None:
            U = init_std * torch.randn((n_heads, d, d), generator=gen, dtype=torch.float64)
            V = init_std * torch.randn((n_heads, d, d), generator=gen, dtype=torch.float64)
        else:
            if len(heads) != n_heads:
                raise ValueError(f"heads must hold n_heads = {n_heads} (U, V) pairs, got {len(heads)}")
            U = torch.tensor(np.stack([check_matrix(u, "heads[..][0]", (d, d)) for u, _ in heads]))
            V = torch.tensor(np.stack([check_matrix(v, "heads[..][1]", (d, d)) for _, v in heads]))
        self.U = nn.Parameter(U)
        self.V = nn.Parameter(V)
        self.residual = bool(residual)
        with np.errstate(divide="ignore"):
            self.register_buffer("log_w", torch.tensor(np.log(prompt_law.weights)))
        self.register_buffer("means", torch.tensor(prompt_law.means))
        self.register_buffer("covs", torch.tensor(prompt_law.covs))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        """``z`` (n, d) -> (n, d); numpy input is converted to float64."""
        if not isinstance(z, torch.Tensor):
            z = torch.as_tensor(as_float_array(z, "z", ndim=2))
        A = torch.einsum("hij,nj->hni", self.U, z)  # a = U_h z
        quad = 0.5 * torch.einsum("hni,kij,hnj->hnk", A, self.covs, A)
        logits = self.log_w + torch.einsum("ki,hni->hnk", self.means, A) + quad
        gates = torch.softmax(logits, dim=-1)  # (H, n, K)
        experts = self.means[None, None] + torch.einsum("kij,hnj->hnki", self.covs, A)  # (H, n, K, d)
        mixed = torch.einsum("hnk,hnkd->hnd", gates, experts)
        out = torch.einsum("hpd,hnd->np", self.V, mixed)
        return out + z if self.residual else out

    def heads(self) -> tuple[Head, ...]:
        """The current parameters, one :class:`~gmmlib.attention.Head` per head."""
        return tuple(Head(u.detach().numpy().copy(), v.detach().numpy().copy()) for u, v in zip(self.U, self.V))


# ---------------------------------------------------------------------------- fast training (numpy gradients)
def _stack_heads(heads: Sequence[Any], d: int) -> tuple[np.ndarray, np.ndarray]:
    if len(heads) == 0:
        raise ValueError("heads must hold at least one head")
    pairs = [tuple(h) for h in heads]
    if any(len(p) != 2 for p in pairs):
        raise ValueError("each head must be a Head or a (U, V) pair")
    Us = [check_matrix(u, "heads[..].U", (d, d)) for u, _ in pairs]
    Vs = [check_matrix(v, "heads[..].V", (None, d)) for _, v in pairs]
    if len({v.shape for v in Vs}) != 1:
        raise ValueError("every head's V must have the same shape")
    return np.stack(Us), np.stack(Vs)


def _shared_covariance(prompt_law: GaussianMixture) -> np.ndarray:
    covs = prompt_law.covs
    if not np.allclose(covs, covs[0], rtol=0.0, atol=1e-12 * max(1.0, float(np.abs(covs).max()))):
        raise ValueError("the prompt law must have one covariance shared by its components (eq. eq-08-noisy-head)")
    return covs[0]


def random_heads(n_heads: int, dim: int, rng: Any, scale: float = 0.1) -> tuple[Head, ...]:
    r"""``n_heads`` heads with i.i.d. :math:`\mathcal N(0, \text{scale}^2)` entries in :math:`U` and :math:`V` (d × d).

    The initialisation of the training runs of Chapter 8 (Fig. fig-08-learning).
    """
    check_positive(n_heads, "n_heads", integer=True)
    check_positive(dim, "dim", integer=True)
    check_positive(scale, "scale", allow_zero=True)
    rng = check_rng(rng)
    return tuple(Head(scale * rng.standard_normal((dim, dim)), scale * rng.standard_normal((dim, dim)))
                 for _ in range(int(n_heads)))


def _loss_grad(U: np.ndarray, V: np.ndarray, log_w: np.ndarray, M: np.ndarray, S: np.ndarray,
               Z: np.ndarray, Y: np.ndarray, w: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    A = U @ Z.T                                      # (H, d, n): a = U_h z
    logits = log_w[None, :, None] + M @ A            # (H, K, n)
    logits = logits - logits.max(axis=1, keepdims=True)
    gates = np.exp(logits)
    gates /= gates.sum(axis=1, keepdims=True)
    B = S @ A + M.T @ gates                          # (H, d, n): S a + Σ_k α_k m_k
    R = (V @ B).sum(axis=0) - Y.T                    # (p, n): residuals
    loss = float(np.sum(w * np.sum(R * R, axis=0)))
    G = 2.0 * np.swapaxes(V, 1, 2) @ (R * w)         # (H, d, n): ∂loss/∂B
    grad_V = 2.0 * (R * w) @ np.swapaxes(B, 1, 2)    # (H, p, d)
    MG = M @ G                                       # (H, K, n)
    d_logits = gates * (MG - np.sum(gates * MG, axis=1, keepdims=True))   # softmax Jacobian
    grad_U = (S @ G + M.T @ d_logits) @ Z            # (H, d, d)
    return loss, grad_U, grad_V


def _squared_error_problem(prompt_law: GaussianMixture, heads: Sequence[Any], Z: Any, target: Any,
                           weights: Any) -> tuple[np.ndarray, ...]:
    """Validated ``(U, V, log π, means, S, Z, target, weights)``: the arguments of :func:`_loss_grad`."""
    prompt_law = check_mixture(prompt_law, "prompt_law")
    S = _shared_covariance(prompt_law)
    d = prompt_law.dim
    U, V = _stack_heads(heads, d)
    Zarr = check_points(Z, d, "Z")
    Y = check_matrix(target, "target", (Zarr.shape[0], V.shape[1]))
    w = np.full(Zarr.shape[0], 1.0 / Zarr.shape[0]) if weights is None else as_float_array(weights, "weights", 1)
    if w.shape != (Zarr.shape[0],):
        raise ValueError(f"weights must have shape ({Zarr.shape[0]},), got {w.shape}")
    with np.errstate(divide="ignore"):
        log_w = np.log(prompt_law.weights)
    return U, V, log_w, prompt_law.means, S, Zarr, Y, w


def heads_squared_error(prompt_law: GaussianMixture, heads: Sequence[Any], Z: Any, target: Any,
                        weights: Any = None) -> tuple[float, np.ndarray, np.ndarray]:
    r"""Weighted squared error of a sum of heads on a shared-covariance mixture prompt, and its gradient.

    Implements eq. (eq-08-noisy-head) of Chapter 8 summed over heads: with the prompt law
    :math:`\sum_k\pi_k\mathcal N(m_k, S)`,

    .. math::

        f(z) = \sum_h V_h\Big(SU_hz + \sum_k\alpha^h_k(z)\,m_k\Big),\quad
        \alpha^h_k(z) = \operatorname{softmax}_k(\log\pi_k + m_k^\top U_hz),\qquad
        \ell = \sum_n w_n\,\|f(z_n) - y_n\|^2,

    and the exact gradient of :math:`\ell` in every :math:`U_h, V_h` (backpropagation written
    out in numpy: about 40 times faster than torch's autograd for these small models, and
    equal to it to round-off, which the tests check). ``weights`` default to :math:`1/n`
    (the batch mean); quadrature weights give the population excess risk.

    Returns
    -------
    loss : float
    grad_U : ndarray, shape (H, d, d)
    grad_V : ndarray, shape (H, p, d)
    """
    problem = _squared_error_problem(prompt_law, heads, Z, target, weights)
    return _loss_grad(*problem)


def online_sgd_heads(
    prompt_law: GaussianMixture,
    heads: Sequence[Any],
    sample: Callable[[np.random.Generator, int], tuple[Any, Any]],
    *,
    steps: int,
    lr: float,
    batch_size: int,
    seed: int,
    clip_norm: float | None = None,
    log_every: int = 100,
    eval_fn: Callable[[tuple[Head, ...]], dict[str, float]] | None = None,
    chunk_steps: int = 500,
) -> tuple[tuple[Head, ...], History]:
    r"""Online stochastic gradient descent on a sum of heads, each step on a fresh batch.

    The protocol of Fig. fig-08-learning (Chapter 8; Fig. 2 of Gabet et al., 2026): at every
    step a fresh batch :math:`(z_n, y_n)_{n\le b}` is drawn, the gradient of
    :math:`\frac1b\sum_n\|f(z_n) - y_n\|^2` (:func:`heads_squared_error`) is clipped to global
    norm ``clip_norm`` over all parameters (as ``torch.nn.utils.clip_grad_norm_``) and
    :math:`\theta \leftarrow \theta - \eta\,g`. The same steps as
    :func:`gmmlib.training.train` with ``optimizer="sgd"`` on :class:`MixtureAttentionLimit`
    (the tests check it), with numpy gradients for speed.

    Parameters
    ----------
    prompt_law : GaussianMixture
        The prompt's law (shared covariance).
    heads : sequence of Head
        The initial heads (e.g. :func:`random_heads`).
    sample : callable
        ``sample(rng, n) -> (Z, target)``, arrays of shape (n, d) and (n, p). Batches are drawn
        ``chunk_steps`` steps at a time (``chunk_steps * batch_size`` points, each used once).
    steps, lr, batch_size, seed : int, float, int, int
        Number of steps, step size :math:`\eta`, batch size :math:`b`, seed of the batch stream.
    clip_norm : float, optional
    log_every : int
        Record the batch loss (and ``eval_fn(heads)``) every this many steps and at the last.
    eval_fn : callable, optional
        ``heads -> dict of floats``.
    chunk_steps : int

    Returns
    -------
    heads : tuple of Head
    history : History
        As returned by :func:`gmmlib.training.train`.
    """
    prompt_law = check_mixture(prompt_law, "prompt_law")
    S = _shared_covariance(prompt_law)
    d = prompt_law.dim
    U, V = _stack_heads(heads, d)
    for value, name in ((steps, "steps"), (batch_size, "batch_size"), (log_every, "log_every"),
                        (chunk_steps, "chunk_steps")):
        check_positive(value, name, integer=True)
    check_positive(lr, "lr")
    if clip_norm is not None:
        check_positive(clip_norm, "clip_norm")
    rng = check_rng(seed, "seed")
    with np.errstate(divide="ignore"):
        log_w = np.log(prompt_law.weights)
    M = prompt_law.means
    w = np.full(int(batch_size), 1.0 / int(batch_size))
    history = History()
    Zc = Yc = None
    for step in range(int(steps)):
        j = step % int(chunk_steps)
        if j == 0:
            n_chunk = min(int(chunk_steps), int(steps) - step) * int(batch_size)
            Zc, Yc = sample(rng, n_chunk)
            Zc = check_points(Zc, d, "sample(rng, n)[0]")
            Yc = check_matrix(Yc, "sample(rng, n)[1]", (n_chunk, V.shape[1]))
        rows = slice(j * int(batch_size), (j + 1) * int(batch_size))
        loss, gU, gV = _loss_grad(U, V, log_w, M, S, Zc[rows], Yc[rows], w)
        if not np.isfinite(loss):
            raise FloatingPointError(f"the loss became {loss} at step {step}; lower lr or clip gradients")
        if clip_norm is not None:
            norm = float(np.sqrt(np.sum(gU * gU) + np.sum(gV * gV)))
            scale = min(1.0, float(clip_norm) / (norm + 1e-6))
            gU, gV = scale * gU, scale * gV
        U = U - lr * gU
        V = V - lr * gV
        if step % int(log_every) == 0 or step == int(steps) - 1:
            history.step.append(step)
            history.loss.append(loss)
            if eval_fn is not None:
                for key, val in eval_fn(tuple(Head(u, v) for u, v in zip(U, V))).items():
                    history.metrics.setdefault(key, []).append(float(val))
    return tuple(Head(u, v) for u, v in zip(U, V)), history


def fit_heads(prompt_law: GaussianMixture, heads: Sequence[Any], Z: Any, target: Any, weights: Any = None, *,
              max_iter: int = 5000, gtol: float = 1e-14, f_target: float = 0.0) -> tuple[tuple[Head, ...], Any]:
    r"""Minimise :func:`heads_squared_error` over all :math:`(U_h, V_h)` by L-BFGS, starting from ``heads``.

    Used in Chapter 8 for the best single head (from several starts) and for the polish of
    the two-head run (Fig. fig-08-learning): with quadrature nodes and weights of the noisy
    law as ``(Z, weights)`` and :math:`y = \mathbb E[X\mid Z]` as ``target`` it minimises the
    population excess risk on that rule. The run stops at ``max_iter`` iterations, when the
    projected gradient falls below ``gtol``, or as soon as the loss is at most ``f_target``.

    Returns
    -------
    heads : tuple of Head
    result : scipy.optimize.OptimizeResult
        With ``result.history``: the loss after each iteration.
    """
    from scipy.optimize import minimize

    U0, V0, *data = _squared_error_problem(prompt_law, heads, Z, target, weights)
    check_positive(max_iter, "max_iter", integer=True)
    split = U0.size

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        U, V = theta[:split].reshape(U0.shape), theta[split:].reshape(V0.shape)
        loss, gU, gV = _loss_grad(U, V, *data)
        return loss, np.concatenate([gU.ravel(), gV.ravel()])

    history: list[float] = []

    def callback(intermediate_result: Any) -> None:
        history.append(float(intermediate_result.fun))
        if intermediate_result.fun <= f_target:
            raise StopIteration

    result = minimize(objective, np.concatenate([U0.ravel(), V0.ravel()]), jac=True, method="L-BFGS-B",
                      callback=callback,
                      options={"maxiter": int(max_iter), "gtol": gtol, "ftol": 1e-300, "maxcor": 30})
    result.history = np.asarray(history)
    U, V = result.x[:split].reshape(U0.shape), result.x[split:].reshape(V0.shape)
    return tuple(Head(u, v) for u, v in zip(U, V)), result
