r"""The rules and maps behind :mod:`gmmlib.lda.task`'s population risks (a private module).

The risk of one head depends on :math:`x` through :math:`T = (w^\top x, s^\top x)`, Gaussian given
the class. :func:`class_nodes` returns, per class, nodes and weights for :math:`T`: a tensor
Gauss–Hermite rule, or composite Gauss–Legendre panels graded toward the gate's transition and the
loss's kink (accurate for sharp gates); :func:`rule_risk` evaluates the risk on a rule and
:func:`check_converged` compares it with a coarser rule; :func:`effective_map` and
:func:`adjoint_map` are :eq:`eq-04-map` and its adjoint, written once for numpy and torch. The
public functions are in :mod:`gmmlib.lda.task`, :mod:`gmmlib.lda.dynamics` and
:mod:`gmmlib.lda.autograd`, which import these by name. ``model`` is a
:class:`gmmlib.lda.task.LDAModel` and ``eff`` an :class:`gmmlib.lda.task.EffectiveParams`
throughout; this module reads their fields and does not import :mod:`gmmlib.lda.task` (which
imports it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import check_positive
from ..quadrature import gaussian_nodes

#: The quadrature rules of the population risks: a tensor Gauss–Hermite rule on
#: :math:`(w^\top X, s^\top X)`, or graded Gauss–Legendre panels adapted to the gate and the loss.
RULES = ("gauss-hermite", "adaptive")


def _gate_coordinates(model: Any, w: np.ndarray, s: np.ndarray, m: np.ndarray) -> tuple[float, ...]:
    r"""``(mu1, beta, sig12, mu2, sig2)`` with :math:`w^\top X = \mu_1 + \beta u + \sigma_{1|2}v`,
    :math:`s^\top X = \mu_2 + \sigma_2 u`.

    For :math:`X\sim\mathcal N(m,\Gamma)`; :math:`u, v` are independent standard normals (:math:`u`
    runs along the gate direction, :math:`v` is the part of :math:`w^\top X` independent of it).
    """
    G = model.cov
    c11, c12, c22 = float(w @ G @ w), float(w @ G @ s), float(s @ G @ s)
    if c22 > 0.0:
        sig2 = np.sqrt(c22)
        return (
            float(w @ m),
            c12 / sig2,
            float(np.sqrt(max(c11 - c12 * c12 / c22, 0.0))),
            float(s @ m),
            float(sig2),
        )
    return float(w @ m), 0.0, float(np.sqrt(max(c11, 0.0))), float(s @ m), 0.0


def _kinks(
    a: float, beta: float, r: float, kappa: float, sig2: float, z_max: float
) -> tuple[np.ndarray, np.ndarray]:
    r"""Roots in :math:`[-z_{\max}-1, z_{\max}+1]` of :math:`F(u) = a + \beta u + r\sigma(\kappa +
    \sigma_2u)` and :math:`F'` there."""
    if beta == 0.0 and (r == 0.0 or sig2 == 0.0):
        return np.zeros(0), np.zeros(0)
    grid = np.linspace(-z_max - 1.0, z_max + 1.0, 1025)

    def F(u):
        return a + beta * u + r * sigmoid(kappa + sig2 * u)

    vals = F(grid)
    idx = np.nonzero(vals[:-1] * vals[1:] <= 0.0)[0][:8]
    lo, hi = grid[idx], grid[idx + 1]
    fine = np.linspace(0.0, 1.0, 65)
    for _ in range(4):  # refine each bracket 64-fold, four times: width < 0.02 / 64⁴ < 1e-8
        pts = lo[:, None] + (hi - lo)[:, None] * fine
        vals = F(pts)
        j = np.argmax(vals[:, :-1] * vals[:, 1:] <= 0.0, axis=1)
        rows = np.arange(lo.size)
        lo, hi = pts[rows, j], pts[rows, j + 1]
    roots = 0.5 * (lo + hi)
    g = sigmoid(kappa + sig2 * roots)
    return roots, beta + r * sig2 * g * (1.0 - g)


def _adaptive_nodes(
    model: Any, eff: Any, m: np.ndarray, n_points: int
) -> tuple[np.ndarray, np.ndarray]:
    """Nodes of (wᵀX, sᵀX), X ~ N(m, Γ), from graded panels along the gate (u) and across the loss's
    kink (v)."""
    from ..quadrature import GRADED_Z_MAX, graded_normal_rule

    w, b, r, s = eff
    mu1, beta, sig12, mu2, sig2 = _gate_coordinates(model, w, s, m)
    a, kappa = mu1 + b, model.s0 + mu2
    if sig2 == 0.0 and beta == 0.0:  # nothing varies along u
        u, wu = np.zeros(1), np.ones(1)
    else:
        roots, slopes = _kinks(a, beta, r, kappa, sig2, GRADED_Z_MAX)
        pts = [(-kappa / sig2, np.pi / sig2)] if sig2 > 0 else []
        pts += [
            (u0, np.hypot(np.pi, sig12) / abs(sl)) for u0, sl in zip(roots, slopes) if sl != 0.0
        ]
        pts = np.array(pts, dtype=np.float64).reshape(-1, 2)
        u, wu = (x[0] for x in graded_normal_rule(pts[:, 0], pts[:, 1], n_points))
    F = a + beta * u + r * sigmoid(kappa + sig2 * u)
    if sig12 > 0.0:
        v, wv = graded_normal_rule(
            (-F / sig12)[:, None], np.full((u.size, 1), np.pi / sig12), n_points
        )
    else:
        v, wv = np.zeros((u.size, 1)), np.ones((u.size, 1))
    T1 = (mu1 + beta * u)[:, None] + sig12 * v
    T2 = np.broadcast_to((mu2 + sig2 * u)[:, None], T1.shape)
    W = wu[:, None] * wv
    # drop the nodes whose contribution is below 1e-20 even for the largest integrand (|f| + 1)
    keep = W * (1.0 + np.abs(T1) + abs(b) + abs(r)) > 1e-20
    return np.stack([T1[keep], T2[keep]], axis=1), W[keep]


def class_nodes(model: Any, eff: Any, n_points: int, rule: str = "gauss-hermite"):
    """Per class c: (c, m_c, π_c, nodes of (wᵀX, sᵀX) given Y = c, weights), by the chosen rule."""
    if rule not in RULES:
        raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
    check_positive(n_points, "n_points", integer=True)
    w, s = eff.w, eff.s
    P = np.stack([w, s])
    C = P @ model.cov @ P.T
    out = []
    for c, m, pc in ((1.0, model.m_pos, model.pi_pos), (-1.0, model.m_neg, 1 - model.pi_pos)):
        if rule == "gauss-hermite":
            T, wt = gaussian_nodes(P @ m, C, n_points)
        else:
            T, wt = _adaptive_nodes(model, eff, m, n_points)
        out.append((c, m, pc, T, wt))
    return out


def sigmoid(x: np.ndarray) -> np.ndarray:
    """The logistic function through tanh (exact to 1 ulp in absolute terms, and faster than
    expit)."""
    return 0.5 + 0.5 * np.tanh(0.5 * x)


def loss_terms(u: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r""":math:`\ell(u)`, :math:`\sigma(-u) = -\ell'(u)` and :math:`\ell''(u) = \sigma(u)\sigma(-u)`,
    from one exponential."""
    e = np.exp(-np.abs(u))
    inv = 1.0 / (1.0 + e)
    sig_neg = np.where(u >= 0, e * inv, inv)  # σ(-u)
    return np.log1p(e) + np.maximum(-u, 0.0), sig_neg, e * inv * inv


def weighted_sum(weights: np.ndarray, values: np.ndarray) -> float:
    """A weighted sum without BLAS (whose threads stall on busy machines for these vector sizes)."""
    return float(np.sum(weights * values))


def rule_risk(model: Any, eff: Any, n_points: int, rule: str) -> float:
    w, b, r, s = eff
    total = 0.0
    for c, _, pc, T, wt in class_nodes(model, eff, n_points, rule):
        u = c * (T[:, 0] + b + r * sigmoid(model.s0 + T[:, 1]))
        total += pc * (weighted_sum(wt, np.log1p(np.exp(-np.abs(u))) + np.maximum(-u, 0.0)))
    return float(total)


def check_converged(
    model: Any, eff: Any, n_points: int, rule: str, risk: float, tol: float | None
) -> None:
    """Raise ValueError when the rule changes by more than ``tol`` from a coarser rule to
    ``n_points`` nodes.

    The coarser rule has ``n_points // 2`` nodes per axis (Gauss–Hermite) or ``n_points - 2`` per
    panel (adaptive: Gauss–Legendre panels gain a fixed factor per node, Gauss–Hermite rules far
    less).
    """
    if tol is None:
        return
    n_coarse = max(n_points // 2 if rule == "gauss-hermite" else n_points - 2, 1)
    coarse = rule_risk(model, eff, n_coarse, rule)
    change = abs(risk - coarse)
    if not change <= tol * max(1.0, abs(risk)):
        width_w = float(np.sqrt(eff.w @ model.cov @ eff.w))
        width_s = float(np.sqrt(eff.s @ model.cov @ eff.s))
        hint = (
            "use rule='adaptive' (panels graded along the gate direction s)"
            if rule == "gauss-hermite"
            else "raise n_points"
        )
        raise ValueError(
            f"the {rule} rule with n_points = {n_points} has not converged at this point: the "
            f"risk changes by {change:.2e} from {n_coarse} to {n_points} nodes (allowed: {tol:g} "
            f"× max(1, R)); the widths are sqrt(wᵀΓw) = {width_w:.3g} and sqrt(sᵀΓs) = "
            f"{width_s:.3g} (a sharp gate when the latter is large). To proceed, {hint}."
        )


def risk_and_grad(model: Any, eff: Any, n_points: int, rule: str) -> tuple[float, ...]:
    """The risk and its partial derivatives ``(risk, g_w, g_b, g_r, g_s)`` on one rule (Stein's
    identity).

    The formulas are those of :func:`gmmlib.lda.task.population_risk_grad`, which checks the rule.
    """
    w, b, r, s = eff
    G = model.cov
    risk, gw, gb, gr, gs = 0.0, np.zeros(model.dim), 0.0, 0.0, np.zeros(model.dim)
    for c, m, pc, T, wt in class_nodes(model, eff, n_points, rule):
        g = sigmoid(model.s0 + T[:, 1])
        g1 = g * (1 - g)
        g2 = g1 * (1 - 2 * g)
        u = c * (T[:, 0] + b + r * g)
        loss, sig_neg, l2 = loss_terms(u)
        risk += pc * (weighted_sum(wt, loss))
        h = -c * sig_neg  # d/dt1 of the loss
        Eh, Eh1, Eh2 = weighted_sum(wt, h), weighted_sum(wt, l2), weighted_sum(wt, l2 * r * g1)
        gb += pc * Eh
        gr += pc * (weighted_sum(wt, h * g))
        gw += pc * (m * Eh + G @ (w * Eh1 + s * Eh2))
        k = h * r * g1
        Ek1 = weighted_sum(wt, l2 * r * g1)
        Ek2 = weighted_sum(wt, l2 * (r * g1) ** 2 + h * r * g2)
        gs += pc * (m * weighted_sum(wt, k) + G @ (w * Ek1 + s * Ek2))
    return float(risk), gw, float(gb), float(gr), gs


def effective_map(
    cov: Any,
    m_neg: Any,
    delta: Any,
    U11: Any,
    u21: Any,
    v21: Any,
    v22: Any,
    *,
    einsum: Any = np.einsum,
) -> tuple[Any, ...]:
    r""":eq:`eq-04-map`, the one copy for numpy and torch: arrays with any leading batch axes.

    ``cov``, ``m_neg``, ``delta`` are the model's :math:`\Gamma, m_{-1}, \Delta`; pass
    ``einsum=torch.einsum`` and tensors for torch (:mod:`gmmlib.lda.autograd` does).
    """
    w = einsum("...ji,...j->...i", U11, v21 @ cov)  # U11ᵀ Γ v21 (Γ symmetric)
    s = einsum("...ji,j->...i", U11, delta) + 2 * u21
    return w, v21 @ m_neg - v22, v21 @ delta + 2 * v22, s


def adjoint_map(
    model: Any,
    U11: np.ndarray,
    v21: np.ndarray,
    g_w: np.ndarray,
    g_b: Any,
    g_r: Any,
    g_s: np.ndarray,
) -> tuple[np.ndarray, ...]:
    r"""The adjoint :math:`J^\top` of :eq:`eq-04-map` (:prf:ref:`prop-05-adjoint`), the one copy:
    any leading batch axes.

    Returns the gradients in :math:`(U_{11}, u_{21}, v_{21}, v_{22})` from those in :math:`(w, b, r,
    s)`.
    """
    G, D = model.cov, model.delta
    g_b, g_r = np.asarray(g_b, dtype=np.float64), np.asarray(g_r, dtype=np.float64)
    grad_U = (v21 @ G)[..., :, None] * g_w[..., None, :] + D[:, None] * g_s[..., None, :]
    grad_v = (
        np.einsum("...ij,...j->...i", U11, g_w) @ G
        + g_b[..., None] * model.m_neg
        + g_r[..., None] * D
    )
    return grad_U, 2 * g_s, grad_v, 2 * g_r - g_b
