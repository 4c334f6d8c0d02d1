"""Moved to :mod:`gmmlib.runtime.seeding`. This path is kept for code written against earlier
editions: it re-exports the same objects."""

from gmmlib.runtime.seeding import (
    DEFAULT_SEED,
    SEED_ENV,
    Seeds,
    base_seed,
)

__all__ = [
    "DEFAULT_SEED",
    "SEED_ENV",
    "Seeds",
    "base_seed",
]
