"""Moved to :mod:`gmmlib.runtime.glued`. This path is kept for code written against earlier
editions: it re-exports the same objects."""

from gmmlib.runtime.glued import (
    glue,
)

__all__ = [
    "glue",
]
