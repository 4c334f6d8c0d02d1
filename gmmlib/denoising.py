r"""Denoising a Gaussian-mixture signal: the Bayes denoiser and what attention makes of it.

Data model: :math:`X\sim\sum_k\pi_k\mathcal N(m_k,\Gamma_k)`, :math:`Z = X + \xi\varepsilon`,
:math:`\varepsilon\sim\mathcal N(0, I_d)`. With :math:`S_k = \Gamma_k + \xi^2 I`, the noisy
observation is the mixture :math:`Z\sim\sum_k\pi_k\mathcal N(m_k, S_k)` and

.. math::

    \mathbb E[X\mid Z=z] = \sum_k \beta_k(z)\,\big(m_k + \Gamma_k S_k^{-1}(z - m_k)\big),
    \qquad \beta_k(z) = p(k\mid z) = \frac{\pi_k\mathcal N(z; m_k, S_k)}{\sum_j\pi_j\mathcal N(z; m_j, S_j)}.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import torch
from torch import nn

from ._validation import as_float_array, check_matrix, check_mixture, check_points, check_positive
from .attention import softmax_attention
from .limits import softmax_attention_limit
from .mixtures import GaussianMixture
from .quadrature import expectation, mixture_nodes

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


# ---------------------------------------------------------------------------- helpers
# ---------------------------------------------------------------------------- risks
def bayes_mse(mixture: GaussianMixture, noise_std: float, n_points: int = 40) -> float:
    r"""The Bayes risk :math:`\mathbb E\|X - \mathbb E[X\mid Z]\|^2`, by Gauss–Hermite quadrature.

    .. math::

        \mathbb E\|X - \mathbb E[X\mid Z]\|^2 = \mathbb E\|X\|^2 - \mathbb E_Z\|\mathbb E[X\mid Z]\|^2,

    with :math:`\mathbb E\|X\|^2 = \operatorname{tr}\sum_k\pi_k(\Gamma_k + m_km_k^\top)` in closed
    form and the second term integrated with ``n_points`` nodes per direction over each
    component of the law of :math:`Z` (the integrand is smooth, so the rule converges
    geometrically).
    """
    mixture = check_mixture(mixture)
    noisy = noisy_mixture(mixture, noise_std)
    second = float(np.trace(mixture.second_moment()))
    fz = expectation(lambda Z: np.sum(bayes_denoiser(mixture, noise_std, Z) ** 2, axis=1), noisy, n_points)
    return second - float(fz)


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


def two_head_construction(means: Any, gamma: float, noise_std: float) -> list[tuple[np.ndarray, np.ndarray]]:
    r"""Two softmax heads whose sum, on the noisy prompt, is exactly :math:`\mathbb E[X\mid Z]`.

    Prior :math:`\pi_1\mathcal N(m_1,\gamma^2 I) + \pi_2\mathcal N(m_2,\gamma^2 I)` with
    :math:`\|m_1\| = \|m_2\|`, :math:`m_1\ne m_2`, any weights; :math:`s = \gamma^2+\xi^2`,
    :math:`\hat\delta = (m_1-m_2)/\|m_1-m_2\|`, :math:`P = I - \hat\delta\hat\delta^\top`,
    :math:`e` a unit vector orthogonal to :math:`\hat\delta` (:func:`carrier_direction`),
    :math:`\kappa = 2(\gamma^2-\xi^2)/(s\,\xi^2)`:

    .. math::

        U_\pm = \tfrac1s I + \tfrac\kappa2\big(P \pm e\hat\delta^\top\big),\qquad
        V_\pm = \tfrac{\xi^2}{2s}\big(I \pm \hat\delta e^\top\big).

    Both heads have the Bayes gates (:math:`\hat\delta^\top U_\pm = \hat\delta^\top/s`), their
    values add to :math:`\xi^2 I/s`, and their linear parts add to :math:`\gamma^2 I/s`.

    Returns
    -------
    list of two (U, V) pairs, each (d, d)
    """
    m1, m2 = _two_means(means)
    check_positive(gamma, "gamma", allow_zero=True)
    check_positive(noise_std, "noise_std")
    d = m1.size
    s = gamma**2 + noise_std**2
    delta = (m1 - m2) / np.linalg.norm(m1 - m2)
    e = carrier_direction(np.stack([m1, m2]))
    P = np.eye(d) - np.outer(delta, delta)
    kappa = 2.0 * (gamma**2 - noise_std**2) / (s * noise_std**2)
    heads = []
    for sign in (1.0, -1.0):
        U = np.eye(d) / s + 0.5 * kappa * (P + sign * np.outer(e, delta))
        V = noise_std**2 / (2.0 * s) * (np.eye(d) + sign * np.outer(delta, e))
        heads.append((U, V))
    return heads


def one_head_construction(dim: int, gamma: float, noise_std: float) -> tuple[np.ndarray, np.ndarray]:
    r"""The single head :math:`U = S^{-1} = I/(2\xi^2)`, :math:`V = \tfrac12 I`, exact when :math:`\gamma^2 = \xi^2`.

    Raises ``ValueError`` when :math:`\gamma \ne \xi`: then no single head is exact (for :math:`\gamma>0`).
    """
    check_positive(dim, "dim", integer=True)
    check_positive(gamma, "gamma", allow_zero=True)
    check_positive(noise_std, "noise_std")
    if abs(gamma**2 - noise_std**2) > 1e-12 * noise_std**2:
        raise ValueError(f"one head is exact only when gamma = noise_std; got gamma = {gamma}, noise_std = {noise_std}")
    s = gamma**2 + noise_std**2
    return np.eye(dim) / s, 0.5 * np.eye(dim)


def multihead_limit(mixture: GaussianMixture, queries: Any, heads: Sequence[tuple[Any, Any]]) -> np.ndarray:
    r"""The infinite-prompt output :math:`\sum_h T_{U_h,V_h}[\mu](z)` of a sum of softmax heads on the prompt law ``mixture``."""
    mixture = check_mixture(mixture)
    if len(heads) == 0:
        raise ValueError("heads must hold at least one (U, V) pair")
    return sum(softmax_attention_limit(mixture, queries, U, V) for U, V in heads)


def residual_construction(dim: int, gamma: float, noise_std: float) -> dict[str, np.ndarray]:
    r"""The task-independent residual two-head denoiser (Chapter 9).

    .. math::

        U_1 = S^{-1} = \tfrac{1}{\gamma^2+\xi^2}I,\quad V_1 = \tfrac{\xi^2}{\gamma^2+\xi^2}I,\quad
        U_2 = V_2 = 0,\quad W_{\mathrm{out}} = \big(I,\ -\tfrac{2\xi^2}{\gamma^2+\xi^2}I\big),

    so that :math:`W_{\mathrm{out}}(z + T_1, z + T_2) = \frac{\gamma^2}{s}z + \frac{\xi^2}{s}\sum_k\alpha_k(z)m_k`.

    Returns
    -------
    dict with keys ``U1, V1, U2, V2`` (d, d) and ``W_out`` (d, 2d)
    """
    check_positive(dim, "dim", integer=True)
    check_positive(gamma, "gamma", allow_zero=True)
    check_positive(noise_std, "noise_std")
    s = gamma**2 + noise_std**2
    eye = np.eye(dim)
    return {
        "U1": eye / s,
        "V1": noise_std**2 / s * eye,
        "U2": np.zeros((dim, dim)),
        "V2": np.zeros((dim, dim)),
        "W_out": np.hstack([eye, -2.0 * noise_std**2 / s * eye]),
    }


def residual_denoiser(tokens: Any, queries: Any, params: dict[str, Any]) -> np.ndarray:
    r"""The residual two-head model on a finite prompt:
    :math:`W_{\mathrm{out}}\big(z + T_{U_1,V_1}[\hat\mu_L](z),\ z + T_{U_2,V_2}[\hat\mu_L](z)\big)`.

    Parameters
    ----------
    tokens : array_like, shape (L, d) or (B, L, d)
        The noisy prompt(s).
    queries : array_like, shape (n, d) or (B, n, d)
    params : dict
        ``U1, V1, U2, V2`` (d, d) and ``W_out`` (d, 2d), e.g. from :func:`residual_construction`.

    Returns
    -------
    ndarray, shape (n, d) or (B, n, d)
    """
    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict, got {type(params).__name__}")
    missing = {"U1", "V1", "U2", "V2", "W_out"} - set(params)
    if missing:
        raise ValueError(f"params lacks {sorted(missing)}")
    Q = as_float_array(queries, "queries", ndim=(2, 3))
    d = Q.shape[-1]
    W = check_matrix(params["W_out"], "params['W_out']", (d, 2 * d))
    r1 = Q + softmax_attention(tokens, Q, params["U1"], params["V1"])
    r2 = Q + softmax_attention(tokens, Q, params["U2"], params["V2"])
    return r1 @ W[:, :d].T + r2 @ W[:, d:].T


def residual_limit(mixture: GaussianMixture, queries: Any, params: dict[str, Any]) -> np.ndarray:
    r"""The infinite-prompt limit of :func:`residual_denoiser` on the prompt law ``mixture``."""
    mixture = check_mixture(mixture)
    Q = check_points(queries, mixture.dim, "queries")
    d = mixture.dim
    W = check_matrix(params["W_out"], "params['W_out']", (d, 2 * d))
    r1 = Q + softmax_attention_limit(mixture, Q, params["U1"], params["V1"])
    r2 = Q + softmax_attention_limit(mixture, Q, params["U2"], params["V2"])
    return r1 @ W[:, :d].T + r2 @ W[:, d:].T


# ---------------------------------------------------------------------------- iterated denoiser
def iterate_denoiser(mixture: GaussianMixture, noise_std: float, Z0: Any, n_steps: int) -> np.ndarray:
    r"""Iterate the Bayes denoiser: :math:`z_{t+1} = \mathbb E[X\mid Z = z_t]`.

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


