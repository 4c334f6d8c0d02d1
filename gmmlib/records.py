r"""What gmmlib's solvers return: :class:`Trajectory` (a solved gradient flow) and :class:`History`
(a training run's record).

Every ``gradient_flow`` (:mod:`gmmlib.regression`, :mod:`gmmlib.lda.dynamics`) returns a
:class:`Trajectory`; :func:`gmmlib.training.train` and
:func:`gmmlib.denoising.training.online_sgd_heads` return a :class:`History`. No torch here:
numpy-only modules use them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

__all__ = ["Trajectory", "History"]


class Trajectory(NamedTuple):
    r"""A solved gradient flow: what every ``gradient_flow`` of gmmlib returns.

    Attributes
    ----------
    t : ndarray, shape (n,)
        The output times.
    thetas : list
        The parameters at those times, one object per time, of the type the flow's start has
        (:class:`gmmlib.regression.RegressionBlocks`, :class:`gmmlib.lda.task.LDABlocks`).
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
