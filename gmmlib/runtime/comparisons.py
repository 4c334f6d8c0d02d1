r"""The kinds of comparison a check makes: one small class each.

A comparison holds the claim and its evidence, says whether the claim passes, how far it is
from passing and in what words (:meth:`Comparison.outcome`), and applies the very same test to a
wrong answer put in the place of one of its sides (:meth:`Comparison.reject`).
:class:`gmmlib.runtime.checks.Ledger` runs every kind alike: the claim, its controls, the power of a
random check, the record. A new kind of check is a new subclass here and a method of the Ledger
that builds it.

- :class:`Close`: :math:`|v_i - r_i| \le \text{atol} + \text{rtol}|r_i| + \varepsilon_i`;
- :class:`WithinSE`: :math:`|v_i - \hat\theta_i| \le k\,\mathrm{se}_i`;
- :class:`Bound`: :math:`v_i \le b_i` (or :math:`\ge`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .evidence import Estimate, format_number, numeric_array

__all__ = ["Bound", "Close", "Comparison", "Outcome", "WithinSE"]


def _fmt_ref(x: float) -> str:
    """A number that follows a minus sign: negative ones in parentheses."""
    return f"({format_number(x)})" if x < 0 else format_number(x)


def _worst(n: int) -> str:
    return f" (worst of {n})" if n > 1 else ""


def detectable(value: np.ndarray, evidence: np.ndarray, half_width: np.ndarray,
               scale: Any) -> float:
    r"""The smallest relative error of the claim a check rejects in its weakest direction.

    A claim moved by :math:`\delta` passes while :math:`|v + \delta - e| \le w`, so in the worst
    direction it takes :math:`|\delta| > w + |v - e|`; relative to the claim's size (or to
    ``scale`` where the claim is 0), worst entry.
    """
    size = (np.abs(value) if scale is None
            else np.broadcast_to(numeric_array(scale, "scale"), value.shape))
    if np.any(size <= 0):
        raise ValueError(
            "the claim is 0 somewhere: give scale= (the size of the quantity) so that the "
            "check can state the relative error it detects"
        )
    return float(np.max((half_width + np.abs(value - evidence)) / size))


@dataclass(frozen=True)
class Outcome:
    """What a comparison says of the claim: the verdict and the worst entry, in numbers and
    words; ``detectable`` is the relative error a random check can see (else ``None``)."""

    passed: bool
    value: float
    reference: float
    error: float
    tolerance: float
    comparison: str
    n_compared: int
    detectable: float | None = None


class Comparison:
    """A claim against its evidence. ``sides`` names what a control may replace (the first is
    the claim, its default)."""

    sides: tuple[str, ...] = ("value", "reference")
    shape: tuple[int, ...]

    def outcome(self) -> Outcome:  # pragma: no cover - every kind defines it
        """Whether the claim passes, its worst entry, and the comparison in words."""
        raise NotImplementedError

    def reject(self, side: str, wrong: np.ndarray) -> tuple[bool, float, str]:
        """The same test with ``wrong`` in place of ``side``: ``(rejected, the wrong value at
        its worst entry, the margin in words)``."""
        raise NotImplementedError  # pragma: no cover


class Close(Comparison):
    r""":math:`|v_i - r_i| \le \text{atol} + \text{rtol}\,|r_i| + \varepsilon_i` for every i,
    with :math:`\varepsilon` the error of an :class:`~gmmlib.runtime.evidence.Estimate`
    reference."""

    def __init__(self, value: Any, reference: Any, atol: float | None, rtol: float,
                 scale: Any = None) -> None:
        self.estimate = reference if isinstance(reference, Estimate) else None
        self.v, self.r = numeric_array(value, "value"), numeric_array(reference, "reference")
        if self.v.shape != self.r.shape:
            raise ValueError("value and reference must have the same shape, got "
                             f"{self.v.shape} and {self.r.shape}")
        if self.v.size == 0:
            raise ValueError("value must not be empty")
        self.atol, self.rtol, self.scale = 0.0 if atol is None else float(atol), rtol, scale
        est = self.estimate
        self.extra = (np.broadcast_to(np.asarray(est.error, dtype=np.float64), self.r.shape)
                      if est is not None else 0.0)
        if self.atol < 0 or rtol < 0 or (self.atol == 0 and rtol == 0 and est is None):
            raise ValueError("give a positive atol and/or rtol (or an Estimate as reference): "
                             "a check needs a tolerance")
        self.shape = self.v.shape

    def _test(self, vv: np.ndarray, rr: np.ndarray) -> tuple[bool, int, np.ndarray, np.ndarray]:
        bound = self.atol + self.rtol * np.abs(rr) + self.extra
        excess = np.abs(vv - rr) - bound
        excess = np.where(np.isfinite(excess), excess, np.inf)
        return bool(np.all(excess <= 0)), int(np.argmax(excess)), bound, np.abs(vv - rr)

    def outcome(self) -> Outcome:
        passed, i, bound, _ = self._test(self.v, self.r)
        vi, ri = float(self.v.flat[i]), float(self.r.flat[i])
        err, tol = abs(vi - ri), float(bound.flat[i])
        comparison = (f"|{format_number(vi)} − {_fmt_ref(ri)}| = {format_number(err)} "
                      f"{'≤' if passed else '>'} {format_number(tol)}{_worst(self.v.size)}")
        est = self.estimate
        power = (detectable(self.v, self.r, np.broadcast_to(bound, self.shape), self.scale)
                 if est is not None and est.se is not None else None)
        return Outcome(passed, vi, ri, err, tol, comparison, int(self.v.size), power)

    def reject(self, side: str, wrong: np.ndarray) -> tuple[bool, float, str]:
        ok, j, b, d = self._test(wrong, self.r) if side == "value" else self._test(self.v, wrong)
        ratio = float(np.max(np.where(b > 0, d / np.where(b > 0, b, 1), np.inf)))
        return not ok, float(wrong.flat[j]), f"error {format_number(ratio)}× the tolerance"


class WithinSE(Comparison):
    r""":math:`|v_i - \hat\theta_i| \le k\,\mathrm{se}_i` for every i (a random estimate)."""

    def __init__(self, value: Any, estimate: Any, se: Any, k: float, scale: Any = None) -> None:
        self.v, self.e = numeric_array(value, "value"), numeric_array(estimate, "estimate")
        if self.v.shape != self.e.shape:
            raise ValueError("value and estimate must have the same shape, got "
                             f"{self.v.shape} and {self.e.shape}")
        self.s = np.broadcast_to(numeric_array(se, "se"), self.e.shape)
        if np.any(~np.isfinite(self.s)) or np.any(self.s <= 0):
            raise ValueError("se must be positive and finite")
        if k <= 0:
            raise ValueError(f"k must be positive, got {k}")
        self.k, self.scale, self.shape = k, scale, self.v.shape

    def _z(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        z = np.abs(a - b) / self.s
        return np.where(np.isfinite(z), z, np.inf)

    def outcome(self) -> Outcome:
        z, k = self._z(self.v, self.e), self.k
        i = int(np.argmax(z))
        vi, ei, si = float(self.v.flat[i]), float(self.e.flat[i]), float(self.s.flat[i])
        passed = bool(np.all(z <= k))
        comparison = (f"|{format_number(vi)} − {_fmt_ref(ei)}| = {float(z.flat[i]):.2f} se "
                      f"{'≤' if passed else '>'} {k:.3g} se (se = {format_number(si)})"
                      f"{_worst(self.v.size)}")
        power = detectable(self.v, self.e, k * self.s, self.scale)
        return Outcome(passed, vi, ei, abs(vi - ei), k * si, comparison, int(self.v.size), power)

    def reject(self, side: str, wrong: np.ndarray) -> tuple[bool, float, str]:
        z = self._z(wrong, self.e) if side == "value" else self._z(self.v, wrong)
        zmax, k = float(np.max(z)), self.k
        margin = (f"at {zmax:.3g} se > {k:.3g} se" if zmax > k
                  else f"only {zmax:.3g} se ≤ {k:.3g} se")
        return bool(np.any(z > k)), float(wrong.flat[int(np.argmax(z))]), margin


class Bound(Comparison):
    r""":math:`v_i \le b_i` for every i (``sign = 1``), or :math:`v_i \ge b_i` (``sign = -1``)."""

    sides = ("value", "bound")

    def __init__(self, value: Any, bound: Any, sign: float) -> None:
        self.v = numeric_array(value, "value")
        self.b = np.broadcast_to(numeric_array(bound, "bound"), self.v.shape)
        if self.v.size == 0:
            raise ValueError("value must not be empty")
        self.sign, self.shape = sign, self.v.shape
        self.ok, self.bad = ("≤", ">") if sign > 0 else ("≥", "<")

    def _gaps(self, vv: np.ndarray, bb: np.ndarray) -> np.ndarray:
        g = self.sign * (vv - bb)
        return np.where(np.isfinite(g), g, np.inf)

    def outcome(self) -> Outcome:
        gap = self._gaps(self.v, self.b)
        i = int(np.argmax(gap))
        vi, bi = float(self.v.flat[i]), float(self.b.flat[i])
        passed = bool(np.all(gap <= 0))
        comparison = (f"{format_number(vi)} {self.ok if passed else self.bad} "
                      f"{format_number(bi)}{_worst(self.v.size)}")
        return Outcome(passed, vi, bi, max(self.sign * (vi - bi), 0.0), bi, comparison,
                       int(self.v.size))

    def reject(self, side: str, wrong: np.ndarray) -> tuple[bool, float, str]:
        g = self._gaps(wrong, self.b) if side == "value" else self._gaps(self.v, wrong)
        j = int(np.argmax(g))
        wv, wb = ((float(wrong.flat[j]), float(self.b.flat[j])) if side == "value"
                  else (float(self.v.flat[j]), float(wrong.flat[j])))
        rejected = bool(np.any(g > 0))
        return (rejected, float(wrong.flat[j]),
                f"{format_number(wv)} {self.bad if rejected else self.ok} {format_number(wb)}")
