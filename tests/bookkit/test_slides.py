"""The chapters' slides (``bookkit.slides``): a reveal.js deck per chapter, from its doctree.

Without ``--built``: a tiny book (one chapter, Sphinx's HTML builder, no kernel: a few seconds)
gets its deck, whose slides are the chapter's own title, tl;dr, statement (not its proof, not a
definition), figure and check verdicts, in the chapter's order, with links back to the book and
reveal.js and MathJax from the book's own static files. With ``--built``: every chapter of the
built book has its deck under ``_build/html/slides/``, and one deck opened in headless Chromium
with the network closed typesets its mathematics and has several slides.
"""

from __future__ import annotations

import base64
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from bookkit import slides, toc

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"

#: a 1×1 PNG, the tiny chapter's figure
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhK"
                       "mL7QAAAABJRU5ErkJggg==")

CHAPTER = """\
(ch-01)=
# A tiny chapter

```{admonition} If you read only this
:class: tldr
TLDR-TEXT with $x^2$.
```

```{figure} pic.png
:name: fig-01-pic

FIGURE-CAPTION of $y$.
```

```{prf:theorem} One is one
:label: thm-01-one

STATEMENT-TEXT: for every $x$, $x = x$, as {numref}`fig-01-pic` shows.
```

```{prf:proof}
PROOF-TEXT.
```

```{prf:definition} Left in the page
:label: def-01-left

DEFINITION-TEXT.
```
"""

CONF = """\
extensions = ["myst_parser", "sphinx_proof", "bookkit.slides"]
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
numfig = True
mathjax_path = "mathjax/tex-mml-chtml.js"
exclude_patterns = ["_build"]


def setup(app):
    # a check's record, as bookkit.ledger keeps it from a check cell's output
    from bookkit.ledger import CHECKS
    from bookkit.pages import store

    def record(app, doctree):
        if app.env.docname == "book/01_ch":
            store(app.env, CHECKS)["book/01_ch"] = [{
                "chapter": "01_ch", "index": 0, "claim": "thm-01-one", "passed": True,
                "what": "VERDICT-TEXT", "comparison": "|Δ| = 0 ≤ 1e-12"}]

    app.connect("doctree-read", record)
"""


@pytest.fixture(scope="module")
def tiny_deck(tmp_path_factory) -> tuple[Path, str]:
    src = tmp_path_factory.mktemp("tiny")
    (src / "book").mkdir()
    (src / "conf.py").write_text(CONF, encoding="utf-8")
    (src / "_config.yml").write_text("title: tiny\n", encoding="utf-8")  # the book's root
    (src / "_toc.yml").write_text(textwrap.dedent("""\
        format: jb-book
        root: index
        parts:
          - caption: Chapters
            chapters: [{file: book/01_ch}]
        """), encoding="utf-8")
    (src / "index.md").write_text("# Tiny\n\n```{toctree}\n:numbered:\nbook/01_ch\n```\n",
                                  encoding="utf-8")
    (src / "book" / "01_ch.md").write_text(CHAPTER, encoding="utf-8")
    (src / "book" / "pic.png").write_bytes(PNG)
    out = src / "_build" / "html"
    # in a process of its own: a second Sphinx app with myst-nb in one process (another test
    # builds one) finds myst-nb's parser unregistered
    build = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-E", "-q", str(src),
                            str(out), "-d", str(src / "_build" / "doctrees")],
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stdout[-2000:] + build.stderr[-2000:]
    assert toc.chapters(src) == ["book/01_ch"]
    return out, (out / slides.deck_uri("book/01_ch")).read_text(encoding="utf-8")


def _sections(deck: str) -> list[str]:
    return re.findall(r'<section class="deck-(\w+)">(.*?)</section>', deck, re.S)


def test_a_deck_is_the_chapters_own_title_tldr_statements_figures_and_verdicts(tiny_deck):
    out, deck = tiny_deck
    kinds = [kind for kind, _ in _sections(deck)]
    assert kinds == ["title", "tldr", "figure", "statement", "checks"], kinds
    body = dict(_sections(deck))
    assert "A tiny chapter" in body["title"] and "Chapter 1" in body["title"]
    assert "TLDR-TEXT" in body["tldr"] and "If you read only this" in body["tldr"]
    assert "STATEMENT-TEXT" in body["statement"] and "Theorem 1.1" in body["statement"]
    assert "One is one" in body["statement"]
    assert "PROOF-TEXT" not in deck and "DEFINITION-TEXT" not in deck, "no proof, no definition"
    assert "FIGURE-CAPTION" in body["figure"] and "Fig. 1.1" in body["figure"]
    image = re.search(r'<img[^>]+src="([^"]+)"', body["figure"]).group(1)
    assert (out / "slides" / image).resolve().is_file(), f"the figure's image {image}"
    assert "VERDICT-TEXT: |Δ| = 0 ≤ 1e-12" in body["checks"] and "✔" in body["checks"]
    assert '<b>Theorem 1.1</b>' in body["checks"]
    assert 'href="../book/ledger.html#check-01_ch-0"' in body["checks"]


