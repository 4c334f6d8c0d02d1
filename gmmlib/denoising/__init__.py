"""Denoising a Gaussian-mixture signal, and the attention heads that do it (Chapters 8–10).

Modules
-------
task     : the Bayes denoiser, its risks, the best linear/affine maps, its iterates (Ch. 8–9)
heads    : heads that denoise: two-/one-head, residual, key-bias constructions (Ch. 8, 10)
training : a sum of heads fitted on the infinite prompt: online SGD, L-BFGS (Chapter 8)

The names of :mod:`gmmlib.denoising.task` are importable from here too (``from gmmlib.denoising
import bayes_denoiser``); the other modules are imported by name.
"""

from .task import *  # noqa: F403  (every name of its __all__)
from .task import __all__  # noqa: F401
