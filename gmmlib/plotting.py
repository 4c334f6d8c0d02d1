"""Moved to :mod:`gmmlib.runtime.plotting`. This path is kept for code written against earlier
editions: it re-exports the same objects."""

from gmmlib.runtime.plotting import (
    PALETTE,
    SliderFigure,
    use_book_style,
    share_mathtext_parses,
    loglog_fit,
    plot_loglog_fit,
    density_grid,
    interactive_figure,
    slider_figure,
    live_sliders,
    HEADLESS_ENV,
    MAX_SLIDER_BYTES,
)

__all__ = [
    "PALETTE",
    "SliderFigure",
    "use_book_style",
    "share_mathtext_parses",
    "loglog_fit",
    "plot_loglog_fit",
    "density_grid",
    "interactive_figure",
    "slider_figure",
    "live_sliders",
    "HEADLESS_ENV",
    "MAX_SLIDER_BYTES",
]
