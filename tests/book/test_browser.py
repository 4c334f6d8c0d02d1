"""The built book, as a reader sees it: opened in a real headless Chromium.

``make test`` runs these after the strict build. Every page of the book is opened once (its
MathJax typesets once) and checked in four parts, each a subtest that fails on its own: that
the mathematics is typeset by MathJax (served with the book: the network is closed, and a page
that asks for anything outside the local server fails), that every image loads,
and save a screenshot under ``_build/screenshots/`` (and ``dark/`` in the theme's dark mode);
that every in-page slider figure (``gmmlib.runtime.plotting.slider_figure``) is under 2 MB and shows
another picture when each of its sliders is moved with the keyboard; and that axe-core finds
no serious or critical accessibility violation with every fold open (dropdowns and toggled
admonitions), in light and in dark mode. They check, over
all built pages, that no internal link is broken, that the launch buttons of each chapter
point at its own notebook (the .ipynb paired with the chapter's MyST source) and that every
captioned figure's image has its caption as alt text; and, at a 1280×800 window with every
fold closed, that no visible code block scrolls sideways and that each chapter is a page a
student finishes (at most 32 screens; its median visible code cell at most 12 lines). The
sliders, the accessibility results and the page measures are written to
``_build/sliders.json``, ``_build/accessibility.json`` and ``_build/pages.json``. When no
Chromium is installed the browser tests are skipped with a message saying how to install it
(``.ci/run`` installs it on CI).
"""

from __future__ import annotations

import contextlib
import json
import re
import statistics
from html import unescape
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
import yaml

from ..browser import (
    AXE_FAILING,
    DARK_MODE_RULES,
    browser_page,
    chromium_path,
    run_axe,
    serve,
    settle,
    wait_for_math,
)

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
pytestmark = pytest.mark.built


def _toc_pages() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]] + [c["file"] for part in toc["parts"] for c in part.get("chapters", [])]
    return [f.split("/")[-1] for f in files]


def _chapters() -> list[str]:
    """The chapters: pages built from a MyST source book/NN_*.md (with its paired .ipynb)."""
    return [p for p in _toc_pages() if (ROOT / "book" / f"{p}.md").is_file() and p[:2].isdigit()]


RAW_MATH_JS = r"""
() => {
  const root = document.querySelector('main') || document.body;
  const clone = root.cloneNode(true);
  clone.querySelectorAll('pre, code, script, style, mjx-container, .highlight, .cell_input')
       .forEach(e => e.remove());
  const text = clone.textContent;
  const found = ['\\(', '\\)', '\\[', '\\]', '$$'].filter(p => text.includes(p));
  const at = found.length ? text.indexOf(found[0]) : -1;
  return {found, context: at >= 0 ? text.slice(Math.max(0, at - 80), at + 80) : '',
          typeset: document.querySelectorAll('mjx-container').length,
          errors: document.querySelectorAll('mjx-merror, [data-mjx-error]').length};
}
"""

BROKEN_IMAGES_JS = r"""
async () => {
  const failed = await Promise.all([...document.images].map(img => {
    img.loading = 'eager';
    return img.decode().then(() => (img.naturalWidth > 0 ? null : img.src), () => img.src);
  }));
  return {count: document.images.length, failed: failed.filter(x => x)};
}
"""


SLIDER_BUDGET = 2_000_000  # bytes of HTML per slider figure (frames included)
SLIDERS_JS = r"""
() => [...document.querySelectorAll('.gmm-slider')].map(s => ({
  id: s.id, bytes: s.outerHTML.length, alt: (s.querySelector('img') || {}).alt || '',
  sliders: [...s.querySelectorAll('input[type=range]')].map(r => ({
    label: (s.querySelector(`label[for="${r.id}"]`) || {}).textContent || '',
    positions: +r.max - +r.min + 1, valuetext: r.getAttribute('aria-valuetext') || ''}))}))
"""


def _need_chromium():
    if chromium_path() is None:
        pytest.skip(
            "no Chromium installed: `apt-get install chromium` (as root) to run the "
            "real-browser test"
        )
    assert (HTML / "index.html").is_file(), "build the book first (make test does)"


@pytest.fixture(scope="module")
def page_and_base():
    _need_chromium()
    (SHOTS / "dark").mkdir(parents=True, exist_ok=True)
    with serve(HTML) as base, browser_page() as page:
        yield page, base


