"""What a check produces: its negative control, its record and verdict, and their display.

:class:`gmmlib.runtime.checks.Ledger` makes these; they are documented here, where they are
defined, and ``gmmlib.runtime.checks`` imports them too. A check's cell output carries the verdict
as HTML and plain text, and beside it the record as the MIME type :data:`MIME_TYPE`, which the
book's build collects into the verification ledger.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["CheckFailed", "CheckResult", "Control", "LEDGER_PAGE", "MAX_DETECTABLE", "MIME_TYPE",
           "RECORD_SCHEMA", "show"]

#: A check from random draws must detect a relative error of the claim this large (10 %).
MAX_DETECTABLE = 0.10
#: The relative address of the verification ledger page from a chapter's page.
LEDGER_PAGE = "ledger.html"
#: The MIME type of a check's record in its cell's output (:meth:`CheckResult.record`, JSON).
MIME_TYPE = "application/vnd.gmmlib.check+json"
#: The version of that record's fields (its ``schema`` key). Raise it whenever a field of
#: :class:`CheckResult` or of a control's entry is added, renamed or removed: the book's build
#: then refuses notebooks executed with another gmmlib (a cached build) in one line.
RECORD_SCHEMA = 2


class CheckFailed(AssertionError):
    """A check of a claim of the book did not hold, or could not tell a wrong answer from it."""


@dataclass(frozen=True)
class Control:
    r"""A negative control: a plausible wrong answer that the check must reject.

    Parameters
    ----------
    name : str
        What the wrong answer is, in words ("c₁ = 0", "the gate tilted by a instead of 2a").
    value : scalar or array_like
        The wrong answer, of the same shape as what it replaces.
    replaces : {"value", "reference", "bound"} or None
        Which argument of the check the wrong answer takes the place of. By default the
        *value*: the claim, the first argument of every check.
    """

    name: str
    value: Any
    replaces: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(
                "Control.name must be a non-empty string saying what the wrong answer is"
            )
        if self.replaces not in (None, "reference", "value", "bound"):
            raise ValueError(
                "Control.replaces must be 'reference', 'value', 'bound' or None, "
                f"got {self.replaces!r}"
            )


@dataclass(frozen=True)
class CheckResult:
    """One ledger entry: what was compared, the tolerance and why, the controls, the verdict."""

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
    controls: tuple = ()
    index: int = 0
    detectable: float | None = None

    @property
    def anchor(self) -> str:
        """The id of this check's row on the ledger page (``check-<chapter>-<index>``)."""
        return f"check-{self.chapter}-{self.index}"

    def control_summary(self) -> str:
        """The controls and the margins by which they were rejected, in one phrase."""
        if not self.controls:
            return "no negative control"
        return "; ".join(
            f"{'rejects' if c['rejected'] else 'DOES NOT REJECT'} {c['name']} ({c['margin']})"
            for c in self.controls
        )

    @property
    def random(self) -> bool:
        """Whether the evidence came from random draws (then ``detectable`` is set)."""
        return self.detectable is not None

    def verdict(self) -> str:
        """The one-line verdict printed under a check cell (the ledger holds the rest)."""
        mark = "✔" if self.passed else "✘ CHECK FAILED:"
        return f"{mark} {self.what}: {self.comparison}; {self.control_summary()}"

    def _repr_html_(self) -> str:
        import html

        mark = "✔" if self.passed else "✘ CHECK FAILED:"
        text = html.escape(f"{self.what}: {self.comparison}; {self.control_summary()}")
        return (
            f'<p class="check-verdict">{mark} {text} '
            f'<a href="{LEDGER_PAGE}#{self.anchor}" title="tolerance, method and controls '
            f'in the verification ledger">[ledger]</a></p>'
        )

    def __str__(self) -> str:
        return self.verdict()

    def record(self) -> dict[str, Any]:
        """The ledger's entry for this check: a JSON object (what ``ledger.json`` lists), with the
        version of its fields as ``schema`` (:data:`RECORD_SCHEMA`)."""
        return {"schema": RECORD_SCHEMA, **asdict(self),
                "controls": [dict(c) for c in self.controls]}


class _Shown:
    """Displays a verdict once (HTML with a link to the ledger, or plain text)."""

    def __init__(self, result: CheckResult) -> None:
        self.result = result

    def _repr_html_(self) -> str:
        return self.result._repr_html_()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return {MIME_TYPE: self.result.record()}  # carried beside the html and plain verdict

    def __repr__(self) -> str:
        return self.result.verdict()


def show(result: CheckResult) -> None:
    """Display a verdict with its record (in IPython), or print the verdict (elsewhere)."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # pragma: no cover - IPython is a dependency of the book
        print(result.verdict())
        return
    if get_ipython() is None:
        print(result.verdict())
    else:
        display(_Shown(result))
