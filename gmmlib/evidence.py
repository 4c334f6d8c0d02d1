"""Moved to :mod:`gmmlib.runtime.evidence`. This path is kept for code written against earlier
editions: it re-exports the same objects."""

from gmmlib.runtime.evidence import *  # noqa: F403  (every name of its __all__)
from gmmlib.runtime.evidence import __all__  # noqa: F401