def _open(page, base: str, name: str) -> None:
    """Open the page with the network closed: a request that leaves the local server fails."""
    page.outside_requests.clear()
    response = page.goto(f"{base}/book/{name}.html", wait_until="load")
    assert response is not None and response.ok, f"{name}.html did not load"
    wait_for_math(page)
    outside = sorted(set(page.outside_requests))
    page.outside_requests.clear()
    assert not outside, f"{name}: requests outside the book (it must read offline): {outside[:5]}"


class _Report:
    """Collects per-page results and writes them to one JSON file under _build/. Under
    pytest-xdist each worker opens its own pages: every write merges into the file under a
    lock, so the file holds every worker's pages."""

    def __init__(self, path: Path) -> None:
        self.path, self.pages = path, {}

    def add(self, key: str, value) -> None:
        import fcntl

        self.pages[key] = value
        with open(self.path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                found = json.loads(self.path.read_text(encoding="utf-8"))
            except (FileNotFoundError, ValueError):
                found = {}
            self.path.write_text(json.dumps({**found, **self.pages}, indent=1,
                                            ensure_ascii=False))


@pytest.fixture(scope="module")
def slider_report():
    return _Report(ROOT / "_build" / "sliders.json")


@pytest.fixture(scope="module")
def axe_report():
    return _Report(ROOT / "_build" / "accessibility.json")


def _renders(page, name: str) -> None:
    """MathJax typeset every formula without an error, and every image loads."""
    math = page.evaluate(RAW_MATH_JS)
    assert not math["found"], (
        f"{name}: raw math left untypeset ({math['found']}): …{math['context']}…"
    )
    assert math["errors"] == 0, f"{name}: MathJax reported {math['errors']} errors"
    if name in _chapters():
        assert math["typeset"] > 0, f"{name}: no formula was typeset"
    images = page.evaluate(BROKEN_IMAGES_JS)
    assert not images["failed"], f"{name}: images that do not load: {images['failed']}"
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=False)


def _sliders_move_the_picture(page, slider_report, name: str) -> None:
    """Each slider figure: under 2 MB; each of its sliders, moved one step with the keyboard (as a
    reader would), changes the picture, the slider's spoken value and the image's alt text."""
    figures = page.evaluate(SLIDERS_JS)
    slider_report.add(name, figures)
    problems = []
    for fig in figures:
        if fig["bytes"] >= SLIDER_BUDGET:
            problems.append(f"{fig['id']}: {fig['bytes'] / 1e6:.2f} MB, over the 2 MB budget")
        root = page.locator(f"#{fig['id']}")
        root.evaluate("e => { const d = e.closest('details'); if (d) d.open = true; }")
        image = root.locator("img")
        for j, slider in enumerate(fig["sliders"]):
            rng = root.locator("input[type=range]").nth(j)
            before = (
                image.get_attribute("src"),
                image.get_attribute("alt"),
                rng.get_attribute("aria-valuetext"),
            )
            value, top = int(rng.input_value()), int(rng.get_attribute("max"))
            rng.scroll_into_view_if_needed()
            rng.focus()
            page.keyboard.press("ArrowRight" if value < top else "ArrowLeft")
            after = (
                image.get_attribute("src"),
                image.get_attribute("alt"),
                rng.get_attribute("aria-valuetext"),
            )
            what = f"{fig['id']} slider {slider['label']!r}"
            if int(rng.input_value()) == value:
                problems.append(f"{what}: the keyboard does not move it")
            elif after[0] == before[0]:
                problems.append(f"{what}: moving it leaves the same picture")
            elif after[1] == before[1] or after[2] == before[2]:
                problems.append(f"{what}: alt text or aria-valuetext not updated")
    assert not problems, f"{name}: " + "; ".join(problems)


