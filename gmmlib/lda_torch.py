"""Moved to :mod:`gmmlib.lda.autograd`. This path is kept for code written against earlier
editions: it re-exports the same objects."""

from gmmlib.lda.autograd import (
    QuadratureRisk,
    LDABlocksModule,
)

__all__ = [
    "QuadratureRisk",
    "LDABlocksModule",
]
