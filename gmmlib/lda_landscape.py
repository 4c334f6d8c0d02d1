"""Moved to :mod:`gmmlib.lda.landscape`. This path is kept for code written against earlier
editions: it re-exports the same objects."""

from gmmlib.lda.landscape import (
    best_linear_attention,
    minimiser_distances,
    zeta_sequence,
)

__all__ = [
    "best_linear_attention",
    "minimiser_distances",
    "zeta_sequence",
]
