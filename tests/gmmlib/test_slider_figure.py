"""gmmlib.runtime.plotting.slider_figure: the kernel-free interactive figure that replaces each
widget's static twin in the HTML. Frames, their order over the grid, the HTML (one labelled range
input per slider), the size budget, and (in a real Chromium, when installed) that moving a slider
swaps the picture.
"""

from __future__ import annotations

import base64
import io
import itertools
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.image as mpimg  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from gmmlib.runtime.plotting import slider_figure  # noqa: E402

GRID = {"a": [0.0, 0.5, 1.0], "b": [0.2, 0.8]}


def _draw(a: float, b: float):
    """A figure whose colour encodes its parameters: red = a, green = b."""
    fig = plt.figure(figsize=(1, 1), facecolor=(a, b, 0.0))
    return fig


def _colour(frame: str) -> np.ndarray:
    pixels = mpimg.imread(io.BytesIO(base64.b64decode(frame)), format="png")
    return pixels[pixels.shape[0] // 2, pixels.shape[1] // 2, :3]


@pytest.fixture(scope="module")
def figure():
    return slider_figure(_draw, GRID, alt="A test figure")


def test_one_frame_per_grid_point_in_c_order(figure):
    combos = list(itertools.product(*GRID.values()))
    assert len(figure.frames) == len(combos) == 6
    for frame, (a, b) in zip(figure.frames, combos):
        np.testing.assert_allclose(_colour(frame), [a, b, 0.0], atol=1 / 255)


def test_draw_is_called_with_every_combination_in_grid_order():
    calls = []

    def draw(a, b):
        calls.append((a, b))
        return _draw(a, b)

    slider_figure(draw, GRID, alt="x")
    assert calls == list(itertools.product(*GRID.values()))
    assert not plt.get_fignums(), "every frame's figure is closed"


def test_start_frame_is_the_middle_or_the_nearest_requested_value(figure):
    assert figure.start == (1, 1)
    fig = slider_figure(_draw, GRID, alt="x", start={"a": 0.1})
    assert fig.start == (0, 1)


def test_html_has_one_labelled_accessible_slider_per_parameter(figure):
    html = figure._repr_html_()
    inputs = re.findall(r"<input [^>]*>", html)
    assert len(inputs) == len(GRID)
    for j, (name, values) in enumerate(GRID.items()):
        tag = inputs[j]
        uid = re.search(r'id="([^"]+)"', tag).group(1)
        assert 'type="range"' in tag and f'max="{len(values) - 1}"' in tag
        assert f'<label for="{uid}">{name}</label>' in html, "each slider has a visible label"
        assert "aria-valuetext=" in tag, "screen readers hear the value, not the index"
    assert html.count('class="gmm-slider"') == 1 and html.count("<img ") == 1
    first = figure.frames[int(np.ravel_multi_index(figure.start, [3, 2]))]
    assert f'src="data:image/png;base64,{first}"' in html
    assert 'alt="A test figure (a = 0.5, b = 0.8)"' in html


def test_two_displays_get_distinct_ids(figure):
    ids = [re.search(r'class="gmm-slider" id="([^"]+)"', figure._repr_html_()).group(1)
           for _ in range(2)]
    assert ids[0] != ids[1]


def test_size_is_the_embedded_frames_and_fits_the_budget(figure):
    assert figure.size_bytes == sum(len(f) for f in figure.frames)
    html = figure._repr_html_()
    assert figure.size_bytes < len(html) < figure.size_bytes + 10_000
    assert "6 frames" in repr(figure)


def test_a_book_sized_figure_stays_under_2_mb():
    """40 frames of a 6 x 4 inch line plot at dpi 72, as the chapters use."""
    x = np.linspace(0, 1, 200)

    def draw(k, s):
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot(x, np.sin(k * x) * s)
        ax.set(title=f"k = {k}", xlabel="x", ylabel="y")
        return fig

    fig = slider_figure(draw, {"k": np.linspace(1, 10, 8), "s": np.linspace(0.5, 1, 5)}, alt="x")
    assert len(fig.frames) == 40 and fig.size_bytes < 2_000_000


@pytest.mark.parametrize("kwargs, error", [
    ({"grid": {}}, ValueError),
    ({"grid": {"a": [1.0]}}, ValueError),
    ({"alt": " "}, ValueError),
    ({"start": {"c": 1.0}}, ValueError),
    ({"draw": lambda a, b: None}, TypeError),
])
def test_bad_arguments_are_refused(kwargs, error):
    args = {"draw": _draw, "grid": GRID, "alt": "x", **kwargs}
    with pytest.raises(error):
        slider_figure(args.pop("draw"), args.pop("grid"), **args)


def test_names_and_text_with_quotes_do_not_break_the_script():
    fig = slider_figure(lambda **kw: _draw(0.5, 0.5), {'say "hi" </script>': [1, 2]},
                        alt='the "quoted" caption & more')
    html = fig._repr_html_()
    script = html.split("<script>", 1)[1].split("</script>", 1)[0]
    assert "</script" not in script.lower() and "&quot;" not in script


def test_quoted_text_reaches_the_browser_verbatim():
    from ..browser import chromium_path

    if chromium_path() is None:
        pytest.skip("no Chromium installed: `apt-get install chromium` (as root)")
    from ..browser import browser_page

    alt = 'the "quoted" caption & <more>'
    fig = slider_figure(lambda **kw: _draw(0.5, 0.5), {'x "y"': [1, 2]}, alt=alt)
    with browser_page(width=600, height=400) as page:
        page.set_content(f"<html lang='en'><body>{fig._repr_html_()}</body></html>")
        page.locator(".gmm-slider input").focus()
        page.keyboard.press("ArrowLeft")
        assert page.locator(".gmm-slider img").get_attribute("alt") == alt + ' (x "y" = 1)'


def test_moving_a_slider_swaps_the_frame_in_a_real_browser(figure):
    from ..browser import chromium_path

    if chromium_path() is None:
        pytest.skip("no Chromium installed: `apt-get install chromium` (as root)")
    from ..browser import browser_page

    with browser_page(width=600, height=400) as page:
        page.set_content(f"<html lang='en'><body>{figure._repr_html_()}</body></html>")
        img = page.locator(".gmm-slider img")
        sliders = page.locator(".gmm-slider input[type=range]")
        assert sliders.count() == 2
        seen = {img.get_attribute("src")}
        sliders.nth(0).focus()
        page.keyboard.press("ArrowLeft")  # a: 0.5 -> 0.0
        assert sliders.nth(0).get_attribute("aria-valuetext") == "0"
        seen.add(img.get_attribute("src"))
        sliders.nth(1).focus()
        page.keyboard.press("ArrowLeft")  # b: 0.8 -> 0.2
        seen.add(img.get_attribute("src"))
        assert len(seen) == 3, "each move shows another frame"
        assert img.get_attribute("src") == "data:image/png;base64," + figure.frames[0]
        assert img.get_attribute("alt") == "A test figure (a = 0, b = 0.2)"
        assert page.locator(".gmm-slider output").all_inner_texts() == ["0", "0.2"]


def test_a_figure_over_the_2_mb_limit_is_refused():
    """The limit lives in slider_figure: a ValueError naming the figure and the size, not an assert
    in a chapter."""
    from gmmlib.runtime.plotting import MAX_SLIDER_BYTES

    noise = np.random.default_rng(0).random((200, 200, 3))  # incompressible frames

    def draw(k):
        fig, ax = plt.subplots(figsize=(4, 4))
        ax.imshow(np.roll(noise, int(k), axis=0))
        return fig

    with pytest.raises(ValueError, match=r"'noise' embeds .* MB .* above the book's 2 MB"):
        slider_figure(draw, {"k": np.arange(20)}, alt="noise", dpi=100)
    assert MAX_SLIDER_BYTES == 2_000_000


def test_interactive_figure_is_the_slider_figure_headless(monkeypatch):
    from gmmlib.runtime.plotting import HEADLESS_ENV, SliderFigure, interactive_figure

    monkeypatch.setenv(HEADLESS_ENV, "1")
    fig = interactive_figure(
        _draw,
        GRID,
        alt="x",
        live={"a": (0.0, 1.0, 0.1), "b": (0.0, 1.0, 0.1)},
        start={"a": 0.0, "b": 0.8},
    )
    assert isinstance(fig, SliderFigure) and fig.start == (0, 1) and len(fig.frames) == 6


def test_interactive_figure_outside_a_kernel_makes_no_widget(monkeypatch):
    """Outside IPython (a script, pytest) there is no front end either: the precomputed frames."""
    from gmmlib.runtime.plotting import HEADLESS_ENV, SliderFigure, headless, interactive_figure

    monkeypatch.delenv(HEADLESS_ENV, raising=False)
    assert headless()
    assert isinstance(interactive_figure(_draw, GRID, alt="x"), SliderFigure)


def test_live_sliders_start_where_asked(monkeypatch):
    from gmmlib.runtime.plotting import HEADLESS_ENV, live_sliders

    monkeypatch.delenv(HEADLESS_ENV, raising=False)
    widget = live_sliders(
        lambda lam, k=1: _draw(lam / 3, 0.5),
        {"lam": (0.5, 3.0, 0.5), "k": (1, 3)},
        start={"lam": 2.5},
    )
    values = {w.description: w.value for w in widget.kwargs_widgets}
    assert values["lam"] == 2.5
    with pytest.raises(ValueError, match="start"):
        live_sliders(lambda lam: _draw(0.5, 0.5), {"lam": (0.5, 3.0)}, start={"mu": 1.0})
