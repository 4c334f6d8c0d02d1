r"""Check cells: compare a computed value with its reference under a stated, justified tolerance.

Every check cell of the book goes through a :class:`Ledger`, one per chapter::

    from gmmlib.runtime import Ledger
    ledger = Ledger("01_infinite_prompt_limit")
    ledger.within_se(C_claimed, monte_carlo_mean(samples), claim="thm-clt",
                     what="L·MSE at κ = 1",
                     control=Control("the constant without its e^κ", C_wrong))

One argument order everywhere: **the value the text claims first, the independent evidence
second** (an :class:`Estimate`, or a number with its tolerance). A control is a plausible
wrong *claim*: by default it replaces the first argument, and the very same comparison must
reject it. A check displays its verdict and returns nothing.

Each check

* names at least one *negative control*: a plausible wrong answer (a term dropped, a
  sign flipped, a factor off by the size of error the check is meant to catch, the
  competing method's value). The ledger applies the very same comparison to it; the
  control must fail, and the margin by which it is rejected is recorded. A control that
  passes fails the check: the test has no power against that wrong answer.

* reports, when its evidence is random, the smallest relative error of the claim it could
  detect (``CheckResult.detectable``); a random check that cannot see a 10 % error
  (:data:`MAX_DETECTABLE`) fails: add replicates, or make the cell an illustration outside
  the ledger,
* prints a one-line verdict when it holds,
* raises :class:`CheckFailed` (an ``AssertionError``) with a readable message when it does
  not, so that the executed build fails,
* and carries its record (chapter, claim label, value, reference, tolerance and its
  justification, method, controls, verdict) in the cell's output, as the MIME type
  :data:`MIME_TYPE` beside the HTML and plain-text verdict: a front end (Jupyter, Colab) shows
  the verdict, and the book's build collects the records of every executed or cached
  notebook into the verification ledger (``bookkit.ledger``). ``Ledger.entries`` holds them
  in the kernel.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .comparisons import Bound, Close, Comparison, WithinSE
from .evidence import Estimate, numeric_array
from .evidence import converged_quadrature as converged_quadrature
from .evidence import monte_carlo_mean as monte_carlo_mean
from .evidence import replicate_mean_se as replicate_mean_se
from .evidence import replicates as replicates
from .evidence import richardson_derivative as richardson_derivative
from .verdicts import MAX_DETECTABLE as MAX_DETECTABLE
from .verdicts import MIME_TYPE as MIME_TYPE
from .verdicts import CheckFailed as CheckFailed
from .verdicts import CheckResult as CheckResult
from .verdicts import Control as Control
from .glued import glue as glue
from .verdicts import show

# The evidence a check compares with (Estimate and the functions that make one) is defined in
# gmmlib.runtime.evidence, what a check produces (Control, CheckResult, ...) in
# gmmlib.runtime.verdicts; both are imported here too, so that every check tool is also here
# (a chapter takes them from gmmlib.runtime).
__all__ = ["Ledger"]


def _controls(control: Any) -> list[Control]:
    if control is None:
        return []
    items = list(control) if isinstance(control, (list, tuple)) else [control]
    for c in items:
        if not isinstance(c, Control):
            raise TypeError(
                f"control must be a Control or a list of Controls, got {type(c).__name__}"
            )
    return items


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string")
    return value


@dataclass
class Ledger:
    """The checks of one chapter.

    Every check takes **the claim first** (the value the text states: a closed form, a
    construction's output, a predicted rate) and **the independent evidence second** (an
    :class:`Estimate` from quadrature, Monte Carlo, training or another library, or a number
    with an explicit tolerance). Controls replace the claim by default. A check displays its
    one-line verdict, records it, and returns nothing; ``entries`` holds the results.

    Each kind of check builds a :class:`~gmmlib.runtime.comparisons.Comparison` and hands it to
    :meth:`check`, which runs the claim, the controls, the power and the record alike.

    Parameters
    ----------
    chapter : str
        The chapter's document name (e.g. ``"01_infinite_prompt_limit"``).
    require_control : bool
        Refuse a check that names no :class:`Control` (default; the book's chapters always
        pass one). ``False`` only for scratch work outside the book.
    """

    chapter: str
    entries: list[CheckResult] = field(default_factory=list)
    require_control: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.chapter, str) or not self.chapter:
            raise ValueError("chapter must be a non-empty string naming the chapter")

    @property
    def last(self) -> CheckResult:
        """The most recent check's result."""
        if not self.entries:
            raise IndexError("no check has been recorded yet")
        return self.entries[-1]

    def check(self, comparison: Comparison, *, claim: str, what: str, method: Any, why: Any,
              control: Control | list[Control] | None = None) -> None:
        """Run one check: the claim through ``comparison``, each control through the same test,
        the power of a random check against :data:`MAX_DETECTABLE`; record and show the
        verdict, and raise :class:`CheckFailed` if it does not hold."""
        controls = _controls(control)
        self._need_control(controls)
        out = comparison.outcome()
        recorded = []
        for c in controls:
            side = c.replaces or "value"
            if side not in comparison.sides:
                raise ValueError(
                    f"control {c.name!r}: this check can replace "
                    f"{' or '.join(map(repr, comparison.sides))}, not {side!r}")
            wrong = np.broadcast_to(numeric_array(c.value, f"control {c.name!r}"),
                                    comparison.shape)
            rejected, shown, margin = comparison.reject(side, wrong)
            recorded.append({"name": c.name, "replaces": side, "value": shown,
                             "rejected": bool(rejected), "margin": margin})
        powerful = out.detectable is None or out.detectable <= MAX_DETECTABLE
        text = out.comparison + (f"; detects a {out.detectable:.1%} error"
                                 if out.detectable is not None else "")
        self._record(CheckResult(
            self.chapter, _text(claim, "claim"), _text(what, "what"), out.value, out.reference,
            out.error, out.tolerance, text, _text(method, "method"), _text(why, "why"),
            out.passed and powerful and all(c["rejected"] for c in recorded), out.n_compared,
            tuple(recorded), detectable=out.detectable))

    def _record(self, result: CheckResult) -> None:
        result = CheckResult(**{**asdict(result), "index": len(self.entries) + 1})
        self.entries.append(result)
        show(result)
        if result.passed:
            return
        weak = [c["name"] for c in result.controls if not c["rejected"]]
        if weak:
            raise CheckFailed(
                f"The check of [{result.claim}] in chapter {result.chapter} cannot tell the "
                f"claim from a wrong answer: {result.what} would pass with {', '.join(weak)} too "
                f"({result.control_summary()}). Redesign the check so that it has power against it."
            )
        if (
            result.detectable is not None
            and result.detectable > MAX_DETECTABLE
            and "≤" in result.comparison
        ):
            raise CheckFailed(
                f"The check of [{result.claim}] in chapter {result.chapter} is too weak: "
                f"{result.what} "
                f"could not detect a relative error of the claim below {result.detectable:.1%} "
                f"(the book asks for {MAX_DETECTABLE:.0%}). Add replicates, or show the cell as an "
                "illustration outside the ledger."
            )
        raise CheckFailed(
            f"The claim [{result.claim}] was not confirmed in chapter {result.chapter}: "
            f"{result.what}: {result.comparison}. Tolerance: {result.why}. Method: {result.method}."
        )

    def _need_control(self, controls: list[Control]) -> None:
        if self.require_control and not controls:
            raise TypeError(
                "every check needs control=Control(name, wrong_claim): a plausible wrong "
                "answer (a dropped term, a factor of 2, a transposed matrix, the rival "
                "prediction) that the same comparison must reject"
            )

    # ------------------------------------------------------------------ checks
    def close(
        self,
        value: Any,
        reference: Any,
        *,
        claim: str,
        what: str,
        method: str | None = None,
        why: str | None = None,
        atol: float | None = None,
        rtol: float = 0.0,
        scale: Any = None,
        control: Control | list[Control] | None = None,
    ) -> None:
        r"""Check :math:`|v_i - r_i| \le \text{atol} + \text{rtol}\,|r_i| (+ \varepsilon_i)`, all i.

        ``value`` is the claim, ``reference`` the independent evidence: a scalar or array of
        the same shape, or an :class:`Estimate`, whose ``error`` :math:`\varepsilon_i` is added
        to the tolerance and whose ``why`` and ``method`` are used unless given. When the
        Estimate is random (it has ``se``), the check states the relative error it detects
        (``scale`` is the quantity's size where the claim is 0). The entry records the worst
        entry; a control replaces ``value`` (or ``reference``) in the same test.
        """
        self._need_control(_controls(control))
        est = reference if isinstance(reference, Estimate) else None
        self.check(Close(value, reference, atol, rtol, scale), claim=claim, what=what,
                   method=method or (est.method if est else None),
                   why=why or (est.why if est else None), control=control)

    def within_se(
        self,
        value: Any,
        estimate: Any,
        se: Any = None,
        *,
        claim: str,
        what: str,
        method: str | None = None,
        k: float | None = None,
        why: str | None = None,
        scale: Any = None,
        control: Control | list[Control] | None = None,
    ) -> None:
        r"""Check a claim against a random estimate: :math:`|v - \hat\theta| \le k\,\mathrm{se}`.

        ``value`` is the claim; ``estimate`` the random evidence, an :class:`Estimate` from
        :func:`~gmmlib.runtime.evidence.replicates` or
        :func:`~gmmlib.runtime.evidence.monte_carlo_mean` (whose ``se``, ``k``, ``why`` and
        ``method`` are used unless given), or an array with its ``se``. With :math:`k = 4` a
        correct claim fails with probability about 6·10⁻⁵ per entry; the draws are seeded, so
        a passing build keeps passing. Arrays are compared entry by entry (``se`` broadcast).
        The check states the smallest relative error of the claim it detects (relative to
        ``scale`` where the claim is 0) and fails above :data:`MAX_DETECTABLE`. A control
        replaces ``value`` by default.
        """
        self._need_control(_controls(control))
        if isinstance(value, Estimate) and not isinstance(estimate, Estimate):
            raise TypeError(
                "within_se takes the claim first and the random Estimate second: "
                "within_se(claimed_value, estimate, ...)"
            )
        if isinstance(estimate, Estimate):
            if estimate.se is None:
                raise ValueError(
                    "estimate is an Estimate without a standard error: use close() for it"
                )
            se = estimate.se if se is None else se
            k = estimate.k if k is None else k
            why = why or estimate.why
            method = method or estimate.method
        if se is None:
            raise TypeError(
                "within_se needs se (or an Estimate with a standard error as the estimate)"
            )
        k = 4.0 if k is None else float(k)
        self.check(WithinSE(value, estimate, se, k, scale), claim=claim, what=what,
                   method=method, why=why or f"{k:g} standard errors of the estimate",
                   control=control)

    def below(
        self,
        value: Any,
        bound: Any,
        *,
        claim: str,
        what: str,
        method: str,
        why: str,
        control: Control | list[Control] | None = None,
    ) -> None:
        r"""Check :math:`v_i \le b_i` for every entry (an error below a floor, a gap below a bound).

        The control's wrong answer replaces ``value`` (its error, its risk, …) by default,
        or ``bound`` with ``replaces="bound"``; it must violate the inequality somewhere.
        """
        self._need_control(_controls(control))
        self.check(Bound(value, bound, 1.0), claim=claim, what=what, method=method, why=why,
                   control=control)

    def above(
        self,
        value: Any,
        bound: Any,
        *,
        claim: str,
        what: str,
        method: str,
        why: str,
        control: Control | list[Control] | None = None,
    ) -> None:
        r"""Check :math:`v_i \ge b_i` for every entry (e.g. an accuracy above chance plus a margin).

        The control's wrong answer replaces ``value`` by default, or ``bound``.
        """
        self._need_control(_controls(control))
        self.check(Bound(value, bound, -1.0), claim=claim, what=what, method=method, why=why,
                   control=control)

    def summary(self) -> str:
        """A two-line count of this chapter's checks and of the wrong answers they rejected."""
        n_ok = sum(e.passed for e in self.entries)
        claims = len({e.claim for e in self.entries})
        n_controls = sum(len(e.controls) for e in self.entries)
        n_rejected = sum(c["rejected"] for e in self.entries for c in e.controls)
        # two short lines: the summary is printed at the end of every chapter, in a page column
        # of about 80 characters
        return (
            f"{self.chapter}: {n_ok}/{len(self.entries)} checks passed, covering {claims} claims;\n"
            f"{n_rejected}/{n_controls} negative controls rejected"
        )
