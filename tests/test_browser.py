"""The built book, as a reader sees it: opened in a real headless Chromium.

``make test`` runs these after the strict build. For every page of the book they check that
the mathematics is typeset by MathJax (served from a local copy), that every image loads,
and save a screenshot under ``_build/screenshots/``; they check, over all built pages, that
no internal link is broken and that the launch buttons of each chapter point at its own
notebook. When no Chromium is installed the browser test is skipped with a message saying
how to install it (``.ci/run`` installs it on CI).
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
import yaml

from .browser import browser_page, chromium_path, serve, wait_for_math

ROOT = Path(__file__).resolve().parent.parent
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
pytestmark = pytest.mark.built


def _toc_pages() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]] + [c["file"] for part in toc["parts"] for c in part.get("chapters", [])]
    return [f.split("/")[-1] for f in files]


def _chapters() -> list[str]:
    return [p for p in _toc_pages() if (ROOT / "book" / f"{p}.ipynb").is_file()]


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


@pytest.fixture(scope="module")
def page_and_base():
    if chromium_path() is None:
        pytest.skip("no Chromium installed: `apt-get install chromium` (as root) to run the real-browser test")
    assert (HTML / "index.html").is_file(), "build the book first (make test does)"
    SHOTS.mkdir(parents=True, exist_ok=True)
    with serve(HTML) as base, browser_page() as page:
        yield page, base


@pytest.mark.parametrize("name", _toc_pages())
def test_page_renders_in_a_real_browser(page_and_base, name):
    page, base = page_and_base
    response = page.goto(f"{base}/book/{name}.html", wait_until="load")
    assert response is not None and response.ok, f"{name}.html did not load"
    wait_for_math(page)
    math = page.evaluate(RAW_MATH_JS)
    assert not math["found"], f"{name}: raw math left untypeset ({math['found']}): …{math['context']}…"
    assert math["errors"] == 0, f"{name}: MathJax reported {math['errors']} errors"
    if name in _chapters():
        assert math["typeset"] > 0, f"{name}: no formula was typeset"
    images = page.evaluate(BROKEN_IMAGES_JS)
    assert not images["failed"], f"{name}: images that do not load: {images['failed']}"
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=False)


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
    assert all(u.endswith(f"/blob/main/book/{chapter}.ipynb") for u in colab), colab
    assert all(u.endswith(f"urlpath=tree/book/{chapter}.ipynb") for u in binder), binder