def separation(means: Any, noise_std: float) -> float:
    r"""The separation :math:`\lambda = \|m_1 - m_2\|/(2\xi)` of two point masses under noise :math:`\xi`."""
    m1, m2 = as_float_array(means, "means", ndim=2)[:2]
    check_positive(noise_std, "noise_std")
    return float(np.linalg.norm(m1 - m2) / (2.0 * noise_std))


def tanh_fixed_point(lam: float) -> float:
    r"""The largest solution :math:`u^\star\ge 0` of :math:`u = \tanh(\lambda^2 u)`.

    It is 0 for :math:`\lambda\le 1`; for :math:`\lambda > 1` it is found by bisection on
    :math:`(0, 1]`, where :math:`u - \tanh(\lambda^2u)` changes sign once.
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
    r"""Clean tokens augmented with their squared norm: :math:`x\mapsto(x, \|x\|^2)`, shape (L, d+1)."""
    X = as_float_array(X, "X", ndim=(2, 3))
    return np.concatenate([X, np.sum(X**2, axis=-1, keepdims=True)], axis=-1)


def key_bias_parameters(dim: int, noise_std: float) -> tuple[np.ndarray, np.ndarray]:
    r"""The head on augmented tokens :math:`(x, \|x\|^2)` and queries :math:`(z, 1)` with scores
    :math:`x^\top z/\xi^2 - \|x\|^2/(2\xi^2)` and values :math:`x`:

    .. math::

        U = \begin{pmatrix} I/\xi^2 & 0\\ 0 & -1/(2\xi^2)\end{pmatrix},\qquad V = (I\ \ 0).

    The weights are :math:`\propto e^{-\|z-x_j\|^2/(2\xi^2)}`: a Gaussian kernel smoother.
    """
    check_positive(dim, "dim", integer=True)
    check_positive(noise_std, "noise_std")
    U = np.zeros((dim + 1, dim + 1))
    U[:dim, :dim] = np.eye(dim) / noise_std**2
    U[dim, dim] = -0.5 / noise_std**2
    V = np.hstack([np.eye(dim), np.zeros((dim, 1))])
    return U, V


def key_bias_attention(X: Any, queries: Any, noise_std: float) -> np.ndarray:
    r"""Attention of noisy queries over a clean prompt with the key bias :math:`-\|x\|^2/(2\xi^2)`:

    .. math::

        \hat f_L(z) = \frac{\sum_j e^{-\|z - x_j\|^2/(2\xi^2)}\,x_j}{\sum_j e^{-\|z - x_j\|^2/(2\xi^2)}}
        \xrightarrow[L\to\infty]{} \mathbb E[X\mid Z = z]\quad\text{for any prior of } X.

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

    def heads(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """The current (U, V) of each head as numpy arrays."""
        return [(u.detach().numpy().copy(), v.detach().numpy().copy()) for u, v in zip(self.U, self.V)]
