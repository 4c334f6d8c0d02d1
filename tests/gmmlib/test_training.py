"""The one training loop of the book: seeded, and it learns."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gmmlib.attention_torch import AttentionHead
from gmmlib.training import train


def test_train_is_seeded_and_learns():
    teacher = AttentionHead(2, kind="linear", init_std=1.0, rng=42)

    def sample(n, rng):
        Z = torch.tensor(rng.normal(size=(n, 20, 2)))
        return Z, Z[:, :1, :]

    def loss_fn(model, batch):
        Z, Q = batch
        with torch.no_grad():
            target = teacher(Z, Q)
        return ((model(Z, Q) - target) ** 2).mean()

    runs = [
        train(
            AttentionHead(2, kind="linear", rng=0),
            sample,
            loss_fn,
            batch_size=64,
            steps=60,
            lr=0.05,
            rng=3,
            progress=False,
        )
        for _ in range(2)
    ]
    assert runs[0].loss == runs[1].loss
    generator = train(AttentionHead(2, kind="linear", rng=0), sample, loss_fn, batch_size=64,
                      steps=60, lr=0.05, rng=np.random.default_rng(3), progress=False)
    assert generator.loss == runs[0].loss  # an int seed is the Generator it seeds
    assert runs[0].loss[-1] < 0.1 * runs[0].loss[0]
    assert set(runs[0].as_arrays()) == {"step", "loss"}
    with pytest.raises(ValueError, match="steps"):
        train(AttentionHead(2), sample, loss_fn, batch_size=4, steps=0, lr=0.1, rng=0)
    with pytest.raises(ValueError, match="optimizer"):
        train(
            AttentionHead(2),
            sample,
            loss_fn,
            batch_size=4,
            steps=1,
            lr=0.1,
            rng=0,
            optimizer="lbfgs",
        )
    with pytest.raises(ValueError, match="batch_size"):
        train(AttentionHead(2), sample, loss_fn, batch_size=0, steps=1, lr=0.1, rng=0)


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
@pytest.mark.parametrize("clip_norm", [None, 0.5])
def test_train_steps_are_torch_optims_to_the_bit(optimizer, clip_norm):
    """train writes Adam and SGD out (torch.optim's first step imports torch._dynamo, seconds per
    chapter); its parameters after 40 steps equal those of torch.optim.Adam / SGD bit for bit."""
    import numpy as np

    def sample(n, rng):
        Z = torch.tensor(rng.normal(size=(n, 12, 3)))
        return Z, Z[:, :2, :]

    def loss_fn(model, batch):
        Z, Q = batch
        return ((model(Z, Q) - 0.3 * Q) ** 2).mean()

    ours = AttentionHead(3, kind="softmax", rng=1, init_std=0.5)
    train(
        ours,
        sample,
        loss_fn,
        batch_size=16,
        steps=40,
        lr=0.03,
        rng=5,
        progress=False,
        optimizer=optimizer,
        clip_norm=clip_norm,
    )
    ref = AttentionHead(3, kind="softmax", rng=1, init_std=0.5)
    params = list(ref.parameters())
    opt = (torch.optim.Adam if optimizer == "adam" else torch.optim.SGD)(params, lr=0.03)
    rng = np.random.default_rng(5)
    for _ in range(40):
        loss = loss_fn(ref, sample(16, rng))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if clip_norm is not None:
            torch.nn.utils.clip_grad_norm_(params, clip_norm)
        opt.step()
    for a, b in zip(ours.parameters(), params):
        assert torch.equal(a.detach(), b.detach())
