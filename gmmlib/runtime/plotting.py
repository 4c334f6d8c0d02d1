r"""The book's figure style and the plots that several chapters share.

:func:`use_book_style` sets a white figure background (readable in light and dark mode)
and the Okabe–Ito colour-blind-safe palette, and lets matplotlib's Agg renderers share their
cache of parsed mathtext (:func:`share_mathtext_parses`): the only global state gmmlib touches.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import itertools
import json
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
from cycler import cycler

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

#: Set to ``1`` in every kernel that the book's build and scripts start (no front end attached).
HEADLESS_ENV = "GMMLIB_HEADLESS"
#: The most a page's slider figure may embed (its base64 frames), in bytes.
MAX_SLIDER_BYTES = 2_000_000

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
    """Set the book's matplotlib style: white background, Okabe–Ito palette, readable fonts.

    It also calls :func:`share_mathtext_parses` (the same pixels, drawn faster).
    """
    share_mathtext_parses()
    mpl.rcParams.update(
        {
            "figure.facecolor": "white",
            "axes.facecolor": "white",
            "savefig.facecolor": "white",
            "figure.dpi": 100,
            "savefig.dpi": 100,
            "figure.figsize": (6.4, 4.0),
            "figure.constrained_layout.use": True,
            "axes.prop_cycle": cycler(
                color=[
                    PALETTE[k]
                    for k in ("blue", "orange", "green", "vermillion", "purple", "sky", "black")
                ]
            ),
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


def share_mathtext_parses() -> None:
    """Let every Agg renderer of this process use one mathtext parser, and so one cache of parses.

    Matplotlib gives each renderer its own ``MathTextParser``, whose cache of parsed
    expressions is keyed by the parser: every new figure (and, with a layout engine, every
    draw pass of ``savefig``) parses its mathtext again, e.g. the ``$10^{-5}$`` labels of each
    log axis, at about a millisecond a glyph. A parse depends only on the expression, the
    font, the dpi and the antialiasing, which are all in the cache's key, so sharing the
    parser changes no pixel (``tests/gmmlib/test_plotting.py`` compares) and saves a sizeable part
    of each log-scale figure's time. The first renderer created after this call lends its
    parser to the later ones; calling it again does nothing.
    """
    from matplotlib.backends import backend_agg

    init = backend_agg.RendererAgg.__init__
    if getattr(init, "_gmmlib_shared_mathtext", False):
        return
    shared: list[Any] = []

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        if not shared:
            shared.append(self.mathtext_parser)
        self.mathtext_parser = shared[0]

    __init__._gmmlib_shared_mathtext = True  # type: ignore[attr-defined]
    __init__.__wrapped__ = init  # type: ignore[attr-defined]
    backend_agg.RendererAgg.__init__ = __init__


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


def plot_loglog_fit(
    ax: plt.Axes,
    x: Any,
    y: Any,
    *,
    label: str,
    color: str | None = None,
    ref_slope: float | None = None,
) -> tuple[float, float, float]:
    """Plot points on log-log axes with their fitted line (and a reference slope); return the
    fit."""
    slope, intercept, se = loglog_fit(x, y)
    x = np.asarray(x, dtype=float)
    line = ax.loglog(x, y, "o", color=color, label=f"{label} (slope {slope:.3f} ± {se:.3f})")[0]
    ax.loglog(x, np.exp(intercept) * x**slope, "-", color=line.get_color(), alpha=0.6)
    if ref_slope is not None:
        ax.loglog(
            x,
            np.exp(intercept) * x[0] ** (slope - ref_slope) * x**ref_slope,
            ":",
            color="gray",
            label=f"slope {ref_slope:g}",
        )
    return slope, intercept, se


def density_grid(
    lo: Sequence[float], hi: Sequence[float], n: int = 200
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A regular 2-D grid: returns ``(XX, YY, points)`` with ``points`` of shape (n*n, 2)."""
    xs = np.linspace(lo[0], hi[0], n)
    ys = np.linspace(lo[1], hi[1], n)
    XX, YY = np.meshgrid(xs, ys)
    return XX, YY, np.column_stack([XX.ravel(), YY.ravel()])


_slider_ids = itertools.count(1)


def _js(value: Any) -> str:
    """``value`` as a JavaScript literal that is safe inside an HTML ``<script>`` element."""
    return json.dumps(value).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


