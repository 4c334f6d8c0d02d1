r"""The parameter and result types that several gmmlib modules share (no torch, no cycle).

:class:`Head` and :class:`PromptBatch` are documented (and imported) as
``gmmlib.attention.Head`` and ``gmmlib.attention.PromptBatch``; :class:`Trajectory` as
``gmmlib.lda_dynamics.Trajectory``; :class:`History` as ``gmmlib.training.History``. They live
here so that numpy-only modules (:mod:`gmmlib.regression`, :mod:`gmmlib.lda`,
:mod:`gmmlib.lda_dynamics`, :mod:`gmmlib.head_training`) can use them without importing torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

__all__ = ["Head", "PromptBatch", "Trajectory", "History"]


@dataclass(frozen=True)
class Head:
    r"""The parameters :math:`(U, V)` of one attention head, as numpy float64 arrays.

    Every construction of the book returns a :class:`Head` or a tuple of them (a multi-head
    layer is the sum of its heads). ``U`` is (d, d), ``V`` is (p, d); ``U, V = head`` unpacks.
    """

    U: np.ndarray
    V: np.ndarray

    def __post_init__(self) -> None:
        U = np.array(self.U, dtype=np.float64)
        V = np.array(self.V, dtype=np.float64)
        if U.ndim != 2 or U.shape[0] != U.shape[1]:
            raise ValueError(f"U must be a square (d, d) matrix, got shape {U.shape}")
        if V.ndim != 2 or V.shape[1] != U.shape[0]:
            raise ValueError(f"V must be a (p, d) matrix with d = {U.shape[0]}, got shape {V.shape}")
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
    r"""A batch of prompts with their queries and targets: what every task sampler of gmmlib returns.

    Task samplers are called ``sample_prompts(<task>, n_prompts=..., length=..., rng=...)``
    and return one of these (a task may subclass it to add its own fields).

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


class Trajectory(NamedTuple):
    r"""A solved gradient flow: what every ``gradient_flow`` of gmmlib returns.

    Attributes
    ----------
    t : ndarray, shape (n,)
        The output times.
    thetas : list
        The parameters at those times, one object per time, of the type the flow's start
        has (:class:`gmmlib.regression.RegressionBlocks`, :class:`gmmlib.lda.LDABlocks`).
    nfev : int
        The number of gradient evaluations the solver made.
    """

    t: np.ndarray
    thetas: list
    nfev: int

    def stack(self, name: str) -> np.ndarray:
        """One field of the parameters along the trajectory, stacked: shape ``(n,) + field.shape``.

        ``flow.stack("A")`` is :math:`A(t)` at every output time, of shape (n, d, d).
        """
        if not self.thetas or not hasattr(self.thetas[0], name):
            raise ValueError(f"name must be a field of the parameters, got {name!r}")
        return np.stack([np.asarray(getattr(th, name), dtype=np.float64) for th in self.thetas])


@dataclass
class History:
    """What a training run recorded.

    Attributes
    ----------
    step : list of int
        The steps at which the loss (and metrics) were logged.
    loss : list of float
        The training loss on that step's batch.
    metrics : dict of str to list of float
        Values of ``eval_fn`` at the logged steps (one list per key).
    """

    step: list[int] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)
    metrics: dict[str, list[float]] = field(default_factory=dict)

    def as_arrays(self) -> dict[str, np.ndarray]:
        """The record as numpy arrays: ``step``, ``loss`` and each metric."""
        out = {"step": np.asarray(self.step), "loss": np.asarray(self.loss)}
        out.update({k: np.asarray(v) for k, v in self.metrics.items()})
        return out
