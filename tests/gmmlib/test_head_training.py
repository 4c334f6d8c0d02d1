"""gmmlib.denoising.training against independent computations: the closed-form limit, finite
differences, the one training loop (gmmlib.training.train) on the same gradients, an exact
construction."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gmmlib import GaussianMixture
from gmmlib.attention import Head
from gmmlib.denoising import bayes_denoiser, excess_risk, noisy_mixture
from gmmlib.denoising.heads import multihead_limit, two_head_construction
from gmmlib.denoising.training import fit_heads, heads_squared_error, online_sgd_heads, random_heads
from gmmlib.quadrature import mixture_nodes
from gmmlib.training import train


def _shared_law(rng):
    return noisy_mixture(
        GaussianMixture.isotropic([0.3, 0.7], rng.normal(size=(2, 2)) * 2, 1.0), 1.5
    )


def test_heads_squared_error_matches_the_limit_and_finite_differences(rng):
    law = _shared_law(rng)
    heads = random_heads(3, 2, rng, scale=0.5)
    Z, Y, w = rng.normal(size=(30, 2)) * 3, rng.normal(size=(30, 2)), rng.uniform(size=30)
    loss, gU, gV = heads_squared_error(law, heads, Z, Y, w)
    # the loss: the general closed form of gmmlib.limits (per-component covariances), summed over
    # heads
    out = multihead_limit(law, Z, heads)
    assert np.isclose(loss, np.sum(w * np.sum((out - Y) ** 2, 1)), rtol=1e-12)
    assert np.isclose(
        heads_squared_error(law, heads, Z, Y)[0], np.mean(np.sum((out - Y) ** 2, 1)), rtol=1e-12
    )
    # the gradient: central differences of the loss in every entry (error O(h^2) ~ 1e-9 relative)
    U0, V0 = np.stack([h.U for h in heads]), np.stack([h.V for h in heads])
    h = 1e-5

    def loss_at(U, V):
        return heads_squared_error(law, tuple(Head(u, v) for u, v in zip(U, V)), Z, Y, w)[0]

    for grad, which in ((gU, 0), (gV, 1)):
        fd = np.zeros_like(grad)
        for idx in np.ndindex(grad.shape):
            E = np.zeros_like(grad)
            E[idx] = h
            args_p = (U0 + E, V0) if which == 0 else (U0, V0 + E)
            args_m = (U0 - E, V0) if which == 0 else (U0, V0 - E)
            fd[idx] = (loss_at(*args_p) - loss_at(*args_m)) / (2 * h)
        np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-6 * max(1.0, np.abs(fd).max()))
    two_covs = GaussianMixture([0.5, 0.5], [[0.0, 0.0], [1.0, 1.0]], [np.eye(2), 2 * np.eye(2)])
    with pytest.raises(ValueError, match="shared"):
        heads_squared_error(two_covs, heads, Z, Y)


class _SquaredError(torch.autograd.Function):
    """The batch loss of heads_squared_error as a torch function, so that gmmlib.training.train can
    run it."""

    @staticmethod
    def forward(ctx, U, V, law, Z, Y):
        heads = tuple(Head(u, v) for u, v in zip(U.detach().numpy(), V.detach().numpy()))
        loss, gU, gV = heads_squared_error(law, heads, Z.numpy(), Y.numpy())
        ctx.save_for_backward(torch.tensor(gU), torch.tensor(gV))
        return torch.tensor(loss, dtype=torch.float64)

    @staticmethod
    def backward(ctx, grad):
        gU, gV = ctx.saved_tensors
        return grad * gU, grad * gV, None, None, None


class _Heads(torch.nn.Module):
    def __init__(self, heads):
        super().__init__()
        self.U = torch.nn.Parameter(torch.tensor(np.stack([h.U for h in heads])))
        self.V = torch.nn.Parameter(torch.tensor(np.stack([h.V for h in heads])))


def test_online_sgd_heads_is_the_training_loop(rng):
    # the same steps as gmmlib.training.train with SGD and clipping, on the same gradients
    law = _shared_law(rng)
    prior = GaussianMixture.isotropic(law.weights, law.means, 1.0)

    def sample(n, r):
        Z, _ = law.sample(n, r)
        return Z, bayes_denoiser(prior, 1.5, Z)

    start = random_heads(2, 2, 5, scale=0.3)
    heads, hist = online_sgd_heads(
        law,
        start,
        sample,
        steps=200,
        lr=2e-2,
        batch_size=16,
        rng=9,
        clip_norm=1.0,
        chunk_steps=1,
        log_every=50,
        eval_fn=lambda h: {"n": float(len(h))},
    )
    model = _Heads(start)

    def batch(n, r):
        return tuple(torch.tensor(a) for a in sample(n, r))

    ref = train(
        model,
        batch,
        lambda m, b: _SquaredError.apply(m.U, m.V, law, *b),
        batch_size=16,
        steps=200,
        lr=2e-2,
        rng=9,
        optimizer="sgd",
        clip_norm=1.0,
        log_every=50,
        progress=False,
    )
    for k, h in enumerate(heads):
        np.testing.assert_allclose(h.U, model.U[k].detach().numpy(), atol=1e-12)
        np.testing.assert_allclose(h.V, model.V[k].detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(hist.loss, ref.loss, rtol=1e-12)
    assert hist.step == ref.step == [0, 50, 100, 150, 199] and hist.metrics["n"] == [2.0] * 5
    # the clipping is active (else the test would not check it)
    g = heads_squared_error(law, start, *sample(16, np.random.default_rng(9)))
    assert np.sqrt(np.sum(g[1] ** 2) + np.sum(g[2] ** 2)) > 1.0
    # drawing the batches in chunks changes which points are drawn, not the protocol
    chunked, _ = online_sgd_heads(
        law, start, sample, steps=200, lr=2e-2, batch_size=16, rng=9, clip_norm=1.0
    )
    assert all(np.all(np.isfinite(h.U)) for h in chunked)
    with pytest.raises(ValueError, match=r"sample\(n, rng\)"):
        online_sgd_heads(
            law, start, lambda n, r: sample(n - 1, r), steps=2, lr=1e-2, batch_size=4, rng=0
        )


def test_fit_heads_finds_an_exact_two_head_denoiser(rng):
    gm = GaussianMixture.isotropic([0.5, 0.5], [[3.0, 0.0], [0.0, 3.0]], 1.0)
    law = noisy_mixture(gm, 2.0)
    nodes, weights, _ = mixture_nodes(law, 12)
    target = bayes_denoiser(gm, 2.0, nodes)
    exact = two_head_construction(gm.means, 1.0, 2.0)
    assert heads_squared_error(law, exact, nodes, target, weights)[0] < 1e-28
    start = tuple(
        Head(U + 0.05 * rng.normal(size=(2, 2)), V + 0.05 * rng.normal(size=(2, 2)))
        for U, V in exact
    )
    heads, result = fit_heads(law, start, nodes, target, weights, f_target=1e-14)
    assert result.history[-1] <= 1e-14 and len(result.history) == result.nit
    # the fitted heads are exact everywhere, not only on the rule's nodes
    assert excess_risk(lambda Z: multihead_limit(law, Z, heads), gm, 2.0, 30) < 1e-10


def test_random_heads_are_seeded():
    a, b = random_heads(3, 4, 7, scale=0.2), random_heads(3, 4, 7, scale=0.2)
    assert len(a) == 3 and all(h.U.shape == h.V.shape == (4, 4) for h in a)
    assert all(np.array_equal(x.U, y.U) and np.array_equal(x.V, y.V) for x, y in zip(a, b))
