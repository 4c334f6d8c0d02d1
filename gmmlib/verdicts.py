"""Moved to :mod:`gmmlib.runtime.verdicts`. This path is kept for code written against earlier
editions: it re-exports the same objects."""

from gmmlib.runtime.verdicts import (
    CheckFailed,
    CheckResult,
    Control,
    LEDGER_PAGE,
    MAX_DETECTABLE,
    MIME_TYPE,
    RECORD_SCHEMA,
    show,
)

__all__ = [
    "CheckFailed",
    "CheckResult",
    "Control",
    "LEDGER_PAGE",
    "MAX_DETECTABLE",
    "MIME_TYPE",
    "RECORD_SCHEMA",
    "show",
]
