"""gmmlib.runtime.plotting's rendering of slider frames: the pixels ``savefig`` writes, drawn once.

``slider_figure`` renders each frame with one Agg draw and a renderer shared by the frames of a
figure (``plotting._frame_png``) instead of ``Figure.savefig``, which draws a figure with a layout
engine twice. These tests hold it to ``savefig``'s pixels, in the book's style (constrained
layout, white savefig background) and outside it. The HTML, the order of the frames and the size
budget are tested in ``tests/gmmlib/test_slider_figure.py``.
"""

from __future__ import annotations

import base64
import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.image as mpimg  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from gmmlib.runtime.plotting import slider_figure, use_book_style  # noqa: E402

X = np.linspace(-3, 3, 61)
XX, YY = np.meshgrid(X, X)


def _draw(omega: float, size: float = 4.0):
    """Two panels with mathtext, an image, contours, bars, a legend and a varying title."""
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(size * 1.6, size * 0.8))
    field = np.tanh(omega * XX) * np.exp(-(YY**2) / 4)
    ax0.imshow(field, origin="lower", extent=(-3, 3, -3, 3), interpolation="bilinear")
    ax0.contour(XX, YY, np.exp(-(XX**2 + YY**2) / omega), 4, colors="grey")
    ax0.set(xlabel="$z_1$", ylabel="$z_2$", title=f"ω = {omega:g}")
    ax1.bar(np.arange(3), [omega / 10, 0.5, 1 - omega / 10], label=r"$\alpha_k(z)$")
    ax1.plot(X, np.sin(omega * X), label="a line")
    ax1.set(ylabel=r"weight $\pi_k$", title="gates" + " at the query" * int(omega > 2))
    ax1.legend()
    return fig


def _pixels(png: bytes) -> np.ndarray:
    """RGBA floats in [0, 1] (an RGB frame gets an opaque alpha)."""
    img = mpimg.imread(io.BytesIO(png), format="png")
    if img.shape[-1] == 3:
        img = np.concatenate([img, np.ones(img.shape[:2] + (1,), img.dtype)], axis=-1)
    return img


def _savefig(draw, kwargs, dpi):
    fig = draw(**kwargs)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    plt.close(fig)
    return _pixels(buf.getvalue())


@pytest.fixture
def book_style():
    with matplotlib.rc_context():
        use_book_style()
        yield


@pytest.mark.parametrize("dpi", [72, 100])
def test_frames_are_savefigs_pixels_in_the_book_style(book_style, dpi):
    """Constrained layout, titles of different widths, two pixel sizes in one slider figure."""
    grid = {"omega": [0.5, 1.0, 3.0], "size": [3.0, 4.0]}
    fig = slider_figure(_draw, grid, alt="x", dpi=dpi)
    combos = [(o, s) for o in grid["omega"] for s in grid["size"]]
    for frame, (omega, size) in zip(fig.frames, combos):
        expected = _savefig(_draw, {"omega": omega, "size": size}, dpi)
        got = _pixels(base64.b64decode(frame))
        assert got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)
    assert not plt.get_fignums(), "every frame's figure is closed"


def test_frames_are_savefigs_pixels_without_the_book_style():
    """Matplotlib's defaults: savefig.facecolor 'auto' keeps the figure's own colour."""
    def draw(a):
        fig, ax = plt.subplots(figsize=(3, 2), facecolor=(a, 0.5, 0.2))
        ax.plot([0, 1], [0, a])
        ax.set_title(f"$a = {a:g}$")
        return fig

    with matplotlib.rc_context({"figure.constrained_layout.use": False}):
        fig = slider_figure(draw, {"a": [0.2, 0.9]}, alt="x")
        for frame, a in zip(fig.frames, [0.2, 0.9]):
            np.testing.assert_array_equal(_pixels(base64.b64decode(frame)),
                                          _savefig(draw, {"a": a}, 72))


def test_savefig_facecolor_overrides_the_figures(book_style):
    """In the book's style the saved background is white whatever the figure's own colour."""
    fig = slider_figure(lambda a: plt.figure(figsize=(1, 1), facecolor=(a, 0, 0)),
                        {"a": [0.0, 1.0]}, alt="x")
    for frame in fig.frames:
        np.testing.assert_array_equal(_pixels(base64.b64decode(frame))[5, 5], [1, 1, 1, 1])


def test_opaque_frames_are_rgb_and_transparent_ones_keep_their_alpha():
    def draw(alpha):
        return plt.figure(figsize=(1, 1), facecolor=(0.2, 0.4, 0.6, alpha))

    fig = slider_figure(draw, {"alpha": [0.5, 1.0]}, alt="x")
    half, full = (mpimg.imread(io.BytesIO(base64.b64decode(f)), format="png") for f in fig.frames)
    assert half.shape[-1] == 4 and full.shape[-1] == 3
    assert half[10, 10, 3] == pytest.approx(0.5, abs=1 / 255)
    np.testing.assert_allclose(full[10, 10], [0.2, 0.4, 0.6], atol=1 / 255)


def test_a_frame_that_fails_to_render_still_closes_its_figure():
    def draw(a):
        fig, ax = plt.subplots()
        ax.set_title("$\\notacommand$")  # mathtext raises at draw time
        return fig

    with pytest.raises(ValueError):
        slider_figure(draw, {"a": [0, 1]}, alt="x")
    assert not plt.get_fignums()


def test_renderers_share_one_mathtext_parser_and_draw_the_same_pixels(book_style):
    """share_mathtext_parses (called by use_book_style): one parser, the same pixels as a fresh
    one."""
    import copy

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.backends.backend_agg import RendererAgg

    from gmmlib.runtime.plotting import share_mathtext_parses

    share_mathtext_parses()  # a second call changes nothing
    assert RendererAgg(10, 10, 72).mathtext_parser is RendererAgg(20, 30, 100).mathtext_parser

    def rgba(fresh: bool) -> np.ndarray:
        fig, ax = plt.subplots(figsize=(4, 3))
        ax.loglog([1e-3, 1e4], [1e-5, 1.0], label=r"$\theta^{2}$ and $\alpha_k(z)$")
        ax.set(xlabel=r"$\sqrt{\bar C/L}$", title=r"$L\,\|T[\hat\mu_L](z)\|^2$")
        ax.legend()
        canvas = FigureCanvasAgg(fig)
        renderer = canvas.get_renderer()
        if fresh:  # a parser of its own: an empty cache, as without the sharing
            renderer.mathtext_parser = copy.copy(renderer.mathtext_parser)
        canvas.draw()
        out = np.asarray(canvas.buffer_rgba()).copy()
        plt.close(fig)
        return out

    shared_first, fresh, shared_again = rgba(False), rgba(True), rgba(False)
    np.testing.assert_array_equal(shared_first, fresh)
    np.testing.assert_array_equal(shared_again, fresh)
