"""Moved to :mod:`gmmlib.denoising.training`. This path is kept for code written against earlier
editions: it re-exports the same objects."""

from gmmlib.denoising.training import *  # noqa: F403  (every name of its __all__)
from gmmlib.denoising.training import __all__  # noqa: F401