@dataclass(frozen=True)
class SliderFigure:
    """Frames of a figure over a grid of slider values, shown in the page with sliders: no kernel
    needed.

    Displayed in a notebook (or in the book's HTML) it is an ``<img>`` and one
    ``<input type="range">`` per parameter; moving a slider swaps in the precomputed frame.
    ``alt`` is the image's alternative text, completed with the sliders' current values.
    Frames are stored in C order over the grid (the last parameter varies fastest).
    """

    frames: tuple[str, ...]
    grid: tuple[tuple[str, tuple[float, ...]], ...]
    alt: str
    value_format: str
    start: tuple[int, ...]

    @property
    def size_bytes(self) -> int:
        """The size of the embedded frames (base64), at most :data:`MAX_SLIDER_BYTES` per figure."""
        return sum(len(f) for f in self.frames)

    def _labels(self) -> list[list[str]]:
        return [[self.value_format.format(v) for v in values] for _, values in self.grid]

    def _repr_html_(self) -> str:
        # unique in a page, and across pages (the PDF puts every chapter in one document)
        digest = hashlib.blake2s(self.frames[0].encode(), digest_size=4).hexdigest()
        uid = f"gmm-slider-{digest}-{next(_slider_ids)}"
        labels = self._labels()
        sizes = [len(values) for _, values in self.grid]
        flat = int(np.ravel_multi_index(self.start, sizes))
        alt = html.escape(self.alt, quote=True)
        now = ", ".join(
            f"{name} = {labels[j][self.start[j]]}" for j, (name, _) in enumerate(self.grid)
        )
        controls = "".join(
            f'<div class="gmm-slider-controls"><label for="{uid}-{j}">{html.escape(name)}</label> '
            f'<input type="range" id="{uid}-{j}" data-axis="{j}" min="0" '
            f'max="{len(values) - 1}" step="1" value="{self.start[j]}" '
            f'aria-valuetext="{html.escape(labels[j][self.start[j]], quote=True)}"> '
            f'<output id="{uid}-{j}-out" for="{uid}-{j}">'
            f"{html.escape(labels[j][self.start[j]])}</output></div>"
            for j, (name, values) in enumerate(self.grid)
        )
        frames = ",".join(f'"{f}"' for f in self.frames)
        names, texts = _js([n for n, _ in self.grid]), _js(labels)
        script = (
            f"<script>(function(){{var f=[{frames}],t={texts},n={names},s={sizes},"
            f"a={_js(self.alt)};"
            f'var root=document.getElementById("{uid}"),m=root.querySelector("img"),'
            f'r=root.querySelectorAll("input[type=range]");'
            "function upd(){var k=0,d=[];for(var j=0;j<r.length;j++){var v=+r[j].value;k=k*s[j]+v;"
            'd.push(n[j]+" = "+t[j][v]);r[j].setAttribute("aria-valuetext",t[j][v]);'
            'document.getElementById(r[j].id+"-out").textContent=t[j][v];}'
            'm.src="data:image/png;base64,"+f[k];m.alt=a+" ("+d.join(", ")+")";}'
            'for(var j=0;j<r.length;j++){r[j].addEventListener("input",upd);}})();</script>'
        )
        return (
            f'<div class="gmm-slider" id="{uid}">'
            f'<img class="gmm-slider-frame" src="data:image/png;base64,{self.frames[flat]}" '
            f'alt="{alt} ({html.escape(now, quote=True)})" style="max-width:100%">'
            f"{controls}{script}</div>"
        )

    def __repr__(self) -> str:
        axes = " × ".join(f"{name} ({len(values)})" for name, values in self.grid)
        return (
            f"<SliderFigure: {len(self.frames)} frames over {axes}, {self.size_bytes / 1e6:.2f} MB>"
        )


