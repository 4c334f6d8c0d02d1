r"""Check cells: compare a computed value with its reference under a stated, justified tolerance.

Every check cell of the book goes through a :class:`Ledger`, one per chapter::

    from gmmlib.checks import Ledger
    ledger = Ledger("01_infinite_prompt_limit")
    ledger.within_se(estimate, reference, se, k=4, claim="thm-clt",
                     what="L·MSE at κ = 1", method="Monte Carlo, 400 prompts")

Each check

* prints a one-line verdict when it holds,
* raises :class:`CheckFailed` (an ``AssertionError``) with a readable message when it does
  not, so that the executed build fails,
* and records an entry (chapter, claim label, value, reference, tolerance and its
  justification, method, verdict) in the book's verification ledger: a JSON file per
  chapter under ``_build/ledger/`` of the book's root (found by walking up from the
  working directory to ``_toc.yml``), or in memory only when the chapter runs outside
  the repository (Colab, Binder without the repository).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["CheckFailed", "CheckResult", "Ledger", "find_book_root", "replicate_mean_se"]

LEDGER_ENV = "GMMLIB_LEDGER_DIR"


class CheckFailed(AssertionError):
    """A numerical check of a claim in the book did not hold."""


@dataclass(frozen=True)
class CheckResult:
    """One ledger entry: what was compared, with which tolerance and why, and the verdict."""

    chapter: str
    claim: str
    what: str
    value: float
    reference: float
    error: float
    tolerance: float
    comparison: str
    method: str
    why: str
    passed: bool
    n_compared: int = 1

    def verdict(self) -> str:
        """The one-line verdict printed under a check cell."""
        mark = "✔ check passed" if self.passed else "✘ CHECK FAILED"
        return (
            f"{mark} [{self.claim}] {self.what}: {self.comparison} "
            f"({self.why}; {self.method})"
        )

    def __str__(self) -> str:
        return self.verdict()

    def _ipython_display_(self) -> None:
        """Show nothing in a notebook: the check already printed its verdict."""


def find_book_root(start: str | os.PathLike | None = None) -> Path | None:
    """The nearest directory at or above ``start`` (default: the working directory) holding ``_toc.yml``."""
    here = Path(start or os.getcwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "_toc.yml").is_file():
            return folder
    return None


def _scalar(x: Any, name: str) -> float:
    arr = np.asarray(x.detach().cpu().numpy() if hasattr(x, "detach") else x, dtype=np.float64)
    if arr.size != 1:
        raise ValueError(f"{name} must be a scalar, got shape {arr.shape}")
    return float(arr.reshape(()))


def _array(x: Any, name: str) -> np.ndarray:
    try:
        return np.asarray(x.detach().cpu().numpy() if hasattr(x, "detach") else x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be numeric, got {type(x).__name__}") from exc


def _fmt(x: float) -> str:
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    ax = abs(x)
    return f"{x:.3e}" if ax < 1e-3 or ax >= 1e5 else f"{x:.4g}"


def _fmt_ref(x: float) -> str:
    """A number that follows a minus sign: negative ones in parentheses."""
    return f"({_fmt(x)})" if x < 0 else _fmt(x)


@dataclass
class Ledger:
    """The checks of one chapter.

    Parameters
    ----------
    chapter : str
        The chapter's document name (e.g. ``"01_infinite_prompt_limit"``).
    directory : str or Path or None, optional
        Where to write ``<chapter>.json``. By default ``$GMMLIB_LEDGER_DIR`` if set, else
        ``_build/ledger`` under the book's root, else nowhere (in memory only).
    """

    chapter: str
    directory: str | os.PathLike | None = None
    entries: list[CheckResult] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not isinstance(self.chapter, str) or not self.chapter:
            raise ValueError("chapter must be a non-empty string naming the chapter")
        if self.directory is None:
            env = os.environ.get(LEDGER_ENV)
            root = find_book_root()
            if env:
                self.directory = Path(env)
            elif root is not None:
                self.directory = root / "_build" / "ledger"
        self._write()  # a fresh run of the chapter starts a fresh ledger file

    # ------------------------------------------------------------------ storage
    @property
    def path(self) -> Path | None:
        """The JSON file this ledger writes, or ``None`` when it keeps the entries in memory."""
        if self.directory is None:
            return None
        return Path(self.directory) / f"{self.chapter}.json"

    def _write(self) -> None:
        path = self.path
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps([asdict(e) for e in self.entries], indent=1))
        tmp.replace(path)

    def _record(self, result: CheckResult) -> CheckResult:
        self.entries.append(result)
        self._write()
        print(result.verdict())
        if not result.passed:
            raise CheckFailed(
                f"The claim [{result.claim}] was not confirmed in chapter {result.chapter}: "
                f"{result.what}: {result.comparison}. Tolerance: {result.why}. Method: {result.method}."
            )
        return result

    @staticmethod
    def _text(value: Any, name: str) -> str:
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{name} must be a non-empty string")
        return value

    # ------------------------------------------------------------------ checks
    def close(
        self,
        value: Any,
        reference: Any,
        *,
        claim: str,
        what: str,
        method: str,
        why: str,
        atol: float = 0.0,
        rtol: float = 0.0,
    ) -> CheckResult:
        r"""Check :math:`|v_i - r_i| \le \text{atol} + \text{rtol}\,|r_i|` for every entry.

        ``value`` and ``reference`` are scalars or arrays of the same shape; the entry
        records the worst one. ``why`` justifies the tolerance (e.g. "float64 round-off",
        "4 Monte Carlo standard errors").
        """
        v, r = _array(value, "value"), _array(reference, "reference")
        if v.shape != r.shape:
            raise ValueError(f"value and reference must have the same shape, got {v.shape} and {r.shape}")
        if v.size == 0:
            raise ValueError("value must not be empty")
        if atol < 0 or rtol < 0 or (atol == 0 and rtol == 0):
            raise ValueError("give a positive atol and/or rtol: a check needs a tolerance")
        bound = atol + rtol * np.abs(r)
        excess = np.abs(v - r) - bound
        excess = np.where(np.isfinite(excess), excess, np.inf)
        i = int(np.argmax(excess))
        vi, ri = float(v.flat[i]), float(r.flat[i])
        err, tol = abs(vi - ri), float(bound.flat[i])
        passed = bool(np.all(excess <= 0))
        where = f" (worst of {v.size})" if v.size > 1 else ""
        comparison = f"|{_fmt(vi)} − {_fmt_ref(ri)}| = {_fmt(err)} {'≤' if passed else '>'} {_fmt(tol)}{where}"
        return self._record(
            CheckResult(self.chapter, self._text(claim, "claim"), self._text(what, "what"), vi, ri, err, tol,
                        comparison, self._text(method, "method"), self._text(why, "why"), passed, int(v.size))
        )

    def within_se(
        self,
        estimate: Any,
        reference: Any,
        se: Any,
        *,
        claim: str,
        what: str,
        method: str,
        k: float = 4.0,
        why: str | None = None,
    ) -> CheckResult:
        r"""Check a Monte Carlo (or other random) estimate: :math:`|\hat\theta - \theta| \le k\,\mathrm{se}`.

        With :math:`k = 4` a correct claim fails with probability about 6·10⁻⁵ per check
        (Gaussian approximation); the draws are seeded, so a passing build keeps passing.
        Arrays are compared entry by entry (``se`` broadcast).
        """
        est, ref = _array(estimate, "estimate"), _array(reference, "reference")
        s = np.broadcast_to(_array(se, "se"), est.shape)
        if est.shape != ref.shape:
            raise ValueError(f"estimate and reference must have the same shape, got {est.shape} and {ref.shape}")
        if np.any(~np.isfinite(s)) or np.any(s <= 0):
            raise ValueError("se must be positive and finite")
        if k <= 0:
            raise ValueError(f"k must be positive, got {k}")
        z = np.abs(est - ref) / s
        z = np.where(np.isfinite(z), z, np.inf)
        i = int(np.argmax(z))
        vi, ri, si = float(est.flat[i]), float(ref.flat[i]), float(s.flat[i])
        passed = bool(np.all(z <= k))
        where = f" (worst of {est.size})" if est.size > 1 else ""
        comparison = (
            f"|{_fmt(vi)} − {_fmt_ref(ri)}| = {_fmt(abs(vi - ri))} = {float(z.flat[i]):.2f} se "
            f"{'≤' if passed else '>'} {k:g} se (se = {_fmt(si)}){where}"
        )
        why = why or f"{k:g} standard errors of the estimate"
        return self._record(
            CheckResult(self.chapter, self._text(claim, "claim"), self._text(what, "what"), vi, ri, abs(vi - ri),
                        k * si, comparison, self._text(method, "method"), why, passed, int(est.size))
        )

    def _bound(self, value: Any, bound: Any, sign: float, claim: str, what: str, method: str,
               why: str) -> CheckResult:
        """Check ``sign * (v_i - b_i) <= 0`` for every entry; ``sign = 1`` for ≤, ``-1`` for ≥."""
        v = _array(value, "value")
        b = np.broadcast_to(_array(bound, "bound"), v.shape)
        if v.size == 0:
            raise ValueError("value must not be empty")
        gap = sign * (v - b)
        gap = np.where(np.isfinite(gap), gap, np.inf)
        i = int(np.argmax(gap))
        vi, bi = float(v.flat[i]), float(b.flat[i])
        passed = bool(np.all(gap <= 0))
        where = f" (worst of {v.size})" if v.size > 1 else ""
        ok, bad = ("≤", ">") if sign > 0 else ("≥", "<")
        comparison = f"{_fmt(vi)} {ok if passed else bad} {_fmt(bi)}{where}"
        return self._record(
            CheckResult(self.chapter, self._text(claim, "claim"), self._text(what, "what"), vi, bi,
                        max(sign * (vi - bi), 0.0), bi, comparison, self._text(method, "method"),
                        self._text(why, "why"), passed, int(v.size))
        )

    def below(
        self, value: Any, bound: Any, *, claim: str, what: str, method: str, why: str
    ) -> CheckResult:
        r"""Check :math:`v_i \le b_i` for every entry (e.g. an error below a floor, a risk gap below a tolerance)."""
        return self._bound(value, bound, 1.0, claim, what, method, why)

    def above(
        self, value: Any, bound: Any, *, claim: str, what: str, method: str, why: str
    ) -> CheckResult:
        r"""Check :math:`v_i \ge b_i` for every entry (e.g. an accuracy above chance plus a margin)."""
        return self._bound(value, bound, -1.0, claim, what, method, why)

    def summary(self) -> str:
        """A one-line count of this chapter's checks."""
        n_ok = sum(e.passed for e in self.entries)
        claims = len({e.claim for e in self.entries})
        return f"{self.chapter}: {n_ok}/{len(self.entries)} checks passed, covering {claims} claims"


