r"""In-context linear regression with one attention head (Chapter 2).

The data model (Boursier and Boyer's, after Zhang, Frei and Bartlett): a task vector
:math:`w\sim\mathcal N(0, I_d)`, inputs :math:`x\sim\mathcal N(0,\Sigma)` and labels :math:`y =
w^\top x + \varepsilon`, :math:`\varepsilon\sim\mathcal N(0,\xi^2)` (``noise_std`` :math:`= \xi`, 0
by default: noiseless labels). A prompt holds the tokens :math:`z_j = (x_j, y_j)\in\mathbb R^{d+1}`,
:math:`j = 1..L`, and the query is :math:`z_q = (x_q, 0)`; the prediction is the last coordinate of
the head's output.

Given :math:`w`, a token is the centred Gaussian

.. math::

    z \sim \mathcal N\Big(0,\; \Gamma_w\Big),\qquad
    \Gamma_w = \begin{pmatrix}\Sigma & \Sigma w\\ w^\top\Sigma & w^\top\Sigma w +
    \xi^2\end{pmatrix},

so (Gaussian tilt lemma) infinite-prompt softmax attention and linear attention coincide.
With :math:`U = \operatorname{diag}(A, 0)` and :math:`V = b\,e_{d+1}e_{d+1}^\top` both
predict :math:`\hat y = b\,w^\top\Sigma A x_q`, with population risk

.. math::

    \mathcal R(A, b) = \mathbb E(\hat y - y_q)^2
    = \operatorname{tr}\big((b\Sigma A - I)\,\Sigma\,(b\Sigma A - I)^\top\big) + \xi^2.

On a finite prompt linear attention predicts :math:`\hat y = \frac bL\sum_j y_j x_j^\top A x_q`, and
(fourth moments of Gaussians)

.. math::

    \mathcal R_L(A, b) = b^2\Big[\big(1+\tfrac1L\big)\operatorname{tr}(\Sigma A\Sigma A^\top\Sigma)
    + \tfrac{\operatorname{tr}\Sigma + \xi^2}{L}\operatorname{tr}(A\Sigma A^\top\Sigma)\Big]
    - 2b\operatorname{tr}(\Sigma A\Sigma) + \operatorname{tr}\Sigma + \xi^2,

minimised by :math:`bA = \Gamma_L^* = \big((1+\frac1L)\Sigma + \frac{\operatorname{tr}\Sigma +
\xi^2}{L} I\big)^{-1}` (Zhang, Frei and Bartlett's fixed point), with minimum
:math:`\operatorname{tr}\Sigma - \operatorname{tr}(\Sigma^2\Gamma^*_L) + \xi^2`. The book's labels:
:prf:ref:`prop-02-regression` (the prediction and risk), :prf:ref:`prop-02-optimum`,
:prf:ref:`thm-02-flow`, :prf:ref:`prop-02-finite-risk` and :prf:ref:`prop-02-softmax-variance`
(Chapter 2).

Every function takes the task first (the covariance ``cov`` :math:`= \Sigma`), then the
parameters (``A, b``, or a head's ``U, V``), then options as keywords (``noise_std``), as
:mod:`gmmlib.lda.task` does. The free blocks :math:`(A, b)` are a :class:`RegressionBlocks`;
``.head()`` gives the full :class:`gmmlib.attention.Head`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from scipy.integrate import solve_ivp

from ._validation import as_float_array, check_covariances, check_positive, check_rng
from .attention import Head, PromptBatch
from .records import Trajectory
from .mixtures import GaussianMixture
from .quadrature import gauss_hermite

__all__ = [
    "RegressionBatch",
    "sample_prompts",
    "token_covariance",
    "token_law",
    "RegressionBlocks",
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
    "head_map",
    "head_limit_risk",
    "gradient_flow",
]


# ---------------------------------------------------------------------------- validation
def _check_cov(cov: Any) -> np.ndarray:
    """``cov`` as a symmetric positive-definite (d, d) matrix, by the one validator
    :func:`~gmmlib._validation.check_covariances`."""
    return check_covariances(as_float_array(cov, "cov", ndim=2), "cov", definite=True)


def _check_A_b(A: Any, b: Any, d: int) -> tuple[np.ndarray, float]:
    A = as_float_array(A, "A", ndim=2)
    if A.shape != (d, d):
        raise ValueError(f"A must have shape ({d}, {d}) to match cov, got {A.shape}")
    if isinstance(b, (bool, str)):
        raise TypeError(f"b must be a real number, got {type(b).__name__}")
    b = float(as_float_array(b, "b", ndim=0))
    return A, b


def _check_length(length: Any) -> int:
    check_positive(length, "length", integer=True)
    return int(length)


def _check_noise(noise_std: Any) -> float:
    if isinstance(noise_std, (bool, str)):
        raise TypeError(f"noise_std must be a real number, got {type(noise_std).__name__}")
    xi = float(as_float_array(noise_std, "noise_std", ndim=0))
    if xi < 0:
        raise ValueError(f"noise_std must be non-negative, got {xi}")
    return xi


# ---------------------------------------------------------------------------- data model
@dataclass(frozen=True)
class RegressionBatch(PromptBatch):
    """A batch of in-context regression prompts (a :class:`gmmlib.attention.PromptBatch`).

    Attributes
    ----------
    tokens : ndarray, shape (n_prompts, length, d+1)
        Rows :math:`(x_j, y_j)`.
    queries : ndarray, shape (n_prompts, 1, d+1)
        :math:`(x_q, 0)`.
    targets : ndarray, shape (n_prompts,)
        The query's label :math:`y_q = w^\\top x_q + \\varepsilon_q`.
    w : ndarray, shape (n_prompts, d)
        The task vectors.
    """

    w: np.ndarray = None


def sample_prompts(cov: Any, *, n_prompts: int, length: int, rng: Any,
                   noise_std: float = 0.0) -> RegressionBatch:
    r"""Draw ``n_prompts`` prompts of ``length`` tokens :math:`(x_j, y_j)` and one query each.

    The data model of :prf:ref:`prop-02-regression` (Chapter 2): :math:`w\sim\mathcal N(0, I_d)` per
    prompt, :math:`x_j, x_q\sim\mathcal N(0,\Sigma)` i.i.d. and :math:`y = w^\top x + \varepsilon`,
    :math:`\varepsilon\sim\mathcal N(0, \xi^2)` i.i.d.

    Parameters
    ----------
    cov : array_like, shape (d, d)
        :math:`\Sigma`, positive definite.
    n_prompts, length : int
        Number of prompts and tokens per prompt.
    rng : numpy Generator or int seed
    noise_std : float
        :math:`\xi \ge 0`, the labels' noise (0: noiseless labels).
    """
    check_positive(n_prompts, "n_prompts", integer=True)
    L = _check_length(length)
    S = _check_cov(cov)
    xi = _check_noise(noise_std)
    rng = check_rng(rng)
    n, d = int(n_prompts), S.shape[0]
    R = np.linalg.cholesky(S)
    w = rng.standard_normal((n, d))
    # einsum, not `@`: numpy's matmul is very slow for (..., d) @ (d, d) products with tiny d
    X = np.einsum("bli,ji->blj", rng.standard_normal((n, L + 1, d)), R)
    y = np.einsum("bld,bd->bl", X, w)
    if xi > 0:
        y = y + xi * rng.standard_normal(y.shape)
    tokens = np.concatenate([X[:, :L], y[:, :L, None]], axis=-1)
    queries = np.concatenate([X[:, L:], np.zeros((n, 1, 1))], axis=-1)
    return RegressionBatch(tokens, queries, y[:, L], w)


def token_covariance(cov: Any, w: Any, *, noise_std: float = 0.0) -> np.ndarray:
    r"""The covariance :math:`\Gamma_w = \begin{pmatrix}\Sigma & \Sigma w\\ w^\top\Sigma &
    w^\top\Sigma w + \xi^2\end{pmatrix}` of :math:`z = (x, y)`.

    Eq. :eq:`eq-02-token-law` of Chapter 2 (with :math:`\xi` = ``noise_std``).
    """
    S = _check_cov(cov)
    xi = _check_noise(noise_std)
    w = as_float_array(w, "w", ndim=1)
    if w.shape != (S.shape[0],):
        raise ValueError(f"w must have shape ({S.shape[0]},) to match cov, got {w.shape}")
    Sw = S @ w
    return np.block([[S, Sw[:, None]], [Sw[None, :], np.array([[w @ Sw + xi * xi]])]])


def token_law(cov: Any, w: Any, *, noise_std: float = 0.0) -> GaussianMixture:
    r"""The law :math:`\mathcal N(0,\Gamma_w)` of a token given the task :math:`w`, as a
    one-component mixture."""
    G = token_covariance(cov, w, noise_std=noise_std)
    return GaussianMixture.gaussian(np.zeros(G.shape[0]), G)


class RegressionBlocks(NamedTuple):
    r"""A head on the regression token layout, stored as the blocks :math:`(A, b)` of
    :prf:ref:`prop-02-regression`.

    Not a :class:`gmmlib.attention.Head` because only :math:`U_{xx} = A` and :math:`V_{yy} = b`
    are free in this parametrisation (Chapter 2): these are the coordinates of the risk, its
    gradient and the flow. :meth:`head` gives the full :class:`~gmmlib.attention.Head`;
    ``A, b = blocks`` unpacks.
    """

    A: np.ndarray
    b: float

    def head(self) -> Head:
        r"""The full head :math:`U = \operatorname{diag}(A, 0)`, :math:`V = b\,e_{d+1}e_{d+1}^\top`
        (:func:`embed_parameters`)."""
        return embed_parameters(self.A, self.b)

    def balance(self) -> float:
        r"""The balance :math:`\|A\|_F^2 - b^2`, conserved by the gradient flow
        (:prf:ref:`thm-02-flow`; the chapter's "imbalance").

        The same idea and name as :meth:`gmmlib.lda.task.LDABlocks.balance`.
        """
        return float(np.sum(np.asarray(self.A) ** 2) - float(self.b) ** 2)


def embed_parameters(A: Any, b: float) -> Head:
    r"""The head :math:`U = \operatorname{diag}(A, 0)`, :math:`V = b\,e_{d+1}e_{d+1}^\top`, both
    (d+1, d+1).

    The parametrisation of :prf:ref:`prop-02-regression` (Chapter 2). Returns a
    :class:`gmmlib.attention.Head`; ``U, V = embed_parameters(A, b)`` unpacks it.
    """
    A = as_float_array(A, "A", ndim=2)
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"A must be square, got shape {A.shape}")
    d = A.shape[0]
    _, b = _check_A_b(A, b, d)
    U = np.zeros((d + 1, d + 1))
    U[:d, :d] = A
    V = np.zeros((d + 1, d + 1))
    V[d, d] = b
    return Head(U, V)


def limit_prediction(cov: Any, A: Any, b: float, w: Any, x_query: Any) -> np.ndarray:
    r"""The infinite-prompt prediction :math:`\hat y = b\,w^\top\Sigma A x_q` (softmax and linear
    attention agree).

    Eq. :eq:`eq-02-prediction` of :prf:ref:`prop-02-regression` (Chapter 2); label noise does not
    enter.

    Parameters
    ----------
    cov : array_like, shape (d, d)
    A : array_like, shape (d, d)
    b : float
    w : array_like, shape (n, d) or (d,)
        Task vectors (one per query, or one for all).
    x_query : array_like, shape (n, d)

    Returns
    -------
    ndarray, shape (n,)
    """
    S = _check_cov(cov)
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
def population_risk(cov: Any, A: Any, b: float, *, noise_std: float = 0.0) -> float:
    r"""The infinite-prompt risk :math:`\mathcal R(A,b) = \operatorname{tr}\big((b\Sigma A -
    I)\Sigma(b\Sigma A - I)^\top\big) + \xi^2`.

    Eq. :eq:`eq-02-risk` of :prf:ref:`prop-02-regression` (Chapter 2); :math:`\xi` = ``noise_std``
    adds the irreducible :math:`\xi^2` of the query's own label. The task (``cov``) comes first and
    the parameters second, as in :func:`gmmlib.lda.task.population_risk`.
    """
    S = _check_cov(cov)
    A, b = _check_A_b(A, b, S.shape[0])
    xi = _check_noise(noise_std)
    N = b * S @ A - np.eye(S.shape[0])
    return float(np.trace(N @ S @ N.T)) + xi * xi


def _risk_grad(S: np.ndarray, A: np.ndarray, b: float) -> RegressionBlocks:
    """The gradient of :eq:`eq-02-risk` on validated inputs: the one copy (the flow calls it)."""
    G = 2.0 * S @ (b * S @ A - np.eye(S.shape[0])) @ S
    return RegressionBlocks(b * G, float(np.sum(G * A)))


def population_risk_grad(cov: Any, A: Any, b: float, *,
                         noise_std: float = 0.0) -> tuple[float, RegressionBlocks]:
    r"""The risk :math:`\mathcal R(A, b) = f(bA)` and its gradient (:prf:ref:`thm-02-flow`, Ch. 2).

    With :math:`G = \nabla f(M) = 2\Sigma(\Sigma M - I)\Sigma` at :math:`M = bA`:
    :math:`\nabla_A\mathcal R = bG` and :math:`\partial_b\mathcal R = \langle G, A\rangle_F`
    (the labels' noise adds a constant to the risk, nothing to the gradient).

    Returns
    -------
    risk : float
    grad : RegressionBlocks
        ``(grad_A, grad_b)``, as :func:`gmmlib.lda.task.population_risk_grad` returns (risk, grad).
    """
    S = _check_cov(cov)
    A, b = _check_A_b(A, b, S.shape[0])
    return population_risk(S, A, b, noise_std=noise_std), _risk_grad(S, A, b)


def optimal_parameters(cov: Any) -> RegressionBlocks:
    r"""The balanced minimiser :math:`A^* = \operatorname{tr}(\Sigma^{-2})^{-1/4}\Sigma^{-1}`,
    :math:`b^* = \operatorname{tr}(\Sigma^{-2})^{1/4}`.

    Eq. :eq:`eq-02-optimum` of :prf:ref:`prop-02-optimum` (Chapter 2).

    :math:`b^*A^* = \Sigma^{-1}`, so :math:`\hat y = w^\top x_q` exactly, and
    :math:`\|A^*\|_F = b^*` (the point the balanced gradient flow reaches).
    ``.head()`` (or :func:`embed_parameters`) gives :math:`(U^*, V^*)`.
    """
    S = _check_cov(cov)
    Sinv = np.linalg.inv(S)
    t = float(np.trace(Sinv @ Sinv))
    return RegressionBlocks(t**-0.25 * Sinv, t**0.25)


# ---------------------------------------------------------------------------- finite prompts
def optimal_linear_map(cov: Any, length: int | None = None, *,
                       noise_std: float = 0.0) -> np.ndarray:
    r"""The optimal product :math:`bA` for linear attention on prompts of ``length`` tokens.

    :math:`\Gamma_L^* = \big((1+\frac1L)\Sigma + \frac{\operatorname{tr}\Sigma +
    \xi^2}{L}I\big)^{-1}` (:prf:ref:`prop-02-finite-risk`, Chapter 2); :math:`\Gamma_\infty^* =
    \Sigma^{-1}` for ``length=None``.
    """
    S = _check_cov(cov)
    xi = _check_noise(noise_std)
    if length is None:
        return np.linalg.inv(S)
    L = _check_length(length)
    d = S.shape[0]
    return np.linalg.inv((1.0 + 1.0 / L) * S + (np.trace(S) + xi * xi) / L * np.eye(d))


def finite_prompt_linear_risk(cov: Any, A: Any, b: float, length: int, *,
                              noise_std: float = 0.0) -> float:
    r"""Risk of linear attention with :math:`U = \operatorname{diag}(A,0)`, :math:`V =
    be_{d+1}e_{d+1}^\top` on prompts of :math:`L` = ``length`` tokens.

    Eq. :eq:`eq-02-finite-risk` of :prf:ref:`prop-02-finite-risk` (Chapter 2), with label noise
    :math:`\xi` = ``noise_std``:

    .. math::

        \mathcal R_L(A, b) = b^2\Big[\big(1+\tfrac1L\big)\operatorname{tr}(\Sigma A\Sigma
        A^\top\Sigma)
        + \tfrac{\operatorname{tr}\Sigma + \xi^2}{L}\operatorname{tr}(A\Sigma A^\top\Sigma)\Big]
        - 2b\operatorname{tr}(\Sigma A\Sigma) + \operatorname{tr}\Sigma + \xi^2,

    from :math:`\mathbb E[\hat\Sigma M\hat\Sigma] = (1+\frac1L)\Sigma M\Sigma +
    \frac1L\operatorname{tr}(M\Sigma)\Sigma` (Isserlis' theorem) with :math:`M = A\Sigma A^\top`;
    the labels' noise adds :math:`\frac{b^2\xi^2}{L}\operatorname{tr}(A\Sigma A^\top\Sigma)` and the
    query's own :math:`\xi^2`.
    """
    S = _check_cov(cov)
    A, b = _check_A_b(A, b, S.shape[0])
    L = _check_length(length)
    xi = _check_noise(noise_std)
    M = A @ S @ A.T
    quad = (1.0 + 1.0 / L) * np.trace(S @ M @ S) + (np.trace(S) + xi * xi) / L * np.trace(M @ S)
    return float(b * b * quad - 2.0 * b * np.trace(S @ A @ S) + np.trace(S) + xi * xi)


def optimal_finite_prompt_linear_risk(cov: Any, length: int, *, noise_std: float = 0.0) -> float:
    r"""The smallest risk of one linear-attention head on prompts of :math:`L` = ``length`` tokens.

    Eq. :eq:`eq-02-finite-optimum` of :prf:ref:`prop-02-finite-risk` (Chapter 2): :math:`\mathcal
    R_L^* = \operatorname{tr}\Sigma - \operatorname{tr}(\Sigma^2\Gamma_L^*) + \xi^2 = \sum_i
    \lambda_i\,\frac{\lambda_i + t}{(L+1)\lambda_i + t} + \xi^2`, :math:`t = \operatorname{tr}\Sigma
    + \xi^2` (:math:`\lambda_i` the eigenvalues of :math:`\Sigma`); :math:`d(d+1)/(L+d+1)` for
    :math:`\Sigma = I_d`, :math:`\xi = 0`.
    """
    S = _check_cov(cov)
    xi = _check_noise(noise_std)
    G = optimal_linear_map(S, length, noise_std=xi)
    return float(np.trace(S) - np.trace(S @ S @ G)) + xi * xi


def softmax_variance_constant(cov: Any, A: Any, b: float, *, noise_std: float = 0.0) -> float:
    r"""The prompt-length constant :math:`\bar C = \mathbb E\,c(w, x_q)` of softmax attention.

    Eq. :eq:`eq-02-softmax-variance` of :prf:ref:`prop-02-softmax-variance` (Chapter 2). For one
    query the finite-prompt error law of Chapter 1 gives, with :math:`a = (Ax_q, 0)` and the token
    law :math:`\mathcal N(0,\Gamma_w)`, :math:`L\,\mathbb E[(\hat y_L - \hat y_\infty)^2\mid w, x_q]
    \to c(w, x_q) = e^{\kappa}\,b^2\big(w^\top\Sigma w + \xi^2 + (w^\top\Sigma Ax_q)^2\big)`,
    :math:`\kappa = x_q^\top A_\Sigma x_q`. Averaging over :math:`w\sim\mathcal N(0, I)` and
    :math:`x_q\sim\mathcal N(0,\Sigma)` (Gaussian integrals, :math:`A_\Sigma = A^\top\Sigma A`,
    :math:`A_{\Sigma^2} = A^\top\Sigma^2A`):

    .. math::

        \bar C(A, b) = \frac{b^2}{\sqrt{\det(I - 2\Sigma A_\Sigma)}}\Big(\operatorname{tr}\Sigma +
        \xi^2
        + \operatorname{tr}\big(A_{\Sigma^2}\,(\Sigma^{-1} - 2A_\Sigma)^{-1}\big)\Big),

    finite iff :math:`\Sigma^{-1} - 2A_\Sigma` is positive definite (``inf`` otherwise: the
    average is dominated by queries whose effective prompt length :math:`Le^{-\kappa}` is tiny).
    """
    S = _check_cov(cov)
    d = S.shape[0]
    A, b = _check_A_b(A, b, d)
    xi = _check_noise(noise_std)
    A_S = A.T @ S @ A
    A_S2 = A.T @ S @ S @ A
    Sinv = np.linalg.inv(S)
    inner = Sinv - 2.0 * A_S
    inner = 0.5 * (inner + inner.T)
    if np.min(np.linalg.eigvalsh(inner)) <= 0:
        return float("inf")
    sign, logdet = np.linalg.slogdet(np.eye(d) - 2.0 * S @ A_S)
    if sign <= 0:  # pragma: no cover - excluded by the eigenvalue test above
        return float("inf")
    spread = np.trace(S) + xi * xi + np.trace(A_S2 @ np.linalg.inv(inner))
    return float(b * b * np.exp(-0.5 * logdet) * spread)


def softmax_family_constant(cov: Any, c2: Any, *, noise_std: float = 0.0) -> np.ndarray | float:
    r"""The constant :math:`\bar C` of :func:`softmax_variance_constant` on the exact family
    :math:`A = c\,\Sigma^{-1}`, :math:`b = 1/c`.

    :prf:ref:`prop-02-softmax-variance` (Chapter 2). There :math:`\Sigma A_\Sigma = c^2 I`,
    :math:`A_{\Sigma^2} = c^2 I` and :math:`(\Sigma^{-1} - 2A_\Sigma)^{-1} = \Sigma/(1 - 2c^2)`, so

    .. math::

        \bar C(c) = \frac{(\operatorname{tr}\Sigma + \xi^2)(1 - 2c^2) + c^2\operatorname{tr}\Sigma}
        {c^2\,(1 - 2c^2)^{1 + d/2}},\qquad 0 < c^2 < \tfrac12,

    which is :math:`\operatorname{tr}\Sigma\,(1 - c^2)/(c^2(1 - 2c^2)^{1 + d/2})` for noiseless
    labels.

    Parameters
    ----------
    cov : array_like, shape (d, d)
        :math:`\Sigma`, positive definite.
    c2 : float or array_like
        Values of :math:`c^2`, each in :math:`(0, \frac12)`.
    noise_std : float
        The labels' noise :math:`\xi`.

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
    S = _check_cov(cov)
    xi = _check_noise(noise_std)
    s = as_float_array(c2, "c2", ndim=(0, 1))
    if np.any(~np.isfinite(s)) or np.any(s <= 0) or np.any(s >= 0.5):
        raise ValueError("c2 must lie in (0, 1/2)")
    d, t = S.shape[0], float(np.trace(S))
    out = ((t + xi * xi) * (1.0 - 2.0 * s) + s * t) / (s * (1.0 - 2.0 * s) ** (1.0 + d / 2.0))
    return float(out) if out.ndim == 0 else out


def head_map(U: Any, V: Any) -> np.ndarray:
    r"""The effective map :math:`P` of a full head: the part of its prediction odd in the task.

    With :math:`U_{xx} = U_{[:d,:d]}`, the label row :math:`u_{yx} = U_{[d,:d]}` and the readout
    :math:`(v_x, v_y) = V_{[-1,:]}`, the infinite-prompt prediction of a full head is
    :math:`w^\top\Sigma P x_q` plus a part even in :math:`w`, with :math:`P = v_y U_{xx} + v_x
    u_{yx}^\top` (Chapter 2, the proof of :prf:ref:`prop-02-finite-risk`). For the block head of
    :prf:ref:`prop-02-regression`, :math:`P = bA`.

    Returns
    -------
    ndarray, shape (d, d)
    """
    U = as_float_array(U, "U", ndim=2)
    V = as_float_array(V, "V", ndim=2)
    d = U.shape[0] - 1
    if U.shape != (d + 1, d + 1) or V.shape[1] != d + 1 or d < 1:
        raise ValueError(f"U must be (d+1, d+1) and V (p, d+1) with d >= 1, "
                         f"got {U.shape} and {V.shape}")
    v = V[-1]
    return v[d] * U[:d, :d] + np.outer(v[:d], U[d, :d])


def head_limit_risk(cov: Any, U: Any, V: Any, *, noise_std: float = 0.0,
                    n_points: int | None = None) -> float:
    r"""Infinite-prompt risk of a full head :math:`(U, V)` (softmax or linear: they agree here).

    The prediction is the last coordinate of :math:`V\Gamma_w U z_q`, :math:`z_q = (x_q, 0)`
    (:prf:ref:`lem-02-tilt` on the centred token law :eq:`eq-02-token-law`, Chapter 2), a polynomial
    of degree 2 in :math:`w` and 1 in :math:`x_q`; the squared error has degree 4 in :math:`w` and 2
    in :math:`x_q`, so tensor Gauss–Hermite quadrature with 3 nodes per direction of :math:`w` and 2
    per direction of :math:`x_q` computes :math:`\mathbb E(\hat y - y_q)^2` exactly (up to
    round-off); the query label's own noise adds :math:`\xi^2`.

    Parameters
    ----------
    cov : array_like, shape (d, d)
    U : array_like, shape (d+1, d+1)
    V : array_like, shape (p, d+1)
        The last row is the prediction's readout.
    noise_std : float
        The labels' noise :math:`\xi`.
    n_points : int, optional
        Gauss–Hermite nodes per direction of both (at least 3); by default the smallest exact rule.
    """
    S = _check_cov(cov)
    d = S.shape[0]
    xi2 = _check_noise(noise_std) ** 2
    U = as_float_array(U, "U", ndim=2)
    V = as_float_array(V, "V", ndim=2)
    if U.shape != (d + 1, d + 1):
        raise ValueError(f"U must have shape ({d + 1}, {d + 1}), got {U.shape}")
    if V.shape[1] != d + 1:
        raise ValueError(f"V must have shape (p, {d + 1}), got {V.shape}")
    if n_points is None:
        n_w, n_x = 3, 2
    else:
        check_positive(n_points, "n_points", integer=True)
        if n_points < 3:
            raise ValueError(f"n_points must be at least 3 for an exact rule, got {n_points}")
        n_w = n_x = int(n_points)
    nw, ww = gauss_hermite(n_w, d)
    nx, wx = gauss_hermite(n_x, d)
    W = np.repeat(nw, len(nx), axis=0)
    X = np.tile(nx, (len(nw), 1)) @ np.linalg.cholesky(S).T
    weights = np.repeat(ww, len(nx)) * np.tile(wx, len(nw))
    v = V[-1]
    SW = W @ S  # rows (Σw)ᵀ
    # Γ_w U z_q, z_q = (x_q, 0): first block Σ(U_xx x_q) + Σw(u_yx x_q), last wᵀΣ(...) + (wᵀΣw +
    # ξ²)(...).
    ux = X @ U[:d, :d].T  # (n, d)
    uy = X @ U[d, :d]  # (n,)
    top = ux @ S + SW * uy[:, None]
    bottom = np.einsum("nd,nd->n", SW, ux) + (np.einsum("nd,nd->n", SW, W) + xi2) * uy
    pred = top @ v[:d] + bottom * v[d]
    err = pred - np.einsum("nd,nd->n", W, X)
    return float(weights @ err**2) + xi2


# ---------------------------------------------------------------------------- gradient flow
def gradient_flow(cov: Any, theta0: Any, t_eval: Any, *, rtol: float = 1e-13,
                  atol: float = 1e-15) -> Trajectory:
    r"""Solve :math:`\dot A = -\nabla_A\mathcal R`, :math:`\dot b = -\partial_b\mathcal R` from
    :math:`\theta_0 = (A_0, b_0)`.

    The gradient flow of :prf:ref:`thm-02-flow` (Chapter 2); label noise only adds a constant
    :math:`\xi^2` to the risk and does not change the flow. Integrated with scipy's DOP853 (explicit
    Runge–Kutta of order 8) at the given tolerances. Same order of arguments and same return type as
    :func:`gmmlib.lda.dynamics.gradient_flow`.

    Parameters
    ----------
    cov : array_like, shape (d, d)
    theta0 : RegressionBlocks or (A0, b0)
        The start.
    t_eval : array_like
        Increasing times :math:`\ge 0` at which to return :math:`\theta_t` (the flow starts at 0).

    Returns
    -------
    Trajectory
        ``t``, ``thetas`` (a :class:`RegressionBlocks` per time; ``flow.stack("A")`` is
        :math:`A(t)` of shape (n, d, d)) and ``nfev``.
    """
    S = _check_cov(cov)
    d = S.shape[0]
    if not (isinstance(theta0, tuple) and len(theta0) == 2):
        raise TypeError("theta0 must be a RegressionBlocks or a pair (A0, b0)")
    A0, b0 = _check_A_b(theta0[0], theta0[1], d)
    t_eval = as_float_array(t_eval, "t_eval", ndim=1)
    if t_eval.size == 0 or t_eval[0] < 0 or np.any(np.diff(t_eval) <= 0):
        raise ValueError("t_eval must be a non-empty increasing array of times >= 0")
    count = [0]

    def rhs(_t: float, y: np.ndarray) -> np.ndarray:
        count[0] += 1
        g = _risk_grad(S, y[:-1].reshape(d, d), y[-1])
        return -np.concatenate([g.A.ravel(), [g.b]])

    sol = solve_ivp(rhs, (0.0, float(t_eval[-1])), np.concatenate([A0.ravel(), [b0]]),
                    method="DOP853", t_eval=t_eval, rtol=rtol, atol=atol)
    if not sol.success:  # pragma: no cover - DOP853 on a smooth polynomial field
        raise RuntimeError(f"gradient flow integration failed: {sol.message}")
    thetas = [RegressionBlocks(y[:-1].reshape(d, d), float(y[-1])) for y in sol.y.T]
    return Trajectory(sol.t, thetas, count[0])