def slider_figure(
    draw: Callable[..., Any],
    grid: dict[str, Sequence[float]],
    *,
    alt: str,
    value_format: str = "{:g}",
    start: dict[str, float] | None = None,
    dpi: int = 72,
) -> SliderFigure:
    """Precompute ``draw(**values)`` over a grid of slider values: a kernel-free interactive figure.

    Parameters
    ----------
    draw : callable
        ``draw(**{name: value}) -> matplotlib.figure.Figure``; the same function the
        chapter's live sliders call (:func:`interactive_figure`), so the two cannot tell
        different stories. Each figure is closed once rendered.
    grid : dict of str to sequence of float
        One slider per key (its label, which is also ``draw``'s keyword), each with at least
        2 values. The frames are the product of the grids: keep it small.
    alt : str
        Alternative text of the image (usually the figure's caption, shortened).
    value_format : str
        How a value is printed next to its slider.
    start : dict, optional
        The value of each slider shown first (default: the middle of each grid; a value
        is snapped to its grid's nearest point).
    dpi : int
        Resolution of the frames (lower keeps the page small).

    Raises
    ------
    ValueError
        When the frames together exceed :data:`MAX_SLIDER_BYTES` (2 MB): a page must stay
        light; use fewer grid values or a lower ``dpi``.
    """
    if not callable(draw):
        raise TypeError("draw must be a callable (**values) -> matplotlib Figure")
    if not isinstance(grid, dict) or not grid:
        raise ValueError("grid must be a non-empty dict {slider name: values}")
    axes = []
    for name, values in grid.items():
        values = tuple(float(v) for v in values)
        if not isinstance(name, str) or not name:
            raise ValueError("every slider name in grid must be a non-empty string")
        if len(values) < 2:
            raise ValueError(
                f"grid[{name!r}] must hold at least 2 slider positions, got {len(values)}"
            )
        axes.append((name, values))
    if not isinstance(alt, str) or not alt.strip():
        raise ValueError("alt must be a non-empty string (the image's alternative text)")
    start = start or {}
    unknown = set(start) - set(grid)
    if unknown:
        raise ValueError(f"start names sliders that grid does not have: {sorted(unknown)}")
    first = tuple(
        int(np.argmin(np.abs(np.asarray(values) - start[name])))
        if name in start
        else len(values) // 2
        for name, values in axes
    )
    frames: list[str] = []
    renderers: dict[tuple[int, int, float], Any] = {}  # shared by the frames: see _frame_png
    for combo in itertools.product(*(values for _, values in axes)):
        kwargs = dict(zip((name for name, _ in axes), combo))
        fig = draw(**kwargs)
        if not hasattr(fig, "savefig"):
            raise TypeError(
                f"draw({kwargs}) must return a matplotlib Figure, got {type(fig).__name__}"
            )
        try:
            png = _frame_png(fig, dpi, renderers)
        finally:
            plt.close(fig)
        frames.append(base64.b64encode(png).decode("ascii"))
    figure = SliderFigure(tuple(frames), tuple(axes), alt, value_format, first)
    if figure.size_bytes > MAX_SLIDER_BYTES:
        raise ValueError(
            f"the slider figure {alt!r} embeds {figure.size_bytes / 1e6:.2f} MB in {len(frames)} "
            f"frames, above the book's {MAX_SLIDER_BYTES / 1e6:g} MB per figure: use fewer values "
            "in grid or a lower dpi"
        )
    return figure


