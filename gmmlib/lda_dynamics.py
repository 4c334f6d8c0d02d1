"""Moved to :mod:`gmmlib.lda.dynamics`. This path is kept for code written against earlier
editions: it re-exports the same objects."""

from gmmlib.lda.dynamics import *  # noqa: F403  (every name of its __all__)
from gmmlib.lda.dynamics import __all__  # noqa: F401
