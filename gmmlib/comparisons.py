"""Moved to :mod:`gmmlib.runtime.comparisons`. This path is kept for code written against earlier
editions: it re-exports the same objects."""

from gmmlib.runtime.comparisons import (
    Bound,
    Close,
    Comparison,
    Outcome,
    WithinSE,
)

__all__ = [
    "Bound",
    "Close",
    "Comparison",
    "Outcome",
    "WithinSE",
]
