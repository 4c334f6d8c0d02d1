"""Moved to :mod:`gmmlib.runtime.checks`. This path is kept for code written against earlier
editions: it re-exports the same objects, with the check tools it imported."""

from gmmlib.runtime.checks import (
    Ledger,
    Control as Control,
    Estimate as Estimate,
    CheckFailed as CheckFailed,
    CheckResult as CheckResult,
    MAX_DETECTABLE as MAX_DETECTABLE,
    MIME_TYPE as MIME_TYPE,
    converged_quadrature as converged_quadrature,
    glue as glue,
    monte_carlo_mean as monte_carlo_mean,
    replicate_mean_se as replicate_mean_se,
    replicates as replicates,
    richardson_derivative as richardson_derivative,
)

__all__ = [
    "Ledger",
]