def replicate_mean_se(samples: Any, *, familywise_alpha: float = 1e-3) -> tuple[np.ndarray, np.ndarray, float]:
    r"""Mean, standard error and a family-wise tolerance multiplier for independent replicates.

    For :math:`R` i.i.d. replicates (axis 0) of an array of :math:`N` estimates,

    .. math::

        \bar x = \frac1R\sum_r x_r,\qquad \mathrm{se} = \frac{s}{\sqrt R},\qquad
        k = t_{R-1}^{-1}\Big(1 - \frac{\alpha}{2N}\Big),

    where :math:`s` is the sample standard deviation and :math:`t_{R-1}` Student's law: a
    correct reference is outside :math:`\bar x \pm k\,\mathrm{se}` somewhere among the
    :math:`N` entries with probability at most about :math:`\alpha` (Bonferroni, Gaussian
    replicates).

    Returns
    -------
    mean, se : ndarray
        Shape ``samples.shape[1:]``.
    k : float
    """
    from scipy.stats import t as student_t

    x = _array(samples, "samples")
    if not np.all(np.isfinite(x)):
        raise ValueError("samples must be finite (no NaN or inf)")
    if x.ndim < 1 or x.shape[0] < 3:
        raise ValueError(f"samples must hold at least 3 replicates along axis 0, got shape {x.shape}")
    if not (0.0 < familywise_alpha < 1.0):
        raise ValueError(f"familywise_alpha must lie in (0, 1), got {familywise_alpha}")
    R = x.shape[0]
    n = max(1, int(np.prod(x.shape[1:])))
    mean = x.mean(axis=0)
    se = x.std(axis=0, ddof=1) / np.sqrt(R)
    k = float(student_t.ppf(1.0 - familywise_alpha / (2.0 * n), R - 1))
    return mean, se, k
