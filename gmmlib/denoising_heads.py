"""Moved to :mod:`gmmlib.denoising.heads`. This path is kept for code written against earlier
editions: it re-exports the same objects."""

from gmmlib.denoising.heads import *  # noqa: F403  (every name of its __all__)
from gmmlib.denoising.heads import __all__  # noqa: F401
