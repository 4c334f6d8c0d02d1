r"""Denoising a Gaussian-mixture signal: the Bayes denoiser, its risk, and its iterates.

Data model: :math:`X\sim\sum_k\pi_k\mathcal N(m_k,\Gamma_k)`, :math:`Z = X + \xi\varepsilon`,
:math:`\varepsilon\sim\mathcal N(0, I_d)`. With :math:`S_k = \Gamma_k + \xi^2 I`, the noisy
observation is the mixture :math:`Z\sim\sum_k\pi_k\mathcal N(m_k, S_k)` and

.. math::

    \mathbb E[X\mid Z=z] = \sum_k \beta_k(z)\,\big(m_k + \Gamma_k S_k^{-1}(z - m_k)\big),
    \qquad \beta_k(z) = p(k\mid z) = \frac{\pi_k\mathcal N(z; m_k, S_k)}{\sum_j\pi_j\mathcal N(z;
    m_j, S_j)}.

This module holds the denoiser itself (Chapters 8 and 9): the law of :math:`Z`, the posterior
mean, the Bayes risk and the excess risk of any predictor, the best linear and affine
denoisers, and the iterated denoiser of Chapter 9 with its separation and fixed point. The
attention heads that compute it are in :mod:`gmmlib.denoising.heads`; fitting heads to it
(online SGD, L-BFGS) is in :mod:`gmmlib.denoising.training`.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .._validation import as_float_array, check_points, check_positive
from ..mixtures import GaussianMixture, check_mixture
from ..quadrature import expectation, mixture_nodes

__all__ = [
    "noisy_mixture",
    "bayes_denoiser",
    "bayes_mse",
    "excess_risk",
    "best_linear_denoiser",
    "best_affine_denoiser",
    "iterate_denoiser",
    "separation",
    "tanh_fixed_point",
]


def noisy_mixture(mixture: GaussianMixture, noise_std: float) -> GaussianMixture:
    r"""The law of :math:`Z = X + \xi\varepsilon`: components :math:`\mathcal N(m_k, \Gamma_k +
    \xi^2 I)`."""
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
    out = _posterior_mean(mixture, _denoiser_law(mixture, noise_std), Z2)
    return out[0] if single else out


def _denoiser_law(mixture: GaussianMixture, noise_std: float) -> tuple[GaussianMixture, np.ndarray]:
    r"""The noisy law and the gains :math:`S_k^{-1}\Gamma_k`: what the denoiser needs besides z."""
    noisy = noisy_mixture(mixture, noise_std)
    return noisy, np.linalg.solve(noisy.covs, mixture.covs)  # its transpose is Γ_k S_k^{-1}


def _posterior_mean(
    mixture: GaussianMixture, law: tuple[GaussianMixture, np.ndarray], Z2: np.ndarray
) -> np.ndarray:
    beta, experts = _posterior_experts(mixture, law, Z2)
    out = np.einsum("nk,nkd->nd", beta, experts)
    if not np.all(np.isfinite(out)):
        raise ValueError("the posterior mean overflows the float range: Z is too large")
    return out


def _posterior_experts(
    mixture: GaussianMixture, law: tuple[GaussianMixture, np.ndarray], Z2: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The posterior β_k(z) (in log space: it saturates, finite, however far out z is) and the
    experts."""
    noisy, gain = law
    beta = noisy.posterior(Z2)  # (n, K)
    diff = Z2[:, None, :] - mixture.means[None]  # (n, K, d)
    with np.errstate(over="ignore", invalid="ignore"):
        # m_k + Γ_k S_k^{-1}(z - m_k)
        experts = mixture.means[None] + np.einsum("kji,nkj->nki", gain, diff)
    return beta, experts


