"""The check helpers: verdicts, negative controls, failures, ledger files and tolerance helpers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gmmlib.checks import (CheckFailed, Control, Estimate, Ledger, converged_quadrature, monte_carlo_mean,
                           replicates, richardson_derivative)
from gmmlib.seeding import SEED_ENV, Seeds, base_seed


def test_ledger_records_controls_and_writes(tmp_path, capsys):
    led = Ledger("01_test", directory=tmp_path)
    led.close(1.0 + 1e-13, 1.0, atol=1e-12, claim="eq-a", what="x", method="closed form", why="round-off",
              control=Control("off by 1e-9", 1.0 + 1e-9))
    led.within_se(0.51, 0.5, 0.01, claim="thm-b", what="mean", method="Monte Carlo, n=100",
                  control=Control("0.6", 0.6))
    led.below(0.1, 0.2, claim="thm-c", what="err", method="m", why="w", control=Control("chance", 0.5))
    led.above(0.9, 0.8, claim="thm-c", what="acc", method="m", why="w",
              control=[Control("chance", 0.5), Control("a bound of 0.95", 0.95, replaces="bound")])
    out = capsys.readouterr().out
    assert out.count("✔") == 4 and "rejects off by 1e-9" in out
    data = json.loads((tmp_path / "01_test.json").read_text())
    assert [e["claim"] for e in data] == ["eq-a", "thm-b", "thm-c", "thm-c"]
    assert [e["index"] for e in data] == [1, 2, 3, 4]
    assert all(e["passed"] for e in data)
    assert all(c["rejected"] for e in data for c in e["controls"])
    assert data[1]["controls"][0]["margin"] == "at 9 se > 4 se"
    assert {"chapter", "claim", "value", "reference", "tolerance", "method", "passed", "controls"} <= set(data[0])
    assert "4/4 negative controls rejected" in led.summary() or "5/5 negative controls rejected" in led.summary()


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
    led = Ledger("02_test", directory=tmp_path, require_control=False)
    with pytest.raises(CheckFailed, match=r"\[c\]"):
        call(led)
    data = json.loads((tmp_path / "02_test.json").read_text())
    assert data[-1]["passed"] is False


@pytest.mark.parametrize(
    "call",
    [
        lambda led, c: led.close(1.0, 1.0, atol=0.5, claim="c", what="w", method="m", why="y", control=c(1.2)),
        lambda led, c: led.within_se(0.5, 0.5, 0.1, claim="c", what="w", method="m", control=c(0.6)),
        lambda led, c: led.below(0.1, 0.2, claim="c", what="w", method="m", why="y", control=c(0.15)),
        lambda led, c: led.above(0.9, 0.8, claim="c", what="w", method="m", why="y", control=c(0.85)),
    ],
)
def test_a_control_that_passes_fails_the_check(tmp_path, call):
    led = Ledger("03_test", directory=tmp_path)
    with pytest.raises(CheckFailed, match="cannot tell the claim from a wrong answer"):
        call(led, lambda v: Control("a weak wrong answer", v))
    data = json.loads((tmp_path / "03_test.json").read_text())
    assert data[-1]["passed"] is False and data[-1]["controls"][0]["rejected"] is False


def test_a_check_needs_a_tolerance_and_a_control(tmp_path):
    led = Ledger("04_test", directory=tmp_path, require_control=True)
    with pytest.raises(TypeError, match="control"):
        led.close(1.0, 1.0, atol=1e-9, claim="c", what="w", method="m", why="y")
    with pytest.raises(ValueError, match="tolerance"):
        led.close(1.0, 1.0, claim="c", what="w", method="m", why="y", control=Control("2", 2.0))
    with pytest.raises(ValueError, match="claim"):
        led.close(1.0, 1.0, atol=1, claim="", what="w", method="m", why="y", control=Control("2", 2.0))
    with pytest.raises(TypeError, match="Control"):
        led.close(1.0, 1.0, atol=1, claim="c", what="w", method="m", why="y", control=2.0)
    with pytest.raises(ValueError, match="replaces"):
        Control("x", 1.0, replaces="other")
    with pytest.raises(ValueError, match="name"):
        Control("", 1.0)


def test_converged_quadrature_estimates_its_error():
    from math import pi, sqrt

    def rule(n):  # ∫ cos(x) φ(x) dx = e^{-1/2} by Gauss–Hermite (probabilists')
        x, w = np.polynomial.hermite_e.hermegauss(n)
        return (w * np.cos(x)).sum() / sqrt(2 * pi)

    est = converged_quadrature(rule, 4)
    assert isinstance(est, Estimate)
    assert abs(est.value - np.exp(-0.5)) <= est.error
    assert "4 to 8 nodes" in est.why
    with pytest.raises(ValueError, match="n_fine"):
        converged_quadrature(rule, 4, 3)


def test_richardson_derivative_and_its_error():
    f = np.sin
    est = richardson_derivative(lambda x: f(x).sum(), np.array([0.3]), np.array([1.0]), h=1e-2)
    assert abs(est.value - np.cos(0.3)) <= est.error < 1e-4


def test_replicates_and_monte_carlo_mean_write_their_why():
    rng = np.random.default_rng(0)
    est = replicates(rng.normal(size=(8, 3)))
    assert est.se.shape == (3,) and est.k > 4 and "7 degrees of freedom" in est.why
    mc = monte_carlo_mean(rng.normal(size=(10_000, 2)))
    assert "10,000 i.i.d. draws" in mc.why and "Bonferroni over 2 entries" in mc.why
    led = Ledger("05_test", directory=None)
    led.within_se(mc, np.zeros(2), claim="c", what="mean zero", control=Control("mean 0.2", np.full(2, 0.2)))
    with pytest.raises(ValueError, match="at least 100"):
        monte_carlo_mean(np.ones(5))


def test_seeds_are_named_streams_and_follow_the_environment(monkeypatch):
    monkeypatch.delenv(SEED_ENV, raising=False)
    assert base_seed() == 2026
    a, b = Seeds(1), Seeds(1)
    assert a.rng("x").normal() == b.rng("x").normal()
    assert a.rng("x").normal() != a.rng("y").normal() != Seeds(2).rng("x").normal()
    assert isinstance(a.int("t"), int) and 0 <= a.int("t") < 2**31
    monkeypatch.setenv(SEED_ENV, "7")
    assert Seeds(1).base == 7 and Seeds(1).rng("x").normal() != a.rng("x").normal()
    monkeypatch.setenv(SEED_ENV, "seven")
    with pytest.raises(ValueError, match=SEED_ENV):
        base_seed()
    with pytest.raises(TypeError, match="chapter"):
        Seeds("1")
