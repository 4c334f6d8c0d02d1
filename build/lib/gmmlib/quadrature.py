r"""Gauss–Hermite expectations under a Gaussian or a Gaussian mixture.

For :math:`X\sim\mathcal N(m,\Gamma)` and :math:`\Gamma = RR^\top`,

.. math::

    \mathbb E f(X) = \mathbb E f(m + R\xi) \approx \sum_{i} w_i\, f(m + R\xi_i),

with the tensor-product rule built from the :math:`n`-point probabilists' Gauss–Hermite
rule in each of the :math:`d` directions (weight :math:`e^{-t^2/2}/\sqrt{2\pi}`). It is exact
for polynomials of degree :math:`\le 2n-1` in each coordinate; for integrands analytic in
a strip around the real axis (a logistic, a softmax gate) its error falls like
:math:`e^{-c\sqrt n}`, with :math:`c` proportional to the strip's half-width, and faster for
entire integrands (exponentials, polynomials), which is why population risks in low
dimension come out to about 1e-12. A mixture is a weighted sum of such rules.

The cost is :math:`n^d` nodes per component: keep :math:`d` small (up to 3 or 4), or
integrate over the few directions the integrand depends on.

Gauss–Hermite rules converge (root-exponentially, as above) at a speed set by how far the
integrand's complex singularities lie from the real axis, in standardised units. A logistic
:math:`\sigma(a + \varsigma z)` has poles at distance :math:`\pi/\varsigma`: a sharp gate (large
:math:`\varsigma`) defeats any affordable Gauss–Hermite rule. :func:`graded_normal_rule` is the
remedy: a composite Gauss–Legendre rule for the standard normal weight whose panels are
graded geometrically toward the nearly singular points, so that its error stays near
round-off whatever their sharpness.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable

import numpy as np

from ._validation import as_float_array, check_positive, check_queries, check_U, check_V
from .mixtures import GaussianMixture, check_mixture

__all__ = [
    "gauss_hermite",
    "gaussian_nodes",
    "mixture_nodes",
    "expectation",
    "attention_by_quadrature",
    "graded_normal_rule",
]


_CACHE_MAX_NODES = 100_000


@lru_cache(maxsize=32)
def _tensor_rule(n_points: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """The (cached, read-only) tensor-product rule behind :func:`gauss_hermite`."""
    t, w = np.polynomial.hermite_e.hermegauss(int(n_points))
    w = w / np.sqrt(2.0 * np.pi)
    grids = np.meshgrid(*([t] * dim), indexing="ij")
    wgrids = np.meshgrid(*([w] * dim), indexing="ij")
    nodes = np.stack([g.ravel() for g in grids], axis=1)
    weights = np.prod(np.stack([g.ravel() for g in wgrids], axis=1), axis=1)
    weights = weights / weights.sum()
    nodes.setflags(write=False)
    weights.setflags(write=False)
    return nodes, weights


def gauss_hermite(n_points: int, dim: int = 1) -> tuple[np.ndarray, np.ndarray]:
    r"""The tensor-product probabilists' Gauss–Hermite rule for :math:`\mathcal N(0, I_d)`.

    The rule is computed once per ``(n_points, dim)`` and cached; each call returns fresh
    (writable) copies.

    Returns
    -------
    nodes : ndarray, shape (n_points**dim, dim)
    weights : ndarray, shape (n_points**dim,)
        Positive, summing to one.
    """
    check_positive(n_points, "n_points", integer=True)
    check_positive(dim, "dim", integer=True)
    if n_points**dim > 5_000_000:
        raise ValueError(
            f"n_points**dim = {n_points**dim} nodes is too many; lower n_points or dim"
        )
    if n_points**dim > _CACHE_MAX_NODES:  # large rules are not worth keeping in memory
        return tuple(a.copy() for a in _tensor_rule.__wrapped__(int(n_points), int(dim)))
    nodes, weights = _tensor_rule(int(n_points), int(dim))
    return nodes.copy(), weights.copy()


def _sqrt_psd(cov: np.ndarray) -> np.ndarray:
    eig, vec = np.linalg.eigh(cov)
    return vec * np.sqrt(np.clip(eig, 0.0, None))


def gaussian_nodes(mean: Any, cov: Any, n_points: int = 20) -> tuple[np.ndarray, np.ndarray]:
    r"""Nodes :math:`m + R\xi_i` and weights :math:`w_i` with :math:`\sum_i w_i f(x_i)\approx\mathbb
    E_{\mathcal N(m,\Gamma)} f`.

    ``cov`` may be singular (a degenerate Gaussian or a point mass).
    """
    mean = as_float_array(mean, "mean", ndim=1)
    cov = as_float_array(cov, "cov", ndim=2)
    if cov.shape != (mean.size, mean.size):
        raise ValueError(f"cov must have shape ({mean.size}, {mean.size}), got {cov.shape}")
    xi, w = gauss_hermite(n_points, mean.size)
    return mean + xi @ _sqrt_psd(cov).T, w


def mixture_nodes(
    mixture: GaussianMixture, n_points: int = 20
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Quadrature nodes for a mixture: each component's rule, weighted by :math:`\pi_k`.

    Returns
    -------
    nodes : ndarray, shape (K * N, d)
    weights : ndarray, shape (K * N,)
        :math:`\pi_k w_i`, summing to one.
    labels : ndarray of int, shape (K * N,)
        The component of each node (for per-component risks).
    """
    if not isinstance(mixture, GaussianMixture):
        raise TypeError(f"mixture must be a GaussianMixture, got {type(mixture).__name__}")
    xi, w = gauss_hermite(n_points, mixture.dim)
    nodes = [m + xi @ _sqrt_psd(c).T for m, c in zip(mixture.means, mixture.covs)]
    weights = np.concatenate([p * w for p in mixture.weights])
    labels = np.repeat(np.arange(mixture.n_components), w.size)
    return np.concatenate(nodes), weights, labels


