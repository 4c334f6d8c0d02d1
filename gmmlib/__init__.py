"""gmmlib: the helper package of the book *Softmax Attention on Gaussian Mixtures*.

Every formula the book uses lives here once; the chapters import it.

Modules
-------
mixtures   : :class:`GaussianMixture` (sampling, densities, posteriors, exponential tilting)
attention  : finite-prompt softmax and linear attention; the head and prompt-batch types
attention_torch : the trainable torch twin of a head (AttentionHead)
limits     : the infinite-prompt operators in closed form and the finite-prompt error law
quadrature : Gauss–Hermite expectations under Gaussians and mixtures
regression : in-context linear regression (Chapter 2)
selection  : query-dependent selection: alignments, multi-class and XOR tasks (Chapters 3, 7)
classification : Bayes scores; accuracies of linear, sign and cone rules in closed form (Ch. 7)
in_context : the exact mean error of attention on a finite prompt, averaged over queries (Ch. 10)
training   : the one training loop (torch autograd on sampled batches, ``sample(batch_size, rng)``)
records    : what solvers return: Trajectory (a solved gradient flow), History (a training run)

Subpackages
-----------
lda        : classification with one head (Chapters 4–6)
  task       : the task, the predictor, the risk (``from gmmlib.lda import ...`` reaches it)
  landscape  : its landmarks: the best linear rule, the minimisers, zeta_rho (Chapters 4–6)
  dynamics   : its gradient flow, population descent, SGD chains and their floors (Chapter 6)
  autograd   : torch versions (autograd reference risk, LDABlocksModule) for Chapters 5 and 6
denoising  : denoising a mixture signal, and the heads that do it (Chapters 8–10)
  task       : the Bayes denoiser, its risks, the best linear/affine maps, its iterates
               (``from gmmlib.denoising import ...`` reaches it; Chapters 8–9)
  heads      : heads that denoise: two-/one-head, residual, key-bias constructions (Ch. 8, 10)
  training   : a sum of heads fitted on the infinite prompt: online SGD, L-BFGS (Chapter 8)
runtime    : the book's runtime, apart from the mathematics (``from gmmlib.runtime import
             Ledger, Seeds, glue, use_book_style, ...`` reaches the names the chapters use)
  checks      : the ledger of numerical checks behind every claim, with their negative controls
  comparisons : the kinds of comparison a check makes
  evidence    : what a check compares with: quadrature, Richardson, Monte Carlo, with their errors
  verdicts    : what a check produces: its control, record and verdict
  seeding     : one base seed for the book and named random streams
  plotting    : the book's figure style and shared plots
  glued       : numbers a cell computes, for the text (``glue``)

The modules' earlier paths (``gmmlib.lda_dynamics``, ``gmmlib.checks``, ``gmmlib.plotting``, ...)
still import: each re-exports its module's names, for code written against earlier editions.

Every name is documented in the module that defines it. Conventions: the generator is ``rng`` (last
among the positional arguments), a head's parameters are ``U, V`` side by side (``f(..., *head)``).
"""

from ._lazy import lazy_exports

# The public names load their module on first use (PEP 562), so that `import gmmlib` (and the
# runners, which read a constant of gmmlib.runtime.plotting) does not pay for torch until it is
# needed.
_PUBLIC = {
    "GaussianMixture": "mixtures",
    "softmax_attention": "attention",
    "linear_attention": "attention",
    "softmax_attention_limit": "limits",
    "linear_attention_limit": "limits",
}

__getattr__, __dir__ = lazy_exports(__name__, _PUBLIC, globals())


__all__ = [
    "GaussianMixture",
    "softmax_attention",
    "linear_attention",
    "softmax_attention_limit",
    "linear_attention_limit",
]

# The book's edition: the ONE place the version is written. pyproject.toml reads it
# (setuptools dynamic version); CITATION.cff, CHANGELOG.md and the notebooks' setup cells
# (`make sync`: gmmlib installed at the tag v<version>) must agree
# (tests/bookkit/test_publishing.py).
__version__ = "0.3.0.dev0"
