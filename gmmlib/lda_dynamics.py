"""Moved to :mod:`gmmlib.lda.dynamics`. This path is kept for code written against earlier
editions: it re-exports the same objects."""

from gmmlib.lda.dynamics import (
    population_gradient_descent,
    gradient_flow,
    SGDChains,
    sgd_chains,
    valley_excess,
    sgd_excess_floor,
)

__all__ = [
    "population_gradient_descent",
    "gradient_flow",
    "SGDChains",
    "sgd_chains",
    "valley_excess",
    "sgd_excess_floor",
]
