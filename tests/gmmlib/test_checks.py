"""The check helpers: verdicts, negative controls, failures, the records checks display, tolerances.

One argument order everywhere: the claim first, the evidence second; a control replaces the
claim; a check returns nothing; a random check states the error it detects and fails above
MAX_DETECTABLE.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from gmmlib.runtime.comparisons import Close
from gmmlib.runtime.checks import (
    MAX_DETECTABLE,
    CheckFailed,
    CheckResult,
    Control,
    Estimate,
    Ledger,
    converged_quadrature,
    glue,
    monte_carlo_mean,
    replicates,
    richardson_derivative,
)
from gmmlib.runtime.seeding import SEED_ENV, Seeds, base_seed


def test_ledger_records_controls(capsys):
    led = Ledger("01_test")
    led.close(
        1.0 + 1e-13,
        1.0,
        atol=1e-12,
        claim="eq-a",
        what="x",
        method="closed form",
        why="round-off",
        control=Control("off by 1e-9", 1.0 + 1e-9),
    )
    led.within_se(
        0.51,
        0.5,
        0.01,
        claim="thm-b",
        what="mean",
        method="Monte Carlo, n=100",
        control=Control("0.6", 0.6),
    )
    led.below(
        0.1, 0.2, claim="thm-c", what="err", method="m", why="w", control=Control("chance", 0.5)
    )
    led.above(
        0.9,
        0.8,
        claim="thm-c",
        what="acc",
        method="m",
        why="w",
        control=[Control("chance", 0.5), Control("a bound of 0.95", 0.95, replaces="bound")],
    )
    out = capsys.readouterr().out
    assert out.count("✔") == 4 and "rejects off by 1e-9" in out
    data = [e.record() for e in led.entries]
    assert [e["claim"] for e in data] == ["eq-a", "thm-b", "thm-c", "thm-c"]
    assert [e["index"] for e in data] == [1, 2, 3, 4]
    assert all(e["passed"] for e in data)
    assert all(c["rejected"] for e in data for c in e["controls"])
    assert (
        data[1]["controls"][0]["margin"] == "at 10 se > 4 se"
    )  # the control replaces the claim 0.51
    assert {
        "chapter",
        "claim",
        "value",
        "reference",
        "tolerance",
        "method",
        "passed",
        "controls",
    } <= set(data[0])
    assert (
        "4/4 negative controls rejected" in led.summary()
        or "5/5 negative controls rejected" in led.summary()
    )


@pytest.mark.parametrize(
    "call",
    [
        lambda led: led.close(
            [1.0, 2.0], [1.0, 2.1], atol=0.01, claim="c", what="w", method="m", why="y"
        ),
        lambda led: led.within_se(0.6, 0.5, 0.01, claim="c", what="w", method="m"),
        lambda led: led.below(0.3, 0.2, claim="c", what="w", method="m", why="y"),
        lambda led: led.above(0.1, 0.2, claim="c", what="w", method="m", why="y"),
        lambda led: led.close(np.nan, 1.0, atol=1.0, claim="c", what="w", method="m", why="y"),
    ],
)
def test_failures_raise_and_are_recorded(call):
    led = Ledger("02_test", require_control=False)
    with pytest.raises(CheckFailed, match=r"\[c\]"):
        call(led)
    assert led.last.passed is False and led.last.record()["passed"] is False


@pytest.mark.parametrize(
    "call",
    [
        lambda led, c: led.close(
            1.0, 1.0, atol=0.5, claim="c", what="w", method="m", why="y", control=c(1.2)
        ),
        lambda led, c: led.within_se(
            0.5, 0.5, 0.1, claim="c", what="w", method="m", control=c(0.6)
        ),
        lambda led, c: led.below(
            0.1, 0.2, claim="c", what="w", method="m", why="y", control=c(0.15)
        ),
        lambda led, c: led.above(
            0.9, 0.8, claim="c", what="w", method="m", why="y", control=c(0.85)
        ),
    ],
)
def test_a_control_that_passes_fails_the_check(call):
    led = Ledger("03_test")
    with pytest.raises(CheckFailed, match="cannot tell the claim from a wrong answer"):
        call(led, lambda v: Control("a weak wrong answer", v))
    data = led.last.record()
    assert data["passed"] is False and data["controls"][0]["rejected"] is False


def test_a_check_needs_a_tolerance_and_a_control():
    led = Ledger("04_test", require_control=True)
    with pytest.raises(TypeError, match="control"):
        led.close(1.0, 1.0, atol=1e-9, claim="c", what="w", method="m", why="y")
    with pytest.raises(ValueError, match="tolerance"):
        led.close(1.0, 1.0, claim="c", what="w", method="m", why="y", control=Control("2", 2.0))
    with pytest.raises(ValueError, match="claim"):
        led.close(
            1.0, 1.0, atol=1, claim="", what="w", method="m", why="y", control=Control("2", 2.0)
        )
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
    led = Ledger("05_test")
    led.within_se(
        np.zeros(2),
        mc,
        claim="c",
        what="mean zero",
        scale=1.0,
        control=Control("mean 0.2", np.full(2, 0.2)),
    )
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


# ---------------------------------------------------------------- the one API
def test_checks_return_nothing_and_ledger_last_is_the_result():
    led = Ledger("06_test")
    with pytest.raises(IndexError):
        _ = led.last
    out = led.close(
        2.0,
        2.0 + 1e-12,
        atol=1e-10,
        claim="c",
        what="w",
        method="m",
        why="y",
        control=Control("3", 3.0),
    )
    assert out is None
    assert isinstance(led.last, CheckResult) and led.last.passed and led.last.index == 1
    assert (
        led.last.value == 2.0 and led.last.reference == 2.0 + 1e-12
    )  # claim first, evidence second
    for call in (
        lambda: led.within_se(
            0.5, 0.5, 0.01, claim="c", what="w", method="m", control=Control("0.6", 0.6)
        ),
        lambda: led.below(
            0.1, 0.2, claim="c", what="w", method="m", why="y", control=Control("1", 1.0)
        ),
        lambda: led.above(
            0.3, 0.2, claim="c", what="w", method="m", why="y", control=Control("0", 0.0)
        ),
    ):
        assert call() is None
    assert [e.index for e in led.entries] == [1, 2, 3, 4] and led.last is led.entries[-1]


def test_controls_replace_the_claim_by_default():
    led = Ledger("07_test")
    # claim 1.0 against evidence 1.0 ± 0.1: the control's 2.0 is compared with the evidence 1.0
    led.close(
        1.0,
        1.0,
        atol=0.1,
        claim="c",
        what="w",
        method="m",
        why="y",
        control=Control("doubled", 2.0),
    )
    c = led.last.controls[0]
    assert c["replaces"] == "value" and c["value"] == 2.0 and c["rejected"]
    # the evidence may be replaced explicitly
    led.close(
        1.0,
        1.0,
        atol=0.1,
        claim="c",
        what="w",
        method="m",
        why="y",
        control=Control("other reference", 3.0, replaces="reference"),
    )
    assert led.last.controls[0]["replaces"] == "reference"
    with pytest.raises(ValueError, match="can replace"):
        led.close(
            1.0,
            1.0,
            atol=0.1,
            claim="c",
            what="w",
            method="m",
            why="y",
            control=Control("a bound", 3.0, replaces="bound"),
        )


def test_require_control_is_the_default():
    assert Ledger("08_test").require_control is True
    led = Ledger("08_test")
    for call in (
        lambda: led.close(1.0, 1.0, atol=1e-9, claim="c", what="w", method="m", why="y"),
        lambda: led.within_se(1.0, 1.0, 0.1, claim="c", what="w", method="m"),
        lambda: led.below(0.1, 0.2, claim="c", what="w", method="m", why="y"),
        lambda: led.above(0.3, 0.2, claim="c", what="w", method="m", why="y"),
    ):
        with pytest.raises(TypeError, match="control=Control"):
            call()
    assert led.entries == []
    scratch = Ledger("08_test", require_control=False)
    scratch.close(1.0, 1.0, atol=1e-9, claim="c", what="w", method="m", why="y")
    assert scratch.last.passed and scratch.last.controls == ()


def test_within_se_refuses_the_estimate_first():
    rng = np.random.default_rng(1)
    est = replicates(rng.normal(1.0, 0.01, size=(10,)))
    led = Ledger("09_test")
    with pytest.raises(TypeError, match="claim first"):
        led.within_se(est, 1.0, claim="c", what="w", control=Control("2", 2.0))
    with pytest.raises(ValueError, match="without a standard error"):
        led.within_se(
            1.0,
            Estimate(np.float64(1.0), np.float64(0.1), "w", "m"),
            claim="c",
            what="w",
            control=Control("2", 2.0),
        )


def test_estimate_indexes_value_error_and_se():
    est = replicates(np.random.default_rng(2).normal(size=(6, 3, 2)))
    part = est[1]
    assert isinstance(part, Estimate) and part.value.shape == (2,)
    np.testing.assert_array_equal(part.value, est.value[1])
    np.testing.assert_array_equal(part.se, est.se[1])
    np.testing.assert_array_equal(part.error, est.error[1])
    assert part.k == est.k and part.why == est.why and part.method == est.method
    col = est[:, 0]
    assert col.value.shape == (3,) and np.allclose(col.se, est.se[:, 0])
    scalar_err = Estimate(np.arange(3.0), np.float64(0.5), "w", "m")  # a scalar error broadcasts
    assert scalar_err[2].value == 2.0 and scalar_err[2].error == 0.5 and scalar_err[2].se is None


def test_detectable_error_of_within_se():
    led = Ledger("10_test")
    # claim 1.0, estimate 1.01, se 0.01, k = 4: a shift of the claim by more than
    # k·se + |v − e| = 0.04 + 0.01 is rejected, relative to |claim| = 1: 5 %
    led.within_se(1.0, 1.01, 0.01, claim="c", what="w", method="m", control=Control("1.2", 1.2))
    assert led.last.detectable == pytest.approx(0.05)
    assert led.last.random and "detects a 5.0% error" in led.last.comparison
    assert led.last.record()["detectable"] == pytest.approx(0.05)  # ledger.json carries it
    # deterministic checks have no detectable error
    led.close(
        1.0, 1.0, atol=1e-9, claim="c", what="w", method="m", why="y", control=Control("2", 2.0)
    )
    assert led.last.detectable is None and not led.last.random


def test_a_random_check_that_cannot_see_10_percent_fails():
    assert MAX_DETECTABLE == 0.10
    led = Ledger("11_test")
    # se = 0.05, k = 4: half-width 0.2 on a claim of 1: detects only a 20 % error
    with pytest.raises(CheckFailed, match="too weak.*20.0%"):
        led.within_se(1.0, 1.0, 0.05, claim="c", what="w", method="m", control=Control("2", 2.0))
    assert led.last.passed is False and led.last.detectable == pytest.approx(0.2)
    # just inside: 0.1 / 1 with se = 0.025
    led.within_se(1.0, 1.0, 0.025, claim="c", what="w", method="m", control=Control("2", 2.0))
    assert led.last.passed and led.last.detectable == pytest.approx(0.1)


def test_close_with_a_random_estimate_states_its_power():
    samples = 1.0 + np.random.default_rng(3).normal(0, 0.001, size=(5_000,))
    mc = monte_carlo_mean(samples)
    led = Ledger("12_test")
    led.close(1.0, mc, claim="c", what="w", control=Control("1.1", 1.1))
    # what the stated power means, found by moving the claim: a relative error just under it
    # passes in the weakest direction (towards the estimate and past it), one just over is
    # rejected, and every error of that size away from the estimate is rejected too
    power, toward = led.last.detectable, np.sign(float(mc.value) - 1.0)

    def passes(claim: float) -> bool:
        return Close(claim, mc, None, 0.0).outcome().passed

    assert passes(1.0 + toward * power * (1 - 1e-6))
    assert not passes(1.0 + toward * power * (1 + 1e-6))
    assert not passes(1.0 - toward * power * (1 + 1e-6))
    assert 0 < power < 0.01  # 5 000 draws with sd 0.001: a few 1e-5
    # a quadrature Estimate (no se) is not random
    est = converged_quadrature(lambda n: 1.0 + 2.0**-n, 30)
    led.close(1.0, est, claim="c", what="w", control=Control("1.1", 1.1))
    assert led.last.detectable is None


def test_a_zero_claim_needs_scale():
    led = Ledger("13_test")
    with pytest.raises(ValueError, match="scale="):
        led.within_se(0.0, 0.001, 0.01, claim="c", what="w", method="m", control=Control("1", 1.0))
    led.within_se(
        0.0, 0.001, 0.01, claim="c", what="w", method="m", scale=1.0, control=Control("1", 1.0)
    )
    assert led.last.detectable == pytest.approx(0.041)
    led.within_se(
        np.zeros(2),
        np.array([0.0, 0.002]),
        0.01,
        claim="c",
        what="w",
        method="m",
        scale=np.array([1.0, 0.5]),
        control=Control("1", 1.0),
    )
    assert led.last.detectable == pytest.approx(0.042 / 0.5)  # the worst entry


def test_glue_outside_myst_nb_does_nothing(monkeypatch):
    import builtins
    import sys

    real_import = builtins.__import__

    def no_myst_nb(name, *args, **kwargs):
        if name == "myst_nb" or name.startswith("myst_nb."):
            raise ImportError("no myst-nb here")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "myst_nb", raising=False)
    monkeypatch.setattr(builtins, "__import__", no_myst_nb)
    assert glue("x", np.float64(0.5)) is None
    with pytest.raises(ValueError, match="name"):
        glue("", 1.0)


def test_glue_hands_plain_numbers_to_myst_nb(monkeypatch):
    import sys
    import types

    seen = {}
    fake = types.ModuleType("myst_nb")
    fake.glue = lambda name, value, display=True: seen.update({name: (value, display)})
    monkeypatch.setitem(sys.modules, "myst_nb", fake)
    glue("a", np.float32(0.25))
    glue("n", np.int64(7))
    assert seen["a"] == (0.25, False) and type(seen["a"][0]) is float
    assert seen["n"] == (7, False) and type(seen["n"][0]) is int


def test_glue_in_a_kernel_without_a_front_end_displays_nothing(capsys):
    pytest.importorskip("myst_nb")
    glue("quiet", 0.123)  # outside IPython myst-nb's glue must not print or raise
    assert capsys.readouterr().out == ""


def test_the_ledger_page_states_each_checks_power():
    """bookkit.ledger: the "smallest error it detects" cell of a ledger row."""
    from bookkit import ledger

    assert ledger.detects({"detectable": None}) == "deterministic"
    assert ledger.detects({"detectable": 0.042}) == "random: 4.2%"
    assert ledger.detects({"detectable": 0.2}) == "random: 20.0% — above the book's 10%"


def test_a_verdict_carries_its_record_beside_the_html_and_text():
    """What a front end receives: the verdict as html and text, the record as MIME_TYPE (JSON)."""
    import json

    from IPython.core.formatters import DisplayFormatter

    from gmmlib.runtime.verdicts import MIME_TYPE, _Shown

    led = Ledger("14_test")
    led.close(
        1.0, 1.0, atol=1e-9, claim="c", what="w", method="m", why="y", control=Control("2", 2.0)
    )
    bundle, _ = DisplayFormatter().format(_Shown(led.last))
    assert {"text/html", "text/plain", MIME_TYPE} <= set(bundle)
    assert "✔" in bundle["text/plain"] and "check-14_test-1" in bundle["text/html"]
    assert json.loads(json.dumps(bundle[MIME_TYPE])) == led.last.record()
    assert bundle[MIME_TYPE]["claim"] == "c" and bundle[MIME_TYPE]["index"] == 1


def test_converged_quadrature_round_off_grows_with_the_number_of_terms():
    from gmmlib.runtime.checks import converged_quadrature

    one = converged_quadrature(lambda n: 1.0, 20, 40)
    cube = converged_quadrature(lambda n: 1.0, 20, 40, dim=3)
    eps = np.finfo(np.float64).eps
    assert float(one.error) >= 100 * eps  # never below a hundred units of round-off
    # the stated round-off covers what a rule of that size really makes: a 40³-node tensor
    # Gauss–Hermite sum of a smooth integrand in float64 against the same sum exactly (fsum)
    xi, w = np.polynomial.hermite_e.hermegauss(40)
    w = w / w.sum()
    terms = (w[:, None, None] * w[None, :, None] * w[None, None, :]
             * np.cos(0.3 * (xi[:, None, None] + xi[None, :, None] - xi[None, None, :])))
    measured = abs(float(np.sum(terms)) - math.fsum(terms.ravel()))
    cube_value = math.fsum(terms.ravel())
    assert measured <= float(cube.error) * max(1.0, abs(cube_value))
    assert float(cube.error) > float(one.error)  # more terms, more round-off
    with pytest.raises(ValueError, match="dim"):
        converged_quadrature(lambda n: 1.0, 20, 40, dim=0)