#: What a reader sees of a page at 1280×800, every fold closed as the page opens: its height and
#: the number of lines of every visible code-cell input. Then every fold is opened and every code
#: block whose text is wider than its box is listed, marked if it was folded: it scrolls sideways
#: (code is never wrapped). Images are loaded first (a lazy image has no height until it loads).
#: A closed togglebutton admonition keeps its content laid out but ``visibility: hidden``:
#: visible means a box, not in a closed <details>, not hidden.
PAGE_MEASURE_JS = r"""
async () => {
  await Promise.all([...document.images].map(img => {
    img.loading = 'eager'; return img.decode().catch(() => null); }));
  const shown = e => e.checkVisibility({visibilityProperty: true});
  const lines = pre => pre.textContent.replace(/\n+$/, '').split('\n');
  const root = document.scrollingElement || document.documentElement;
  const height = Math.max(root.scrollHeight, document.body.scrollHeight);
  // a cell whose input is folded behind a "show" toggle or removed is not a visible cell
  const hidden = '.tag_hide-input, .tag_remove-input, .tag_hide-cell, .tag_remove-cell';
  const inputs = [...document.querySelectorAll('div.cell')]
    .filter(c => !c.matches(hidden))
    .map(c => c.querySelector('.cell_input pre'))
    .filter(pre => pre && shown(pre))
    .map(pre => lines(pre).length);
  const pres = [...new Set(document.querySelectorAll('div.highlight pre, div.cell pre'))];
  const folded = new Set(pres.filter(pre => !shown(pre)));
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  document.querySelectorAll('.toggle-hidden').forEach(e => e.classList.remove('toggle-hidden'));
  const wide = pres
    .filter(pre => shown(pre) && pre.scrollWidth > pre.clientWidth + 1)
    .map(pre => {
      const all = lines(pre);
      const longest = all.reduce((a, b) => (b.length > a.length ? b : a), '');
      return {part: pre.closest('.cell_output') ? 'output'
                    : pre.closest('.cell_input') ? 'input' : 'text',
              folded: folded.has(pre),
              scroll: pre.scrollWidth, client: pre.clientWidth, chars: longest.length,
              first: (all.find(l => l.trim()) || '').trim().slice(0, 90),
              line: longest.trim().slice(0, 90)};
    });
  return {height, cells: document.querySelectorAll('div.cell').length, inputs, wide};
}
"""

#: Issue 31: a chapter is a page a student finishes in one sitting at a 1280×800 window.
SCREEN = {"width": 1280, "height": 800}
MAX_SCREENS = 32  # the page's height, in windows of 800 px
MAX_MEDIAN_LINES = 12  # the median visible code-cell input, in lines


@pytest.fixture(scope="module")
def pages_report(request):
    """``_build/pages.json``; at the end of the module, one line on the terminal: per chapter,
    its screens, the median of its visible code cells in lines and its wide code blocks
    (visible + in folds)."""
    report = _Report(ROOT / "_build" / "pages.json")
    yield report
    rows = [(k, v) for k, v in report.pages.items() if v["chapter"]]
    terminal = request.config.pluginmanager.getplugin("terminalreporter")
    if not rows or terminal is None:
        return
    cells = [
        f"{name[:2]} {v['screens']:.1f}/{v['median_visible_code_lines'] or 0:g}"
        f"/{len(v['wide_code_blocks'])}+{len(v['wide_code_blocks_in_folds'])}"
        for name, v in rows
    ]
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        terminal.write_line(
            f"\npages at 1280×800, screens/median visible code lines/wide blocks visible+folded "
            f"(limits {MAX_SCREENS}/{MAX_MEDIAN_LINES}/0+0): " + " · ".join(cells)
        )


def _fits_a_sitting(page, pages_report, name: str) -> None:
    """At a 1280×800 window (the page just opened in it), every fold closed as a reader first
    sees the page: a chapter is at most 32 screens high and the median of its visible code-cell
    inputs (not folded by ``hide-input``, not in a closed dropdown) is at most 12 lines; and on
    any page no visible code block (a cell's input or output, or code in the text) is wider than
    its box. The numbers go to ``_build/pages.json``, with the code blocks that scroll once a
    fold is opened (the measure opens every fold)."""
    got = page.evaluate(PAGE_MEASURE_JS)
    chapter = name in _chapters()
    screens = got["height"] / SCREEN["height"]
    median = statistics.median(got["inputs"]) if got["inputs"] else None
    wide = got["wide"]  # shown or in a closed fold: none may scroll once seen
    pages_report.add(
        name,
        {
            "chapter": chapter,
            "height_px": got["height"],
            "screens": round(screens, 2),
            "code_cells": got["cells"],
            "visible_code_cells": len(got["inputs"]),
            "visible_code_lines": got["inputs"],
            "median_visible_code_lines": median,
            "wide_code_blocks": [w for w in wide if not w["folded"]],
            "wide_code_blocks_in_folds": [w for w in wide if w["folded"]],
        },
    )
    problems = [
        f"a {'folded' if w['folded'] else 'visible'} code block ({w['part']}) scrolls "
        f"sideways, {w['scroll']} > {w['client']} px "
        f"(longest line {w['chars']} chars: {w['line']!r}); it begins: {w['first']!r}"
        for w in wide
    ]
    if chapter and screens > MAX_SCREENS:
        problems.append(f"{screens:.1f} screens of 800 px ({got['height']} px), over {MAX_SCREENS}")
    if chapter and median is not None and median > MAX_MEDIAN_LINES:
        problems.append(
            f"the median visible code cell is {median:g} lines (over {MAX_MEDIAN_LINES}; "
            f"{len(got['inputs'])} visible cells: {sorted(got['inputs'])})"
        )
    assert not problems, f"{name} at 1280×800:\n  " + "\n  ".join(problems)


