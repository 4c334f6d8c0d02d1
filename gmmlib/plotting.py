"""Moved to :mod:`gmmlib.runtime.plotting`. This path is kept for code written against earlier
editions: it re-exports the same objects."""

from gmmlib.runtime.plotting import *  # noqa: F403  (every name of its __all__)
from gmmlib.runtime.plotting import __all__  # noqa: F401
