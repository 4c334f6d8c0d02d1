"""Moved to :mod:`gmmlib.denoising.training`. This path is kept for code written against earlier
editions: it re-exports the same objects."""

from gmmlib.denoising.training import (
    random_heads,
    heads_squared_error,
    online_sgd_heads,
    fit_heads,
)

__all__ = [
    "random_heads",
    "heads_squared_error",
    "online_sgd_heads",
    "fit_heads",
]
