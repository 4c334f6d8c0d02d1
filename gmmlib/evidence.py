"""Moved to :mod:`gmmlib.runtime.evidence`. This path is kept for code written against earlier
editions: it re-exports the same objects."""

from gmmlib.runtime.evidence import (
    CONVERGENCE_MULTIPLIER,
    Estimate,
    converged_quadrature,
    monte_carlo_mean,
    replicate_mean_se,
    replicates,
    richardson_derivative,
)

__all__ = [
    "CONVERGENCE_MULTIPLIER",
    "Estimate",
    "converged_quadrature",
    "monte_carlo_mean",
    "replicate_mean_se",
    "replicates",
    "richardson_derivative",
]
