r"""The book's figure style and the plots that several chapters share.

:func:`use_book_style` sets a white figure background (readable in light and dark mode)
and the Okabe–Ito colour-blind-safe palette. It is the only global state gmmlib touches.
"""

from __future__ import annotations

from typing import Any, Sequence

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
from cycler import cycler

__all__ = ["PALETTE", "use_book_style", "loglog_fit", "plot_loglog_fit", "density_grid"]

#: Okabe–Ito colours, safe for the common forms of colour blindness.
PALETTE: dict[str, str] = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "green": "#009E73",
    "vermillion": "#D55E00",
    "purple": "#CC79A7",
    "sky": "#56B4E9",
    "yellow": "#F0E442",
    "black": "#000000",
}


def use_book_style() -> None:
    """Set the book's matplotlib style: white background, Okabe–Ito palette, readable fonts."""
    mpl.rcParams.update(
        {
            "figure.facecolor": "white",
            "axes.facecolor": "white",
            "savefig.facecolor": "white",
            "figure.dpi": 100,
            "savefig.dpi": 100,
            "figure.figsize": (6.4, 4.0),
            "figure.constrained_layout.use": True,
            "axes.prop_cycle": cycler(color=[PALETTE[k] for k in
                                             ("blue", "orange", "green", "vermillion", "purple", "sky", "black")]),
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.titlesize": 12,
            "axes.labelsize": 11,
            "legend.fontsize": 9,
            "legend.frameon": False,
            "image.cmap": "viridis",
            "text.color": "black",
            "axes.labelcolor": "black",
            "xtick.color": "black",
            "ytick.color": "black",
        }
    )


def loglog_fit(x: Any, y: Any) -> tuple[float, float, float]:
    r"""Least-squares fit of :math:`\log y = c + s\log x`.

    Returns
    -------
    slope, intercept, slope_se : float
        The slope :math:`s`, the intercept :math:`c`, and the slope's standard error
        :math:`\hat\sigma/\sqrt{\sum_i(\log x_i - \overline{\log x})^2}` from the residuals.
    """
    lx, ly = np.log(np.asarray(x, dtype=float)), np.log(np.asarray(y, dtype=float))
    if lx.shape != ly.shape or lx.ndim != 1 or lx.size < 3:
        raise ValueError("x and y must be 1-D arrays of the same length, at least 3")
    if not (np.all(np.isfinite(lx)) and np.all(np.isfinite(ly))):
        raise ValueError("x and y must be positive and finite")
    X = np.column_stack([np.ones_like(lx), lx])
    coef, *_ = np.linalg.lstsq(X, ly, rcond=None)
    resid = ly - X @ coef
    sigma = np.sqrt(resid @ resid / (lx.size - 2))
    se = sigma / np.sqrt(np.sum((lx - lx.mean()) ** 2))
    return float(coef[1]), float(coef[0]), float(se)


def plot_loglog_fit(ax: plt.Axes, x: Any, y: Any, *, label: str, color: str | None = None,
                    ref_slope: float | None = None) -> tuple[float, float, float]:
    """Plot points on log-log axes with their fitted line (and a reference slope); return the fit."""
    slope, intercept, se = loglog_fit(x, y)
    x = np.asarray(x, dtype=float)
    line = ax.loglog(x, y, "o", color=color, label=f"{label} (slope {slope:.3f} ± {se:.3f})")[0]
    ax.loglog(x, np.exp(intercept) * x**slope, "-", color=line.get_color(), alpha=0.6)
    if ref_slope is not None:
        ax.loglog(x, np.exp(intercept) * x[0] ** (slope - ref_slope) * x**ref_slope, ":",
                  color="gray", label=f"slope {ref_slope:g}")
    return slope, intercept, se


def density_grid(lo: Sequence[float], hi: Sequence[float], n: int = 200) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A regular 2-D grid: returns ``(XX, YY, points)`` with ``points`` of shape (n*n, 2)."""
    xs = np.linspace(lo[0], hi[0], n)
    ys = np.linspace(lo[1], hi[1], n)
    XX, YY = np.meshgrid(xs, ys)
    return XX, YY, np.column_stack([XX.ravel(), YY.ravel()])
