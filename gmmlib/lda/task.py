r"""Linear discriminant analysis with one softmax head: the task, the predictor, the risk (Chapters
4–6).

The dynamics (gradient descent, the gradient flow, SGD and its noise floor, the valley floor) live
in :mod:`gmmlib.lda.dynamics`; the landscape's landmarks (the best linear rule, the minimiser
families, a diverging minimising sequence) in :mod:`gmmlib.lda.landscape`.

The data model
--------------
:math:`Y\in\{-1,+1\}` with :math:`P(Y=1)=\pi_+`, and :math:`X\mid Y=c\sim\mathcal N(m_c,\Gamma)`.
The log-odds are affine: the Bayes score is

.. math::

    f^*(x) = w^{*\top}x + b^*,\qquad w^* = \Gamma^{-1}(m_1 - m_{-1}),\qquad
    b^* = -\tfrac12\big(m_1^\top\Gamma^{-1}m_1 - m_{-1}^\top\Gamma^{-1}m_{-1}\big) + s_0,

with :math:`s_0 = \log(\pi_+/(1-\pi_+))`.

One head on an infinitely long prompt
-------------------------------------
Tokens are :math:`z=(x,y)\in\mathbb R^{d+1}`, the query is :math:`(x,0)` and the prediction is the
last output coordinate. The token law is the two-component mixture :math:`\pi_+\mathcal
N((m_1,1),\Gamma\oplus0) + (1-\pi_+)\mathcal N((m_{-1},-1),\Gamma\oplus0)`. With the book's
convention :math:`T[\mu](z) = \int e^{z'^\top Uz}Vz'\,d\mu(z')/\int e^{z'^\top Uz}d\mu(z')` and the
blocks

.. math::

    U = \begin{pmatrix}U_{11} & u_{12}\\ u_{21}^\top & u_{22}\end{pmatrix},\qquad
    V_{\text{last row}} = (v_{21}^\top,\ v_{22}),

the score of a token :math:`(x',y')` for the query :math:`(x,0)` is
:math:`x'^\top U_{11}x + y'\,u_{21}^\top x` (the blocks :math:`u_{12}, u_{22}` and the other rows
of :math:`V` play no role), and the gated-experts identity gives the *effective predictor*

.. math::

    f_\theta(x) = w^\top x + b + r\,\sigma(s_0 + s^\top x),\qquad
    w = U_{11}^\top\Gamma v_{21},\quad b = v_{21}^\top m_{-1} - v_{22},\quad
    r = v_{21}^\top(m_1-m_{-1}) + 2v_{22},\quad s = U_{11}^\top(m_1 - m_{-1}) + 2u_{21}.

This is eqs. (6)–(7) of Gabet, Boursier & Boyer (2026) (their Lemma B.1), whose eq. (12) partitions
:math:`U^\top` where the book partitions :math:`U`: the paper's :math:`(U_{11}, u_{12})` are the
book's :math:`(U_{11}^\top, u_{21})` (Chapter 4's :ref:`dictionary box <box-04-dictionary>`).

Population risks
----------------
:math:`R = \mathbb E\,\ell(Yf(X))`, :math:`\ell(t) = \log(1+e^{-t})`. The integrand depends on
:math:`x` only through :math:`(w^\top x, s^\top x)`, a bivariate Gaussian given the class, so a
two-dimensional rule computes it in any dimension: Gauss–Hermite (fast; its error decays
geometrically at a speed set by the widths :math:`\sqrt{w^\top\Gamma w}`, :math:`\sqrt{s^\top\Gamma
s}` relative to the distance :math:`\pi` of the logistic's poles from the real axis, about 1e-12
with 40 nodes per axis for widths up to about 1.5, and hopeless for sharp gates), or an adaptive
rule of graded Gauss–Legendre panels along the gate direction (accurate at any width). Every
evaluation compares its rule with a coarser one and raises ``ValueError`` when they disagree;
gradients follow from Stein's identity :math:`\mathbb E[h(X)X] = m\,\mathbb Eh + \Gamma\,\mathbb
E\nabla h`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from scipy.special import expit, log_expit

from .._validation import as_float_array, check_covariances, check_positive, check_type
from ..attention import Head
from ..mixtures import GaussianMixture
from ._rules import adjoint_map, check_converged, effective_map, risk_and_grad, rule_risk

__all__ = [
    "LDAModel",
    "EffectiveParams",
    "LDABlocks",
    "logistic_loss",
    "effective_params",
    "effective_predictor",
    "construction_r0",
    "construction_s0",
    "population_risk",
    "population_risk_grad",
    "attention_risk_grad",
    "attention_jacobian",
    "excess_risk_estimate",
]


def logistic_loss(t: Any) -> np.ndarray:
    r"""The logistic loss :math:`\ell(t) = \log(1 + e^{-t})`, computed stably as
    :math:`-\log\sigma(t)`."""
    return -log_expit(np.asarray(t, dtype=np.float64))


# ---------------------------------------------------------------------- the data model
@dataclass(frozen=True, eq=False)
class LDAModel:
    r"""Two Gaussian classes with a shared covariance: :math:`X\mid Y=c\sim\mathcal N(m_c,\Gamma)`,
    :math:`P(Y=1)=\pi_+`.

    Parameters
    ----------
    pi_pos : float
        :math:`\pi_+ \in (0, 1)`.
    m_pos, m_neg : array_like, shape (d,)
        The class means :math:`m_1` and :math:`m_{-1}`.
    cov : array_like, shape (d, d)
        The shared covariance :math:`\Gamma`, symmetric positive definite.
    """

    pi_pos: float
    m_pos: np.ndarray
    m_neg: np.ndarray
    cov: np.ndarray

    def __post_init__(self) -> None:
        check_positive(self.pi_pos, "pi_pos")
        if not self.pi_pos < 1:
            raise ValueError(f"pi_pos must lie in (0, 1), got {self.pi_pos}")
        m1 = as_float_array(self.m_pos, "m_pos", ndim=1)
        m0 = as_float_array(self.m_neg, "m_neg", ndim=1)
        if m0.shape != m1.shape:
            raise ValueError(f"m_neg must have the shape of m_pos {m1.shape}, got {m0.shape}")
        d = m1.size
        G = as_float_array(self.cov, "cov", ndim=2)
        if G.shape != (d, d):
            raise ValueError(f"cov must have shape ({d}, {d}), got {G.shape}")
        G = check_covariances(G, "cov", definite=True)
        for arr in (m1, m0, G):
            arr.setflags(write=False)
        object.__setattr__(self, "pi_pos", float(self.pi_pos))
        object.__setattr__(self, "m_pos", m1)
        object.__setattr__(self, "m_neg", m0)
        object.__setattr__(self, "cov", G)

    @property
    def dim(self) -> int:
        """The dimension :math:`d` of :math:`x`."""
        return int(self.m_pos.size)

    @property
    def s0(self) -> float:
        r"""The prior log-odds :math:`s_0 = \log(\pi_+/(1-\pi_+))`."""
        return float(np.log(self.pi_pos) - np.log1p(-self.pi_pos))

    @property
    def delta(self) -> np.ndarray:
        r""":math:`\Delta = m_1 - m_{-1}`."""
        return self.m_pos - self.m_neg

    def bayes_params(self) -> tuple[np.ndarray, float]:
        r"""The Bayes score's :math:`(w^*, b^*)`: :math:`w^*=\Gamma^{-1}(m_1-m_{-1})`, :math:`b^* =
        -\frac12(m_1^\top\Gamma^{-1}m_1 - m_{-1}^\top\Gamma^{-1}m_{-1}) + s_0`."""
        Gi1 = np.linalg.solve(self.cov, self.m_pos)
        Gi0 = np.linalg.solve(self.cov, self.m_neg)
        return Gi1 - Gi0, float(-0.5 * (self.m_pos @ Gi1 - self.m_neg @ Gi0) + self.s0)

    def bayes_score(self, X: Any) -> np.ndarray:
        r"""The Bayes log-odds :math:`f^*(x) = \log P(Y=1\mid x)/P(Y=-1\mid x) = w^{*\top}x + b^*`,
        shape (n,)."""
        X = self._points(X)
        w, b = self.bayes_params()
        return X @ w + b

    def bayes_risk(self, n_points: int = 40, *, rule: str = "gauss-hermite") -> float:
        r"""The Bayes logistic risk :math:`R^* = \mathbb E\,\ell(Yf^*(X))` (the conditional entropy
        of :math:`Y` given :math:`X`, in nats).

        By :func:`population_risk` at :math:`(w^*, b^*, 0, 0)` with the given rule.
        """
        w, b = self.bayes_params()
        bayes = EffectiveParams(w, b, 0.0, np.zeros(self.dim))
        return population_risk(self, bayes, n_points, rule=rule)

    def class_mixture(self) -> GaussianMixture:
        r"""The law of :math:`X`: :math:`\pi_+\mathcal N(m_1,\Gamma) + (1-\pi_+)\mathcal
        N(m_{-1},\Gamma)` (component 0 is class +1)."""
        return GaussianMixture([self.pi_pos, 1 - self.pi_pos], np.stack([self.m_pos, self.m_neg]),
                               np.stack([self.cov, self.cov]))

    def token_mixture(self) -> GaussianMixture:
        r"""The law of the token :math:`(X, Y)\in\mathbb R^{d+1}`: components :math:`\mathcal
        N((m_c, c), \Gamma\oplus 0)`, :math:`c = +1, -1`."""
        d = self.dim
        covs = np.zeros((2, d + 1, d + 1))
        covs[:, :d, :d] = self.cov
        means = np.stack([np.append(self.m_pos, 1.0), np.append(self.m_neg, -1.0)])
        return GaussianMixture([self.pi_pos, 1 - self.pi_pos], means, covs)

    def sample(self, n: int, rng: Any) -> tuple[np.ndarray, np.ndarray]:
        """Draw ``n`` pairs: ``X`` of shape (n, d) and labels ``Y`` in {-1, +1} of shape (n,)."""
        X, comp = self.class_mixture().sample(n, rng)
        return X, np.where(comp == 0, 1.0, -1.0)

    def sample_tokens(self, n_prompts: int, length: int, rng: Any) -> np.ndarray:
        """Draw ``n_prompts`` prompts of ``length`` i.i.d. tokens :math:`(x, y)`, shape (n_prompts,
        length, d + 1).

        Tokens only (no query, no target), as :meth:`gmmlib.mixtures.GaussianMixture.sample_tokens`;
        the same draws as ``sample(n_prompts * length, rng)``, reshaped.
        """
        check_positive(n_prompts, "n_prompts", integer=True)
        check_positive(length, "length", integer=True)
        X, Y = self.sample(int(n_prompts) * int(length), rng)
        return np.column_stack([X, Y]).reshape(int(n_prompts), int(length), self.dim + 1)

    def _points(self, X: Any) -> np.ndarray:
        X = as_float_array(X, "X", ndim=(1, 2))
        X = X[None, :] if X.ndim == 1 else X
        if X.shape[1] != self.dim:
            raise ValueError(f"X must have {self.dim} columns, got shape {X.shape}")
        return X


# ---------------------------------------------------------------------- parameters
class EffectiveParams(NamedTuple):
    r"""Effective coordinates :math:`(w, b, r, s)` of :math:`f(x) = w^\top x + b + r\sigma(s_0 +
    s^\top x)`.

    Not a head: a different parameterisation, of the predictor rather than of the attention
    matrices. :func:`effective_params` maps an :class:`LDABlocks` to it :eq:`eq-04-map`, and many
    heads share one point. The coordinates of :prf:ref:`thm-04-effective-predictor` (Chapter 4) and
    of the effective landscape, :prf:ref:`thm-05-landscape` (Chapter 5).
    """

    w: np.ndarray
    b: float
    r: float
    s: np.ndarray

    def vector(self) -> np.ndarray:
        """The flat vector ``(w, b, r, s)`` of length 2d + 2 (the order of the rows of
        :func:`attention_jacobian`)."""
        w, s = np.asarray(self.w, dtype=np.float64), np.asarray(self.s, dtype=np.float64)
        return np.concatenate([w, [float(self.b), float(self.r)], s])

    @classmethod
    def from_vector(cls, vec: Any, d: int) -> "EffectiveParams":
        """The inverse of :meth:`vector`."""
        check_positive(d, "d", integer=True)
        vec = as_float_array(vec, "vec", ndim=1)
        if vec.size != 2 * d + 2:
            raise ValueError(f"vec must have length 2d + 2 = {2 * d + 2}, got {vec.size}")
        return cls(vec[:d].copy(), float(vec[d]), float(vec[d + 1]), vec[d + 2 :].copy())

    @classmethod
    def checked(cls, eff: Any, d: int) -> "EffectiveParams":
        """``eff``, a 4-tuple ``(w, b, r, s)``, validated for dimension ``d`` (float64 arrays)."""
        if not isinstance(eff, tuple) or len(eff) != 4:
            raise TypeError("eff must be an EffectiveParams (w, b, r, s)")
        w = as_float_array(eff[0], "w", ndim=1)
        s = as_float_array(eff[3], "s", ndim=1)
        if w.shape != (d,) or s.shape != (d,):
            raise ValueError(f"w and s must have shape ({d},), got {w.shape} and {s.shape}")
        b = float(as_float_array(eff[1], "b", ndim=0))
        r = float(as_float_array(eff[2], "r", ndim=0))
        return cls(w, b, r, s)


@dataclass(frozen=True)
class LDABlocks:
    r"""A head on the LDA token layout, stored as the blocks :math:`\theta = (U_{11}, u_{21},
    v_{21}, v_{22})` its prediction depends on.

    Not a :class:`gmmlib.attention.Head` because the other blocks of :math:`U` and :math:`V` play
    no role in the prediction on a query :math:`(x, 0)`: these are the free coordinates of the
    landscape and of the dynamics. :meth:`head` gives the full :class:`~gmmlib.attention.Head`
    (other blocks zero), :meth:`from_head` reads the blocks back.

    ``U11`` (d, d); ``u21`` (d,) is the label row of :math:`U` (``U[d, :d]``); ``v21`` (d,) and
    ``v22`` are the last row of :math:`V`.
    """

    U11: np.ndarray
    u21: np.ndarray
    v21: np.ndarray
    v22: float

    def __post_init__(self) -> None:
        U11 = as_float_array(self.U11, "U11", ndim=2)
        d = U11.shape[0]
        if U11.shape != (d, d):
            raise ValueError(f"U11 must be square, got shape {U11.shape}")
        u21 = as_float_array(self.u21, "u21", ndim=1)
        v21 = as_float_array(self.v21, "v21", ndim=1)
        if u21.shape != (d,) or v21.shape != (d,):
            raise ValueError(f"u21 and v21 must have shape ({d},), got {u21.shape} and {v21.shape}")
        v22 = float(as_float_array(self.v22, "v22", ndim=0))
        object.__setattr__(self, "U11", U11)
        object.__setattr__(self, "u21", u21)
        object.__setattr__(self, "v21", v21)
        object.__setattr__(self, "v22", v22)

    @property
    def dim(self) -> int:
        return int(self.U11.shape[0])

    @classmethod
    def from_head(cls, head: Head) -> "LDABlocks":
        """Read the blocks from a :class:`~gmmlib.attention.Head` with (d+1, d+1) ``U`` (``V``'s
        last row is the readout)."""
        if not isinstance(head, Head):
            raise TypeError(f"head must be a gmmlib.attention.Head, got {type(head).__name__}")
        U, V = head
        n = U.shape[0]
        if n < 2:
            raise ValueError(f"head.U must have shape (d+1, d+1) with d >= 1, got {U.shape}")
        d = n - 1
        return cls(U[:d, :d], U[d, :d], V[-1, :d], V[-1, d])

    def head(self) -> Head:
        """The full :class:`~gmmlib.attention.Head` ``(U, V)``, both (d+1, d+1): the other blocks
        are zero; the readout is V's last row."""
        d = self.dim
        U = np.zeros((d + 1, d + 1))
        U[:d, :d], U[d, :d] = self.U11, self.u21
        V = np.zeros((d + 1, d + 1))
        V[d, :d], V[d, d] = self.v21, self.v22
        return Head(U, V)

    def vector(self) -> np.ndarray:
        """The flat vector ``(vec U11, u21, v21, v22)`` of length d² + 2d + 1 (U11 row-major)."""
        return np.concatenate([self.U11.ravel(), self.u21, self.v21, [self.v22]])

    def balance(self) -> float:
        r"""The balance :math:`Q = \|U_{11}\|_F^2 - \|v_{21}\|^2`, conserved by the gradient flow on
        the invariant set (:prf:ref:`thm-06-symmetric`, Chapter 6)."""
        return float(np.sum(self.U11**2) - self.v21 @ self.v21)

    @classmethod
    def from_vector(cls, vec: Any, d: int) -> "LDABlocks":
        """The inverse of :meth:`vector`."""
        check_positive(d, "d", integer=True)
        vec = as_float_array(vec, "vec", ndim=1)
        if vec.size != d * d + 2 * d + 1:
            raise ValueError(f"vec must have length d² + 2d + 1 = {d * d + 2 * d + 1}, "
                             f"got {vec.size}")
        dd = d * d
        return cls(vec[:dd].reshape(d, d), vec[dd:dd + d], vec[dd + d:dd + 2 * d], vec[-1])


def effective_params(model: LDAModel, theta: LDABlocks) -> EffectiveParams:
    r"""The map :math:`\theta\mapsto(w,b,r,s)`.

    Implements eq. :eq:`eq-04-map` of :prf:ref:`thm-04-effective-predictor` (Chapter 4); the paper's
    eq. (7) in the book's block convention (its :math:`U_{11}, u_{12}` are :math:`U_{11}^\top,
    u_{21}` here).

    .. math::

        w = U_{11}^\top\Gamma v_{21},\quad b = v_{21}^\top m_{-1} - v_{22},\quad
        r = v_{21}^\top(m_1 - m_{-1}) + 2v_{22},\quad s = U_{11}^\top(m_1-m_{-1}) + 2u_{21}.
    """
    model = check_type(model, LDAModel, "model")
    if not isinstance(theta, LDABlocks):
        raise TypeError(f"theta must be an LDABlocks, got {type(theta).__name__}")
    if theta.dim != model.dim:
        raise ValueError(f"theta has dimension {theta.dim}, the model {model.dim}")
    w, b, r, s = effective_map(model.cov, model.m_neg, model.delta, theta.U11, theta.u21,
                               theta.v21, np.asarray(theta.v22))
    return EffectiveParams(w, float(b), float(r), s)


def attention_jacobian(model: LDAModel, theta: LDABlocks) -> np.ndarray:
    r"""The Jacobian of :math:`\theta\mapsto(w,b,r,s)`, shape (2d + 2, d² + 2d + 1), in the orders
    of :meth:`LDABlocks.vector` and ``(w, b, r, s)``.

    Row :math:`k` is :math:`J^\top e_k`, the adjoint of :eq:`eq-04-map`
    (:func:`attention_risk_grad`'s chain rule) applied to the :math:`k`-th coordinate vector: the
    map's derivative is written once.
    """
    model = check_type(model, LDAModel, "model")
    d = model.dim
    E = np.eye(2 * d + 2)
    gU, gu, gv, gv22 = adjoint_map(model, theta.U11, theta.v21, E[:, :d], E[:, d], E[:, d + 1],
                                   E[:, d + 2:])
    return np.concatenate([gU.reshape(2 * d + 2, d * d), gu, gv, gv22[:, None]], axis=1)


def effective_predictor(model: LDAModel, eff: Any, X: Any) -> np.ndarray:
    r""":math:`f(x) = w^\top x + b + r\,\sigma(s_0 + s^\top x)` at each row of ``X``, shape (n,).

    Implements eq. :eq:`eq-04-effective` of :prf:ref:`thm-04-effective-predictor` (Chapter 4).
    """
    model = check_type(model, LDAModel, "model")
    w, b, r, s = EffectiveParams.checked(eff, model.dim)
    X = model._points(X)
    return X @ w + b + r * expit(model.s0 + X @ s)


# ---------------------------------------------------------------------- constructions
def construction_r0(model: LDAModel, v21: Any | None = None, s: Any | None = None) -> LDABlocks:
    r"""A head with :math:`r = 0` realising :math:`f^*` (the gate is switched off by the readout).

    Implements construction 1 of :prf:ref:`prop-04-constructions` (Chapter 4); the paper mentions it
    in the remark closing its Lemma B.3. Returns the blocks :math:`\theta`; ``theta.head()`` (a
    :class:`gmmlib.attention.Head`) is the head itself. :math:`v_{22} = -v_{21}^\top\Delta/2` makes
    :math:`r = 0`, and then :math:`b = v_{21}^\top(m_1+m_{-1})/2` must equal :math:`b^*`;
    :math:`U_{11} = v_{21}w^{*\top}/(v_{21}^\top\Gamma v_{21})` gives :math:`w = w^*`; :math:`u_{21}
    = (s - U_{11}^\top\Delta)/2` sets the (irrelevant) gate direction. By default :math:`v_{21} =
    2b^*(m_1+m_{-1})/\|m_1+m_{-1}\|^2` (needs :math:`m_1\neq -m_{-1}` unless :math:`b^* = 0`) and
    :math:`s = 0`. A given ``v21`` must satisfy :math:`v_{21}^\top(m_1+m_{-1}) = 2b^*`.
    """
    model = check_type(model, LDAModel, "model")
    w_star, b_star = model.bayes_params()
    msum = model.m_pos + model.m_neg
    if v21 is None:
        if np.allclose(msum, 0):
            if abs(b_star) > 1e-12:
                raise ValueError("with m_1 = -m_{-1} and b* != 0 no head with r = 0 realises f*")
            v21 = w_star.copy()
        else:
            v21 = 2 * b_star * msum / (msum @ msum)
    v21 = as_float_array(v21, "v21", ndim=1)
    if abs(v21 @ msum - 2 * b_star) > 1e-9 * max(1.0, abs(b_star)):
        raise ValueError("v21 must satisfy v21·(m_1 + m_{-1}) = 2 b*")
    if np.allclose(v21, 0):
        raise ValueError("v21 must be non-zero (w = U11ᵀΓv21 = w* needs it)")
    s = np.zeros(model.dim) if s is None else as_float_array(s, "s", ndim=1)
    U11 = np.outer(v21, w_star) / (v21 @ model.cov @ v21)
    return LDABlocks(U11, (s - U11.T @ model.delta) / 2, v21, -(v21 @ model.delta) / 2)


def construction_s0(model: LDAModel, v21: Any | None = None) -> LDABlocks:
    r"""A head with :math:`s = 0` realising :math:`f^*` (the gate is constant, :math:`\sigma(s_0) =
    \pi_+`).

    Implements construction 2 of :prf:ref:`prop-04-constructions` (Chapter 4), the construction of
    Lemma B.3 of Gabet et al. (2026) (their constraint (C) is :math:`s = 0`). Returns the blocks
    :math:`\theta`; ``theta.head()`` is the head itself. :math:`u_{21} = -U_{11}^\top\Delta/2` makes
    :math:`s = 0`; the intercept is then :math:`b + r\pi_+ = v_{21}^\top(\pi_+m_1 + (1-\pi_+)m_{-1})
    + (2\pi_+-1)v_{22}`, set to :math:`b^*` by :math:`v_{22}` (needs :math:`\pi_+\ne\frac12`; with
    :math:`\pi_+=\frac12` pick ``v21`` with :math:`v_{21}^\top(m_1+m_{-1})/2 = b^*`). By default
    :math:`v_{21} = w^*`, :math:`U_{11} = v_{21}w^{*\top}/(v_{21}^\top\Gamma v_{21})`.
    """
    model = check_type(model, LDAModel, "model")
    w_star, b_star = model.bayes_params()
    v21 = w_star.copy() if v21 is None else as_float_array(v21, "v21", ndim=1)
    if np.allclose(v21, 0):
        raise ValueError("v21 must be non-zero")
    U11 = np.outer(v21, w_star) / (v21 @ model.cov @ v21)
    p = model.pi_pos
    mbar = p * model.m_pos + (1 - p) * model.m_neg
    if abs(2 * p - 1) < 1e-12:
        if abs(v21 @ mbar - b_star) > 1e-9 * max(1.0, abs(b_star)):
            raise ValueError("with pi_pos = 1/2, v21 must satisfy v21·(m_1 + m_{-1})/2 = b*")
        v22 = 0.0
    else:
        v22 = (b_star - v21 @ mbar) / (2 * p - 1)
    return LDABlocks(U11, -(U11.T @ model.delta) / 2, v21, v22)


# ---------------------------------------------------------------------- risks
#: The largest change of the risk between a rule and a coarser version of it that
#: :func:`population_risk` accepts, in nats, relative to max(1, R): beyond it the rule has not
#: converged and it raises.
RISK_TOLERANCE = 1e-6


def population_risk(model: LDAModel, eff: Any, n_points: int = 40, *, rule: str = "gauss-hermite",
                    tol: float | None = RISK_TOLERANCE) -> float:
    r"""The population logistic risk :math:`R = \sum_c\pi_c\,\mathbb E[\ell(c f(X))\mid Y=c]` of
    :math:`f = w^\top x + b + r\sigma(s_0+s^\top x)`.

    Implements :prf:ref:`lem-05-quadrature` (Chapter 5): given the class, :math:`(w^\top X, s^\top
    X)` is a bivariate Gaussian, so a two-dimensional rule computes :math:`R` in any dimension
    :math:`d`.

    ``rule="gauss-hermite"``: an ``n_points``² Gauss–Hermite rule. Its error decays geometrically,
    at a speed set by :math:`\pi/\sqrt{w^\top\Gamma w}` and :math:`\pi/\sqrt{s^\top\Gamma s}` (the
    distances of the poles of :math:`\ell` and :math:`\sigma` from the real axis in standardised
    units): ~1e-12 with 40 nodes at widths up to ~1.5, but useless for sharp gates (with 80 nodes at
    :math:`\sqrt{s^\top\Gamma s} = 10` the error grows with :math:`|r|`, ~1e-5 at :math:`|r| = 1/4`
    to ~1e-3 at :math:`|r| = 4`, Chapter 5's quadrature box). ``rule="adaptive"``: coordinates
    :math:`u` along the gate and :math:`v` across it; in each, a composite Gauss–Legendre rule with
    ``n_points`` nodes per panel, graded toward the gate's transition :math:`s_0 + s^\top x = 0`,
    the loss's kink :math:`f = 0`, and (in :math:`u`) the kinks of the conditional mean score
    (:func:`gmmlib.quadrature.graded_normal_rule`): accurate to ~1e-13 with 8 nodes per panel
    however sharp the gate or wide the predictor.

    The rule checks itself: when ``tol`` is not ``None`` it also evaluates a coarser rule
    (``n_points // 2`` nodes per axis for Gauss–Hermite, ``n_points - 2`` per panel for the
    adaptive rule) and raises ``ValueError`` if the two differ by more than ``tol`` × max(1, R)
    (default :data:`RISK_TOLERANCE`): the coarser rule's error, an upper estimate of the finer
    one's, says the rule has not converged. For an error estimate of the value itself, see
    :func:`excess_risk_estimate`.
    """
    model = check_type(model, LDAModel, "model")
    eff = EffectiveParams.checked(eff, model.dim)
    risk = rule_risk(model, eff, n_points, rule)
    check_converged(model, eff, n_points, rule, risk, tol)
    return risk


def excess_risk_estimate(model: LDAModel, eff: Any, n_points: int = 8, *,
                         rule: str = "adaptive") -> Any:
    r"""The excess risk :math:`R(w,b,r,s) - R^*` with its quadrature error, as a
    :class:`gmmlib.runtime.evidence.Estimate`.

    Both risks are computed with ``n_points`` and ``2 * n_points`` nodes (per panel for the
    adaptive rule, per axis for Gauss–Hermite) by
    :func:`gmmlib.runtime.evidence.converged_quadrature`: the value is the finer rule's, its error
    10 × the change between the two plus 100 ulp.
    Used for every excess risk that Chapters 5 and 6 report from a trajectory.
    """
    from ..runtime.evidence import converged_quadrature

    model = check_type(model, LDAModel, "model")
    eff = EffectiveParams.checked(eff, model.dim)
    w_star, b_star = model.bayes_params()
    bayes = EffectiveParams(w_star, b_star, 0.0, np.zeros(model.dim))

    def excess(n: int) -> float:
        return rule_risk(model, eff, n, rule) - rule_risk(model, bayes, n, rule)

    n = int(n_points)
    return converged_quadrature(excess, n, 2 * n, method=f"{rule} quadrature")


def population_risk_grad(model: LDAModel, eff: Any, n_points: int = 40, *,
                         rule: str = "gauss-hermite",
                         tol: float | None = RISK_TOLERANCE) -> tuple[float, EffectiveParams]:
    r"""The risk and its gradient in :math:`(w, b, r, s)`.

    Implements the partial derivatives in the proof of :prf:ref:`thm-05-landscape` and Stein's
    identity :eq:`eq-05-stein` (Chapter 5). With :math:`u = cf`, :math:`\ell'(u) = -\sigma(-u)`,
    :math:`\ell''(u) = \sigma(u)\sigma(-u)` and :math:`g = \sigma(s_0 + s^\top x)`:

    .. math::

        \partial_b R = \textstyle\sum_c\pi_c\mathbb E[c\ell'(u)],\quad
        \partial_r R = \sum_c\pi_c\mathbb E[c\ell'(u)g],\quad
        \partial_w R = \sum_c\pi_c\mathbb E[c\ell'(u)X],\quad
        \partial_s R = \sum_c\pi_c\mathbb E[c\ell'(u)\,r g'\,X],

    and each :math:`\mathbb E[h(w^\top X, s^\top X)X] = m_c\mathbb Eh + \Gamma(w\,\mathbb
    E\partial_1h + s\,\mathbb E\partial_2 h)` (Stein). ``rule`` and ``tol`` as in
    :func:`population_risk` (the check is on the risk).
    """
    model = check_type(model, LDAModel, "model")
    eff = EffectiveParams.checked(eff, model.dim)
    risk, gw, gb, gr, gs = risk_and_grad(model, eff, n_points, rule)
    check_converged(model, eff, n_points, rule, float(risk), tol)
    return float(risk), EffectiveParams(gw, float(gb), float(gr), gs)


def attention_risk_grad(model: LDAModel, theta: LDABlocks, n_points: int = 40, *,
                        rule: str = "gauss-hermite",
                        tol: float | None = RISK_TOLERANCE) -> tuple[float, LDABlocks]:
    r"""The risk of a head and its gradient in :math:`\theta`, by the chain rule
    :math:`\nabla_\theta R = J^\top\nabla_{(w,b,r,s)}R`.

    Implements the adjoint :math:`J^\top` of :prf:ref:`prop-05-adjoint` (Chapter 5):

    .. math::

        \partial_{U_{11}}R = \Gamma v_{21}\,g_w^\top + \Delta\,g_s^\top,\quad \partial_{u_{21}}R =
        2g_s,\quad
        \partial_{v_{21}}R = \Gamma U_{11}g_w + m_{-1}g_b + \Delta g_r,\quad \partial_{v_{22}}R =
        -g_b + 2g_r.

    ``rule`` and ``tol`` as in :func:`population_risk`.
    """
    eff = effective_params(model, theta)
    risk, g = population_risk_grad(model, eff, n_points, rule=rule, tol=tol)
    return risk, LDABlocks(*adjoint_map(model, theta.U11, theta.v21, *g))
