"""Moved to :mod:`gmmlib.lda.autograd`. This path is kept for code written against earlier
editions: it re-exports the same objects."""

from gmmlib.lda.autograd import *  # noqa: F403  (every name of its __all__)
from gmmlib.lda.autograd import __all__  # noqa: F401
