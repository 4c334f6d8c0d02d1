"""Moved to :mod:`gmmlib.lda.landscape`. This path is kept for code written against earlier
editions: it re-exports the same objects."""

from gmmlib.lda.landscape import *  # noqa: F403  (every name of its __all__)
from gmmlib.lda.landscape import __all__  # noqa: F401
