r"""Attention heads that denoise: exact constructions and sums of heads on mixture prompts.

Chapters 8 and 10. A head reads the noisy prompt, whose law is
:math:`\mu_Z = \sum_k\pi_k\mathcal N(m_k, \Gamma_k + \xi^2 I)`
(:func:`gmmlib.denoising.task.noisy_mixture`), and should return the Bayes denoiser
:math:`\mathbb E[X\mid Z = z]` (:func:`gmmlib.denoising.task.bayes_denoiser`). This module holds

* the exact constructions of Chapter 8: two heads for two components with equal norms
  (:func:`two_head_construction`), one head when one exists (:func:`one_head_construction`);
* a sum of heads on the infinite prompt (:func:`multihead_limit`) and its finite-prompt
  error constant (:func:`multihead_finite_prompt_mse`);
* the task-independent residual layer of Chapter 10 (:class:`ResidualLayer`,
  :func:`residual_construction`, :func:`residual_denoiser`, :func:`residual_limit`);
* the key bias of Smart et al. (2025) on clean prompts (:func:`key_bias_attention`).

Every construction returns :class:`~gmmlib.attention.Head` objects (or a
:class:`ResidualLayer` of them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .._validation import as_float_array, check_matrix, check_points, check_positive
from ..attention import Head, softmax_attention
from ..limits import softmax_attention_limit
from ..mixtures import GaussianMixture, check_mixture

__all__ = [
    "carrier_direction",
    "two_head_construction",
    "one_head_construction",
    "multihead_limit",
    "multihead_finite_prompt_mse",
    "ResidualLayer",
    "residual_construction",
    "residual_denoiser",
    "residual_limit",
    "key_bias_tokens",
    "key_bias_parameters",
    "key_bias_attention",
]


# ---------------------------------------------------------------------------- constructions
def _two_means(means: Any) -> tuple[np.ndarray, np.ndarray]:
    m = as_float_array(means, "means", ndim=2)
    if m.shape[0] != 2:
        raise ValueError(f"means must have shape (2, d), got {m.shape}")
    if m.shape[1] < 2:
        raise ValueError(
            "the two-head construction needs d >= 2 (a direction orthogonal to m1 - m2)"
        )
    n1, n2 = np.linalg.norm(m[0]), np.linalg.norm(m[1])
    if abs(n1 - n2) > 1e-9 * max(1.0, n1, n2):
        raise ValueError(f"means must have equal norms, got {n1:.6g} and {n2:.6g}")
    if np.linalg.norm(m[0] - m[1]) <= 1e-12 * max(1.0, n1):
        raise ValueError("means must be distinct (m1 != m2)")
    return m[0], m[1]


def carrier_direction(means: Any) -> np.ndarray:
    r"""A unit vector :math:`e\perp m_1 - m_2`: :math:`(m_1+m_2)/\|m_1+m_2\|` if it is non-zero,
    else the first coordinate vector made orthogonal to :math:`m_1 - m_2` (Gram–Schmidt)."""
    m1, m2 = _two_means(means)
    s = m1 + m2
    if np.linalg.norm(s) > 1e-9 * max(1.0, np.linalg.norm(m1)):
        return s / np.linalg.norm(s)
    delta = (m1 - m2) / np.linalg.norm(m1 - m2)
    basis = np.eye(m1.size)
    j = int(np.argmin(np.abs(basis @ delta)))
    e = basis[j] - (basis[j] @ delta) * delta
    return e / np.linalg.norm(e)


def _paper_two_heads(
    m1: np.ndarray, m2: np.ndarray, gamma: float, noise_std: float
) -> tuple[Head, Head]:
    """The construction of Gabet et al. (2026), Appendix C.6 (Proposition C.5), in the book's
    notation."""
    d = m1.size
    nu2 = gamma**2 + noise_std**2
    a = noise_std**2 / nu2
    delta = m1 - m2
    eye = np.eye(d)
    if np.linalg.matrix_rank(np.stack([m1, m2]), tol=1e-9 * np.linalg.norm(delta)) == 2:
        B = np.stack([m1, m2], axis=1)  # (d, 2), a basis of E = span(m1, m2)
        dual = np.linalg.pinv(B)  # rows r_i in E with r_i^T m_j = δ_ij
        P_perp = eye - B @ dual  # orthogonal projection onto E^⊥
        heads = []
        for keep, other in ((0, 1), (1, 0)):
            mk, mo = B[:, keep], B[:, other]
            # V m_keep = a m_keep, V m_other = 0
            V = a * np.outer(mk, dual[keep]) + 0.5 * a * P_perp
            U = gamma**2 / (noise_std**2 * nu2) * eye + (noise_std**2 - gamma**2) / (
                noise_std**2 * nu2
            ) * (np.outer(mo, delta) / (mo @ delta))
            heads.append(Head(U, V))
        return heads[0], heads[1]
    m = m1  # opposite means: m1 = -m2 = m
    e = m / np.linalg.norm(m)
    n = carrier_direction(np.stack([m1, m2]))  # a unit vector orthogonal to m
    P = np.outer(e, e)
    A = noise_std**2 / (2 * nu2) * P + gamma**2 / (2 * nu2) * (eye - P)
    Bm = (gamma**2 - noise_std**2) / (2 * nu2) * np.outer(e, n)
    return (Head((eye + np.outer(n, e)) / nu2, A + Bm), Head((eye - np.outer(n, e)) / nu2, A - Bm))


def two_head_construction(
    means: Any, gamma: float, noise_std: float, *, variant: str = "book"
) -> tuple[Head, Head]:
    r"""Two softmax heads whose sum, on the noisy prompt, is exactly :math:`\mathbb E[X\mid Z]`.

    Implements :prf:ref:`thm-08-two-heads` (Chapter 8), eq. :eq:`eq-08-two-heads`. Prior
    :math:`\pi_1\mathcal N(m_1,\gamma^2 I) + \pi_2\mathcal N(m_2,\gamma^2 I)` with :math:`\|m_1\| =
    \|m_2\|`, :math:`m_1\ne m_2`, any weights, :math:`d\ge 2`; :math:`\nu^2 = \gamma^2+\xi^2`,
    :math:`\hat\Delta = (m_1-m_2)/\|m_1-m_2\|`, :math:`P = I - \hat\Delta\hat\Delta^\top`, :math:`e`
    a unit vector orthogonal to :math:`\hat\Delta` (:func:`carrier_direction`):

    .. math::

        U_\pm = \frac{1}{\nu^2} I + \frac{\gamma^2-\xi^2}{\nu^2\xi^2}\big(P \pm
        e\hat\Delta^\top\big),\qquad
        V_\pm = \frac{\xi^2}{2\nu^2}\big(I \pm \hat\Delta e^\top\big).

    Both heads have the Bayes gates (:math:`\hat\Delta^\top U_\pm = \hat\Delta^\top/\nu^2`), their
    values add to :math:`\xi^2 I/\nu^2`, and their linear parts add to :math:`\gamma^2 I/\nu^2`.

    Parameters
    ----------
    means : array_like, shape (2, d)
    gamma, noise_std : float
        :math:`\gamma\ge 0` and :math:`\xi > 0`.
    variant : {"book", "paper"}
        ``"paper"``: the construction of Gabet et al. (2026), Appendix C.6 (one value matrix
        per mean for non-collinear means; a split along a direction orthogonal to :math:`m`
        for opposite means). Both are exact.

    Returns
    -------
    tuple of two :class:`~gmmlib.attention.Head`
    """
    m1, m2 = _two_means(means)
    check_positive(gamma, "gamma", allow_zero=True)
    check_positive(noise_std, "noise_std")
    if variant == "paper":
        return _paper_two_heads(m1, m2, float(gamma), float(noise_std))
    if variant != "book":
        raise ValueError(f"variant must be 'book' or 'paper', got {variant!r}")
    d = m1.size
    nu2 = gamma**2 + noise_std**2
    delta = (m1 - m2) / np.linalg.norm(m1 - m2)
    e = carrier_direction(np.stack([m1, m2]))
    P = np.eye(d) - np.outer(delta, delta)
    c = (gamma**2 - noise_std**2) / (nu2 * noise_std**2)
    heads = []
    for sign in (1.0, -1.0):
        U = np.eye(d) / nu2 + c * (P + sign * np.outer(e, delta))
        V = noise_std**2 / (2.0 * nu2) * (np.eye(d) + sign * np.outer(delta, e))
        heads.append(Head(U, V))
    return heads[0], heads[1]


def one_head_construction(means: Any, gamma: float, noise_std: float) -> Head:
    r"""A single softmax head equal to :math:`\mathbb E[X\mid Z]` on the noisy prompt, when one
    exists.

    Implements :prf:ref:`thm-08-one-head` and :prf:ref:`rem-08-point-masses` (Chapter 8). Two
    components :math:`\mathcal N(m_k, \gamma^2 I)` with equal norms, :math:`\nu^2 = \gamma^2 +
    \xi^2`:

    * :math:`\gamma > 0`: one head is exact iff :math:`\gamma = \xi`; then
      :math:`U = I/\nu^2`, :math:`V = \tfrac12 I`.
    * :math:`\gamma = 0` (point masses): one head is exact iff :math:`m_1 = -m_2` or
      :math:`d\ge 3`; then, with :math:`\Delta = m_1 - m_2`, a vector :math:`u\notin E =
      \operatorname{span}(m_1, m_2)` with :math:`\Delta^\top u\ne 0` (here
      :math:`u = \Delta/\|\Delta\| + n`, :math:`n` a unit vector orthogonal to :math:`E`),

      .. math::

          U = \frac{u\,\Delta^\top}{\xi^2\,\Delta^\top u},\qquad
          V = \text{the projection onto } E \text{ along } \operatorname{span}(u)\oplus(E +
          \operatorname{span}(u))^\perp,

      so that :math:`VU = 0`, :math:`U^\top\Delta = \Delta/\xi^2` and :math:`Vm_k = m_k`.

    Raises ``ValueError`` in the other cases, where no single head is exact.

    Returns
    -------
    :class:`~gmmlib.attention.Head`
    """
    m1, m2 = _two_means(means)
    check_positive(gamma, "gamma", allow_zero=True)
    check_positive(noise_std, "noise_std")
    d = m1.size
    nu2 = gamma**2 + noise_std**2
    if gamma > 0:
        if abs(gamma**2 - noise_std**2) > 1e-12 * noise_std**2:
            raise ValueError(
                f"for gamma > 0 one head is exact only when gamma = noise_std; "
                f"got gamma = {gamma}, noise_std = {noise_std} (Theorem thm-08-one-head)"
            )
        return Head(np.eye(d) / nu2, 0.5 * np.eye(d))
    delta = m1 - m2
    Q, _ = np.linalg.qr(np.stack([m1, m2], axis=1))
    rank = np.linalg.matrix_rank(np.stack([m1, m2]), tol=1e-9 * np.linalg.norm(delta))
    E = Q[:, :rank]  # orthonormal basis of span(m1, m2)
    if rank == d:
        raise ValueError(
            "for point masses (gamma = 0) one head is exact only when m1 = -m2 or d >= 3; "
            f"got non-collinear means in d = {d} (Remark rem-08-point-masses)"
        )
    full, _ = np.linalg.qr(np.hstack([E, np.eye(d)]))
    n = full[:, rank]  # a unit vector orthogonal to E
    u = delta / np.linalg.norm(delta) + n
    U = np.outer(u, delta) / (noise_std**2 * (delta @ u))
    rest, _ = np.linalg.qr(np.hstack([E, u[:, None], np.eye(d)]))
    B = np.hstack([E, u[:, None], rest[:, rank + 1 : d]])  # basis: E, then u, then (E + span u)^⊥
    keep = np.zeros(d)
    keep[:rank] = 1.0
    V = np.linalg.solve(B.T, (B * keep).T).T  # B diag(keep) B^{-1}
    return Head(U, V)


def multihead_limit(mixture: GaussianMixture, queries: Any, heads: Sequence[Any]) -> np.ndarray:
    r"""The infinite-prompt output :math:`\sum_h T_{U_h,V_h}[\mu](z)` of a sum of softmax heads on
    the prompt law ``mixture``.

    Implements eq. :eq:`eq-08-noisy-head` of Chapter 8 summed over heads (each head by
    :func:`gmmlib.limits.softmax_attention_limit`); ``heads`` holds :class:`~gmmlib.attention.Head`
    objects or (U, V) pairs.
    """
    mixture = check_mixture(mixture)
    if len(heads) == 0:
        raise ValueError("heads must hold at least one (U, V) pair")
    return sum(softmax_attention_limit(mixture, queries, U, V) for U, V in heads)


def multihead_finite_prompt_mse(
    mixture: GaussianMixture, queries: Any, heads: Sequence[Any]
) -> np.ndarray:
    r"""The finite-prompt constant of a sum of heads reading one prompt:
    :math:`C(z) = \lim_L L\,\mathbb E\|\sum_h (T_h[\hat\mu_L](z) - T_h[\mu](z))\|^2`.

    Extends :prf:ref:`prop-01-clt` (Chapter 1) to several heads on the same tokens (used for
    :prf:ref:`thm-08-two-heads` on finite prompts). Each head's error is, to first order,
    :math:`\frac1L\sum_j\psi_h(Z_j)` with :math:`\psi_h(x) = e^{a_h^\top x - \Lambda(a_h)}(V_hx -
    T_h)`, :math:`a_h = U_hz`, so

    .. math::

        C(z) = \sum_{h,h'} e^{\Lambda(a_h + a_{h'}) - \Lambda(a_h) - \Lambda(a_{h'})}
        \sum_k\beta^{hh'}_k\Big[\operatorname{tr}(V_h\Gamma_kV_{h'}^\top)
        + (V_h\mu^{hh'}_k - T_h)^\top(V_{h'}\mu^{hh'}_k - T_{h'})\Big],

    with :math:`\beta^{hh'}` and :math:`\mu^{hh'}_k = m_k + \Gamma_k(a_h + a_{h'})` the weights and
    means of the mixture tilted by :math:`a_h + a_{h'}`. One head gives
    :func:`gmmlib.limits.finite_prompt_mse`.

    Returns
    -------
    ndarray, shape (n,)
    """
    from scipy.special import logsumexp, softmax

    mixture = check_mixture(mixture)
    Q = check_points(queries, mixture.dim, "queries")
    if len(heads) == 0:
        raise ValueError("heads must hold at least one (U, V) pair")
    pairs = [tuple(h) for h in heads]
    A = [Q @ np.asarray(U, dtype=float).T for U, _ in pairs]  # a_h, (n, d)
    T = [softmax_attention_limit(mixture, Q, U, V) for U, V in pairs]  # (n, p)
    lam = [logsumexp(mixture.tilt_logits(a), axis=-1) for a in A]
    out = np.zeros(Q.shape[0])
    for h, (_, Vh) in enumerate(pairs):
        for g, (_, Vg) in enumerate(pairs):
            b = A[h] + A[g]
            logits = mixture.tilt_logits(b)  # (n, K)
            beta = softmax(logits, axis=-1)
            means = mixture.means[None] + np.einsum("kij,nj->nki", mixture.covs, b)  # (n, K, d)
            trace = np.einsum("pi,kij,pj->k", np.asarray(Vh), mixture.covs, np.asarray(Vg))
            rh = means @ np.asarray(Vh).T - T[h][:, None, :]
            rg = means @ np.asarray(Vg).T - T[g][:, None, :]
            inner = trace[None] + np.sum(rh * rg, axis=-1)
            out += np.exp(logsumexp(logits, axis=-1) - lam[h] - lam[g]) * np.sum(
                beta * inner, axis=-1
            )
    return out


# ---------------------------------------------------------------------------- residual layer
# (Chapter 10)
@dataclass(frozen=True)
class ResidualLayer:
    r"""A residual multi-head layer followed by an output map (Chapter 10, eq.
    :eq:`eq-10-residual`).

    .. math::

        F[\mu](z) = W_{\mathrm{out}}\begin{pmatrix} z + T_{U_1,V_1}[\mu](z)\\ \vdots \\
        z + T_{U_H,V_H}[\mu](z)\end{pmatrix},

    the architecture of the paper's Proposition 4.4 (Gabet et al., 2026). Frozen; ``heads``
    is a tuple of :class:`~gmmlib.attention.Head` with (d, d) value matrices and ``W_out`` is
    (d, H·d), read-only.
    """

    heads: tuple[Head, ...]
    W_out: np.ndarray

    def __post_init__(self) -> None:
        heads = tuple(h if isinstance(h, Head) else Head(*h) for h in self.heads)
        if not heads:
            raise ValueError("heads must hold at least one Head")
        d = heads[0].U.shape[0]
        for h in heads:
            if h.U.shape != (d, d) or h.V.shape != (d, d):
                raise ValueError(
                    f"every head of a residual layer must have (d, d) = ({d}, {d}) matrices "
                    f"U and V, got {h.U.shape} and {h.V.shape}"
                )
        W = check_matrix(self.W_out, "W_out", (d, len(heads) * d)).copy()
        W.setflags(write=False)
        object.__setattr__(self, "heads", heads)
        object.__setattr__(self, "W_out", W)

    @property
    def dim(self) -> int:
        """The token dimension d."""
        return int(self.W_out.shape[0])

    def combine(self, queries: np.ndarray, outputs: Sequence[np.ndarray]) -> np.ndarray:
        r""":math:`W_{\mathrm{out}}(z + T_1, \dots, z + T_H)` from the heads' outputs :math:`T_h`
        (..., d)."""
        d = self.dim
        return sum(
            (queries + T) @ self.W_out[:, h * d : (h + 1) * d].T for h, T in enumerate(outputs)
        )


def residual_construction(dim: int, gamma: float, noise_std: float) -> ResidualLayer:
    r"""The task-independent residual two-head denoiser of Chapter 10.

    Implements :prf:ref:`thm-10-residual` (Chapter 10), eq. :eq:`eq-10-residual`: the paper's
    Proposition 4.4 (Gabet et al., 2026). With :math:`\nu^2 = \gamma^2 + \xi^2`,

    .. math::

        U_1 = S^{-1} = \tfrac{1}{\nu^2}I,\quad V_1 = \tfrac{\xi^2}{\nu^2}I,\quad
        U_2 = V_2 = 0,\quad W_{\mathrm{out}} = \big(I,\ -\tfrac{2\xi^2}{\nu^2}I\big),

    so that :math:`W_{\mathrm{out}}(z + T_1, z + T_2) = \frac{\gamma^2}{\nu^2}z +
    \frac{\xi^2}{\nu^2}\sum_k\alpha_k(z)m_k`, the Bayes denoiser of every two-component task with
    equal norms :math:`\|m_1\| = \|m_2\|`.

    Returns
    -------
    ResidualLayer
        Two heads (``layer.heads``) and ``layer.W_out`` (d, 2d).
    """
    check_positive(dim, "dim", integer=True)
    check_positive(gamma, "gamma", allow_zero=True)
    check_positive(noise_std, "noise_std")
    nu2 = gamma**2 + noise_std**2
    eye = np.eye(dim)
    zero = np.zeros((dim, dim))
    return ResidualLayer(
        (Head(eye / nu2, noise_std**2 / nu2 * eye), Head(zero, zero)),
        np.hstack([eye, -2.0 * noise_std**2 / nu2 * eye]),
    )


def _check_layer(layer: Any) -> ResidualLayer:
    if not isinstance(layer, ResidualLayer):
        raise TypeError(
            "layer must be a ResidualLayer (e.g. from residual_construction), "
            f"got {type(layer).__name__}"
        )
    return layer


def residual_denoiser(tokens: Any, queries: Any, layer: ResidualLayer) -> np.ndarray:
    r"""The residual layer on a finite prompt: :math:`W_{\mathrm{out}}\big(z +
    T_{U_1,V_1}[\hat\mu_L](z), \dots, z + T_{U_H,V_H}[\hat\mu_L](z)\big)`.

    Implements eq. :eq:`eq-10-residual` of Chapter 10 on the empirical measure of the prompt (the
    in-context denoiser whose error eq. :eq:`eq-10-finite` describes).

    Parameters
    ----------
    tokens : array_like, shape (L, d) or (B, L, d)
        The noisy prompt(s).
    queries : array_like, shape (n, d) or (B, n, d)
    layer : ResidualLayer
        E.g. from :func:`residual_construction`.

    Returns
    -------
    ndarray, shape (n, d) or (B, n, d)
    """
    layer = _check_layer(layer)
    Q = as_float_array(queries, "queries", ndim=(2, 3))
    if Q.shape[-1] != layer.dim:
        raise ValueError(
            f"queries must have last dimension {layer.dim} (the layer's), got {Q.shape}"
        )
    # np.array copies: torch warns on the read-only arrays that a frozen Head holds
    outputs = [
        np.zeros_like(Q)
        if not np.any(V)
        else softmax_attention(tokens, Q, np.array(U), np.array(V))
        for U, V in layer.heads
    ]
    return layer.combine(Q, outputs)


def residual_limit(mixture: GaussianMixture, queries: Any, layer: ResidualLayer) -> np.ndarray:
    r"""The infinite-prompt limit of :func:`residual_denoiser` on the prompt law ``mixture``.

    Implements eq. :eq:`eq-10-residual` of Chapter 10 on the prompt law itself
    (:prf:ref:`thm-10-residual`: it equals the task's Bayes denoiser).
    """
    layer = _check_layer(layer)
    mixture = check_mixture(mixture)
    Q = check_points(queries, mixture.dim, "queries")
    if mixture.dim != layer.dim:
        raise ValueError(f"the layer acts in dimension {layer.dim}, the mixture in {mixture.dim}")
    return layer.combine(Q, [softmax_attention_limit(mixture, Q, U, V) for U, V in layer.heads])


# ---------------------------------------------------------------------------- clean prompts (Smart
# et al.)
def key_bias_tokens(X: Any) -> np.ndarray:
    r"""Clean tokens augmented with their squared norm: :math:`x\mapsto(x, \|x\|^2)`, shape (..., L,
    d+1).

    The token layout of :prf:ref:`prop-10-key-bias` (Chapter 10), the key bias of Smart et al.
    (2025).
    """
    X = as_float_array(X, "X", ndim=(2, 3))
    return np.concatenate([X, np.sum(X**2, axis=-1, keepdims=True)], axis=-1)


def key_bias_parameters(dim: int, noise_std: float) -> Head:
    r"""The head on augmented tokens :math:`(x, \|x\|^2)` and queries :math:`(z, 1)` with scores
    :math:`x^\top z/\xi^2 - \|x\|^2/(2\xi^2)` and values :math:`x`.

    Implements :prf:ref:`prop-10-key-bias` (Chapter 10), eq. :eq:`eq-10-key-bias`, the construction
    of Smart et al. (2025):

    .. math::

        U = \begin{pmatrix} I/\xi^2 & 0\\ 0 & -1/(2\xi^2)\end{pmatrix},\qquad V = (I\ \ 0).

    The weights are :math:`\propto e^{-\|z-x_j\|^2/(2\xi^2)}`: a Gaussian kernel smoother.

    Returns
    -------
    Head
        ``U`` (d+1, d+1) and ``V`` (d, d+1).
    """
    check_positive(dim, "dim", integer=True)
    check_positive(noise_std, "noise_std")
    U = np.zeros((dim + 1, dim + 1))
    U[:dim, :dim] = np.eye(dim) / noise_std**2
    U[dim, dim] = -0.5 / noise_std**2
    V = np.hstack([np.eye(dim), np.zeros((dim, 1))])
    return Head(U, V)


def key_bias_attention(X: Any, queries: Any, noise_std: float) -> np.ndarray:
    r"""Attention of noisy queries over a clean prompt with the key bias :math:`-\|x\|^2/(2\xi^2)`.

    Implements :prf:ref:`prop-10-key-bias` (Chapter 10), eq. :eq:`eq-10-key-bias`:

    .. math::

        \hat f_L(z) = \frac{\sum_j e^{-\|z - x_j\|^2/(2\xi^2)}\,x_j}{\sum_j e^{-\|z -
        x_j\|^2/(2\xi^2)}}
        \xrightarrow[L\to\infty]{} \mathbb E[X\mid Z = z]\quad\text{for any prior of } X
        \text{ with } \mathbb E\|X\| < \infty.

    ``X`` is (L, d) or (B, L, d), ``queries`` (n, d) or (B, n, d).
    """
    T = key_bias_tokens(X)
    Q = as_float_array(queries, "queries", ndim=(2, 3))
    d = Q.shape[-1]
    if T.shape[-1] != d + 1:
        raise ValueError(
            f"X and queries must have the same dimension, got {T.shape[-1] - 1} and {d}"
        )
    Qa = np.concatenate([Q, np.ones(Q.shape[:-1] + (1,))], axis=-1)
    U, V = key_bias_parameters(d, noise_std)
    return softmax_attention(T, Qa, U, V)
