r"""The trainable torch twin of :class:`gmmlib.attention.Head`: :class:`AttentionHead`.

A module of its own because it is defined with torch, which :mod:`gmmlib.attention` does not import:
numpy-only chapters do not pay for torch. Its forward pass is
:func:`gmmlib.attention.softmax_attention` (or ``linear_attention``) on tensors, the one formula.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from ._validation import as_tensor, check_rng
from .attention import Head, linear_attention, softmax_attention

__all__ = ["AttentionHead"]


class AttentionHead(nn.Module):
    r"""One trainable attention head :math:`(\text{tokens}, \text{queries}) \mapsto T_{U,V}`: the
    torch twin of :class:`Head`.

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
    rng : int or numpy.random.Generator
        The generator of the random initialisation (default 0): an int seeds a private torch
        generator (``torch.Generator().manual_seed(rng)``); a numpy Generator draws that seed. No
        global random state is touched.
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
        rng: Any = 0,
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
        if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool) and rng >= 0:
            seed = int(rng)
        else:
            seed = int(check_rng(rng).integers(2**63 - 1))
        gen = torch.Generator().manual_seed(seed)

        def init(value: Any, shape: tuple[int, int], name: str) -> torch.Tensor:
            if value is None:
                return init_std * torch.randn(shape, generator=gen, dtype=dtype)
            t = as_tensor(value, name, dtype).clone()
            if tuple(t.shape) != shape:
                raise ValueError(f"{name} must have shape {shape}, got {tuple(t.shape)}")
            return t

        self.U = nn.Parameter(init(U0, (int(d), int(d)), "U0"))
        self.V = nn.Parameter(init(V0, (int(p), int(d)), "V0"))

    @classmethod
    def from_head(
        cls, head: Head, *, kind: str = "softmax", dtype: torch.dtype = torch.float64
    ) -> "AttentionHead":
        """The trainable twin of a :class:`Head`, starting at its ``(U, V)``."""
        if not isinstance(head, Head):
            raise TypeError(f"head must be a gmmlib.attention.Head, got {type(head).__name__}")
        p, d = head.V.shape
        return cls(d, p, kind=kind, U0=head.U, V0=head.V, dtype=dtype)

    def head(self) -> Head:
        """The current parameters as a :class:`Head` (detached float64 copies)."""
        return Head(
            self.U.detach().to(torch.float64).cpu().numpy().copy(),
            self.V.detach().to(torch.float64).cpu().numpy().copy(),
        )

    def forward(self, tokens: torch.Tensor, queries: torch.Tensor) -> torch.Tensor:
        fn = softmax_attention if self.kind == "softmax" else linear_attention
        return fn(tokens, queries, self.U, self.V)
