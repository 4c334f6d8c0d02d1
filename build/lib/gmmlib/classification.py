r"""Classification rules on Gaussian mixtures in closed form: Bayes scores and rule accuracies.

Chapter 7 (selection beyond linear rules). Class :math:`k` is the component :math:`\mathcal
N(m_k,\Gamma_k)` of a mixture ``x_mixture`` with :math:`P(k) = \pi_k` (the tasks themselves, XOR's
Bayes score and accuracy among them, and the attention readout these rules are compared with, are in
:mod:`gmmlib.selection`). This module gives, without sampling,

* the Bayes (LDA) scores of a shared-covariance mixture (:func:`bayes_scores`);
* the accuracy of a linear argmax rule (:func:`linear_rule_accuracy`, orthant probabilities)
  and of a sign rule (:func:`sign_rule_accuracy`);
* the best intercept-free argmax rule on three classes in the plane (:func:`best_cone_rule`),
  through the probability of a sector (:func:`sector_probability`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from scipy.stats import multivariate_normal, norm

from ._validation import as_float_array, check_covariances
from .mixtures import GaussianMixture, check_mixture

__all__ = [
    "bayes_scores",
    "linear_rule_accuracy",
    "sign_rule_accuracy",
    "sector_probability",
    "ConeRule",
    "best_cone_rule",
]


# --------------------------------------------------------------------------- Bayes rules and
# accuracies
def bayes_scores(x_mixture: GaussianMixture) -> tuple[np.ndarray, np.ndarray]:
    r"""The Bayes (LDA) scores of Chapter 7 (before :prf:ref:`prop-07-linear-accuracy`):
    :math:`w_k^\top x + b_k` with

    .. math::

        w_k = \Gamma^{-1}m_k,\qquad b_k = -\tfrac12 m_k^\top\Gamma^{-1}m_k + \log\pi_k,

    so that :math:`p(k\mid x) = \operatorname{softmax}_k (w_k^\top x + b_k)` for a shared
    covariance.

    Returns
    -------
    W : ndarray, shape (K, d)
    b : ndarray, shape (K,)
    """
    x_mixture = check_mixture(x_mixture, "x_mixture")
    G = x_mixture.shared_covariance("x_mixture", "for the linear Bayes scores")
    W = np.linalg.solve(G, x_mixture.means.T).T
    with np.errstate(divide="ignore"):
        b = -0.5 * np.sum(W * x_mixture.means, axis=1) + np.log(x_mixture.weights)
    return W, b


def linear_rule_accuracy(x_mixture: GaussianMixture, W: Any, b: Any | None = None, *,
                         abseps: float = 1e-9) -> float:
    r"""Accuracy of the rule :math:`\hat k(x) = \arg\max_k (w_k^\top x + b_k)`:
    :prf:ref:`prop-07-linear-accuracy` (Chapter 7).

    Class :math:`k` is the component :math:`\mathcal N(m_k,\Gamma_k)`.

    Given class :math:`k`, the margins :math:`D_j = (w_k - w_j)^\top X + b_k - b_j`, :math:`j\ne k`,
    are jointly Gaussian with means :math:`(w_k - w_j)^\top m_k + b_k - b_j` and covariances
    :math:`(w_k - w_i)^\top\Gamma_k(w_k - w_j)`, so

    .. math::

        \mathrm{acc} = \sum_k \pi_k\,P(D_j > 0\ \forall j\ne k)

    is a sum of :math:`(K-1)`-variate normal orthant probabilities (the normal CDF for
    :math:`K = 2`; scipy's Genz algorithm with absolute error ``abseps`` for :math:`K > 2`).
    Degenerate margins (zero variance) count as correct when their mean is positive.
    """
    x_mixture = check_mixture(x_mixture, "x_mixture")
    K, d = x_mixture.n_components, x_mixture.dim
    W = as_float_array(W, "W", ndim=2)
    if W.shape != (K, d):
        raise ValueError(f"W must have shape ({K}, {d}), got {W.shape}")
    b = np.zeros(K) if b is None else as_float_array(b, "b", ndim=1)
    if b.shape != (K,):
        raise ValueError(f"b must have shape ({K},), got {b.shape}")
    if K == 1:
        return 1.0
    acc = 0.0
    for k in range(K):
        others = [j for j in range(K) if j != k]
        A = W[k][None, :] - W[others]  # (K-1, d)
        mean = A @ x_mixture.means[k] + b[k] - b[others]
        cov = A @ x_mixture.covs[k] @ A.T
        sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))
        if np.any(sd <= 1e-14 * max(1.0, float(np.max(np.abs(mean))))):
            deg = sd <= 1e-14 * max(1.0, float(np.max(np.abs(mean))))
            if np.any(mean[deg] <= 0):
                continue  # some margin is never positive: class k is never chosen
            keep = ~deg
            if not np.any(keep):
                acc += x_mixture.weights[k]
                continue
            mean, cov, sd = mean[keep], cov[np.ix_(keep, keep)], sd[keep]
        z = mean / sd
        corr = cov / np.outer(sd, sd)
        if z.size == 1:
            p = float(norm.cdf(z[0]))
        else:
            # P(D > 0) = P(-D/sd < z) = CDF of N(0, corr) at z.
            # Genz's algorithm is randomised quasi-Monte Carlo: a fixed rng keeps it reproducible.
            p = float(
                multivariate_normal.cdf(
                    z,
                    mean=np.zeros(z.size),
                    cov=corr,
                    allow_singular=True,
                    maxpts=200_000 * z.size,
                    abseps=abseps,
                    releps=0.0,
                    rng=np.random.default_rng(0),
                )
            )
        acc += x_mixture.weights[k] * p
    return float(acc)


def sign_rule_accuracy(x_mixture: GaussianMixture, labels: Any, w: Any, b: float = 0.0) -> float:
    r"""Accuracy of the rule :math:`\hat y(x) = \operatorname{sign}(w^\top x + b)`:
    :prf:ref:`cor-07-xor`, item 2 (Chapter 7).

    Component :math:`k` carries the label :math:`y_k\in\{-1, 1\}`.

    Given component :math:`k`, the score :math:`w^\top X + b` is
    :math:`\mathcal N(w^\top m_k + b,\ w^\top\Gamma_k w)`, so

    .. math::

        \mathrm{acc} = \sum_k \pi_k\,\Phi\Big(\frac{y_k\,(w^\top m_k + b)}{\sqrt{w^\top\Gamma_k
        w}}\Big).

    A component whose score has zero variance counts as correct iff
    :math:`y_k(w^\top m_k + b) > 0` (the sign of a zero score is no label).

    Parameters
    ----------
    x_mixture : GaussianMixture
        The law of :math:`x`, one component per labelled cluster.
    labels : array_like, shape (K,) or (K, 1)
        The labels :math:`y_k`, each :math:`-1` or :math:`1`.
    w : array_like, shape (d,)
    b : float
    """
    x_mixture = check_mixture(x_mixture, "x_mixture")
    y = as_float_array(labels, "labels").reshape(-1)
    if y.shape != (x_mixture.n_components,) or not np.all(np.abs(y) == 1.0):
        raise ValueError(
            f"labels must hold {x_mixture.n_components} values in {{-1, 1}}, "
            f"got {np.asarray(labels)!r}"
        )
    w = as_float_array(w, "w", ndim=1)
    if w.shape != (x_mixture.dim,):
        raise ValueError(f"w must have shape ({x_mixture.dim},), got {w.shape}")
    margin = y * (x_mixture.means @ w + float(b))
    sd = np.sqrt(np.clip(np.einsum("i,kij,j->k", w, x_mixture.covs, w), 0.0, None))
    deg = sd <= 1e-14 * max(1.0, float(np.max(np.abs(margin))))
    p = np.where(deg, (margin > 0).astype(float), norm.cdf(margin / np.where(deg, 1.0, sd)))
    return float(x_mixture.weights @ p)


# --------------------------------------------------------------------------- intercept-free rules
# in the plane
def _angle_density(theta: np.ndarray, m: np.ndarray) -> np.ndarray:
    r"""Density of the polar angle of :math:`\mathcal N(m, I_2)`: :math:`e^{-\|m\|^2/2}/(2\pi) +
    s\,\Phi(s)\,\varphi(t)`, :math:`s = m^\top u_\theta`, :math:`t = m^\top u_\theta^\perp`."""
    c, s_ = np.cos(theta), np.sin(theta)
    s = c * m[0] + s_ * m[1]
    t = -s_ * m[0] + c * m[1]
    return np.exp(-0.5 * float(m @ m)) / (2 * np.pi) + s * norm.cdf(s) * norm.pdf(t)


_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(24)


def _whiten(mean: Any, cov: Any) -> tuple[np.ndarray, np.ndarray]:
    m = as_float_array(mean, "mean", ndim=1)
    G = check_covariances(cov, "cov", definite=True)
    if m.shape != (2,) or G.shape != (2, 2):
        raise ValueError(f"mean must have shape (2,) and cov (2, 2), got {m.shape} and {G.shape}")
    R = np.linalg.cholesky(G)  # x = m + R xi; angles are mapped through R^{-1}
    Rinv = np.linalg.inv(R)
    return Rinv @ m, Rinv


def _whitened_angle(Rinv: np.ndarray, theta: float) -> float:
    v = Rinv @ np.array([np.cos(theta), np.sin(theta)])
    return float(np.arctan2(v[1], v[0]))


def sector_probability(mean: Any, cov: Any, start: float, stop: float) -> float:
    r"""Probability that :math:`X\sim\mathcal N(m,\Gamma)` in the plane lies in the sector of polar
    angles :math:`(\text{start}, \text{stop})`.

    Chapter 7, :prf:ref:`prop-07-linear-ceiling`. With :math:`\Gamma = RR^\top` (Cholesky), :math:`X
    = R\,Y` with :math:`Y\sim\mathcal N(R^{-1}m, I)`, and a sector through the origin maps to a
    sector (:math:`\det R > 0` keeps the orientation). The polar angle of :math:`Y\sim\mathcal
    N(\tilde m, I)` has the density

    .. math::

        f(\theta) = \frac{e^{-\|\tilde m\|^2/2}}{2\pi} + s\,\Phi(s)\,\varphi(t),\qquad
        s = \tilde m^\top u_\theta,\ t = \tilde m^\top u_\theta^\perp

    (integrate the Gaussian density along the ray :math:`r u_\theta` with weight :math:`r`),
    which is integrated by adaptive quadrature (``scipy.integrate.quad``, absolute error
    about 1e-14). The arc ``stop - start`` must lie in :math:`[0, 2\pi]`.
    """
    from scipy import integrate

    mt, Rinv = _whiten(mean, cov)
    start, stop = float(start), float(stop)
    arc = stop - start
    if not (np.isfinite(start) and np.isfinite(stop)) or arc < 0 or arc > 2 * np.pi + 1e-12:
        raise ValueError(f"stop - start must lie in [0, 2π], got {arc!r}")
    if arc == 0:
        return 0.0
    if arc >= 2 * np.pi:
        return 1.0
    a = _whitened_angle(Rinv, start)
    b = _whitened_angle(Rinv, stop)
    b = a + np.mod(b - a, 2 * np.pi)
    if arc > np.pi and b - a < np.pi:  # orientation kept: a long arc stays long
        b += 2 * np.pi
    val, _ = integrate.quad(_angle_density, a, b, args=(mt,), epsabs=1e-15, epsrel=1e-13, limit=200)
    return float(min(max(val, 0.0), 1.0))


class ConeRule(NamedTuple):
    r"""The best partition of the plane into sectors (:prf:ref:`prop-07-linear-ceiling`).

    Attributes
    ----------
    accuracy : float
        :math:`\sum_k\pi_k P_k(S_k)` at the best partition.
    order : tuple of int
        The classes in counterclockwise order.
    rays : ndarray, shape (K,)
        The polar angle where each class's sector starts (sector k runs to the next ray).
    arcs : ndarray, shape (K,)
        The sectors' arcs, each in :math:`[0, \pi]`, summing to :math:`2\pi`.
    attained : bool
        Whether an intercept-free argmax rule realises this partition: every non-empty arc is
        below :math:`\pi`, or two classes take half-planes and the third nothing. Otherwise the
        accuracy is a supremum, approached but not reached.
    slack : ndarray, shape (K,)
        For each sector whose arc is :math:`\pi`, the rate at which the accuracy would grow if
        that sector could open further (sum over its two rays of the density difference
        :math:`\pi_k f_k - \pi_j f_j`); 0 for the others. Positive: the constraint binds.
    """

    accuracy: float
    order: tuple
    rays: np.ndarray
    arcs: np.ndarray
    attained: bool
    slack: np.ndarray


def best_cone_rule(x_mixture: GaussianMixture, *, n_grid: int = 360) -> ConeRule:
    r"""The supremum of the accuracy of intercept-free argmax rules :math:`\arg\max_k w_k^\top x` on
    three classes in the plane.

    :prf:ref:`prop-07-linear-ceiling` (Chapter 7): the decision regions of such a rule are disjoint
    convex cones, sectors of arc at most :math:`\pi`, and every partition of the circle into three
    consecutive sectors of arcs in :math:`[0, \pi]` is a rule or a limit of rules, so

    .. math::

        \sup_W \mathrm{acc}(W) = \max\Big\{\sum_k\pi_k P_k(S_k):\ S_k\text{ consecutive sectors,
        arcs}
        \in[0,\pi]\Big\}.

    The objective is separable in the three rays (a ray between classes :math:`i` and
    :math:`j` contributes :math:`\pi_iF_i(\rho) - \pi_jF_j(\rho)`, :math:`F_k` the angular
    distribution function of class :math:`k`); it is tabulated on ``n_grid`` angles
    (24-point Gauss–Legendre per cell of :func:`sector_probability`'s density), maximised over
    the grid for both cyclic orders, and polished by SLSQP with the exact density as
    gradient and the arcs' bounds as linear constraints.
    """
    from scipy.optimize import minimize

    x_mixture = check_mixture(x_mixture, "x_mixture")
    if x_mixture.dim != 2 or x_mixture.n_components != 3:
        raise ValueError(
            "x_mixture must have 3 components in dimension 2, got "
            f"{x_mixture.n_components} in dimension {x_mixture.dim}"
        )
    if (
        isinstance(n_grid, bool)
        or not isinstance(n_grid, (int, np.integer))
        or n_grid < 12
        or n_grid % 2
    ):
        raise ValueError(f"n_grid must be an even integer >= 12, got {n_grid!r}")
    pi = x_mixture.weights
    white = [_whiten(m, G) for m, G in zip(x_mixture.means, x_mixture.covs)]

    def density(k: int, theta: np.ndarray) -> np.ndarray:
        """Density of the polar angle of class k at theta (through the whitening map)."""
        mt, Rinv = white[k]
        theta = np.atleast_1d(np.asarray(theta, dtype=float))
        u = np.stack([np.cos(theta), np.sin(theta)])
        v = Rinv @ u  # whitened directions
        phi = np.arctan2(v[1], v[0])
        jac = np.abs(np.linalg.det(Rinv)) / np.sum(v**2, axis=0)  # d(phi)/d(theta)
        return _angle_density(phi, mt) * jac

    N = int(n_grid)
    edges = np.linspace(0.0, 2 * np.pi, N + 1)
    half = np.diff(edges)[0] / 2
    nodes = (edges[:-1, None] + half * (1 + _GL_NODES[None])).ravel()
    F = np.zeros((3, N + 1))
    for k in range(3):
        cells = (density(k, nodes).reshape(N, -1) @ _GL_WEIGHTS) * half
        F[k, 1:] = np.cumsum(cells)

    def Fw(k: int, idx: np.ndarray) -> np.ndarray:
        q, r = np.divmod(idx, N)
        return F[k][r] + q

    H = N // 2
    d0, d1 = np.arange(H + 1)[:, None], np.arange(H + 1)[None, :]
    feasible = d0 + d1 >= H  # the third arc N - d0 - d1 <= H
    best = (-np.inf, None, None)
    for order in ((0, 1, 2), (0, 2, 1)):
        o0, o1, o2 = order
        for ia in range(N):
            ib, ic = ia + d0, ia + d0 + d1
            acc = (
                pi[o0] * (Fw(o0, ib) - Fw(o0, np.array(ia)))
                + pi[o1] * (Fw(o1, ic) - Fw(o1, ib))
                + pi[o2] * (Fw(o2, np.array(ia + N)) - Fw(o2, ic))
            )
            acc = np.where(feasible, acc, -np.inf)
            j = np.unravel_index(int(np.argmax(acc)), acc.shape)
            if acc[j] > best[0]:
                best = (
                    float(acc[j]),
                    order,
                    np.array([ia, ia + j[0], ia + j[0] + j[1]]) * (2 * np.pi / N),
                )

    _, order, rays0 = best

    def accuracy(r: np.ndarray) -> float:
        ends = np.append(r[1:], r[0] + 2 * np.pi)
        return float(
            sum(
                pi[k] * sector_probability(x_mixture.means[k], x_mixture.covs[k], a, b)
                for k, a, b in zip(order, r, ends)
                if b > a
            )
        )

    def gradient(r: np.ndarray) -> np.ndarray:
        prev = (order[2], order[0], order[1])  # the class ending at each ray
        return np.array(
            [
                pi[p] * density(p, r[i])[0] - pi[c] * density(c, r[i])[0]
                for i, (p, c) in enumerate(zip(prev, order))
            ]
        )

    # arcs (minus 2π on the last)
    A = np.array([[-1.0, 1.0, 0.0], [0.0, -1.0, 1.0], [1.0, 0.0, -1.0]])
    shift = np.array([0.0, 0.0, 2 * np.pi])
    cons = [
        {"type": "ineq", "fun": lambda r: A @ r + shift, "jac": lambda r: A},
        {"type": "ineq", "fun": lambda r: np.pi - (A @ r + shift), "jac": lambda r: -A},
    ]
    res = minimize(
        lambda r: -accuracy(r),
        rays0,
        jac=lambda r: -gradient(r),
        method="SLSQP",
        constraints=cons,
        options={"ftol": 1e-15, "maxiter": 200},
    )
    rays = res.x if -res.fun >= best[0] else rays0
    arcs = np.clip(A @ rays + shift, 0.0, np.pi)
    acc = accuracy(rays)
    tol = 1e-6
    full = arcs >= np.pi - tol
    empty = arcs <= tol
    attained = bool(not np.any(full) or (np.sum(full) == 2 and np.sum(empty) == 1))
    g = gradient(rays)
    # opening sector i moves its start ray back (−g[i]) and its end ray forward (+g[i+1])
    slack = np.where(full, -g + np.roll(g, -1), 0.0)
    return ConeRule(
        acc, tuple(int(k) for k in order), np.mod(rays, 2 * np.pi), arcs, attained, slack
    )
