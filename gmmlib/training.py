r"""The one training loop of the book: torch autograd on sampled batches.

:func:`train` runs a seeded optimisation of a torch model on freshly sampled batches (online
learning: each step draws new prompts), shows a tqdm progress bar, and returns a
:class:`gmmlib.records.History`. Batches come from the numpy ``Generator`` ``rng`` (or one seeded by
an int ``rng``), so two runs with the same seed print the same numbers; no global random state is
touched.

The sampler follows gmmlib's one convention, count first and generator last: ``sample(batch_size,
rng)``, as :meth:`gmmlib.mixtures.GaussianMixture.sample`. The two other descents in gmmlib are not
training loops: :func:`gmmlib.lda.dynamics.population_gradient_descent` is deterministic descent on
a quadrature risk (no batches), and :func:`gmmlib.lda.dynamics.sgd_chains` is this loop's SGD
written out in numpy for many chains at once (``tests/gmmlib/test_lda.py`` compares them step
by step).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import torch
# text bar on stderr: hidden in the HTML (nb_output_stderr: remove), readable in Colab
from tqdm import tqdm

from ._validation import check_rng
from .records import History

__all__ = ["train"]


_BETA1, _BETA2, _EPS = 0.9, 0.999, 1e-8


@torch.no_grad()
def _adam_step(params: list[torch.Tensor], moments: list[tuple[torch.Tensor, torch.Tensor]],
               lr: float, t: int) -> None:
    r"""One Adam step (Kingma & Ba, 2015) with torch's defaults, as ``torch.optim.Adam`` computes it
    on CPU.

    .. math::

        m \leftarrow \beta_1 m + (1 - \beta_1)g,\quad v \leftarrow \beta_2 v + (1 -
        \beta_2)g^2,\quad
        \theta \leftarrow \theta - \frac{\text{lr}}{1 - \beta_1^t}\,
        \frac{m}{\sqrt{v}/\sqrt{1 - \beta_2^t} + \epsilon}.

    Written out (the same operations in the same order as torch's single-tensor Adam, so the
    steps agree to the bit, as ``tests/gmmlib/test_training.py`` checks) because
    ``torch.optim``'s first
    step imports ``torch._dynamo``, a second or more of every chapter that trains.
    """
    for p, (m, v) in zip(params, moments):
        g = p.grad
        if g is None:
            continue
        m.lerp_(g, 1 - _BETA1)
        v.mul_(_BETA2).addcmul_(g, g, value=1 - _BETA2)
        bias_correction2_sqrt = (1 - _BETA2 ** float(t)) ** 0.5
        denom = (v.sqrt() / bias_correction2_sqrt).add_(_EPS)
        p.addcdiv_(m, denom, value=-(lr / (1 - _BETA1 ** float(t))))


@torch.no_grad()
def _sgd_step(params: list[torch.Tensor], lr: float) -> None:
    r"""One plain gradient step :math:`\theta \leftarrow \theta - \text{lr}\,g`
    (``torch.optim.SGD``'s defaults)."""
    for p in params:
        if p.grad is not None:
            p.add_(p.grad, alpha=-lr)


def train(
    model: torch.nn.Module,
    sample: Callable[[int, np.random.Generator], Any],
    loss_fn: Callable[[torch.nn.Module, Any], torch.Tensor],
    *,
    batch_size: int,
    steps: int,
    lr: float,
    rng: Any,
    optimizer: str = "adam",
    clip_norm: float | None = None,
    log_every: int = 10,
    eval_fn: Callable[[torch.nn.Module], dict[str, float]] | None = None,
    progress: bool = True,
    desc: str = "training",
) -> History:
    r"""Train ``model`` by (stochastic) gradient steps on fresh batches.

    At each step: ``batch = sample(batch_size, rng)``, ``loss = loss_fn(model, batch)``, a
    backward pass, optional clipping of the global gradient norm at ``clip_norm``, and an
    optimiser step with learning rate ``lr``.

    Parameters
    ----------
    model : torch.nn.Module
    sample : callable
        ``(n, rng) -> batch``; draws a fresh batch of ``n`` examples (prompts) from the numpy
        Generator ``rng`` (e.g. a :class:`gmmlib.attention.PromptBatch`).
    loss_fn : callable
        ``(model, batch) -> scalar tensor``.
    batch_size : int
        The ``n`` passed to ``sample`` at every step.
    steps : int
        Number of optimisation steps.
    lr : float
        Learning rate.
    rng : numpy.random.Generator or int
        The generator of the batches, or an int seed for one.
    optimizer : {"adam", "sgd"}
    clip_norm : float, optional
        Clip the gradient norm at this value.
    log_every : int
        Record the loss (and ``eval_fn``) every this many steps, and at the last step.
    eval_fn : callable, optional
        ``model -> dict of floats``, evaluated without gradients at logged steps.
    progress : bool
        Show a tqdm progress bar.
    desc : str
        The progress bar's label.

    Returns
    -------
    gmmlib.records.History
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    if not (isinstance(lr, (int, float)) and math.isfinite(lr) and lr > 0):
        raise ValueError(f"lr must be a positive number, got {lr!r}")
    if (isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer))
            or batch_size < 1):
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    if isinstance(log_every, bool) or not isinstance(log_every, (int, np.integer)) or log_every < 1:
        raise ValueError(f"log_every must be a positive integer, got {log_every!r}")
    if clip_norm is not None and not (clip_norm > 0):
        raise ValueError(f"clip_norm must be positive, got {clip_norm!r}")
    params = [p for p in model.parameters() if p.requires_grad]
    if optimizer not in ("adam", "sgd"):
        raise ValueError(f"optimizer must be 'adam' or 'sgd', got {optimizer!r}")
    moments = [(torch.zeros_like(p), torch.zeros_like(p)) for p in params]
    rng = check_rng(rng)
    history = History()
    bar = tqdm(range(int(steps)), desc=desc, disable=not progress, mininterval=1.0, leave=False)
    for step in bar:
        batch = sample(int(batch_size), rng)
        loss = loss_fn(model, batch)
        if not torch.isfinite(loss):
            raise FloatingPointError(
                f"the loss became {loss.item()} at step {step}; lower lr or clip gradients"
            )
        for p in params:
            p.grad = None
        loss.backward()
        if clip_norm is not None:
            torch.nn.utils.clip_grad_norm_(params, clip_norm)
        if optimizer == "adam":
            _adam_step(params, moments, lr, step + 1)
        else:
            _sgd_step(params, lr)
        if step % log_every == 0 or step == steps - 1:
            history.step.append(step)
            history.loss.append(float(loss.detach()))
            if eval_fn is not None:
                with torch.no_grad():
                    for key, val in eval_fn(model).items():
                        history.metrics.setdefault(key, []).append(float(val))
            bar.set_postfix(loss=f"{float(loss.detach()):.4g}", refresh=False)
    bar.close()
    return history