def expectation(
    f: Callable[[np.ndarray], Any], mixture: GaussianMixture, n_points: int = 20
) -> np.ndarray:
    r""":math:`\mathbb E_\mu f(X)` for a mixture :math:`\mu`, by Gauss–Hermite quadrature.

    ``f`` maps an (N, d) array of points to an array whose first axis has length N; the
    result has the remaining shape.
    """
    nodes, weights, _ = mixture_nodes(mixture, n_points)
    vals = np.asarray(f(nodes), dtype=np.float64)
    if vals.shape[:1] != (nodes.shape[0],):
        raise ValueError(
            f"f must return an array whose first axis has length {nodes.shape[0]}, got {vals.shape}"
        )
    return np.tensordot(weights, vals, axes=(0, 0))


def attention_by_quadrature(
    mixture: GaussianMixture, queries: Any, U: Any, V: Any, n_points: int = 40
) -> np.ndarray:
    r"""Infinite-prompt softmax attention computed from its definition, by quadrature of both
    integrals.

    .. math::

        T_{U,V}[\mu](z) = \frac{\int e^{x^\top Uz}\,Vx\,d\mu(x)}{\int e^{x^\top Uz}\,d\mu(x)}
        \approx \frac{\sum_i w_i e^{x_i^\top Uz - M}\,Vx_i}{\sum_i w_i e^{x_i^\top Uz - M}},

    with the mixture's Gauss–Hermite nodes :math:`x_i`, weights :math:`w_i`, and
    :math:`M = \max_i x_i^\top Uz` (the same factor cancels). No tilting formula is used,
    which makes it an independent reference for :func:`gmmlib.limits.softmax_attention_limit`.
    Accurate while the tilt stays within the rule's reach (moderate :math:`\|U z\|`
    relative to the component spreads); compare two values of ``n_points`` to see it converge.

    Parameters
    ----------
    mixture : GaussianMixture
    queries : array_like, shape (n, d)
    U : array_like, shape (d, d)
    V : array_like, shape (p, d)
    n_points : int
        Nodes per axis and component.

    Returns
    -------
    ndarray, shape (n, p)
    """
    mixture = check_mixture(mixture)
    Q, _ = check_queries(queries, mixture.dim)
    U, V = check_U(U, mixture.dim), check_V(V, mixture.dim)
    nodes, weights, _ = mixture_nodes(mixture, n_points)
    S = nodes @ (Q @ U.T).T  # (N, n) scores
    W = weights[:, None] * np.exp(S - S.max(axis=0, keepdims=True))
    return (W.T @ (nodes @ V.T)) / W.sum(axis=0)[:, None]


@lru_cache(maxsize=16)
def _legendre(n_points: int) -> tuple[np.ndarray, np.ndarray]:
    """The (cached) n-point Gauss–Legendre rule on [-1, 1]."""
    return np.polynomial.legendre.leggauss(n_points)