def test_a_deck_links_back_to_the_book_and_loads_only_the_books_files(tiny_deck):
    out, deck = tiny_deck
    # a reference inside the statement, and the slides' links, go to the chapter's page
    assert 'href="../book/01_ch.html#fig-01-pic"' in deck
    assert 'href="../book/01_ch.html#thm-01-one"' in deck
    assert r"\(x = x\)" in deck, "maths as the page writes it, for MathJax"
    loaded = re.findall(r'<(?:script|link)[^>]+(?:src|href)="([^"]+)"', deck)
    assert loaded and not [u for u in loaded if "://" in u or u.startswith("//")], loaded
    assert "../_static/mathjax/tex-mml-chtml.js" in loaded
    for uri in loaded:
        if "mathjax" not in uri:  # MathJax is bookkit.local_mathjax's, not in this tiny book
            assert (out / "slides" / uri).resolve().is_file(), f"{uri} was not copied"
    assert (out / "_static" / "revealjs" / "dist" / "theme" / "fonts" / "source-sans-pro").is_dir()


# -------------------------------------------------------------------- the built book's decks
def _chapters() -> list[str]:
    return toc.chapters(ROOT)


@pytest.mark.built
def test_every_chapter_has_its_deck():
    assert (HTML / "index.html").is_file(), "build the book first (make test does)"
    missing = [c for c in _chapters() if not (HTML / slides.deck_uri(c)).is_file()]
    assert not missing, f"chapters without a deck in {HTML / slides.SLIDES}: {missing}"
    for chapter in _chapters():
        deck = (HTML / slides.deck_uri(chapter)).read_text(encoding="utf-8")
        kinds = [kind for kind, _ in _sections(deck)]
        assert kinds[:2] == ["title", "tldr"] and "statement" in kinds[2:], \
            f"{chapter}: slides {kinds}"
        page = (HTML / f"{chapter}.html").read_text(encoding="utf-8")
        assert f'href="../{slides.deck_uri(chapter)}"' in page, f"{chapter}: no link to its deck"


DECK_JS = r"""
() => {
  const clone = document.querySelector('.reveal .slides').cloneNode(true);
  clone.querySelectorAll('mjx-container, script, style, pre, code').forEach(e => e.remove());
  const text = clone.textContent;
  return {slides: Reveal.getTotalSlides(),
          typeset: document.querySelectorAll('mjx-container').length,
          errors: document.querySelectorAll('mjx-merror, [data-mjx-error]').length,
          raw: ['\\(', '\\)', '\\[', '\\]', '$$'].filter(p => text.includes(p))};
}
"""


@pytest.mark.built
def test_a_deck_typesets_its_maths_offline_in_a_real_browser():
    from bookkit.browser import browser_page, chromium_path, serve, wait_for_math

    if chromium_path() is None:
        pytest.skip("no Chromium installed: `apt-get install chromium` (as root) to run the "
                    "real-browser test of the slides")
    chapter = next(c for c in _chapters() if toc.name(c).startswith("03"))
    assert (HTML / slides.deck_uri(chapter)).is_file(), "build the book first (make test does)"
    with serve(HTML) as base, browser_page() as page:
        response = page.goto(f"{base}/{slides.deck_uri(chapter)}", wait_until="load")
        assert response is not None and response.ok
        assert wait_for_math(page), "the deck loads no MathJax"
        page.wait_for_function("() => window.Reveal && Reveal.isReady()")
        got = page.evaluate(DECK_JS)
        outside = sorted(set(page.outside_requests))
        page.outside_requests.clear()
    assert not outside, f"the deck asked for files outside the book: {outside[:5]}"
    assert got["slides"] > 1, got
    assert got["typeset"] > 0 and got["errors"] == 0, got
    assert not got["raw"], f"raw maths left untypeset in the deck: {got['raw']}"


def test_the_decks_have_one_address_pattern():
    """The syllabus and the instructors link to ``slides/NN_name.html`` under the site."""
    assert slides.deck_uri("book/03_gated_experts") == "slides/03_gated_experts.html"
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert "bookkit.slides" in config["sphinx"]["extra_extensions"]
