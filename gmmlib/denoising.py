r"""Denoising a Gaussian-mixture signal: the Bayes denoiser and what attention makes of it.

Data model: :math:`X\sim\sum_k\pi_k\mathcal N(m_k,\Gamma_k)`, :math:`Z = X + \xi\varepsilon`,
:math:`\varepsilon\sim\mathcal N(0, I_d)`. With :math:`S_k = \Gamma_k + \xi^2 I`, the noisy
observation is the mixture :math:`Z\sim\sum_k\pi_k\mathcal N(m_k, S_k)` and

.. math::

    \mathbb E[X\mid Z=z] = \sum_k \beta_k(z)\,\big(m_k + \Gamma_k S_k^{-1}(z - m_k)\big),
    \qquad \beta_k(z) = p(k\mid z) = \frac{\pi_k\mathcal N(z; m_k, S_k)}{\sum_j\pi_j\mathcal N(z; m_j, S_j)}.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._validation import as_float_array, check_positive
from .mixtures import GaussianMixture

__all__ = ["noisy_mixture", "bayes_denoiser"]


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
    noisy = noisy_mixture(mixture, noise_std)
    Zarr = as_float_array(Z, "Z", ndim=(1, 2))
    single = Zarr.ndim == 1
    Z2 = Zarr[None] if single else Zarr
    if Z2.shape[1] != mixture.dim:
        raise ValueError(f"Z must have shape (n, {mixture.dim}), got {Zarr.shape}")
    beta = noisy.posterior(Z2)  # (n, K)
    gain = np.linalg.solve(noisy.covs, mixture.covs)  # S_k^{-1} Γ_k; its transpose is Γ_k S_k^{-1}
    diff = Z2[:, None, :] - mixture.means[None]  # (n, K, d)
    experts = mixture.means[None] + np.einsum("kji,nkj->nki", gain, diff)  # m_k + Γ_k S_k^{-1}(z - m_k)
    out = np.einsum("nk,nkd->nd", beta, experts)
    return out[0] if single else out