def _axe_failures(result: dict) -> list[str]:
    return [
        f"  {v['id']} ({v['impact']}, {v['nodes']} elements): {v['help']} e.g. {v['targets'][:2]}"
        for v in result["violations"]
        if v["impact"] in AXE_FAILING
    ]


DARK_JS = """() => { const h = document.documentElement;
  h.dataset.mode = 'dark'; h.dataset.theme = 'dark';
  return getComputedStyle(document.body).backgroundColor; }"""


def _accessible(page, axe_report, name: str) -> None:
    """axe-core on the page with every dropdown open: all its rules in light mode, then the
    colour rules again in the theme's dark mode (the switch the theme's button makes)."""
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    settle(page)  # the dropdowns fade in: measure contrast once they are opaque
    light = run_axe(page)
    axe_report.add(f"{name} (light)", light)
    background = page.evaluate(DARK_JS)
    page.wait_for_timeout(200)  # the theme starts its colour transitions (0.15 s) ...
    settle(page)  # ... and they finish
    assert background not in ("rgb(255, 255, 255)", "rgba(0, 0, 0, 0)"), f"{name}: no dark mode"
    dark = run_axe(page, rules=DARK_MODE_RULES)
    axe_report.add(f"{name} (dark)", dark)
    page.screenshot(path=str(SHOTS / "dark" / f"{name}.png"), full_page=False)
    failures = [f"light mode:\n{x}" for x in _axe_failures(light)] + [
        f"dark mode:\n{x}" for x in _axe_failures(dark)
    ]
    assert not failures, f"{name}: axe-core violations:\n" + "\n".join(failures)


@pytest.mark.parametrize("name", _toc_pages())
def test_page_in_a_real_browser(page_and_base, slider_report, pages_report, axe_report,
                                subtests, name):
    """Each page opened once (its MathJax typesets once: most of a page's cost), as a reader
    first sees it in a 1280×800 window, then checked in four parts, each a subtest that fails
    on its own: it fits a sitting (measured first, every fold still closed), it renders (maths,
    images), its sliders move the picture, and it is accessible (every fold open, light and
    dark)."""
    page, base = page_and_base
    page.set_viewport_size(SCREEN)
    try:
        _open(page, base, name)
        with subtests.test("fits a sitting"):
            _fits_a_sitting(page, pages_report, name)
    finally:
        page.set_viewport_size({"width": 1280, "height": 1600})
    with subtests.test("renders"):
        _renders(page, name)
    with subtests.test("sliders move the picture"):
        _sliders_move_the_picture(page, slider_report, name)
    with subtests.test("accessible"):
        # as the page opened: at its top (axe-core reads a colour under the theme's sticky
        # header as a text's background), no slider focused
        page.evaluate("() => { document.activeElement?.blur(); window.scrollTo(0, 0); }")
        _accessible(page, axe_report, name)