# ---------------------------------------------------------------------------- risks
def bayes_mse(mixture: GaussianMixture, noise_std: float, n_points: int = 40) -> float:
    r"""The Bayes risk :math:`\mathbb E\|X - \mathbb E[X\mid Z]\|^2`, by Gauss–Hermite quadrature.

    .. math::

        \mathbb E\|X - \mathbb E[X\mid Z]\|^2 = \mathbb E_Z\operatorname{tr}\operatorname{Cov}(X\mid
        Z)
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
    law = _denoiser_law(mixture, noise_std)
    noisy = law[0]
    xi2 = float(noise_std) ** 2
    # ξ² tr(Γ_k S_k⁻¹)
    within = xi2 * np.einsum("kij,kji->k", mixture.covs, np.linalg.inv(noisy.covs))

    def conditional_variance(Z: np.ndarray) -> np.ndarray:
        beta, experts = _posterior_experts(mixture, law, Z)
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
    r"""The excess risk :math:`\mathbb E\|X - g(Z)\|^2 - \mathbb E\|X - \mathbb E[X\mid Z]\|^2 =
    \mathbb E_Z\|g(Z) - \mathbb E[X\mid Z]\|^2`.

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
        Return the K contributions :math:`\pi_k\,\mathbb E_{Z\sim\mathcal N(m_k,S_k)}\|g(Z) -
        \mathbb E[X\mid Z]\|^2` (they sum to the excess risk) instead of their sum.
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
        R_{\mathrm{lin}} = \min_A\mathbb E\|X - AZ\|^2 = \xi^2\operatorname{tr}\big(M(M + \xi^2
        I)^{-1}\big).

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


def best_affine_denoiser(
    mixture: GaussianMixture, noise_std: float
) -> tuple[np.ndarray, np.ndarray, float]:
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


# ---------------------------------------------------------------------------- iterated denoiser
def iterate_denoiser(
    mixture: GaussianMixture, noise_std: float, Z0: Any, n_steps: int
) -> np.ndarray:
    r"""Iterate the Bayes denoiser: :math:`z_{t+1} = f^\star(z_t) = \mathbb E[X\mid Z = z_t]`.

    The dynamics of Chapter 9 (:prf:ref:`prop-09-reduction`, :prf:ref:`thm-09-transition` and
    :prf:ref:`prop-09-modes`; the paper's Proposition 4.3). By Tweedie's formula each step is
    :math:`z_{t+1} = z_t + \xi^2\nabla\log p_Z(z_t)`.

    Returns
    -------
    ndarray, shape (n_steps + 1, n, d)
        The trajectories, starting with ``Z0``.
    """
    mixture = check_mixture(mixture)
    check_positive(n_steps, "n_steps", integer=True, allow_zero=True)
    Z = check_points(Z0, mixture.dim, "Z0")
    law = _denoiser_law(mixture, noise_std)  # once: only z changes from step to step
    out = [Z]
    for _ in range(int(n_steps)):
        out.append(_posterior_mean(mixture, law, out[-1]))
    return np.stack(out)


def separation(means: Any, noise_std: float, gamma: float = 0.0) -> float:
    r"""The separation of two balanced components in noise units (Chapter 9, eq.
    :eq:`eq-09-lambda`).

    .. math::

        \lambda = \frac{\|\Delta\|}{2\sqrt{\gamma^2 + \xi^2}},\qquad \Delta = m_1 - m_2,

    which is :math:`\|m_1 - m_2\|/(2\xi)` for point masses (:math:`\gamma = 0`, the paper's
    :math:`\lambda`); iterating the denoiser collapses to the midpoint iff :math:`\lambda\le 1`
    (:prf:ref:`thm-09-transition` and :prf:ref:`prop-09-modes`).
    """
    m = as_float_array(means, "means", ndim=2)
    if m.shape[0] != 2:
        raise ValueError(f"means must have shape (2, d), got {m.shape}")
    check_positive(noise_std, "noise_std")
    check_positive(gamma, "gamma", allow_zero=True)
    return float(np.linalg.norm(m[0] - m[1]) / (2.0 * np.sqrt(gamma**2 + noise_std**2)))


def tanh_fixed_point(lam: float) -> float:
    r"""The largest solution :math:`u^\star\ge 0` of :math:`u = \tanh(\lambda^2 u)`.

    The attractor of :prf:ref:`thm-09-transition` (Chapter 9): it is 0 for :math:`\lambda\le 1`; for
    :math:`\lambda > 1` it is found by bisection on :math:`(0, 1]`, where :math:`u -
    \tanh(\lambda^2u)` changes sign once (to within one ulp of the root).
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
