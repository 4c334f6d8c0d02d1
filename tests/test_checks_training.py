"""The check helpers (verdicts, failures, ledger files) and the training loop."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from gmmlib.attention import AttentionHead
from gmmlib.checks import CheckFailed, Ledger
from gmmlib.training import train


def test_ledger_records_and_writes(tmp_path, capsys):
    led = Ledger("01_test", directory=tmp_path)
    led.close(1.0 + 1e-13, 1.0, atol=1e-12, claim="eq-a", what="x", method="closed form", why="round-off")
    led.within_se(0.51, 0.5, 0.01, claim="thm-b", what="mean", method="Monte Carlo, n=100")
    led.below(0.1, 0.2, claim="thm-c", what="err", method="m", why="w")
    led.above(0.9, 0.8, claim="thm-c", what="acc", method="m", why="w")
    out = capsys.readouterr().out
    assert out.count("✔ check passed") == 4
    data = json.loads((tmp_path / "01_test.json").read_text())
    assert [e["claim"] for e in data] == ["eq-a", "thm-b", "thm-c", "thm-c"]
    assert all(e["passed"] for e in data)
    assert {"chapter", "claim", "value", "reference", "tolerance", "method", "passed"} <= set(data[0])


@pytest.mark.parametrize(
    "call",
    [
        lambda led: led.close([1.0, 2.0], [1.0, 2.1], atol=0.01, claim="c", what="w", method="m", why="y"),
        lambda led: led.within_se(0.6, 0.5, 0.01, claim="c", what="w", method="m"),
        lambda led: led.below(0.3, 0.2, claim="c", what="w", method="m", why="y"),
        lambda led: led.above(0.1, 0.2, claim="c", what="w", method="m", why="y"),
        lambda led: led.close(np.nan, 1.0, atol=1.0, claim="c", what="w", method="m", why="y"),
    ],
)
def test_failures_raise_and_are_recorded(tmp_path, call):
    led = Ledger("02_test", directory=tmp_path)
    with pytest.raises(CheckFailed, match=r"\[c\]"):
        call(led)
    data = json.loads((tmp_path / "02_test.json").read_text())
    assert data[-1]["passed"] is False


def test_check_needs_a_tolerance(tmp_path):
    led = Ledger("03_test", directory=tmp_path)
    with pytest.raises(ValueError, match="tolerance"):
        led.close(1.0, 1.0, claim="c", what="w", method="m", why="y")
    with pytest.raises(ValueError, match="claim"):
        led.close(1.0, 1.0, atol=1, claim="", what="w", method="m", why="y")


def test_train_is_seeded_and_learns():
    teacher = AttentionHead(2, kind="linear", init_std=1.0, seed=42)

    def sample(rng):
        Z = torch.tensor(rng.normal(size=(64, 20, 2)))
        return Z, Z[:, :1, :]

    def loss_fn(model, batch):
        Z, Q = batch
        with torch.no_grad():
            target = teacher(Z, Q)
        return ((model(Z, Q) - target) ** 2).mean()

    runs = [train(AttentionHead(2, kind="linear", seed=0), sample, loss_fn, steps=60, lr=0.05, seed=3, progress=False)
            for _ in range(2)]
    assert runs[0].loss == runs[1].loss
    assert runs[0].loss[-1] < 0.1 * runs[0].loss[0]
    assert set(runs[0].as_arrays()) == {"step", "loss"}
    with pytest.raises(ValueError, match="steps"):
        train(AttentionHead(2), sample, loss_fn, steps=0, lr=0.1, seed=0)
    with pytest.raises(ValueError, match="optimizer"):
        train(AttentionHead(2), sample, loss_fn, steps=1, lr=0.1, seed=0, optimizer="lbfgs")
