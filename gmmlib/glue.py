"""Moved to :mod:`gmmlib.runtime.glue`. This path is kept for code written against earlier
editions: it re-exports the same objects."""

from gmmlib.runtime.glue import (
    glue,
)

__all__ = [
    "glue",
]
