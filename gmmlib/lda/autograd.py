r"""Torch versions of one head on the LDA task (Chapters 5 and 6): autograd references.

:class:`QuadratureRisk` is the population risk on a fixed full-dimensional Gauss–Hermite rule, a
torch function whose ``autograd`` gradients and Hessians are exact for that rule (the chapters' and
tests' independent reference); :class:`LDABlocksModule` is the trainable twin of
:class:`~gmmlib.lda.task.LDABlocks`, a ``torch.nn.Module`` of :math:`x` trained by
:func:`gmmlib.training.train`. The numpy versions are in :mod:`gmmlib.lda.task`.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ._rules import effective_map
from .._validation import check_positive, check_type
from .task import LDABlocks, LDAModel
from ..quadrature import gauss_hermite

__all__ = ["QuadratureRisk", "LDABlocksModule"]


class QuadratureRisk:
    r"""The population risk as a differentiable torch function, on a fixed full-dimensional
    Gauss–Hermite rule.

    The nodes :math:`x_i` (``n_points``:math:`^d` per class) and weights do not depend on the
    parameters, so ``torch.autograd`` gives exact gradients and Hessians of the quadrature rule.
    Meant for small :math:`d` (:math:`n^d` nodes); use :func:`~gmmlib.lda.task.population_risk`
    otherwise.
    """

    def __init__(self, model: LDAModel, n_points: int = 40) -> None:
        self.model = check_type(model, LDAModel, "model")
        check_positive(n_points, "n_points", integer=True)
        xi, wt = gauss_hermite(n_points, model.dim)
        R = np.linalg.cholesky(model.cov)
        X = np.concatenate([model.m_pos + xi @ R.T, model.m_neg + xi @ R.T])
        W = np.concatenate([model.pi_pos * wt, (1 - model.pi_pos) * wt])
        Y = np.concatenate([np.ones(wt.size), -np.ones(wt.size)])
        self.X, self.W, self.Y = (torch.as_tensor(a, dtype=torch.float64) for a in (X, W, Y))
        self.G = torch.tensor(np.array(model.cov), dtype=torch.float64)
        self.m_neg = torch.tensor(np.array(model.m_neg), dtype=torch.float64)
        self.delta = torch.as_tensor(model.delta, dtype=torch.float64)

    def effective(
        self, w: torch.Tensor, b: torch.Tensor, r: torch.Tensor, s: torch.Tensor
    ) -> torch.Tensor:
        """The risk of :math:`f = w^\\top x + b + r\\sigma(s_0+s^\\top x)` (torch scalar)."""
        f = self.X @ w + b + r * torch.sigmoid(self.model.s0 + self.X @ s)
        return self.W @ nn.functional.softplus(-self.Y * f)

    def attention(self, vec: torch.Tensor) -> torch.Tensor:
        """The risk of the head whose flat parameter vector is ``vec`` (order of
        :meth:`~gmmlib.lda.task.LDABlocks.vector`)."""
        d = self.model.dim
        U11 = vec[: d * d].reshape(d, d)
        u21, v21, v22 = vec[d * d : d * d + d], vec[d * d + d : d * d + 2 * d], vec[-1]
        return self.effective(
            *effective_map(self.G, self.m_neg, self.delta, U11, u21, v21, v22, einsum=torch.einsum)
        )


class LDABlocksModule(nn.Module):
    r"""The trainable twin of :class:`~gmmlib.lda.task.LDABlocks`: one softmax head on an infinitely
    long prompt of LDA tokens, as a torch module of :math:`x`.

    ``forward(X)`` returns :math:`f_\theta(x) = w^\top x + b + r\sigma(s_0+s^\top x)` with
    :math:`(w,b,r,s)` the image of the trainable blocks :math:`\theta = (U_{11}, u_{21}, v_{21},
    v_{22})` (see :func:`~gmmlib.lda.task.effective_params`). Training it on fresh samples
    :math:`(X, Y)` is stochastic gradient descent on the population risk :math:`R(\theta)`.
    """

    def __init__(self, model: LDAModel, theta: LDABlocks) -> None:
        super().__init__()
        self.model = check_type(model, LDAModel, "model")
        if theta.dim != model.dim:
            raise ValueError(f"theta has dimension {theta.dim}, the model {model.dim}")
        t = lambda a: torch.as_tensor(np.array(a, dtype=np.float64))  # noqa: E731
        self.U11, self.u21, self.v21, self.v22 = (
            nn.Parameter(t(a)) for a in (theta.U11, theta.u21, theta.v21, theta.v22)
        )
        self.register_buffer("G", t(model.cov))
        self.register_buffer("m_neg", t(model.m_neg))
        self.register_buffer("delta", t(model.delta))

    def effective(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """The current :math:`(w, b, r, s)` as tensors."""
        return effective_map(
            self.G,
            self.m_neg,
            self.delta,
            self.U11,
            self.u21,
            self.v21,
            self.v22,
            einsum=torch.einsum,
        )

    def blocks(self) -> LDABlocks:
        """The current parameters as an :class:`LDABlocks` (numpy copies)."""
        return LDABlocks(
            *(p.detach().numpy().copy() for p in (self.U11, self.u21, self.v21, self.v22))
        )

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        w, b, r, s = self.effective()
        return X @ w + b + r * torch.sigmoid(self.model.s0 + X @ s)
