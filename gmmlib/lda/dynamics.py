r"""The dynamics of one softmax head on the LDA task (Chapter 6).

Population gradient descent and the gradient flow on the attention parameters, stochastic
gradient descent on fresh samples (several independent chains at once), the stationary excess
risk of constant-step SGD near a Bayes minimiser, and the valley floor left by a gate once the
affine part is refitted. The task, the predictor and the risk are in :mod:`gmmlib.lda.task`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from scipy.special import expit

from ._rules import adjoint_map, effective_map, sigmoid, weighted_sum
from .._validation import as_float_array, check_positive, check_type
from .task import (
    RISK_TOLERANCE,
    LDABlocks,
    LDAModel,
    attention_jacobian,
    attention_risk_grad,
    effective_params,
)
from ..quadrature import gauss_hermite
from ..records import Trajectory

__all__ = [
    "population_gradient_descent",
    "gradient_flow",
    "SGDChains",
    "sgd_chains",
    "valley_excess",
    "sgd_excess_floor",
]


def population_gradient_descent(
    model: LDAModel,
    theta0: LDABlocks,
    lr: float,
    steps: int,
    n_points: int = 40,
    callback: Any | None = None,
    *,
    rule: str = "gauss-hermite",
    tol: float | None = RISK_TOLERANCE,
) -> LDABlocks:
    r"""Population gradient descent :math:`\theta_{k+1} = \theta_k - \eta\,\nabla_\theta
    R(\theta_k)` on one head.

    The discrete dynamics of :prf:ref:`prop-06-local` and :prf:ref:`thm-06-symmetric` (Chapter 6).
    Not :func:`gmmlib.training.train`: there are no batches and no autograd here. Each step is
    deterministic, on the population risk computed by quadrature, so the iterates are the exact
    Euler steps of :func:`gradient_flow` (step ``lr``), to the rule's accuracy; ``train`` takes
    stochastic steps on sampled prompts (as :func:`sgd_chains` does, vectorised). The risk and its
    gradient come from :func:`~gmmlib.lda.task.attention_risk_grad` (``rule``, ``n_points`` and
    ``tol`` as in :func:`~gmmlib.lda.task.population_risk`).

    Parameters
    ----------
    model : LDAModel
    theta0 : LDABlocks
        The start :math:`\theta_0`.
    lr : float
        The step :math:`\eta > 0`.
    steps : int
        The number of steps :math:`k`.
    n_points : int
        Quadrature nodes (per axis, or per panel for the adaptive rule).
    callback : callable, optional
        Called as ``callback(k, theta, risk, grad)`` for ``k = 0, ..., steps`` with
        :math:`\theta_k`, :math:`R(\theta_k)` and :math:`\nabla R(\theta_k)` (an
        :class:`LDABlocks`), before the step; at ``k = steps`` no step follows.

    Returns
    -------
    LDABlocks
        :math:`\theta_{\text{steps}}`.
    """
    model = check_type(model, LDAModel, "model")
    if theta0.dim != model.dim:
        raise ValueError(f"theta0 has dimension {theta0.dim}, the model {model.dim}")
    check_positive(lr, "lr")
    if int(steps) != steps or steps < 0:
        raise ValueError(f"steps must be a non-negative integer, got {steps}")
    d, vec = model.dim, theta0.vector().copy()
    for k in range(int(steps) + 1):
        theta = LDABlocks.from_vector(vec, d)
        if callback is None and k == steps:
            break
        risk, g = attention_risk_grad(model, theta, n_points, rule=rule, tol=tol)
        if callback is not None:
            callback(k, theta, risk, g)
        if k < steps:
            vec = vec - lr * g.vector()
    return LDABlocks.from_vector(vec, d)


def gradient_flow(
    model: LDAModel,
    theta0: LDABlocks,
    t_eval: Any,
    n_points: int = 40,
    *,
    rule: str = "gauss-hermite",
    tol: float | None = RISK_TOLERANCE,
    method: str = "LSODA",
    rtol: float = 1e-10,
    atol: float = 1e-13,
) -> Trajectory:
    r"""The population gradient flow :math:`\dot\theta = -\nabla_\theta R(\theta)`, solved by an ODE
    solver.

    The dynamics of :prf:ref:`prop-06-local` and :prf:ref:`thm-06-symmetric` (Chapter 6; Theorems
    3.5 and 3.6 of Gabet et al., 2026). Gradient descent with a small step follows this flow at the
    time :math:`t = \eta k`; an ODE solver with error control reaches long horizons in few gradient
    evaluations. ``method`` is passed to ``scipy.integrate.solve_ivp``: ``"LSODA"`` (Petzold, 1983)
    switches automatically between an Adams method and a BDF method when the flow becomes stiff
    (slow drift along flat directions next to fast normal decay, as near the minimisers);
    ``"DOP853"`` and ``"RK45"`` are explicit Runge–Kutta methods (Hairer, Nørsett & Wanner, 1993),
    cheaper per step while the flow is not stiff. The gradient is
    :func:`~gmmlib.lda.task.attention_risk_grad` (``n_points``, ``rule``, ``tol`` as there).

    Parameters
    ----------
    t_eval : array_like
        Increasing times :math:`\ge 0` at which to return :math:`\theta_t` (the flow starts at 0).

    Returns
    -------
    Trajectory
        ``t`` (the times), ``thetas`` (an :class:`LDABlocks` per time) and ``nfev``.
    """
    from scipy.integrate import solve_ivp

    model = check_type(model, LDAModel, "model")
    if theta0.dim != model.dim:
        raise ValueError(f"theta0 has dimension {theta0.dim}, the model {model.dim}")
    t_eval = as_float_array(t_eval, "t_eval", ndim=1)
    if t_eval.size == 0 or t_eval[0] < 0 or np.any(np.diff(t_eval) <= 0):
        raise ValueError("t_eval must be a non-empty increasing array of times >= 0")
    d = model.dim
    count = [0]

    def rhs(_t: float, y: np.ndarray) -> np.ndarray:
        count[0] += 1
        return -attention_risk_grad(
            model, LDABlocks.from_vector(y, d), n_points, rule=rule, tol=tol
        )[1].vector()

    sol = solve_ivp(
        rhs,
        (0.0, float(t_eval[-1])),
        theta0.vector(),
        method=method,
        t_eval=t_eval,
        rtol=rtol,
        atol=atol,
    )
    if sol.status != 0:
        raise RuntimeError(f"the ODE solver {method} failed: {sol.message}")
    return Trajectory(sol.t, [LDABlocks.from_vector(y, d) for y in sol.y.T], count[0])


class SGDChains(NamedTuple):
    """Independent SGD chains: the recorded steps and, per chain, the heads at those steps."""

    steps: np.ndarray
    thetas: list


def _draw_batch(
    model: LDAModel, chol: np.ndarray, shape: tuple[int, int], rng: Any
) -> tuple[np.ndarray, np.ndarray]:
    """Fresh pairs (X, Y) of the LDA model, of shape ``shape + (d,)`` and ``shape``."""
    Y = np.where(rng.random(shape) < model.pi_pos, 1.0, -1.0)
    mean = np.where(Y[..., None] > 0, model.m_pos, model.m_neg)
    return mean + rng.standard_normal(shape + (model.dim,)) @ chol.T, Y


def _theta_batch(theta0: LDABlocks, n_chains: int) -> list[np.ndarray]:
    return [
        np.repeat(np.asarray(a, dtype=np.float64)[None], n_chains, axis=0)
        for a in (theta0.U11, theta0.u21, theta0.v21, np.array(theta0.v22))
    ]


def sgd_chains(
    model: LDAModel,
    theta0: LDABlocks,
    lr: float,
    batch_size: int,
    steps: int,
    rng: Any,
    *,
    n_chains: int = 1,
    record_every: int = 1,
) -> SGDChains:
    r"""Online SGD on the logistic loss of one head, for several independent chains at once.

    Each step draws, for each chain, a fresh batch of ``batch_size`` pairs :math:`(X, Y)` of the LDA
    model and moves :math:`\theta \leftarrow \theta -
    \eta\,\frac1B\sum_b\nabla_\theta\ell(Y_bf_\theta(X_b))`. The gradient is written out: with
    :math:`c_b = -Y_b\sigma(-Y_bf_\theta(X_b))/B` and the gate :math:`g = \sigma(s_0 + s^\top x)`,
    :math:`\nabla_{(w,b,r,s)} = \sum_b c_b\,(X_b, 1, g_b, r g_b(1-g_b)X_b)`, pulled back by the
    adjoint :math:`J^\top` of :prf:ref:`prop-05-adjoint`, :math:`(\Gamma v_{21}g_w^\top + \Delta
    g_s^\top,\ 2g_s,\ \Gamma U_{11}g_w + m_{-1}g_b + \Delta g_r,\ -g_b + 2g_r)`. This is the same
    dynamics as :func:`gmmlib.training.train` with :class:`gmmlib.lda.autograd.LDABlocksModule` and
    ``optimizer="sgd"`` (``tests/gmmlib/test_lda.py`` compares them step by step), vectorised in
    numpy over
    the chains: about fifty times faster for this small head, which makes replicated runs of
    :math:`10^4` steps affordable.

    Parameters
    ----------
    model : LDAModel
    theta0 : LDABlocks
        The common start of the chains.
    lr : float
        The step :math:`\eta > 0`.
    batch_size : int
        The batch size :math:`B`.
    steps : int
        The number of steps.
    rng : numpy.random.Generator
        The source of the batches (the chains' batches are independent draws).
    n_chains : int
        The number of independent chains.
    record_every : int
        Record the heads at steps ``0, record_every, 2 record_every, ...`` (and at ``steps``).

    Returns
    -------
    SGDChains
        ``steps`` (the recorded step numbers) and ``thetas`` (a list over the recorded steps of
        lists over the chains of :class:`~gmmlib.lda.task.LDABlocks`).
    """
    model = check_type(model, LDAModel, "model")
    if theta0.dim != model.dim:
        raise ValueError(f"theta0 has dimension {theta0.dim}, the model {model.dim}")
    lr = check_positive(lr, "lr")
    batch = check_positive(batch_size, "batch_size", integer=True)
    n_chains = check_positive(n_chains, "n_chains", integer=True)
    record_every = check_positive(record_every, "record_every", integer=True)
    if int(steps) != steps or steps < 0:
        raise ValueError(f"steps must be a non-negative integer, got {steps}")
    cov, delta, m_neg = model.cov, model.delta, model.m_neg
    chol = np.linalg.cholesky(cov)
    U, u, v, v22 = _theta_batch(theta0, n_chains)
    recorded, thetas = [], []

    def record(k: int) -> None:
        recorded.append(k)
        thetas.append(
            [
                LDABlocks(U[i].copy(), u[i].copy(), v[i].copy(), float(v22[i]))
                for i in range(n_chains)
            ]
        )

    for k in range(int(steps) + 1):
        if k % record_every == 0 or k == steps:
            record(k)
        if k == steps:
            break
        X, Y = _draw_batch(model, chol, (n_chains, batch), rng)
        w, b, r, s = effective_map(cov, m_neg, delta, U, u, v, v22)  # eq-04-map
        gate = expit(model.s0 + (X @ s[:, :, None])[..., 0])
        f = (X @ w[:, :, None])[..., 0] + b[:, None] + r[:, None] * gate
        c = -Y * expit(-Y * f) / batch
        g_w = (c[:, None, :] @ X)[:, 0]
        g_b, g_r = c.sum(axis=1), (c * gate).sum(axis=1)
        g_s = r[:, None] * ((c * gate * (1 - gate))[:, None, :] @ X)[:, 0]
        grad_U, grad_u, grad_v, grad_v22 = adjoint_map(model, U, v, g_w, g_b, g_r, g_s)
        U = U - lr * grad_U
        u = u - lr * grad_u
        v = v - lr * grad_v
        v22 = v22 - lr * grad_v22
    return SGDChains(np.array(recorded), thetas)


def valley_excess(
    model: LDAModel, r: float, s: Any, n_points: int = 40, *, refit: bool = True
) -> tuple[float, float]:
    r"""The excess risk left by a gate :math:`(r, s)` once the affine part is refitted, to second
    order.

    .. math::

        V(r, s) = \tfrac12\min_{a\in\mathbb R^d,\,c\in\mathbb R}
        \mathbb E\big[\sigma'(f^*(X))\,\big(r(\sigma(s_0+s^\top X) - \sigma(s_0)) - a^\top X -
        c\big)^2\big],

    the second-order expansion of :math:`\min_{w,b}R(w,b,r,s) - R^*` (the conditional risk
    :math:`t\mapsto\eta\ell(t)+(1-\eta)\ell(-t)` has second derivative :math:`\sigma'(t)`). For
    small :math:`s` the gate's constant and linear parts are absorbed and what is left is
    :math:`\frac12 r\sigma''(s_0)(s^\top x)^2` (projected), so :math:`V` is quartic in :math:`s`
    when :math:`\sigma''(s_0)\ne0` and of sixth order at :math:`\pi_+ = \frac12`: the flat
    directions of :prf:ref:`prop-06-local` (Chapter 6) and the plateau of the symmetric runs.

    With ``refit=False`` the affine part is not refitted (:math:`a = 0`, :math:`c = 0`): the
    excess of the gate term alone, for comparison.

    Returns ``(V, remainder)`` where ``remainder`` bounds the third-order term,
    :math:`\frac16\mathbb E[\sigma'(f^*)e^{|\delta|}|\delta|^3]` with :math:`\delta` the optimal
    residual (:math:`|\sigma''| \le \sigma'` and :math:`\sigma'(f^*+t)\le e^{|t|}\sigma'(f^*)`).
    Computed in whitened coordinates :math:`z = L^{-1}x` (:math:`\Gamma = LL^\top`) on the span of
    :math:`L^{-1}m_{\pm1}` and :math:`L^\top s`, of dimension at most 3 (the rest of :math:`z` is
    noise independent of the class, which the optimal :math:`a` ignores), by a tensor Gauss–Hermite
    rule.
    """
    model = check_type(model, LDAModel, "model")
    s = as_float_array(s, "s", ndim=1)
    if s.shape != (model.dim,):
        raise ValueError(f"s must have shape ({model.dim},), got {s.shape}")
    r = float(as_float_array(r, "r", ndim=0))
    check_positive(n_points, "n_points", integer=True)
    L = np.linalg.cholesky(model.cov)
    w_star, b_star = model.bayes_params()
    span = np.column_stack(
        [np.linalg.solve(L, model.m_pos), np.linalg.solve(L, model.m_neg), L.T @ s]
    )
    u, sv, _ = np.linalg.svd(span, full_matrices=False)
    Q = u[:, sv > 1e-12 * max(sv[0], 1e-300)]
    if Q.shape[1] == 0:
        Q = np.eye(model.dim)[:, :1]
    xi, wt = gauss_hermite(n_points, Q.shape[1])
    a_w, a_s = Q.T @ (L.T @ w_star), Q.T @ (L.T @ s)
    Y, W, G = [], [], []
    for m, pc in ((model.m_pos, model.pi_pos), (model.m_neg, 1 - model.pi_pos)):
        y = Q.T @ np.linalg.solve(L, m) + xi
        fs = y @ a_w + b_star
        Y.append(y)
        W.append(pc * wt * sigmoid(fs) * sigmoid(-fs))
        G.append(r * (sigmoid(model.s0 + y @ a_s) - sigmoid(np.array(model.s0))))
    Y, W, G = np.concatenate(Y), np.concatenate(W), np.concatenate(G)
    Phi = np.column_stack([np.ones(len(Y)), Y])
    if refit:
        coef = np.linalg.lstsq(np.sqrt(W)[:, None] * Phi, np.sqrt(W) * G, rcond=None)[0]
        delta = G - Phi @ coef
    else:
        delta = G
    value = 0.5 * weighted_sum(W, delta**2)
    remainder = weighted_sum(W, np.exp(np.abs(delta)) * np.abs(delta) ** 3) / 6.0
    return float(value), float(remainder)


def sgd_excess_floor(
    model: LDAModel,
    theta: LDABlocks,
    lr: float,
    batch_size: int,
    rng: Any,
    *,
    n_samples: int = 50_000,
) -> float:
    r"""The stationary excess risk of constant-step SGD on fresh batches near a Bayes minimiser.

    Implements :prf:ref:`rem-06-sgd-floor` of Chapter 6. At a minimiser with :math:`f_\theta =
    f^\star` the logistic model is well specified, so the covariance of one sample's gradient equals
    the Hessian, :math:`\operatorname{Cov}\nabla_\theta\ell = H = \mathbb
    E[\sigma'(f)\,\nabla_\theta f\,\nabla_\theta f^\top]` (the term with :math:`\nabla^2_\theta f`
    has mean zero there). Linearised, SGD with step :math:`\eta` and batches of :math:`B` is
    :math:`\delta_{k+1} = (I - \eta H)\delta_k - \eta\xi_k`, :math:`\operatorname{Cov}\xi_k = H/B`;
    its stationary covariance :math:`P` solves :math:`HP + PH - \eta HPH = (\eta/B)H`, so on each
    eigenvector of :math:`H`, :math:`P = \eta/(B(2 - \eta\lambda))`, and

    .. math::

        \mathbb E[R(\theta_k) - R^\star] \approx \tfrac12\operatorname{tr}(HP)
        = \frac{\eta}{4B}\sum_i\frac{\lambda_i}{1 - \eta\lambda_i/2}.

    The eigenvalues :math:`\lambda_i > 0` of :math:`H = J^\top F J` (:math:`J` the Jacobian of
    :func:`~gmmlib.lda.task.attention_jacobian`, :math:`F = \mathbb E[\sigma'(f)\,g g^\top]`,
    :math:`g = \nabla_{(w,b,r,s)}f`) are those of :math:`F^{1/2}JJ^\top F^{1/2}`; :math:`F` is
    estimated by Monte Carlo on ``n_samples`` draws from ``rng`` (a relative error of order
    :math:`n^{-1/2}`).
    """
    model = check_type(model, LDAModel, "model")
    lr = check_positive(lr, "lr")
    batch = check_positive(batch_size, "batch_size", integer=True)
    n_samples = check_positive(n_samples, "n_samples", integer=True)
    eff = effective_params(model, theta)
    X, _ = model.sample(n_samples, rng)
    gate = expit(model.s0 + X @ eff.s)
    f = X @ eff.w + eff.b + eff.r * gate
    g = np.hstack(
        [X, np.ones((n_samples, 1)), gate[:, None], (eff.r * gate * (1 - gate))[:, None] * X]
    )
    p = expit(f)
    F = (g * (p * (1 - p))[:, None]).T @ g / n_samples
    J = attention_jacobian(model, theta)
    vals, vecs = np.linalg.eigh(F)
    root = (vecs * np.sqrt(np.clip(vals, 0.0, None))) @ vecs.T
    lam = np.clip(np.linalg.eigvalsh(root @ J @ J.T @ root), 0.0, None)
    if np.any(lr * lam >= 2.0):
        raise ValueError(f"lr = {lr:g} is unstable here: lr·λ_max = {lr * lam.max():.3g} ≥ 2")
    return float(lr / (4 * batch) * np.sum(lam / (1 - lr * lam / 2)))
