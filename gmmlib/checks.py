r"""Check cells: compare a computed value with its reference under a stated, justified tolerance.

Every check cell of the book goes through a :class:`Ledger`, one per chapter::

    from gmmlib.checks import Ledger
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

from .evidence import Estimate, format_number, numeric_array
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
from .verdicts import show

# The evidence a check compares with (Estimate and the functions that make one) is defined in
# gmmlib.evidence, what a check produces (Control, CheckResult, ...) in gmmlib.verdicts; both
# are imported here too, so that a chapter takes every check tool from here.
__all__ = ["Ledger", "glue"]

def _scalar(x: Any, name: str) -> float:
    arr = np.asarray(x.detach().cpu().numpy() if hasattr(x, "detach") else x, dtype=np.float64)
    if arr.size != 1:
        raise ValueError(f"{name} must be a scalar, got shape {arr.shape}")
    return float(arr.reshape(()))


def _fmt_ref(x: float) -> str:
    """A number that follows a minus sign: negative ones in parentheses."""
    return f"({format_number(x)})" if x < 0 else format_number(x)


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


@dataclass
class Ledger:
    """The checks of one chapter.

    Every check takes **the claim first** (the value the text states: a closed form, a
    construction's output, a predicted rate) and **the independent evidence second** (an
    :class:`Estimate` from quadrature, Monte Carlo, training or another library, or a number
    with an explicit tolerance). Controls replace the claim by default. A check displays its
    one-line verdict, records it, and returns nothing; ``entries`` holds the results.

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

    @staticmethod
    def _text(value: Any, name: str) -> str:
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{name} must be a non-empty string")
        return value

    @staticmethod
    def _apply_controls(
        controls: list[Control], sides: tuple[str, ...], shape: tuple, run: Any
    ) -> list[dict[str, Any]]:
        """Apply the check's own test to each control.

        ``run(side, wrong)`` returns ``(rejected, value, margin)``.
        """
        recorded = []
        for c in controls:
            side = c.replaces or "value"
            if side not in sides:
                raise ValueError(
                    f"control {c.name!r}: this check can replace {' or '.join(map(repr, sides))}, "
                    f"not {side!r}"
                )
            wrong = np.broadcast_to(numeric_array(c.value, f"control {c.name!r}"), shape)
            rejected, shown, margin = run(side, wrong)
            recorded.append(
                {
                    "name": c.name,
                    "replaces": side,
                    "value": shown,
                    "rejected": bool(rejected),
                    "margin": margin,
                }
            )
        return recorded

    def _finish(
        self,
        claim: str,
        what: str,
        method: Any,
        why: Any,
        passed: bool,
        value: float,
        reference: float,
        error: float,
        tolerance: float,
        comparison: str,
        n: int,
        recorded: list[dict[str, Any]],
        detectable: float | None = None,
    ) -> None:
        powerful = detectable is None or detectable <= MAX_DETECTABLE
        if detectable is not None:
            comparison += f"; detects a {detectable:.1%} error"
        self._record(
            CheckResult(
                self.chapter,
                self._text(claim, "claim"),
                self._text(what, "what"),
                value,
                reference,
                error,
                tolerance,
                comparison,
                self._text(method, "method"),
                self._text(why, "why"),
                passed and powerful and all(c["rejected"] for c in recorded),
                n,
                tuple(recorded),
                detectable=detectable,
            )
        )

    @staticmethod
    def _detectable(
        value: np.ndarray, evidence: np.ndarray, half_width: np.ndarray, scale: Any
    ) -> float:
        r"""The smallest relative error of the claim this check rejects in its weakest direction.

        A claim moved by :math:`\delta` passes while :math:`|v + \delta - e| \le w`, so in the
        worst direction it takes :math:`|\delta| > w + |v - e|`; relative to the claim's size
        (or to ``scale`` when the claim is 0), worst entry.
        """
        size = (
            np.abs(value)
            if scale is None
            else np.broadcast_to(numeric_array(scale, "scale"), value.shape)
        )
        if np.any(size <= 0):
            raise ValueError(
                "the claim is 0 somewhere: give scale= (the size of the quantity) so that the "
                "check can state the relative error it detects"
            )
        return float(np.max((half_width + np.abs(value - evidence)) / size))

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
        controls = _controls(control)
        self._need_control(controls)
        est = reference if isinstance(reference, Estimate) else None
        v, r = numeric_array(value, "value"), numeric_array(reference, "reference")
        if v.shape != r.shape:
            raise ValueError(
                f"value and reference must have the same shape, got {v.shape} and {r.shape}"
            )
        if v.size == 0:
            raise ValueError("value must not be empty")
        atol = 0.0 if atol is None else float(atol)
        extra = (
            np.broadcast_to(np.asarray(est.error, dtype=np.float64), r.shape)
            if est is not None
            else 0.0
        )
        if atol < 0 or rtol < 0 or (atol == 0 and rtol == 0 and est is None):
            raise ValueError(
                "give a positive atol and/or rtol (or an Estimate as reference): "
                "a check needs a tolerance"
            )

        def test(vv: np.ndarray, rr: np.ndarray) -> tuple[bool, int, np.ndarray, np.ndarray]:
            bound = atol + rtol * np.abs(rr) + extra
            excess = np.abs(vv - rr) - bound
            excess = np.where(np.isfinite(excess), excess, np.inf)
            return bool(np.all(excess <= 0)), int(np.argmax(excess)), bound, np.abs(vv - rr)

        passed, i, bound, _ = test(v, r)
        vi, ri = float(v.flat[i]), float(r.flat[i])
        err, tol = abs(vi - ri), float(bound.flat[i])
        where = f" (worst of {v.size})" if v.size > 1 else ""
        sign = "≤" if passed else ">"
        comparison = (f"|{format_number(vi)} − {_fmt_ref(ri)}| = {format_number(err)} {sign} "
                      f"{format_number(tol)}{where}")

        def run(side: str, w: np.ndarray) -> tuple[bool, float, str]:
            ok, j, b, d = test(w, r) if side == "value" else test(v, w)
            ratio = float(np.max(np.where(b > 0, d / np.where(b > 0, b, 1), np.inf)))
            return not ok, float(w.flat[j]), f"error {format_number(ratio)}× the tolerance"

        recorded = self._apply_controls(controls, ("value", "reference"), v.shape, run)
        detectable = (
            self._detectable(v, r, np.broadcast_to(bound, v.shape), scale)
            if est is not None and est.se is not None
            else None
        )
        self._finish(
            claim,
            what,
            method or (est.method if est else None),
            why or (est.why if est else None),
            passed,
            vi,
            ri,
            err,
            tol,
            comparison,
            int(v.size),
            recorded,
            detectable,
        )

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
        :func:`~gmmlib.evidence.replicates` or :func:`~gmmlib.evidence.monte_carlo_mean`
        (whose ``se``, ``k``, ``why`` and ``method`` are used unless given), or an array with
        its ``se``. With :math:`k = 4` a
        correct claim fails with probability about 6·10⁻⁵ per entry; the draws are seeded, so
        a passing build keeps passing. Arrays are compared entry by entry (``se`` broadcast).
        The check states the smallest relative error of the claim it detects (relative to
        ``scale`` where the claim is 0) and fails above :data:`MAX_DETECTABLE`. A control
        replaces ``value`` by default.
        """
        controls = _controls(control)
        self._need_control(controls)
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
        v, est = numeric_array(value, "value"), numeric_array(estimate, "estimate")
        if v.shape != est.shape:
            raise ValueError(
                f"value and estimate must have the same shape, got {v.shape} and {est.shape}"
            )
        s = np.broadcast_to(numeric_array(se, "se"), est.shape)
        if np.any(~np.isfinite(s)) or np.any(s <= 0):
            raise ValueError("se must be positive and finite")
        if k <= 0:
            raise ValueError(f"k must be positive, got {k}")

        def zscores(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            z = np.abs(a - b) / s
            return np.where(np.isfinite(z), z, np.inf)

        z = zscores(v, est)
        i = int(np.argmax(z))
        vi, ei, si = float(v.flat[i]), float(est.flat[i]), float(s.flat[i])
        passed = bool(np.all(z <= k))
        where = f" (worst of {v.size})" if v.size > 1 else ""
        comparison = (
            f"|{format_number(vi)} − {_fmt_ref(ei)}| = {float(z.flat[i]):.2f} se "
            f"{'≤' if passed else '>'} {k:.3g} se (se = {format_number(si)}){where}"
        )

        def run(side: str, w: np.ndarray) -> tuple[bool, float, str]:
            zc = zscores(w, est) if side == "value" else zscores(v, w)
            zmax = float(np.max(zc))
            margin = (
                f"at {zmax:.3g} se > {k:.3g} se" if zmax > k else f"only {zmax:.3g} se ≤ {k:.3g} se"
            )
            return bool(np.any(zc > k)), float(w.flat[int(np.argmax(zc))]), margin

        recorded = self._apply_controls(controls, ("value", "reference"), v.shape, run)
        detectable = self._detectable(v, est, k * s, scale)
        self._finish(
            claim,
            what,
            method,
            why or f"{k:g} standard errors of the estimate",
            passed,
            vi,
            ei,
            abs(vi - ei),
            k * si,
            comparison,
            int(v.size),
            recorded,
            detectable,
        )

    def _bound(
        self,
        value: Any,
        bound: Any,
        sign: float,
        claim: str,
        what: str,
        method: str,
        why: str,
        control: Any,
    ) -> None:
        """Check ``sign * (v_i - b_i) <= 0`` for every entry; ``sign = 1`` for ≤, ``-1`` for ≥."""
        controls = _controls(control)
        self._need_control(controls)
        v = numeric_array(value, "value")
        b = np.broadcast_to(numeric_array(bound, "bound"), v.shape)
        if v.size == 0:
            raise ValueError("value must not be empty")

        def gaps(vv: np.ndarray, bb: np.ndarray) -> np.ndarray:
            g = sign * (vv - bb)
            return np.where(np.isfinite(g), g, np.inf)

        gap = gaps(v, b)
        i = int(np.argmax(gap))
        vi, bi = float(v.flat[i]), float(b.flat[i])
        passed = bool(np.all(gap <= 0))
        where = f" (worst of {v.size})" if v.size > 1 else ""
        ok, bad = ("≤", ">") if sign > 0 else ("≥", "<")
        comparison = f"{format_number(vi)} {ok if passed else bad} {format_number(bi)}{where}"

        def run(side: str, w: np.ndarray) -> tuple[bool, float, str]:
            g = gaps(w, b) if side == "value" else gaps(v, w)
            j = int(np.argmax(g))
            wv, wb = (
                (float(w.flat[j]), float(b.flat[j]))
                if side == "value"
                else (float(v.flat[j]), float(w.flat[j]))
            )
            rejected = bool(np.any(g > 0))
            return (
                rejected,
                float(w.flat[j]),
                f"{format_number(wv)} {bad if rejected else ok} {format_number(wb)}",
            )

        recorded = self._apply_controls(controls, ("value", "bound"), v.shape, run)
        self._finish(
            claim,
            what,
            method,
            why,
            passed,
            vi,
            bi,
            max(sign * (vi - bi), 0.0),
            bi,
            comparison,
            int(v.size),
            recorded,
        )

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
        self._bound(value, bound, 1.0, claim, what, method, why, control)

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
        self._bound(value, bound, -1.0, claim, what, method, why, control)

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


def glue(name: str, value: Any) -> None:
    r"""Make a computed number available to the text as ``{glue:text}`name:.3g```.

    A thin wrapper of myst-nb's ``glue`` (``display=False``): numpy scalars become plain
    Python numbers, so that the role's format specification applies. Outside the book's
    build (Colab, Binder without myst-nb) it does nothing: the number is in the cell's output.
    """
    if not isinstance(name, str) or not name:
        raise ValueError("name must be a non-empty string")
    arr = np.asarray(value.detach().cpu().numpy() if hasattr(value, "detach") else value)
    if arr.ndim == 0 and arr.dtype.kind in "biuf":
        value = int(arr) if arr.dtype.kind in "biu" else float(arr)
    try:
        from myst_nb import glue as _myst_glue
    except ImportError:  # pragma: no cover - outside the book's build
        return
    _myst_glue(name, value, display=False)
