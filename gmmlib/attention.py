r"""Finite-prompt attention: one softmax and one linear implementation, plus trainable heads.

Implements Definition def-01-attention of Chapter 1 on the empirical measure of a prompt.

A prompt of tokens :math:`z_1, \dots, z_L \in \mathbb R^d` and a query :math:`z` give

.. math::

    T_{U,V}[\hat\mu_L](z) = \frac{\sum_j e^{z_j^\top U z}\, V z_j}{\sum_j e^{z_j^\top U z}},
    \qquad
    T^{\mathrm{lin}}_{U,V}[\hat\mu_L](z) = \frac1L \sum_j (z_j^\top U z)\, V z_j
    = V \Big(\frac1L\sum_j z_j z_j^\top\Big) U z,

the softmax and linear attention of the empirical measure :math:`\hat\mu_L`. ``U`` (d, d)
merges query and key matrices, ``V`` (p, d) is the value matrix.

Both functions take numpy arrays (and return numpy, computed in float64 without
gradients) or torch tensors (and return a differentiable torch tensor). Softmax attention
streams over the tokens with a running log-sum-exp, so it is finite for huge scores
and its memory does not grow with the prompt length beyond the inputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from ._types import Head, PromptBatch

__all__ = [
    "Head",
    "PromptBatch",
    "softmax_attention",
    "linear_attention",
    "attention_weights",
    "softmax_attention_path",
    "AttentionHead",
]

# Scores held at once per chunk: batch * queries * chunk <= this many numbers.
_CHUNK_BUDGET = 1 << 21


def _is_torch(*xs: Any) -> bool:
    return any(isinstance(x, torch.Tensor) for x in xs)


def _to_tensor(x: Any, name: str, dtype: torch.dtype | None) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        t = x if dtype is None else x.to(dtype)
    else:
        try:
            arr = np.asarray(x, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name} must be a numeric array or tensor, got {type(x).__name__}") from exc
        if not arr.flags.writeable:  # read-only (e.g. a frozen mixture's means): torch needs its own copy
            arr = arr.copy()
        t = torch.from_numpy(arr)
        if dtype is not None:
            t = t.to(dtype)
    if not t.is_floating_point():
        t = t.to(torch.get_default_dtype())
    if not bool(torch.isfinite(t.detach()).all()):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return t


def _prepare(tokens: Any, queries: Any, U: Any, V: Any):
    """Validate shapes; return tensors, a flag for numpy output, and whether to batch."""
    numpy_mode = not _is_torch(tokens, queries, U, V)
    if numpy_mode:
        dtype = torch.float64
    else:
        dtypes = [x.dtype for x in (tokens, queries, U, V) if isinstance(x, torch.Tensor) and x.is_floating_point()]
        dtype = dtypes[0] if dtypes else torch.float64
        for dt in dtypes[1:]:
            dtype = torch.promote_types(dtype, dt)
    Z = _to_tensor(tokens, "tokens", dtype)
    Q = _to_tensor(queries, "queries", dtype)
    U = _to_tensor(U, "U", dtype)
    V = _to_tensor(V, "V", dtype)
    if Z.ndim not in (2, 3):
        raise ValueError(f"tokens must have shape (L, d) or (B, L, d), got {tuple(Z.shape)}")
    if Q.ndim not in (2, 3):
        raise ValueError(f"queries must have shape (n, d) or (B, n, d), got {tuple(Q.shape)}")
    d = Z.shape[-1]
    if Z.shape[-2] == 0:
        raise ValueError("tokens must hold at least one token (L >= 1)")
    if Q.shape[-1] != d:
        raise ValueError(f"queries must have last dimension d = {d} (the tokens' dimension), got {tuple(Q.shape)}")
    if U.shape != (d, d):
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
        if Z.ndim == 2:
            Z = Z.unsqueeze(0).expand(B, *Z.shape)
        if Q.ndim == 2:
            Q = Q.unsqueeze(0).expand(B, *Q.shape)
    else:
        Z, Q = Z.unsqueeze(0), Q.unsqueeze(0)
    return Z, Q, U, V, numpy_mode, batched


def _finish(out: torch.Tensor, numpy_mode: bool, batched: bool):
    if not batched:
        out = out.squeeze(0)
    if numpy_mode and not bool(torch.isfinite(out).all()):
        raise ValueError("the result overflows the float range: the tokens, U or V are too large for it")
    return out.detach().cpu().numpy() if numpy_mode else out


def _finite_tilts(A: torch.Tensor, Q: torch.Tensor, U: torch.Tensor, Z: torch.Tensor) -> torch.Tensor:
    """The tilts a = Uz, with each row whose scores could overflow replaced by its direction at a finite scale.

    Where a = Uz (or a score z_jᵀa) is beyond the float range, the softmax over the tokens is
    an argmax (ties shared): only the direction of a matters. It is rescaled so that no score
    exceeds 1e-8 of the largest float, which keeps that argmax.
    """
    big = torch.finfo(A.dtype).max * 1e-8
    zmax = Z.detach().abs().amax(dim=(-2, -1), keepdim=True).clamp_min(1.0)
    with torch.no_grad():  # rows whose scores could overflow (inf or nan tilts compare False)
        bad = ~(A.detach().abs().amax(dim=-1, keepdim=True) * zmax * Z.shape[-1] <= big)
    if not bool(bad.any()):
        return A
    tiny = torch.finfo(A.dtype).tiny
    with torch.no_grad():
        direction = (Q / Q.abs().amax(dim=-1, keepdim=True).clamp_min(tiny)) @ (U / U.abs().max()).T
        dmax = direction.abs().amax(dim=-1, keepdim=True).clamp_min(tiny)
        scaled = direction * (big / (dmax * zmax * Z.shape[-1]))
    return torch.where(bad, scaled, A)


def _stream_no_grad(Z: torch.Tensor, A: torch.Tensor, chunk_size: int) -> torch.Tensor:
    """Streaming softmax-weighted mean of the tokens, in place, for when no gradient is needed.

    Each chunk's scores are exponentiated in place, and the weighted sum of the tokens and
    the sum of the weights come out of one batched matrix product against the chunk with a
    column of ones appended.
    """
    B, L, d = Z.shape
    n = A.shape[1]
    run_max = torch.full((B, n), -torch.inf, dtype=Z.dtype, device=Z.device)
    acc = torch.zeros((B, n, d + 1), dtype=Z.dtype, device=Z.device)
    ones = torch.ones((B, min(chunk_size, L), 1), dtype=Z.dtype, device=Z.device)
    for start in range(0, L, chunk_size):
        chunk = Z[:, start : start + chunk_size]
        c = chunk.shape[1]
        S = torch.bmm(A, chunk.transpose(1, 2))  # (B, n, c) scores
        new_max = torch.maximum(run_max, S.amax(dim=-1))
        S.sub_(new_max.unsqueeze(-1)).exp_()
        values = torch.cat([chunk, ones[:, :c]], dim=-1)  # (B, c, d + 1)
        acc.mul_(torch.exp(run_max - new_max).unsqueeze(-1)).baddbmm_(S, values)
        run_max = new_max
    return acc[..., :d] / acc[..., d:]


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
    Z, Q, U, V, numpy_mode, batched = _prepare(tokens, queries, U, V)
    B, L, d = Z.shape
    n = Q.shape[1]
    if chunk_size is None:
        chunk_size = max(1, _CHUNK_BUDGET // max(1, B * n))
    elif isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer, got {chunk_size!r}")
    with torch.set_grad_enabled(torch.is_grad_enabled() and not numpy_mode):
        A = _finite_tilts(Q @ U.T, Q, U, Z)  # a_i = U z_i, shape (B, n, d): s_ij = z_j . a_i
        if L <= chunk_size:
            S = A @ Z.transpose(1, 2)  # (B, n, L)
            W = torch.softmax(S, dim=-1)
            mean_token = W @ Z
        elif not (torch.is_grad_enabled() and (Z.requires_grad or A.requires_grad)):
            mean_token = _stream_no_grad(Z, A, int(chunk_size))
        else:
            run_max = torch.full((B, n), -torch.inf, dtype=Z.dtype, device=Z.device)
            run_sum = torch.zeros((B, n), dtype=Z.dtype, device=Z.device)
            acc = torch.zeros((B, n, d), dtype=Z.dtype, device=Z.device)
            for start in range(0, L, int(chunk_size)):
                chunk = Z[:, start : start + int(chunk_size)]
                S = A @ chunk.transpose(1, 2)
                new_max = torch.maximum(run_max, S.amax(dim=-1))
                rescale = torch.exp(run_max - new_max)
                P = torch.exp(S - new_max.unsqueeze(-1))
                run_sum = run_sum * rescale + P.sum(dim=-1)
                acc = acc * rescale.unsqueeze(-1) + P @ chunk
                run_max = new_max
            mean_token = acc / run_sum.unsqueeze(-1)
        out = mean_token @ V.T
    return _finish(out, numpy_mode, batched)


def softmax_attention_path(tokens: Any, queries: Any, U: Any, V: Any, lengths: Any) -> np.ndarray:
    r"""Softmax attention over the first :math:`L` tokens of one prompt, for several :math:`L` at once.

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
    would underflow against it; such prefixes are computed with log-cumulative-sum-exp.
    """
    Z, Q, Ut, Vt, _, batched = _prepare(tokens, queries, U, V)
    if batched:
        raise ValueError(f"tokens must have shape (L, d) and queries (n, d) for a path, got {tuple(Z.shape)}")
    lengths = np.asarray(lengths)
    if lengths.ndim != 1 or lengths.size == 0 or not np.issubdtype(lengths.dtype, np.integer):
        raise ValueError("lengths must be a non-empty 1-D array of integers")
    L = Z.shape[1]
    if lengths.min() < 1 or lengths.max() > L:
        raise ValueError(f"lengths must lie between 1 and the number of tokens {L}")
    with torch.no_grad():
        S = Z[0] @ _finite_tilts(Q @ Ut.T, Q, Ut, Z)[0].T  # (L, n)
        W = torch.exp(S - S.max(dim=0).values)
        idx = torch.as_tensor(lengths - 1)
        den = torch.cumsum(W, dim=0)[idx]  # (m, n)
        num = torch.cumsum(W.unsqueeze(-1) * Z[0].unsqueeze(1), dim=0)[idx]  # (m, n, d)
        if bool((den > 0).all()):
            mean = num / den.unsqueeze(-1)
        else:  # a prefix's weights underflow against the whole prompt's maximum: log-cumsum-exp
            log_den = torch.logcumsumexp(S, dim=0).unsqueeze(-1)  # (L, n, 1)
            parts = []
            for sign in (1.0, -1.0):
                with np.errstate(divide="ignore"):
                    log_z = torch.log(torch.clamp(sign * Z[0], min=0.0))  # -inf where z has the other sign
                parts.append(torch.exp(torch.logcumsumexp(S.unsqueeze(-1) + log_z.unsqueeze(1), dim=0) - log_den))
            mean = (parts[0] - parts[1])[idx]
        return _finish(mean @ Vt.T, True, True)


def attention_weights(tokens: Any, query: Any, U: Any) -> np.ndarray:
    r"""The softmax weights :math:`e^{s_j}/\sum_i e^{s_i}`, :math:`s_j = z_j^\top U z`, of one query over a prompt.

    Parameters
    ----------
    tokens : array_like, shape (L, d)
    query : array_like, shape (d,)
    U : array_like, shape (d, d)

    Returns
    -------
    ndarray, shape (L,)
    """
    q = np.asarray(query, dtype=np.float64)
    if q.ndim != 1:
        raise ValueError(f"query must be one vector of shape (d,), got shape {q.shape}")
    Z, Q, Ut, _, _, _ = _prepare(tokens, q[None, :], U, np.eye(q.shape[0]))
    if Z.shape[0] != 1:
        raise ValueError(f"tokens must have shape (L, d), got {tuple(Z.shape)}")
    with torch.no_grad():
        s = Z[0] @ _finite_tilts(Q @ Ut.T, Q, Ut, Z)[0, 0]
        return torch.softmax(s, dim=0).numpy()


def linear_attention(tokens: Any, queries: Any, U: Any, V: Any):
    r"""Linear attention of each query over a finite prompt.

    .. math::

        T^{\mathrm{lin}}_{U,V}[\hat\mu_L](z) = \frac1L\sum_{j=1}^L (z_j^\top U z)\,V z_j
        = V\,\hat M\,U z, \qquad \hat M = \frac1L\sum_j z_j z_j^\top,

    computed through the empirical second moment :math:`\hat M` (one pass over the tokens).

    Parameters and returns are as in :func:`softmax_attention`.
    """
    Z, Q, U, V, numpy_mode, batched = _prepare(tokens, queries, U, V)
    with torch.set_grad_enabled(torch.is_grad_enabled() and not numpy_mode):
        M = Z.transpose(1, 2) @ Z / Z.shape[1]  # (B, d, d)
        out = (Q @ U.T) @ M @ V.T
    return _finish(out, numpy_mode, batched)


class AttentionHead(nn.Module):
    r"""One trainable attention head :math:`(\text{tokens}, \text{queries}) \mapsto T_{U,V}`: the torch twin of :class:`Head`.

    :meth:`from_head` starts it at a :class:`Head`; :meth:`head` reads its current parameters back.

    Parameters
    ----------
    d : int
        Token dimension.
    p : int, optional
        Output dimension (default ``d``).
    kind : {"softmax", "linear"}
        Which attention.
    U0, V0 : array_like, optional
        Initial parameters; by default i.i.d. :math:`\mathcal N(0, \text{init\_std}^2)` entries.
    init_std : float
        Standard deviation of the random initialisation.
    seed : int
        Seed of the random initialisation (a private generator: no global state is touched).
    dtype : torch.dtype
        Parameter dtype (float64 by default).
    """

    def __init__(
        self,
        d: int,
        p: int | None = None,
        *,
        kind: str = "softmax",
        U0: Any = None,
        V0: Any = None,
        init_std: float = 0.1,
        seed: int = 0,
        dtype: torch.dtype = torch.float64,
    ) -> None:
        super().__init__()
        if kind not in ("softmax", "linear"):
            raise ValueError(f"kind must be 'softmax' or 'linear', got {kind!r}")
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
            raise ValueError(f"d must be a positive integer, got {d!r}")
        p = d if p is None else p
        if isinstance(p, bool) or not isinstance(p, (int, np.integer)) or p < 1:
            raise ValueError(f"p must be a positive integer, got {p!r}")
        self.kind = kind
        gen = torch.Generator().manual_seed(int(seed))

        def init(value: Any, shape: tuple[int, int], name: str) -> torch.Tensor:
            if value is None:
                return init_std * torch.randn(shape, generator=gen, dtype=dtype)
            t = _to_tensor(value, name, dtype).clone()
            if tuple(t.shape) != shape:
                raise ValueError(f"{name} must have shape {shape}, got {tuple(t.shape)}")
            return t

        self.U = nn.Parameter(init(U0, (int(d), int(d)), "U0"))
        self.V = nn.Parameter(init(V0, (int(p), int(d)), "V0"))

    @classmethod
    def from_head(cls, head: Head, *, kind: str = "softmax", dtype: torch.dtype = torch.float64) -> "AttentionHead":
        """The trainable twin of a :class:`Head`, starting at its ``(U, V)``."""
        if not isinstance(head, Head):
            raise TypeError(f"head must be a gmmlib.attention.Head, got {type(head).__name__}")
        p, d = head.V.shape
        return cls(d, p, kind=kind, U0=head.U, V0=head.V, dtype=dtype)

    def head(self) -> Head:
        """The current parameters as a :class:`Head` (detached float64 copies)."""
        return Head(self.U.detach().to(torch.float64).cpu().numpy().copy(),
                    self.V.detach().to(torch.float64).cpu().numpy().copy())

    def forward(self, tokens: torch.Tensor, queries: torch.Tensor) -> torch.Tensor:
        fn = softmax_attention if self.kind == "softmax" else linear_attention
        return fn(tokens, queries, self.U, self.V)