def _frame_png(fig: Any, dpi: int, renderers: dict[tuple[int, int, float], Any]) -> bytes:
    """``fig`` as PNG bytes at ``dpi``: the pixels ``fig.savefig(format="png", dpi=dpi)`` writes, in
    less time.

    Two savings, neither changing a pixel (``tests/gmmlib/test_plotting.py`` compares them with
    ``savefig``'s):

    1. ``savefig`` draws a figure that has a layout engine (the book's constrained layout)
       twice, once to place the axes and once to paint; a single Agg draw does both, since the
       layout runs inside ``Figure.draw``.
    2. The frames of one slider figure share an Agg renderer per pixel size (``renderers``):
       the text sizes measured for one frame (tick labels, titles, mathtext), cached per
       renderer by matplotlib, serve the next frames, as when one figure is redrawn.

    Together they cut about a quarter of a slider figure's time. The face and edge colours
    of ``savefig`` (``rcParams["savefig.facecolor"]``, ``"savefig.edgecolor"``) apply as in
    ``savefig``; an opaque frame is stored as RGB (a smaller PNG of the same picture). The
    caller closes ``fig``.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg
    from PIL import Image

    class _FrameCanvas(FigureCanvasAgg):
        def get_renderer(self) -> RendererAgg:
            w, h = self.get_width_height(physical=True)
            key = (w, h, float(self.figure.dpi))
            if key not in renderers:
                renderers[key] = RendererAgg(w, h, self.figure.dpi)
            return renderers[key]

    for prop in ("facecolor", "edgecolor"):
        color = mpl.rcParams[f"savefig.{prop}"]
        if not (isinstance(color, str) and color == "auto"):
            getattr(fig, f"set_{prop}")(color)
    fig.dpi = dpi
    canvas = _FrameCanvas(fig)
    canvas.draw()
    rgba = np.asarray(canvas.buffer_rgba())
    opaque = bool(np.all(rgba[..., 3] == 255))
    buf = io.BytesIO()
    Image.fromarray(rgba[..., :3] if opaque else rgba).save(buf, format="png")
    return buf.getvalue()


def headless() -> bool:
    """True when no front end can show a widget: ``GMMLIB_HEADLESS`` set, or no IPython kernel
    running."""
    import os

    if os.environ.get(HEADLESS_ENV, "").strip() not in ("", "0"):
        return True
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is a dependency of the book
        return True
    shell = get_ipython()
    return shell is None or not hasattr(shell, "kernel")


def interactive_figure(
    draw: Callable[..., Any],
    grid: dict[str, Sequence[float]],
    *,
    alt: str,
    live: dict[str, Any] | None = None,
    start: dict[str, Any] | None = None,
    value_format: str = "{:g}",
    dpi: int = 72,
) -> Any:
    r"""A figure with sliders: live ipywidgets in a reader's kernel, precomputed frames everywhere
    else.

    The one way a chapter shows a figure with sliders. ``draw(**values)`` returns a matplotlib
    figure; both versions call it, so they cannot tell different stories.

    * In a kernel with a front end (Jupyter, Colab, Binder): :func:`live_sliders` over the
      controls ``live`` (default: a slider from the smallest to the largest value of each
      ``grid`` entry), starting at ``start``.
    * Headless (``GMMLIB_HEADLESS`` set, as in every kernel of the book's build and scripts,
      or outside IPython): :func:`slider_figure` over ``grid``, a kernel-free
      :class:`SliderFigure` of at most 2 MB. No widget and no comm are created: with no
      front end a widget has nobody to talk to, and its messages once stalled executions.

    Parameters
    ----------
    draw : callable
        ``draw(**{name: value}) -> matplotlib.figure.Figure``. It must accept the names of
        ``grid`` and of ``live`` (give defaults to those only ``live`` has).
    grid : dict of str to sequence of float
        The precomputed sliders (see :func:`slider_figure`).
    alt : str
        Alternative text of the precomputed image.
    live : dict, optional
        ``{name: (min, max, step) or widget or value}`` as for ``ipywidgets.interact``; may
        name more parameters than ``grid`` (a live kernel can afford them).
    start : dict, optional
        First value of each slider (both versions).
    value_format, dpi
        As for :func:`slider_figure`.

    Returns
    -------
    SliderFigure (headless) or the ``ipywidgets`` interactive object (live).
    """
    if not callable(draw):
        raise TypeError("draw must be a callable (**values) -> matplotlib Figure")
    if not isinstance(grid, dict) or not grid:
        raise ValueError("grid must be a non-empty dict {slider name: values}")
    start = dict(start or {})
    if headless():
        return slider_figure(
            draw,
            grid,
            alt=alt,
            value_format=value_format,
            start={k: v for k, v in start.items() if k in grid},
            dpi=dpi,
        )
    if live is None:
        live = {name: (float(min(values)), float(max(values))) for name, values in grid.items()}
    return live_sliders(draw, live, start={k: v for k, v in start.items() if k in live})


def live_sliders(
    draw: Callable[..., Any], controls: dict[str, Any], *, start: dict[str, Any] | None = None
) -> Any:
    """Live ipywidgets sliders over ``draw`` for a reader's kernel; nothing when executed headless.

    Chapters call :func:`interactive_figure`, which uses this in a live kernel.

    Parameters
    ----------
    draw : callable
        ``draw(**{name: value}) -> matplotlib.figure.Figure``: the same function as the
        chapter's :func:`slider_figure`, so the two cannot tell different stories.
    controls : dict
        ``{name: widget or abbreviation}`` as for ``ipywidgets.interact``, e.g.
        ``{"lam": (0.5, 3.0, 0.05)}`` or ``{"lam": widgets.FloatSlider(...)}``.
    start : dict, optional
        The first value of the sliders given as ``(min, max[, step])``.

    Returns
    -------
    The ``ipywidgets.interactive`` widget (not yet displayed: the cell shows it) in a live
    notebook (Jupyter, Colab, Binder);
    ``None`` when ``GMMLIB_HEADLESS`` is set, as it is in every kernel that the book's build,
    ``make bench``/``stress``/``seeds`` and ``python -m bookkit run`` start. There no front
    end is attached: a widget has nobody to talk to, and nbclient's stand-in for its Output
    widget sends messages on the kernel's shell channel while the cell's reply is awaited on
    the same socket, which loses the reply's wake-up in about one widget cell in 70 (the
    execution then sits idle until its per-cell timeout). The page shows the
    :func:`slider_figure` twin instead.
    """
    import os

    if not callable(draw):
        raise TypeError("draw must be a callable (**values) -> matplotlib Figure")
    if not isinstance(controls, dict) or not controls:
        raise ValueError("controls must be a non-empty dict {slider name: widget or abbreviation}")
    if os.environ.get(HEADLESS_ENV, "").strip() not in ("", "0"):
        return None
    import ipywidgets
    from IPython.display import display

    start = start or {}
    unknown = set(start) - set(controls)
    if unknown:
        raise ValueError(f"start names sliders that controls does not have: {sorted(unknown)}")
    controls = dict(controls)
    for name, spec in controls.items():
        if name in start and isinstance(spec, tuple) and len(spec) in (2, 3):
            lo, hi = float(spec[0]), float(spec[1])
            step = float(spec[2]) if len(spec) == 3 else (hi - lo) / 100
            controls[name] = ipywidgets.FloatSlider(
                value=float(start[name]), min=lo, max=hi, step=step, description=name
            )

    def show(**values: Any) -> None:
        fig = draw(**values)
        display(fig)
        plt.close(fig)

    return ipywidgets.interactive(show, **controls)  # shown by the cell, as its last expression
