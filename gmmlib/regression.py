r"""In-context linear regression with one attention head (Chapter 2).

The data model: a task vector :math:`w\sim\mathcal N(0, I_d)`, inputs
:math:`x\sim\mathcal N(0,\Sigma)` and noiseless labels :math:`y = w^\top x`. A prompt holds
the tokens :math:`z_j = (x_j, y_j)\in\mathbb R^{d+1}`, :math:`j = 1..L`, and the query is
:math:`z_q = (x_q, 0)`; the prediction is the last coordinate of the head's output.

Given :math:`w`, a token is the centred Gaussian

.. math::

    z \sim \mathcal N\Big(0,\; \Gamma_w\Big),\qquad
    \Gamma_w = \begin{pmatrix}\Sigma & \Sigma w\\ w^\top\Sigma & w^\top\Sigma w\end{pmatrix},

so (Gaussian tilt lemma) infinite-prompt softmax attention and linear attention coincide.
With :math:`U = \operatorname{diag}(A, 0)` and :math:`V = b\,e_{d+1}e_{d+1}^\top` both
predict :math:`\hat y = b\,w^\top\Sigma A x_q`, with population risk

.. math::

    \mathcal R(A, b) = \mathbb E(\hat y - w^\top x_q)^2
    = \operatorname{tr}\big((b\Sigma A - I)\,\Sigma\,(b\Sigma A - I)^\top\big).

On a finite prompt linear attention predicts :math:`\hat y = b\,w^\top\hat\Sigma A x_q`,
:math:`\hat\Sigma = \frac1L\sum_j x_jx_j^\top`, and (fourth moments of Gaussians)

.. math::

    \mathcal R_L(A, b) = b^2\Big[\big(1+\tfrac1L\big)\operatorname{tr}(\Sigma A\Sigma A^\top\Sigma)
    + \tfrac{\operatorname{tr}\Sigma}{L}\operatorname{tr}(A\Sigma A^\top\Sigma)\Big]
    - 2b\operatorname{tr}(\Sigma A\Sigma) + \operatorname{tr}\Sigma,

minimised by :math:`bA = \Gamma_L^* = \big((1+\frac1L)\Sigma + \frac{\operatorname{tr}\Sigma}{L} I\big)^{-1}`
(Zhang, Frei and Bartlett's fixed point), with minimum
:math:`\operatorname{tr}\Sigma - \operatorname{tr}(\Sigma^2\Gamma^*_L)`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.integrate import solve_ivp

from ._validation import as_float_array, check_positive, check_rng
from .mixtures import GaussianMixture
from .quadrature import gauss_hermite

__all__ = [
    "RegressionBatch",
    "check_covariance",
    "sample_prompts",
    "token_covariance",
    "token_law",
    "embed_parameters",
    "limit_prediction",
    "population_risk",
    "population_risk_grad",
    "optimal_parameters",
    "optimal_linear_map",
    "finite_prompt_linear_risk",
    "optimal_finite_prompt_linear_risk",
    "softmax_variance_constant",
    "softmax_family_constant",
    "head_limit_risk",
    "GradientFlow",
    "gradient_flow",
]


# ---------------------------------------------------------------------------- validation
def check_covariance(cov: Any, name: str = "cov") -> np.ndarray:
    r"""Return ``cov`` as a symmetric positive-definite (d, d) float64 matrix :math:`\Sigma`.

    Raises
    ------
    ValueError
        If it is not square, not symmetric (to 1e-10 relative) or not positive definite.
    """
    S = as_float_array(cov, name, ndim=2)
    if S.shape[0] != S.shape[1] or S.shape[0] == 0:
        raise ValueError(f"{name} must be a square (d, d) matrix with d >= 1, got shape {S.shape}")
    scale = max(1.0, float(np.max(np.abs(S))))
    if np.max(np.abs(S - S.T)) > 1e-10 * scale:
        raise ValueError(f"{name} must be symmetric")
    S = 0.5 * (S + S.T)
    if np.min(np.linalg.eigvalsh(S)) <= 0:
        raise ValueError(f"{name} must be positive definite")
    return S


def _check_A_b(A: Any, b: Any, d: int) -> tuple[np.ndarray, float]:
    A = as_float_array(A, "A", ndim=2)
    if A.shape != (d, d):
        raise ValueError(f"A must have shape ({d}, {d}) to match cov, got {A.shape}")
    if isinstance(b, (bool, str)):
        raise TypeError(f"b must be a real number, got {type(b).__name__}")
    b = float(as_float_array(b, "b", ndim=0))
    return A, b


def _check_L(L: Any) -> int:
    check_positive(L, "L", integer=True)
    return int(L)


# ---------------------------------------------------------------------------- data model
@dataclass(frozen=True)
class RegressionBatch:
    """A batch of in-context regression prompts.

    Attributes
    ----------
    tokens : ndarray, shape (B, L, d+1)
        Rows :math:`(x_j, y_j)`.
    queries : ndarray, shape (B, 1, d+1)
        :math:`(x_q, 0)`.
    targets : ndarray, shape (B,)
        :math:`y_q = w^\\top x_q`.
    w : ndarray, shape (B, d)
        The task vectors.
    """

    tokens: np.ndarray
    queries: np.ndarray
    targets: np.ndarray
    w: np.ndarray


def sample_prompts(n_prompts: int, L: int, cov: Any, rng: Any) -> RegressionBatch:
    r"""Draw ``n_prompts`` prompts of ``L`` tokens :math:`(x_j, w^\top x_j)` and one query each.

    :math:`w\sim\mathcal N(0, I_d)` per prompt, :math:`x_j, x_q\sim\mathcal N(0,\Sigma)` i.i.d.

    Parameters
    ----------
    n_prompts, L : int
        Number of prompts and tokens per prompt.
    cov : array_like, shape (d, d)
        :math:`\Sigma`, positive definite.
    rng : numpy Generator or int seed
    """
    check_positive(n_prompts, "n_prompts", integer=True)
    L = _check_L(L)
    S = check_covariance(cov)
    rng = check_rng(rng)
    d = S.shape[0]
    R = np.linalg.cholesky(S)
    w = rng.standard_normal((n_prompts, d))
    X = rng.standard_normal((n_prompts, L + 1, d)) @ R.T
    y = np.einsum("bld,bd->bl", X, w)
    tokens = np.concatenate([X[:, :L], y[:, :L, None]], axis=-1)
    queries = np.concatenate([X[:, L:], np.zeros((n_prompts, 1, 1))], axis=-1)
    return RegressionBatch(tokens, queries, y[:, L], w)


def token_covariance(w: Any, cov: Any) -> np.ndarray:
    r"""The covariance :math:`\Gamma_w = \begin{pmatrix}\Sigma & \Sigma w\\ w^\top\Sigma & w^\top\Sigma w\end{pmatrix}` of :math:`z = (x, w^\top x)`."""
    S = check_covariance(cov)
    w = as_float_array(w, "w", ndim=1)
    if w.shape != (S.shape[0],):
        raise ValueError(f"w must have shape ({S.shape[0]},) to match cov, got {w.shape}")
    Sw = S @ w
    return np.block([[S, Sw[:, None]], [Sw[None, :], np.array([[w @ Sw]])]])


def token_law(w: Any, cov: Any) -> GaussianMixture:
    r"""The law :math:`\mathcal N(0,\Gamma_w)` of a token given the task :math:`w`, as a one-component mixture."""
    G = token_covariance(w, cov)
    return GaussianMixture.gaussian(np.zeros(G.shape[0]), G)


def embed_parameters(A: Any, b: float) -> tuple[np.ndarray, np.ndarray]:
    r"""The head :math:`U = \operatorname{diag}(A, 0)`, :math:`V = b\,e_{d+1}e_{d+1}^\top`, both (d+1, d+1)."""
    A = as_float_array(A, "A", ndim=2)
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"A must be square, got shape {A.shape}")
    d = A.shape[0]
    _, b = _check_A_b(A, b, d)
    U = np.zeros((d + 1, d + 1))
    U[:d, :d] = A
    V = np.zeros((d + 1, d + 1))
    V[d, d] = b
    return U, V


def limit_prediction(A: Any, b: float, w: Any, x_query: Any, cov: Any) -> np.ndarray:
    r"""The infinite-prompt prediction :math:`\hat y = b\,w^\top\Sigma A x_q` (softmax and linear attention agree).

    Parameters
    ----------
    A : array_like, shape (d, d)
    b : float
    w : array_like, shape (n, d) or (d,)
        Task vectors (one per query, or one for all).
    x_query : array_like, shape (n, d)
    cov : array_like, shape (d, d)

    Returns
    -------
    ndarray, shape (n,)
    """
    S = check_covariance(cov)
    d = S.shape[0]
    A, b = _check_A_b(A, b, d)
    X = as_float_array(x_query, "x_query", ndim=2)
    if X.shape[1] != d:
        raise ValueError(f"x_query must have shape (n, {d}), got {X.shape}")
    W = as_float_array(w, "w", ndim=(1, 2))
    W = np.broadcast_to(W, X.shape) if W.ndim == 1 else W
    if W.shape != X.shape:
        raise ValueError(f"w must have shape (d,) or {X.shape}, got {W.shape}")
    return b * np.einsum("nd,nd->n", W @ S, X @ A.T)


# ---------------------------------------------------------------------------- population risk
def population_risk(A: Any, b: float, cov: Any) -> float:
    r"""The infinite-prompt risk :math:`\mathcal R(A,b) = \operatorname{tr}\big((b\Sigma A - I)\Sigma(b\Sigma A - I)^\top\big)`."""
    S = check_covariance(cov)
    A, b = _check_A_b(A, b, S.shape[0])
    N = b * S @ A - np.eye(S.shape[0])
    return float(np.trace(N @ S @ N.T))


def population_risk_grad(A: Any, b: float, cov: Any) -> tuple[np.ndarray, float]:
    r"""The gradient of :math:`\mathcal R(A, b) = f(bA)`.

    With :math:`G = \nabla f(M) = 2\Sigma(\Sigma M - I)\Sigma` at :math:`M = bA`:
    :math:`\nabla_A\mathcal R = bG` and :math:`\partial_b\mathcal R = \langle G, A\rangle_F`.

    Returns
    -------
    grad_A : ndarray, shape (d, d)
    grad_b : float
    """
    S = check_covariance(cov)
    A, b = _check_A_b(A, b, S.shape[0])
    G = 2.0 * S @ (b * S @ A - np.eye(S.shape[0])) @ S
    return b * G, float(np.sum(G * A))


def optimal_parameters(cov: Any) -> tuple[np.ndarray, float]:
    r"""The balanced minimiser :math:`A^* = \operatorname{tr}(\Sigma^{-2})^{-1/4}\Sigma^{-1}`, :math:`b^* = \operatorname{tr}(\Sigma^{-2})^{1/4}`.

    :math:`b^*A^* = \Sigma^{-1}`, so :math:`\hat y = w^\top x_q` exactly, and
    :math:`\|A^*\|_F = b^*` (the point the balanced gradient flow reaches).
    Embed with :func:`embed_parameters` to get :math:`(U^*, V^*)`.
    """
    S = check_covariance(cov)
    Sinv = np.linalg.inv(S)
    t = float(np.trace(Sinv @ Sinv))
    return t ** -0.25 * Sinv, t**0.25


# ---------------------------------------------------------------------------- finite prompts
def optimal_linear_map(cov: Any, L: int | None = None) -> np.ndarray:
    r"""The optimal product :math:`bA` for linear attention on prompts of length :math:`L`.

    :math:`\Gamma_L^* = \big((1+\frac1L)\Sigma + \frac{\operatorname{tr}\Sigma}{L}I\big)^{-1}`;
    :math:`\Gamma_\infty^* = \Sigma^{-1}` for ``L=None``.
    """
    S = check_covariance(cov)
    if L is None:
        return np.linalg.inv(S)
    L = _check_L(L)
    d = S.shape[0]
    return np.linalg.inv((1.0 + 1.0 / L) * S + np.trace(S) / L * np.eye(d))


def finite_prompt_linear_risk(A: Any, b: float, cov: Any, L: int) -> float:
    r"""Risk of linear attention with :math:`U = \operatorname{diag}(A,0)`, :math:`V = be_{d+1}e_{d+1}^\top` on prompts of :math:`L` tokens.

    .. math::

        \mathcal R_L(A, b) = b^2\Big[\big(1+\tfrac1L\big)\operatorname{tr}(\Sigma A\Sigma A^\top\Sigma)
        + \tfrac{\operatorname{tr}\Sigma}{L}\operatorname{tr}(A\Sigma A^\top\Sigma)\Big]
        - 2b\operatorname{tr}(\Sigma A\Sigma) + \operatorname{tr}\Sigma,

    from :math:`\mathbb E[\hat\Sigma M\hat\Sigma] = (1+\frac1L)\Sigma M\Sigma + \frac1L\operatorname{tr}(M\Sigma)\Sigma`
    (Isserlis' theorem) with :math:`M = A\Sigma A^\top`.
    """
    S = check_covariance(cov)
    A, b = _check_A_b(A, b, S.shape[0])
    L = _check_L(L)
    M = A @ S @ A.T
    quad = (1.0 + 1.0 / L) * np.trace(S @ M @ S) + np.trace(S) / L * np.trace(M @ S)
    return float(b * b * quad - 2.0 * b * np.trace(S @ A @ S) + np.trace(S))


def optimal_finite_prompt_linear_risk(cov: Any, L: int) -> float:
    r"""The smallest risk of one linear-attention head on prompts of :math:`L` tokens.

    :math:`\mathcal R_L^* = \operatorname{tr}\Sigma - \operatorname{tr}(\Sigma^2\Gamma_L^*)
    = \sum_i \lambda_i\,\frac{\lambda_i/L + \operatorname{tr}\Sigma/L}{(1+1/L)\lambda_i + \operatorname{tr}\Sigma/L}`
    (:math:`\lambda_i` the eigenvalues of :math:`\Sigma`); :math:`d(d+1)/(L+d+1)` for :math:`\Sigma = I_d`.
    """
    S = check_covariance(cov)
    G = optimal_linear_map(S, L)
    return float(np.trace(S) - np.trace(S @ S @ G))


def softmax_variance_constant(A: Any, b: float, cov: Any) -> float:
    r"""The prompt-length constant :math:`\bar C = \lim_L L\,\mathbb E(\hat y_L - \hat y_\infty)^2` of softmax attention.

    For one query the finite-prompt error law of Chapter 1 gives, with :math:`a = (Ax_q, 0)`
    and the token law :math:`\mathcal N(0,\Gamma_w)`,
    :math:`L\,\mathbb E[(\hat y_L - \hat y_\infty)^2\mid w, x_q] \to e^{\kappa}\,b^2\big(w^\top\Sigma w + (w^\top\Sigma Ax_q)^2\big)`,
    :math:`\kappa = x_q^\top A^\top\Sigma A x_q`. Averaging over :math:`w\sim\mathcal N(0, I)` and
    :math:`x_q\sim\mathcal N(0,\Sigma)` (Gaussian integrals, :math:`K = A^\top\Sigma A`,
    :math:`P = A^\top\Sigma^2A`):

    .. math::

        \bar C(A, b) = \frac{b^2}{\sqrt{\det(I - 2\Sigma K)}}\Big(\operatorname{tr}\Sigma
        + \operatorname{tr}\big(P\,(\Sigma^{-1} - 2K)^{-1}\big)\Big),

    finite iff :math:`\Sigma^{-1} - 2K` is positive definite (``inf`` otherwise: the
    average is dominated by queries whose effective prompt length :math:`Le^{-\kappa}` is tiny).
    When :math:`b\Sigma A = I` the limit is exact, and the risk of softmax attention on
    prompts of :math:`L` tokens is :math:`\bar C/L + o(1/L)`.
    """
    S = check_covariance(cov)
    d = S.shape[0]
    A, b = _check_A_b(A, b, d)
    K = A.T @ S @ A
    P = A.T @ S @ S @ A
    Sinv = np.linalg.inv(S)
    inner = Sinv - 2.0 * K
    inner = 0.5 * (inner + inner.T)
    if np.min(np.linalg.eigvalsh(inner)) <= 0:
        return float("inf")
    sign, logdet = np.linalg.slogdet(np.eye(d) - 2.0 * S @ K)
    if sign <= 0:  # pragma: no cover - excluded by the eigenvalue test above
        return float("inf")
    return float(b * b * np.exp(-0.5 * logdet) * (np.trace(S) + np.trace(P @ np.linalg.inv(inner))))


def softmax_family_constant(c2: Any, cov: Any) -> np.ndarray | float:
    r"""The constant :math:`\bar C` of :func:`softmax_variance_constant` on the exact family :math:`A = c\,\Sigma^{-1}`, :math:`b = 1/c`.

    There :math:`\Sigma K = c^2 I`, :math:`P = c^2 I` and
    :math:`(\Sigma^{-1} - 2K)^{-1} = \Sigma/(1 - 2c^2)`, so

    .. math::

        \bar C(c) = \operatorname{tr}\Sigma\,\frac{1 - c^2}{c^2\,(1 - 2c^2)^{1 + d/2}},
        \qquad 0 < c^2 < \tfrac12 .

    Parameters
    ----------
    c2 : float or array_like
        Values of :math:`c^2`, each in :math:`(0, \frac12)`.
    cov : array_like, shape (d, d)
        :math:`\Sigma`, positive definite.

    Returns
    -------
    float or ndarray
        :math:`\bar C(c)`, with the shape of ``c2``.

    Raises
    ------
    ValueError
        If some :math:`c^2` lies outside :math:`(0, \frac12)` (the constant is infinite for
        :math:`c^2 \ge \frac12`).
    """
    S = check_covariance(cov)
    s = as_float_array(c2, "c2", ndim=(0, 1))
    if np.any(~np.isfinite(s)) or np.any(s <= 0) or np.any(s >= 0.5):
        raise ValueError("c2 must lie in (0, 1/2)")
    d = S.shape[0]
    out = np.trace(S) * (1.0 - s) / (s * (1.0 - 2.0 * s) ** (1.0 + d / 2.0))
    return float(out) if out.ndim == 0 else out


def head_limit_risk(U: Any, V: Any, cov: Any, *, n_points: int = 4) -> float:
    r"""Infinite-prompt risk of a full head :math:`(U, V)` (softmax or linear: they agree here).

    The prediction is the last coordinate of :math:`V\Gamma_w U z_q`, :math:`z_q = (x_q, 0)`
    (Gaussian tilt lemma on the centred token law), a polynomial of degree 2 in :math:`w`
    and 1 in :math:`x_q`; the risk :math:`\mathbb E(\hat y - w^\top x_q)^2` is computed by
    tensor Gauss–Hermite quadrature over :math:`(w, x_q)`, exact for ``n_points >= 3``.

    Parameters
    ----------
    U : array_like, shape (d+1, d+1)
    V : array_like, shape (p, d+1)
        The last row is the prediction's readout.
    cov : array_like, shape (d, d)
    n_points : int
        Gauss–Hermite nodes per direction (at least 3).
    """
    S = check_covariance(cov)
    d = S.shape[0]
    U = as_float_array(U, "U", ndim=2)
    V = as_float_array(V, "V", ndim=2)
    if U.shape != (d + 1, d + 1):
        raise ValueError(f"U must have shape ({d + 1}, {d + 1}), got {U.shape}")
    if V.shape[1] != d + 1:
        raise ValueError(f"V must have shape (p, {d + 1}), got {V.shape}")
    check_positive(n_points, "n_points", integer=True)
    if n_points < 3:
        raise ValueError(f"n_points must be at least 3 for an exact rule, got {n_points}")
    xi, weights = gauss_hermite(n_points, 2 * d)
    W = xi[:, :d]
    X = xi[:, d:] @ np.linalg.cholesky(S).T
    v = V[-1]
    SW = W @ S  # rows (Σw)ᵀ
    # Γ_w U z_q with z_q = (x_q, 0): first block Σ·(U_xx x_q) + Σw·(u_yx x_q), last w^TΣ(...) + w^TΣw(...).
    ux = X @ U[:d, :d].T  # (n, d)
    uy = X @ U[d, :d]  # (n,)
    top = ux @ S + SW * uy[:, None]
    bottom = np.einsum("nd,nd->n", SW, ux) + np.einsum("nd,nd->n", SW, W) * uy
    pred = top @ v[:d] + bottom * v[d]
    err = pred - np.einsum("nd,nd->n", W, X)
    return float(weights @ err**2)


# ---------------------------------------------------------------------------- gradient flow
@dataclass(frozen=True)
class GradientFlow:
    """A solved gradient flow of :math:`\\mathcal R(A, b)`.

    Attributes
    ----------
    t : ndarray, shape (n,)
    A : ndarray, shape (n, d, d)
    b : ndarray, shape (n,)
    risk : ndarray, shape (n,)
    """

    t: np.ndarray
    A: np.ndarray
    b: np.ndarray
    risk: np.ndarray

    def imbalance(self) -> np.ndarray:
        r""":math:`\|A(t)\|_F^2 - b(t)^2`, conserved by the flow."""
        return np.sum(self.A**2, axis=(1, 2)) - self.b**2


def gradient_flow(A0: Any, b0: float, cov: Any, t_max: float, *, n_eval: int = 400,
                  rtol: float = 1e-13, atol: float = 1e-15) -> GradientFlow:
    r"""Solve :math:`\dot A = -\nabla_A\mathcal R`, :math:`\dot b = -\partial_b\mathcal R` from :math:`(A_0, b_0)`.

    Integrated with scipy's DOP853 (explicit Runge–Kutta of order 8) at the given
    tolerances; the solution is reported at ``n_eval`` times spaced geometrically
    from :math:`10^{-3}t_{\max}` (plus :math:`t = 0`).
    """
    S = check_covariance(cov)
    d = S.shape[0]
    A0, b0 = _check_A_b(A0, b0, d)
    check_positive(t_max, "t_max")
    check_positive(n_eval, "n_eval", integer=True)

    def rhs(_t: float, y: np.ndarray) -> np.ndarray:
        A, b = y[:-1].reshape(d, d), y[-1]
        G = 2.0 * S @ (b * S @ A - np.eye(d)) @ S
        return -np.concatenate([(b * G).ravel(), [np.sum(G * A)]])

    t_eval = np.concatenate([[0.0], np.geomspace(1e-3 * t_max, t_max, n_eval)])
    sol = solve_ivp(rhs, (0.0, float(t_max)), np.concatenate([A0.ravel(), [b0]]), method="DOP853",
                    t_eval=t_eval, rtol=rtol, atol=atol)
    if not sol.success:  # pragma: no cover - DOP853 on a smooth polynomial field
        raise RuntimeError(f"gradient flow integration failed: {sol.message}")
    A = sol.y[:-1].T.reshape(-1, d, d)
    b = sol.y[-1]
    risk = np.array([population_risk(Ai, bi, S) for Ai, bi in zip(A, b)])
    return GradientFlow(sol.t, A, b, risk)
