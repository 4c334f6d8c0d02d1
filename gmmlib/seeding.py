"""Moved to :mod:`gmmlib.runtime.seeding`. This path is kept for code written against earlier
editions: it re-exports the same objects."""

from gmmlib.runtime.seeding import *  # noqa: F403  (every name of its __all__)
from gmmlib.runtime.seeding import __all__  # noqa: F401