class _Figures(HTMLParser):
    """The images and caption text of every <figure> of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.figures: list[dict] = []
        self._depth = 0
        self._in_caption = False

    def handle_starttag(self, tag, attrs):
        if tag == "figure":
            self._depth += 1
            self.figures.append({"alts": [], "caption": ""})
        elif self._depth and tag == "img":
            self.figures[-1]["alts"].append(dict(attrs).get("alt"))
        elif self._depth and tag == "figcaption":
            self._in_caption = True

    def handle_endtag(self, tag):
        if tag == "figure":
            self._depth -= 1
        elif tag == "figcaption":
            self._in_caption = False

    def handle_data(self, data):
        if self._in_caption:
            self.figures[-1]["caption"] += data


def test_every_figure_has_its_caption_as_alt_text():
    assert (HTML / "index.html").is_file(), "build the book first (make test does)"
    bad, checked = [], 0
    for name in _toc_pages():
        parser = _Figures()
        parser.feed((HTML / "book" / f"{name}.html").read_text(encoding="utf-8"))
        for fig in parser.figures:
            for alt in fig["alts"]:
                checked += 1
                generic = (
                    not alt
                    or re.search(r"\.(png|svg|jpe?g)$", alt)
                    or alt.strip().lower() in {"image", "figure", "png", "output", "plot"}
                )
                words = set(re.findall(r"[A-Za-z]{4,}", alt or ""))
                if generic or not words & set(re.findall(r"[A-Za-z]{4,}", fig["caption"])):
                    bad.append(
                        f"{name}: alt={alt!r} caption={' '.join(fig['caption'].split())[:60]!r}"
                    )
    assert checked, "no figure found in the built book"
    assert not bad, "figure images whose alt text is not their caption:\n" + "\n".join(bad[:20])


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        d = dict(attrs)
        if d.get("id"):
            self.ids.add(d["id"])
        if tag == "a" and d.get("href"):
            self.hrefs.append(d["href"])


def _parse(path: Path) -> _Links:
    parser = _Links()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    return parser


def test_no_internal_link_is_broken():
    assert (HTML / "index.html").is_file(), "build the book first (make test does)"
    pages = [p for p in HTML.rglob("*.html") if "_static" not in p.parts]
    parsed = {p: _parse(p) for p in pages}
    broken = []
    for page, links in parsed.items():
        for href in links.hrefs:
            parts = urlsplit(href)
            if parts.scheme or href.startswith(("mailto:", "javascript:")):
                continue
            target = page if not parts.path else (page.parent / unquote(parts.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{page.relative_to(HTML)} → {href} (no such file)")
                continue
            frag = unquote(parts.fragment)
            if frag and target.suffix == ".html":
                ids = parsed[target].ids if target in parsed else _parse(target).ids
                if frag not in ids:
                    broken.append(f"{page.relative_to(HTML)} → {href} (no anchor #{frag})")
    assert not broken, "broken internal links:\n" + "\n".join(sorted(set(broken))[:40])


@pytest.mark.parametrize("chapter", _chapters())
def test_launch_buttons_point_at_the_chapter_notebook(chapter):
    html = (HTML / "book" / f"{chapter}.html").read_text(encoding="utf-8")
    colab = re.findall(r'href="(https://colab\.research\.google\.com/[^"]+)"', html)
    binder = re.findall(r'href="(https://mybinder\.org/[^"]+)"', html)
    assert colab and binder, f"{chapter}: missing Colab or Binder launch button"
    # the chapter's reader notebook, on the branch the workflow publishes (bookkit.notebooks;
    # tests/bookkit/test_reader_notebooks.py checks the notebooks)
    branch = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["branch"]
    assert all(u.endswith(f"/blob/notebooks-{branch}/book/{chapter}.ipynb") for u in colab), colab
    assert all(u.endswith(f"/notebooks-{branch}?urlpath=tree/book/{chapter}.ipynb")
               for u in binder), binder


def test_intro_cites_and_links_this_edition():
    """book/intro.md's {edition-links} and {edition-bibtex} render the version in
    gmmlib/__init__.py."""
    import ast

    tree = ast.parse((ROOT / "gmmlib" / "__init__.py").read_text(encoding="utf-8"))
    version = next(
        ast.literal_eval(n.value)
        for n in tree.body
        if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", None) == "__version__"
    )
    html = (HTML / "book" / "intro.html").read_text(encoding="utf-8")
    text = unescape(re.sub(r"<[^>]+>", "", html))  # the BibTeX block is highlighted: text only
    url = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"].rstrip("/")
    owner_repo = "/".join(url.split("/")[-2:])
    development = ".dev" in version  # main: links to the branch, the record cites the commit
    ref = (
        yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["branch"]
        if development
        else f"v{version}"
    )
    release = f"{url}/releases" if development else f"{url}/releases/tag/v{version}"
    for link in (
        f"{url}/tree/{ref}",
        release,
        f"https://colab.research.google.com/github/{owner_repo}/blob/notebooks-{ref}/book/",
        f"https://mybinder.org/v2/gh/{owner_repo}/notebooks-{ref}?urlpath=tree/book/",
    ):
        assert f'href="{link}' in html, f"intro.html has no link to {link}"
        assert link.split("://")[1] in text, (
            f"intro.html does not show {link} (the tag must be visible)"
        )
    needles = (
        (f"Development version {version}", f"the development version {version} of the book")
        if development
        else (f"edition   = {{{version}}}", f"edition {version} of the book")
    )
    for needle in needles:
        assert needle in text, f"intro.html lacks {needle!r}"
