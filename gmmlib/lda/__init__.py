"""Classification with one softmax head: linear discriminant analysis in context (Chapters 4–6).

Modules
-------
task      : the task, the predictor, the risk (:class:`LDAModel`, :class:`LDABlocks`, ...)
landscape : its landmarks: the best linear rule, the minimisers, zeta_rho (Chapters 4–6)
dynamics  : its gradient flow, population descent, SGD chains and their floors (Chapter 6)
autograd  : torch versions (autograd reference risk, LDABlocksModule) for Chapters 5 and 6

The names of :mod:`gmmlib.lda.task` are importable from here too (``from gmmlib.lda import
LDAModel``); the other modules are imported by name. Importing this package does not import
torch (only :mod:`gmmlib.lda.autograd` does).
"""

from .task import *  # noqa: F403  (every name of its __all__)
from .task import __all__  # noqa: F401
