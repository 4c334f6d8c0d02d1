r"""Fitting a sum of softmax heads to a target on the infinite prompt, with numpy gradients.

Chapter 8 (:numref:`fig-08-learning`; Fig. 2 of Gabet et al., 2026). The model is eq.
:eq:`eq-08-noisy-head` summed over heads, on a prompt law :math:`\sum_k\pi_k\mathcal N(m_k, S)` with
one shared covariance :math:`S`:

.. math::

    f(z) = \sum_h V_h\Big(SU_hz + \sum_k\alpha^h_k(z)\,m_k\Big),\qquad
    \alpha^h_k(z) = \operatorname{softmax}_k(\log\pi_k + m_k^\top U_hz),

the shared-covariance form of :func:`gmmlib.limits.softmax_attention_limit` (the tests check
that they agree). Its squared error and the exact gradient are written out in numpy
(:func:`heads_squared_error`), about 40 times faster than torch's autograd for these small
models. Two optimisers use them: :func:`online_sgd_heads` (the steps of
:func:`gmmlib.training.train` with ``optimizer="sgd"``, on fresh batches) and
:func:`fit_heads` (L-BFGS on a fixed rule, e.g. quadrature nodes).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .._validation import as_float_array, check_matrix, check_points, check_positive, check_rng
from ..attention import Head
from ..mixtures import GaussianMixture, check_mixture
from ..records import History

__all__ = [
    "random_heads",
    "heads_squared_error",
    "online_sgd_heads",
    "fit_heads",
]


def _stack_heads(heads: Sequence[Any], d: int) -> tuple[np.ndarray, np.ndarray]:
    if len(heads) == 0:
        raise ValueError("heads must hold at least one head")
    pairs = [tuple(h) for h in heads]
    if any(len(p) != 2 for p in pairs):
        raise ValueError("each head must be a Head or a (U, V) pair")
    Us = [check_matrix(u, "heads[..].U", (d, d)) for u, _ in pairs]
    Vs = [check_matrix(v, "heads[..].V", (None, d)) for _, v in pairs]
    if len({v.shape for v in Vs}) != 1:
        raise ValueError("every head's V must have the same shape")
    return np.stack(Us), np.stack(Vs)


def _shared_covariance(prompt_law: GaussianMixture) -> np.ndarray:
    return prompt_law.shared_covariance("prompt_law", "eq. eq-08-noisy-head")


def random_heads(n_heads: int, dim: int, rng: Any, *, scale: float = 0.1) -> tuple[Head, ...]:
    r"""``n_heads`` heads with i.i.d. :math:`\mathcal N(0, \text{scale}^2)` entries in :math:`U` and
    :math:`V` (d × d).

    The initialisation of the training runs of Chapter 8 (:numref:`fig-08-learning`).
    """
    check_positive(n_heads, "n_heads", integer=True)
    check_positive(dim, "dim", integer=True)
    check_positive(scale, "scale", allow_zero=True)
    rng = check_rng(rng)
    return tuple(
        Head(scale * rng.standard_normal((dim, dim)), scale * rng.standard_normal((dim, dim)))
        for _ in range(int(n_heads))
    )


def _loss_grad(
    U: np.ndarray,
    V: np.ndarray,
    log_w: np.ndarray,
    M: np.ndarray,
    S: np.ndarray,
    Z: np.ndarray,
    Y: np.ndarray,
    w: np.ndarray,
) -> tuple[float, np.ndarray, np.ndarray]:
    A = U @ Z.T  # (H, d, n): a = U_h z
    logits = log_w[None, :, None] + M @ A  # (H, K, n)
    logits = logits - logits.max(axis=1, keepdims=True)
    gates = np.exp(logits)
    gates /= gates.sum(axis=1, keepdims=True)
    B = S @ A + M.T @ gates  # (H, d, n): S a + Σ_k α_k m_k
    R = (V @ B).sum(axis=0) - Y.T  # (p, n): residuals
    loss = float(np.sum(w * np.sum(R * R, axis=0)))
    G = 2.0 * np.swapaxes(V, 1, 2) @ (R * w)  # (H, d, n): ∂loss/∂B
    grad_V = 2.0 * (R * w) @ np.swapaxes(B, 1, 2)  # (H, p, d)
    MG = M @ G  # (H, K, n)
    d_logits = gates * (MG - np.sum(gates * MG, axis=1, keepdims=True))  # softmax Jacobian
    grad_U = (S @ G + M.T @ d_logits) @ Z  # (H, d, d)
    return loss, grad_U, grad_V


def _squared_error_problem(
    prompt_law: GaussianMixture, heads: Sequence[Any], Z: Any, target: Any, weights: Any
) -> tuple[np.ndarray, ...]:
    """Validated ``(U, V, log π, means, S, Z, target, weights)``: the arguments of
    :func:`_loss_grad`."""
    prompt_law = check_mixture(prompt_law, "prompt_law")
    S = _shared_covariance(prompt_law)
    d = prompt_law.dim
    U, V = _stack_heads(heads, d)
    Zarr = check_points(Z, d, "Z")
    Y = check_matrix(target, "target", (Zarr.shape[0], V.shape[1]))
    w = (
        np.full(Zarr.shape[0], 1.0 / Zarr.shape[0])
        if weights is None
        else as_float_array(weights, "weights", 1)
    )
    if w.shape != (Zarr.shape[0],):
        raise ValueError(f"weights must have shape ({Zarr.shape[0]},), got {w.shape}")
    with np.errstate(divide="ignore"):
        log_w = np.log(prompt_law.weights)
    return U, V, log_w, prompt_law.means, S, Zarr, Y, w


def heads_squared_error(
    prompt_law: GaussianMixture, heads: Sequence[Any], Z: Any, target: Any, weights: Any = None
) -> tuple[float, np.ndarray, np.ndarray]:
    r"""Weighted squared error of a sum of heads on a shared-covariance mixture prompt, and its
    gradient.

    Implements eq. :eq:`eq-08-noisy-head` of Chapter 8 summed over heads: with the prompt law
    :math:`\sum_k\pi_k\mathcal N(m_k, S)`,

    .. math::

        f(z) = \sum_h V_h\Big(SU_hz + \sum_k\alpha^h_k(z)\,m_k\Big),\quad
        \alpha^h_k(z) = \operatorname{softmax}_k(\log\pi_k + m_k^\top U_hz),\qquad
        \ell = \sum_n w_n\,\|f(z_n) - y_n\|^2,

    and the exact gradient of :math:`\ell` in every :math:`U_h, V_h` (backpropagation written
    out in numpy: about 40 times faster than torch's autograd for these small models; the
    tests check the loss against :func:`gmmlib.denoising.heads.multihead_limit` and the
    gradient against central differences of the loss). ``weights`` default to :math:`1/n`
    (the batch mean); quadrature weights give the population excess risk.

    Returns
    -------
    loss : float
    grad_U : ndarray, shape (H, d, d)
    grad_V : ndarray, shape (H, p, d)
    """
    problem = _squared_error_problem(prompt_law, heads, Z, target, weights)
    return _loss_grad(*problem)


def online_sgd_heads(
    prompt_law: GaussianMixture,
    heads: Sequence[Any],
    sample: Callable[[int, np.random.Generator], tuple[Any, Any]],
    *,
    steps: int,
    lr: float,
    batch_size: int,
    rng: Any,
    clip_norm: float | None = None,
    log_every: int = 100,
    eval_fn: Callable[[tuple[Head, ...]], dict[str, float]] | None = None,
    chunk_steps: int = 500,
) -> tuple[tuple[Head, ...], History]:
    r"""Online SGD on a sum of heads in the infinite-prompt limit, with closed-form numpy gradients
    (no autograd).

    Why not :func:`gmmlib.training.train`: the model here is not a torch module but the closed form
    of eq. :eq:`eq-08-noisy-head`, whose gradient :func:`heads_squared_error` writes out in numpy,
    about 40 times faster than autograd for these small models. The steps are those of
    :func:`gmmlib.training.train` with ``optimizer="sgd"`` (the tests check it against ``train`` on
    the same gradients, to round-off).

    The protocol of :numref:`fig-08-learning` (Chapter 8; Fig. 2 of Gabet et al., 2026): at every
    step a fresh batch :math:`(z_n, y_n)_{n\le b}` is drawn, the gradient :math:`g` of
    :math:`\frac1b\sum_n\|f(z_n) - y_n\|^2` is clipped to global norm ``clip_norm`` over all
    parameters (as ``torch.nn.utils.clip_grad_norm_``) and :math:`\theta \leftarrow \theta -
    \mathrm{lr}\cdot g`.

    Parameters
    ----------
    prompt_law : GaussianMixture
        The prompt's law (shared covariance).
    heads : sequence of Head
        The initial heads (e.g. :func:`random_heads`).
    sample : callable
        ``sample(n, rng) -> (Z, target)``: ``n`` query points and their targets, arrays of shape (n,
        d) and (n, p), drawn from the numpy Generator ``rng`` (gmmlib's sampler order: the count
        first, the generator last, as ``GaussianMixture.sample``). Batches are drawn ``chunk_steps``
        steps at a time (``chunk_steps * batch_size`` points, each used once).
    steps, lr, batch_size : int, float, int
        Number of steps, step size ``lr``, batch size :math:`b`.
    rng : numpy.random.Generator or int
        The generator of the batch stream, or an int seed for one.
    clip_norm : float, optional
    log_every : int
        Record the batch loss (and ``eval_fn(heads)``) every this many steps and at the last.
    eval_fn : callable, optional
        ``heads -> dict of floats``.
    chunk_steps : int

    Returns
    -------
    heads : tuple of Head
    history : History
        As returned by :func:`gmmlib.training.train`.
    """
    prompt_law = check_mixture(prompt_law, "prompt_law")
    S = _shared_covariance(prompt_law)
    d = prompt_law.dim
    U, V = _stack_heads(heads, d)
    for value, name in (
        (steps, "steps"),
        (batch_size, "batch_size"),
        (log_every, "log_every"),
        (chunk_steps, "chunk_steps"),
    ):
        check_positive(value, name, integer=True)
    check_positive(lr, "lr")
    if clip_norm is not None:
        check_positive(clip_norm, "clip_norm")
    rng = check_rng(rng)
    with np.errstate(divide="ignore"):
        log_w = np.log(prompt_law.weights)
    M = prompt_law.means
    w = np.full(int(batch_size), 1.0 / int(batch_size))
    history = History()
    Zc = Yc = None
    for step in range(int(steps)):
        j = step % int(chunk_steps)
        if j == 0:
            n_chunk = min(int(chunk_steps), int(steps) - step) * int(batch_size)
            Zc, Yc = sample(n_chunk, rng)
            Zc = check_points(Zc, d, "sample(n, rng)[0]")
            Yc = check_matrix(Yc, "sample(n, rng)[1]", (n_chunk, V.shape[1]))
        rows = slice(j * int(batch_size), (j + 1) * int(batch_size))
        loss, gU, gV = _loss_grad(U, V, log_w, M, S, Zc[rows], Yc[rows], w)
        if not np.isfinite(loss):
            raise FloatingPointError(
                f"the loss became {loss} at step {step}; lower lr or clip gradients"
            )
        if clip_norm is not None:
            norm = float(np.sqrt(np.sum(gU * gU) + np.sum(gV * gV)))
            scale = min(1.0, float(clip_norm) / (norm + 1e-6))
            gU, gV = scale * gU, scale * gV
        U = U - lr * gU
        V = V - lr * gV
        if step % int(log_every) == 0 or step == int(steps) - 1:
            history.step.append(step)
            history.loss.append(loss)
            if eval_fn is not None:
                for key, val in eval_fn(tuple(Head(u, v) for u, v in zip(U, V))).items():
                    history.metrics.setdefault(key, []).append(float(val))
    return tuple(Head(u, v) for u, v in zip(U, V)), history


def fit_heads(
    prompt_law: GaussianMixture,
    heads: Sequence[Any],
    Z: Any,
    target: Any,
    weights: Any = None,
    *,
    max_iter: int = 5000,
    gtol: float = 1e-14,
    f_target: float = 0.0,
) -> tuple[tuple[Head, ...], Any]:
    r"""Minimise :func:`heads_squared_error` over all :math:`(U_h, V_h)` by L-BFGS, starting from
    ``heads``.

    Used in Chapter 8 for the best single head (from several starts) and for the polish of the
    two-head run (:numref:`fig-08-learning`): with quadrature nodes and weights of the noisy law as
    ``(Z, weights)`` and :math:`y = \mathbb E[X\mid Z]` as ``target`` it minimises the population
    excess risk on that rule. The run stops at ``max_iter`` iterations, when the projected gradient
    falls below ``gtol``, or as soon as the loss is at most ``f_target``.

    Returns
    -------
    heads : tuple of Head
    result : scipy.optimize.OptimizeResult
        With ``result.history``: the loss after each iteration.
    """
    from scipy.optimize import minimize

    U0, V0, *data = _squared_error_problem(prompt_law, heads, Z, target, weights)
    check_positive(max_iter, "max_iter", integer=True)
    split = U0.size

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        U, V = theta[:split].reshape(U0.shape), theta[split:].reshape(V0.shape)
        loss, gU, gV = _loss_grad(U, V, *data)
        return loss, np.concatenate([gU.ravel(), gV.ravel()])

    history: list[float] = []

    def callback(intermediate_result: Any) -> None:
        history.append(float(intermediate_result.fun))
        if intermediate_result.fun <= f_target:
            raise StopIteration

    result = minimize(
        objective,
        np.concatenate([U0.ravel(), V0.ravel()]),
        jac=True,
        method="L-BFGS-B",
        callback=callback,
        options={"maxiter": int(max_iter), "gtol": gtol, "ftol": 1e-300, "maxcor": 30},
    )
    result.history = np.asarray(history)
    U, V = result.x[:split].reshape(U0.shape), result.x[split:].reshape(V0.shape)
    return tuple(Head(u, v) for u, v in zip(U, V)), result
