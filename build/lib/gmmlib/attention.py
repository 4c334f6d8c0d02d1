r"""Finite-prompt attention: one softmax and one linear implementation, plus trainable heads.

Implements :prf:ref:`def-01-attention` of Chapter 1 on the empirical measure of a prompt.

A prompt of tokens :math:`z_1, \dots, z_L \in \mathbb R^d` and a query :math:`z` give

.. math::

    T_{U,V}[\hat\mu_L](z) = \frac{\sum_j e^{z_j^\top U z}\, V z_j}{\sum_j e^{z_j^\top U z}},
    \qquad
    T^{\mathrm{lin}}_{U,V}[\hat\mu_L](z) = \frac1L \sum_j (z_j^\top U z)\, V z_j
    = V \Big(\frac1L\sum_j z_j z_j^\top\Big) U z,

the softmax and linear attention of the empirical measure :math:`\hat\mu_L`. ``U`` (d, d) merges
query and key matrices, ``V`` (p, d) is the value matrix. Every function of gmmlib that takes a head
takes ``U, V`` side by side, so a :class:`Head` is passed unpacked: ``softmax_attention(tokens,
queries, *head)`` (one signature per function, with the formulas' names; ``head.U`` where only
:math:`U` enters).

Both functions take numpy arrays (and return numpy, computed in float64 with numpy alone)
or torch tensors (and return a differentiable torch tensor). Each is written once, against
the array namespace of its inputs (``numpy`` or ``torch``: the same operators and functions),
so the numpy and the torch results come from one formula. Softmax attention streams over
the tokens with a running log-sum-exp, so it is finite for huge scores and its memory does
not grow with the prompt length beyond the inputs.

This module imports no torch: tensor inputs imply that the caller has imported it, and the trainable
torch twin of :class:`Head` is :class:`gmmlib.attention_torch.AttentionHead`. A chapter that
computes in numpy does not pay for importing torch.

:class:`Head` and :class:`PromptBatch` are defined here, and every gmmlib module that builds heads
or samples prompts imports them from here.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._validation import as_tensor, as_float_array

__all__ = [
    "Head",
    "PromptBatch",
    "softmax_attention",
    "linear_attention",
    "attention_weights",
    "softmax_attention_path",
]

# Scores held at once per chunk: batch * queries * chunk <= this many numbers.
_CHUNK_BUDGET = 1 << 21


@dataclass(frozen=True)
class Head:
    r"""The parameters :math:`(U, V)` of one attention head, as numpy float64 arrays.

    Every construction of the book returns a :class:`Head` or a tuple of them (a multi-head layer is
    the sum of its heads). ``U`` is (d, d), ``V`` is (p, d); ``U, V = head`` unpacks, and ``f(...,
    *head)`` passes it to any function of ``U, V``.
    """

    U: np.ndarray
    V: np.ndarray

    def __post_init__(self) -> None:
        U = np.array(self.U, dtype=np.float64)
        V = np.array(self.V, dtype=np.float64)
        if U.ndim != 2 or U.shape[0] != U.shape[1]:
            raise ValueError(f"U must be a square (d, d) matrix, got shape {U.shape}")
        if V.ndim != 2 or V.shape[1] != U.shape[0]:
            raise ValueError(
                f"V must be a (p, d) matrix with d = {U.shape[0]}, got shape {V.shape}"
            )
        if not (np.all(np.isfinite(U)) and np.all(np.isfinite(V))):
            raise ValueError("U and V must be finite (no NaN or inf)")
        U.setflags(write=False)
        V.setflags(write=False)
        object.__setattr__(self, "U", U)
        object.__setattr__(self, "V", V)

    def __iter__(self):
        return iter((self.U, self.V))


@dataclass(frozen=True)
class PromptBatch:
    r"""A batch of prompts with their queries and targets: what every task sampler of gmmlib
    returns.

    Task samplers are called ``sample_prompts(<task>, n_prompts=..., length=..., rng=...)`` and
    return one of these (a task may subclass it to add its own fields).

    Attributes
    ----------
    tokens : ndarray or Tensor, shape (n_prompts, length, D)
        The prompts' tokens.
    queries : ndarray or Tensor, shape (n_prompts, n_queries, D)
        The query tokens of each prompt.
    targets : ndarray or Tensor
        What a perfect model would output for each query (task-dependent shape).
    """

    tokens: Any
    queries: Any
    targets: Any


def _namespace(*xs: Any):
    """``torch`` if any argument is a torch tensor (torch is then already imported), else
    ``numpy``."""
    torch = sys.modules.get("torch")
    if torch is not None and any(isinstance(x, torch.Tensor) for x in xs):
        return torch
    return np


def _plain(x: Any) -> Any:
    """``x`` without its autograd history (numpy arrays are returned as they are)."""
    return x.detach() if hasattr(x, "detach") else x


def _prepare(tokens: Any, queries: Any, U: Any, V: Any, xp: Any = None):
    """Validate shapes; return arrays of one namespace ``xp`` (numpy, or torch for tensors), and
    whether to batch."""
    xp = _namespace(tokens, queries, U, V) if xp is None else xp
    if xp is np:
        Z, Q, U, V = (
            as_float_array(x, n)
            for x, n in ((tokens, "tokens"), (queries, "queries"), (U, "U"), (V, "V"))
        )
    else:
        dtypes = [
            x.dtype
            for x in (tokens, queries, U, V)
            if isinstance(x, xp.Tensor) and x.is_floating_point()
        ]
        dtype = dtypes[0] if dtypes else xp.float64
        for dt in dtypes[1:]:
            dtype = xp.promote_types(dtype, dt)
        Z, Q, U, V = (
            as_tensor(x, n, dtype)
            for x, n in ((tokens, "tokens"), (queries, "queries"), (U, "U"), (V, "V"))
        )
    if Z.ndim not in (2, 3):
        raise ValueError(f"tokens must have shape (L, d) or (B, L, d), got {tuple(Z.shape)}")
    if Q.ndim not in (2, 3):
        raise ValueError(f"queries must have shape (n, d) or (B, n, d), got {tuple(Q.shape)}")
    d = Z.shape[-1]
    if Z.shape[-2] == 0:
        raise ValueError("tokens must hold at least one token (L >= 1)")
    if Q.shape[-1] != d:
        raise ValueError(
            f"queries must have last dimension d = {d} (the tokens' dimension), "
            f"got {tuple(Q.shape)}"
        )
    if tuple(U.shape) != (d, d):
        raise ValueError(f"U must have shape (d, d) = ({d}, {d}), got {tuple(U.shape)}")
    if V.ndim != 2 or V.shape[1] != d:
        raise ValueError(f"V must have shape (p, d) with d = {d}, got {tuple(V.shape)}")
    if Z.ndim == 3 and Q.ndim == 3 and Z.shape[0] != Q.shape[0]:
        raise ValueError(
            f"tokens and queries must have the same batch size, got {Z.shape[0]} and {Q.shape[0]}"
        )
    batched = Z.ndim == 3 or Q.ndim == 3
    if batched:
        B = Z.shape[0] if Z.ndim == 3 else Q.shape[0]
        Z = Z if Z.ndim == 3 else Z[None]
        Q = Q if Q.ndim == 3 else xp.broadcast_to(Q[None], (B, *Q.shape))  # a view: no copy
    else:
        Z, Q = Z[None], Q[None]
    return Z, Q, U, V, xp, batched


def _finish(out: Any, xp: Any, batched: bool):
    if not batched:
        out = out[0]
    if xp is np and not np.isfinite(out).all():
        raise ValueError(
            "the result overflows the float range: the tokens, U or V are too large for it"
        )
    return out


def _finite_tilts(Q: Any, U: Any, Z: Any, xp: Any) -> Any:
    """The tilts a = Uz of the queries, each row whose scores could overflow replaced by its
    direction at a finite scale.

    Where a = Uz (or a score z_jᵀa) is beyond the float range, the softmax over the tokens is
    an argmax (ties shared): only the direction of a matters. It is rescaled so that no score
    exceeds 1e-8 of the largest float, which keeps that argmax. (No gradient flows through
    the test or the replacement.)
    """
    with np.errstate(over="ignore", invalid="ignore"):  # overflowing rows are replaced below
        A = Q @ U.T
    big = xp.finfo(A.dtype).max * 1e-8
    Zp = _plain(Z)  # the largest |z_j| per prompt, without a temporary of the prompt's size:
    zmax = xp.clip(
        xp.maximum(
            xp.amax(Zp, axis=(-2, -1), keepdims=True), -xp.amin(Zp, axis=(-2, -1), keepdims=True)
        ),
        1.0,
        None,
    )
    with np.errstate(over="ignore", invalid="ignore"):  # inf or nan tilts compare False
        bad = ~(xp.amax(xp.abs(_plain(A)), axis=-1, keepdims=True) * zmax * Z.shape[-1] <= big)
    if not bool(bad.any()):
        return A
    tiny = xp.finfo(A.dtype).tiny
    Q, U = _plain(Q), _plain(U)
    direction = (Q / xp.clip(xp.amax(xp.abs(Q), axis=-1, keepdims=True), tiny, None)) @ (
        U / xp.amax(xp.abs(U))
    ).T
    dmax = xp.clip(xp.amax(xp.abs(direction), axis=-1, keepdims=True), tiny, None)
    scaled = direction * (big / (dmax * zmax * Z.shape[-1]))
    return xp.where(bad, scaled, A)


def _softmax_mean(Z: Any, A: Any, chunk_size: int, xp: Any, in_place: bool) -> Any:
    r"""The softmax-weighted mean of the tokens, :math:`\sum_j e^{z_j^\top a} z_j / \sum_j
    e^{z_j^\top a}`, per tilt.

    One pass over chunks of tokens with a running maximum :math:`M` of the scores: after
    each chunk the partial sums are rescaled by :math:`e^{M_{old}-M_{new}}`. ``in_place``
    (no gradient needed) exponentiates each chunk's scores where they lie.
    """
    run_max = run_sum = acc = None
    for start in range(0, Z.shape[-2], chunk_size):
        chunk = Z[..., start : start + chunk_size, :]
        S = A @ chunk.swapaxes(-1, -2)  # (B, n, c) scores
        new_max = (
            xp.amax(S, axis=-1) if run_max is None else xp.maximum(run_max, xp.amax(S, axis=-1))
        )
        if in_place:
            S -= new_max[..., None]
            P = xp.exp(S, out=S)
        else:
            P = xp.exp(S - new_max[..., None])
        if run_max is None:
            run_sum, acc = P.sum(-1), P @ chunk
        else:
            rescale = xp.exp(run_max - new_max)
            run_sum = run_sum * rescale + P.sum(-1)
            acc = acc * rescale[..., None] + P @ chunk
        run_max = new_max
    return acc / run_sum[..., None]


def _grad_wanted(xp: Any, *xs: Any) -> bool:
    return xp is not np and xp.is_grad_enabled() and any(x.requires_grad for x in xs)


def softmax_attention(tokens: Any, queries: Any, U: Any, V: Any, *, chunk_size: int | None = None):
    r"""Softmax attention of each query over a finite prompt.

    .. math::

        T_{U,V}[\hat\mu_L](z) = V\,\frac{\sum_{j=1}^L e^{s_j} z_j}{\sum_{j=1}^L e^{s_j}},
        \qquad s_j = z_j^\top U z,

    computed in chunks of tokens with a running maximum :math:`M` (the streaming
    log-sum-exp): after each chunk the partial sums are rescaled by :math:`e^{M_{old}-M_{new}}`,
    so no exponential ever overflows.

    Parameters
    ----------
    tokens : array_like or Tensor, shape (L, d) or (B, L, d)
        The prompt(s) :math:`z_1, \dots, z_L`.
    queries : array_like or Tensor, shape (n, d) or (B, n, d)
        The queries :math:`z`. A 2-D ``queries`` with 3-D ``tokens`` is used for every prompt.
    U : array_like or Tensor, shape (d, d)
        Interaction (query-key) matrix.
    V : array_like or Tensor, shape (p, d)
        Value matrix.
    chunk_size : int, optional
        Tokens processed at once; by default chosen so that at most about 2·10⁶ scores are
        held in memory (16 MiB in float64), which also keeps them in cache.

    Returns
    -------
    ndarray or Tensor, shape (n, p) or (B, n, p)
        numpy (float64) for numpy inputs; a differentiable tensor if any input is a tensor.
    """
    Z, Q, U, V, xp, batched = _prepare(tokens, queries, U, V)
    B, L, d = Z.shape
    n = Q.shape[1]
    if chunk_size is None:
        chunk_size = max(1, _CHUNK_BUDGET // max(1, B * n))
    elif (
        isinstance(chunk_size, bool)
        or not isinstance(chunk_size, (int, np.integer))
        or chunk_size < 1
    ):
        raise ValueError(f"chunk_size must be a positive integer, got {chunk_size!r}")
    A = _finite_tilts(Q, U, Z, xp)  # a_i = U z_i, shape (B, n, d): s_ij = z_j . a_i
    mean_token = _softmax_mean(Z, A, int(chunk_size), xp, in_place=not _grad_wanted(xp, Z, A))
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused by _finish
        return _finish(mean_token @ V.T, xp, batched)


def softmax_attention_path(tokens: Any, queries: Any, U: Any, V: Any, lengths: Any) -> np.ndarray:
    r"""Softmax attention over the first :math:`L` tokens of one prompt, for several :math:`L` at
    once.

    Follows a single growing prompt :math:`z_1, z_2, \dots`: row :math:`i` of the result is
    :math:`T_{U,V}[\hat\mu_{L_i}](z)` with :math:`\hat\mu_{L}` the empirical measure of
    :math:`z_1,\dots,z_L`. Computed with cumulative sums of :math:`e^{s_j - M}` (:math:`M` the
    largest score of the whole prompt, so no exponential overflows) in float64.

    Parameters
    ----------
    tokens : array_like, shape (L_max, d)
    queries : array_like, shape (n, d)
    U : array_like, shape (d, d)
    V : array_like, shape (p, d)
    lengths : array_like of int, shape (m,)
        Prefix lengths, each between 1 and ``L_max``.

    Returns
    -------
    ndarray, shape (m, n, p)

    Notes
    -----
    A prefix whose scores are all far below the prompt's maximum (by more than about 700)
    would underflow against it; such prefixes are computed with a cumulative log-sum-exp.
    """
    Z, Q, Ut, Vt, _, batched = _prepare(tokens, queries, U, V, xp=np)
    if batched:
        raise ValueError(
            f"tokens must have shape (L, d) and queries (n, d) for a path, got {tuple(Z.shape)}"
        )
    lengths = np.asarray(lengths)
    if lengths.ndim != 1 or lengths.size == 0 or not np.issubdtype(lengths.dtype, np.integer):
        raise ValueError("lengths must be a non-empty 1-D array of integers")
    L = Z.shape[1]
    if lengths.min() < 1 or lengths.max() > L:
        raise ValueError(f"lengths must lie between 1 and the number of tokens {L}")
    S = Z[0] @ _finite_tilts(Q, Ut, Z, np)[0].T  # (L, n)
    W = np.exp(S - S.max(axis=0))
    idx = lengths - 1
    den = np.cumsum(W, axis=0)[idx]  # (m, n)
    num = np.cumsum(W[:, :, None] * Z[0][:, None, :], axis=0)[idx]  # (m, n, d)
    if (den > 0).all():
        mean = num / den[..., None]
    else:  # a prefix's weights underflow against the whole prompt's maximum: cumulative log-sum-exp
        log_den = np.logaddexp.accumulate(S, axis=0)[..., None]  # (L, n, 1)
        parts = []
        for sign in (1.0, -1.0):
            with np.errstate(divide="ignore"):
                log_z = np.log(np.clip(sign * Z[0], 0.0, None))  # -inf where z has the other sign
            parts.append(
                np.exp(np.logaddexp.accumulate(S[..., None] + log_z[:, None, :], axis=0) - log_den)
            )
        mean = (parts[0] - parts[1])[idx]
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused by _finish
        return _finish(mean @ Vt.T, np, True)


def attention_weights(tokens: Any, query: Any, U: Any) -> np.ndarray:
    r"""The softmax weights :math:`e^{s_j}/\sum_i e^{s_i}`, :math:`s_j = z_j^\top U z`, of one query
    over a prompt.

    Parameters
    ----------
    tokens : array_like, shape (L, d)
    query : array_like, shape (d,)
    U : array_like, shape (d, d)

    Returns
    -------
    ndarray, shape (L,)
    """
    q = as_float_array(query, "query")
    if q.ndim != 1:
        raise ValueError(f"query must be one vector of shape (d,), got shape {q.shape}")
    Z, Q, Ut, _, _, batched = _prepare(tokens, q[None, :], U, np.eye(q.shape[0]), xp=np)
    if batched:
        raise ValueError(f"tokens must have shape (L, d), got {tuple(Z.shape)}")
    s = Z[0] @ _finite_tilts(Q, Ut, Z, np)[0, 0]
    w = np.exp(s - s.max())
    return w / w.sum()


def linear_attention(tokens: Any, queries: Any, U: Any, V: Any):
    r"""Linear attention of each query over a finite prompt.

    .. math::

        T^{\mathrm{lin}}_{U,V}[\hat\mu_L](z) = \frac1L\sum_{j=1}^L (z_j^\top U z)\,V z_j
        = V\,\hat M\,U z, \qquad \hat M = \frac1L\sum_j z_j z_j^\top,

    computed through the empirical second moment :math:`\hat M` (one pass over the tokens).

    Parameters and returns are as in :func:`softmax_attention`.
    """
    Z, Q, U, V, xp, batched = _prepare(tokens, queries, U, V)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused by _finish
        M = Z.swapaxes(-1, -2) @ Z / Z.shape[-2]  # (B, d, d)
        return _finish((Q @ U.T) @ M @ V.T, xp, batched)