#: The half-width of the interval on which :func:`graded_normal_rule` integrates: the
#: standard normal mass outside :math:`[-9, 9]` is :math:`2\Phi(-9) \approx 2\cdot 10^{-19}`.
GRADED_Z_MAX = 9.0


def graded_normal_rule(
    points: Any,
    scales: Any,
    n_points: int = 8,
    *,
    spacing: float = 2.0,
    z_max: float = GRADED_Z_MAX,
) -> tuple[np.ndarray, np.ndarray]:
    r"""A composite Gauss–Legendre rule for :math:`\int\varphi(z)\,g(z)\,dz`, graded toward nearly
    singular points.

    For each row :math:`j` (one integrand :math:`g_j`), the interval :math:`[-z_{\max}, z_{\max}]`
    is cut at a uniform grid of step ``spacing`` and, for every pair (point :math:`c`, scale
    :math:`\tau`) of the row, at :math:`c` and :math:`c \pm \tau 2^k/4`, :math:`k = 0, 1, \dots`
    (until the panels reach the grid's step); each panel gets ``n_points`` Gauss–Legendre
    nodes, and each node the weight :math:`\varphi(z)` times the Legendre weight. Give as
    points the real parts of :math:`g_j`'s complex singularities nearest to the real axis
    and as scales their distances from it (for :math:`g(z) = \sigma(a + \varsigma z)`: point
    :math:`-a/\varsigma`, scale :math:`\pi/\varsigma`). A panel of half-length :math:`h` at
    distance :math:`\gtrsim h` from every singularity is integrated with error
    :math:`O(\rho^{-2n})`, :math:`\rho \ge 2.4`, so the rule is accurate to near round-off with
    8 nodes per panel however sharp :math:`g` is; the mass of :math:`\varphi` outside
    :math:`[-z_{\max}, z_{\max}]` (:math:`2\cdot10^{-19}` for :math:`z_{\max} = 9`) is dropped.
    Compare ``n_points`` with ``2 * n_points`` (same panels) to estimate the error.

    Parameters
    ----------
    points, scales : array_like, shape (J, m) or (m,)
        The nearly singular points of each row and their distances from the real axis. A
        non-finite point, or a scale that is not positive and finite, is ignored.
    n_points : int
        Gauss–Legendre nodes per panel.
    spacing : float
        The step of the uniform grid (the longest panel).
    z_max : float
        The half-width of the integration interval.

    Returns
    -------
    nodes, weights : ndarray, shape (J, N)
        With :math:`\sum_i w_{ji}\,g_j(z_{ji}) \approx \int\varphi\,g_j`. Rows have the same number
        of nodes (panels of zero length carry zero weight).
    """
    check_positive(n_points, "n_points", integer=True)
    check_positive(spacing, "spacing")
    check_positive(z_max, "z_max")
    pts = np.atleast_2d(np.asarray(points, dtype=np.float64))
    tau = np.atleast_2d(np.asarray(scales, dtype=np.float64))
    if pts.shape != tau.shape or pts.ndim != 2:
        raise ValueError(
            f"points and scales must have the same shape (J, m), got {pts.shape} and {tau.shape}"
        )
    J = pts.shape[0]
    uniform = np.linspace(-z_max, z_max, int(np.ceil(2 * z_max / spacing)) + 1)
    valid = np.isfinite(pts) & np.isfinite(tau) & (tau > 0)
    if np.any(valid):
        levels = int(np.clip(np.ceil(np.log2(4 * spacing / np.min(tau[valid]))) + 1, 1, 60))
        steps = 2.0 ** np.arange(levels) / 4
        offsets = np.concatenate([[0.0], steps, -steps])
        graded = np.where(
            valid[:, :, None],
            pts[:, :, None] + np.where(valid, tau, 0.0)[:, :, None] * offsets,
            -z_max,
        ).reshape(J, -1)
        cuts = np.concatenate(
            [np.broadcast_to(uniform, (J, uniform.size)), np.clip(graded, -z_max, z_max)], axis=1
        )
    else:
        cuts = np.broadcast_to(uniform, (J, uniform.size))
    cuts = np.sort(cuts, axis=1)
    centre, half = (cuts[:, 1:] + cuts[:, :-1]) / 2, (cuts[:, 1:] - cuts[:, :-1]) / 2
    x, w = _legendre(int(n_points))
    nodes = (centre[:, :, None] + half[:, :, None] * x).reshape(J, -1)
    weights = (half[:, :, None] * w).reshape(J, -1) * np.exp(-0.5 * nodes**2) / np.sqrt(2 * np.pi)
    return nodes, weights
