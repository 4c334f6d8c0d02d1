"""The book's runtime, apart from the mathematics: the checks, seeds, figures and glued numbers.

Modules
-------
checks      : the ledger of numerical checks behind every claim, with their negative controls
comparisons : the kinds of comparison a check makes (close, within standard errors, a bound)
evidence    : what a check compares with: quadrature, Richardson, Monte Carlo, with their errors
verdicts    : what a check produces: its control, its record and verdict, and their display
seeding     : one base seed for the book and named random streams
plotting    : the book's figure style and shared plots
glued       : numbers a cell computes, made available to the text (``glue``)

The names the chapters use are importable from here (``from gmmlib.runtime import Control,
Ledger, Seeds, glue`` and ``from gmmlib.runtime import PALETTE, use_book_style``); each is
documented in the module that defines it. They load their module on first use (PEP 562), so that
importing this package, or reading a constant of :mod:`gmmlib.runtime.plotting` from the runners,
loads neither torch nor any module it does not need (matplotlib comes with a plotting name).
"""

from .._lazy import lazy_exports

# name -> the module that defines it
_PUBLIC = {
    "Control": "verdicts",
    "Estimate": "evidence",
    "Ledger": "checks",
    "glue": "glued",
    "converged_quadrature": "evidence",
    "monte_carlo_mean": "evidence",
    "replicates": "evidence",
    "richardson_derivative": "evidence",
    "Seeds": "seeding",
    "PALETTE": "plotting",
    "density_grid": "plotting",
    "interactive_figure": "plotting",
    "plot_loglog_fit": "plotting",
    "use_book_style": "plotting",
}

__getattr__, __dir__ = lazy_exports(__name__, _PUBLIC, globals())


__all__ = [*_PUBLIC]
