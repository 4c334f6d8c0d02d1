"""The one training loop of the book: seeded, and it learns."""

from __future__ import annotations

import pytest
import torch

from gmmlib.attention import AttentionHead
from gmmlib.training import train


def test_train_is_seeded_and_learns():
    teacher = AttentionHead(2, kind="linear", init_std=1.0, seed=42)

    def sample(n, rng):
        Z = torch.tensor(rng.normal(size=(n, 20, 2)))
        return Z, Z[:, :1, :]

    def loss_fn(model, batch):
        Z, Q = batch
        with torch.no_grad():
            target = teacher(Z, Q)
        return ((model(Z, Q) - target) ** 2).mean()

    runs = [train(AttentionHead(2, kind="linear", seed=0), sample, loss_fn, batch_size=64, steps=60, lr=0.05,
                  seed=3, progress=False)
            for _ in range(2)]
    assert runs[0].loss == runs[1].loss
    assert runs[0].loss[-1] < 0.1 * runs[0].loss[0]
    assert set(runs[0].as_arrays()) == {"step", "loss"}
    with pytest.raises(ValueError, match="steps"):
        train(AttentionHead(2), sample, loss_fn, batch_size=4, steps=0, lr=0.1, seed=0)
    with pytest.raises(ValueError, match="optimizer"):
        train(AttentionHead(2), sample, loss_fn, batch_size=4, steps=1, lr=0.1, seed=0, optimizer="lbfgs")
    with pytest.raises(ValueError, match="batch_size"):
        train(AttentionHead(2), sample, loss_fn, batch_size=0, steps=1, lr=0.1, seed=0)
