"""Tests of the finished build (``make test`` runs them right after the strict build).

They read ``_build/``: the verification ledger must list every check of every chapter, all
passed, and every claim of the book must be checked or carry a visible note saying why not.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from bookkit.pages import LABEL  # a book label as typed (prop-01-exact): pages show its number

from ..conftest import chapter_sources, read_chapter

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "_build"
pytestmark = pytest.mark.built

CLAIM_RE = re.compile(r"```+\{prf:(theorem|proposition|lemma|corollary)\}[^\n]*\n:label:\s*(\S+)")


def _chapters() -> list[str]:
    """The chapters' names, from their MyST sources book/NN_*.md."""
    return [p.stem for p in chapter_sources(ROOT)]


def _source_claims() -> dict[str, str]:
    claims = {}
    for path in chapter_sources(ROOT):
        text = "\n".join(c.source for c in read_chapter(path).cells if c.cell_type == "markdown")
        for _, label in CLAIM_RE.findall(text):
            claims[label] = path.stem
    return claims


@pytest.fixture(scope="module")
def ledger() -> list[dict]:
    path = BUILD / "ledger.json"
    assert path.is_file(), "_build/ledger.json is missing: run the build first (make test does)"
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def claims() -> list[dict]:
    return json.loads((BUILD / "ledger_claims.json").read_text())


def test_entries_are_complete_and_passed(ledger):
    assert ledger, "the ledger is empty"
    keys = {
        "chapter",
        "claim",
        "value",
        "reference",
        "tolerance",
        "method",
        "passed",
        "why",
        "what",
    }
    for entry in ledger:
        assert keys <= set(entry), f"ledger entry lacks {keys - set(entry)}: {entry}"
        assert entry["passed"] is True, f"failed check in the ledger: {entry}"


def test_every_chapter_has_checks(ledger):
    chapters = {e["chapter"] for e in ledger}
    missing = [c for c in _chapters() if c not in chapters]
    assert not missing, f"chapters with no check in the ledger: {missing}"


def test_every_claim_is_checked_or_explained(ledger, claims):
    recorded = {c["label"]: c for c in claims}
    for label, chapter in _source_claims().items():
        assert label in recorded, f"{label} ({chapter}) is missing from _build/ledger_claims.json"
    bare = [c["label"] for c in claims if c["checks"] == 0 and not c["unchecked_reason"]]
    assert not bare, f"claims with no check and no {{unchecked}} note: {bare}"
    checked = {e["claim"] for e in ledger}
    for c in claims:
        assert (c["label"] in checked) == (c["checks"] > 0)


def test_ledger_page_shows_this_build(ledger):
    html = (BUILD / "html" / "book" / "ledger.html").read_text()
    n_pass = sum(e["passed"] for e in ledger)
    assert f"This build ran {len(ledger)} checks, of which {n_pass} passed" in html
    for chapter in {e["chapter"] for e in ledger}:
        assert f'href="{chapter}.html' in html, f"the ledger page does not link to {chapter}"


def test_random_checks_state_their_power(ledger):
    """ledger.json carries `detectable`: null for deterministic checks, ≤ 10 % for random ones."""
    from gmmlib.runtime.checks import MAX_DETECTABLE

    assert all("detectable" in e for e in ledger), "ledger entries without the `detectable` field"
    weak = [
        f"{e['chapter']} [{e['claim']}] {e['what']}: {e['detectable']:.1%}"
        for e in ledger
        if e["detectable"] is not None and e["detectable"] > MAX_DETECTABLE
    ]
    assert not weak, "random checks that cannot see a 10 % error:\n" + "\n".join(weak)
    html = (BUILD / "html" / "book" / "ledger.html").read_text()
    assert "smallest error it detects" in html
    if any(e["detectable"] is not None for e in ledger):
        assert "random: " in html


def test_every_check_has_a_rejected_control(ledger):
    weak = []
    for entry in ledger:
        controls = entry.get("controls") or []
        if not controls or not all(c["rejected"] for c in controls):
            weak.append(f"{entry['chapter']} [{entry['claim']}] {entry['what']}")
        for c in controls:
            assert c["name"] and c["margin"], f"a control without a name or margin: {entry}"
    assert not weak, "checks without a rejected negative control:\n" + "\n".join(weak)


def test_ledger_page_shows_controls_and_anchors(ledger):
    html = (BUILD / "html" / "book" / "ledger.html").read_text()
    assert "negative control" in html
    for entry in ledger:
        assert f'id="check-{entry["chapter"]}-{entry["index"]}"' in html, f"no anchor for {entry}"


def test_concordance_is_complete_and_resolved():
    import yaml

    rows = json.loads((BUILD / "concordance.json").read_text())
    registry = yaml.safe_load((ROOT / "book" / "paper_results.yml").read_text())
    for key, paper in registry.items():
        for item in paper["results"]:
            assert any(r["key"] == key and r["result"] == item["name"] for r in rows), (
                f"{item['name']} of {key} has no row in the built concordance"
            )
    unresolved = [(r["result"], lab) for r in rows for lab, ok in r["resolved"].items() if not ok]
    assert not unresolved, f"concordance rows naming labels that do not exist: {unresolved}"
    html = (BUILD / "html" / "book" / "concordance.html").read_text()
    assert "Proposition 2.1" in html and "Figure 5" in html


def test_toolkit_numbers_read_as_chapter_zero():
    """The Toolkit is an unnumbered part; its equations and statements still read "0.n"."""
    html = (BUILD / "html" / "book" / "00_toolkit.html").read_text()
    numbers = re.findall(r'class="eqno">\(([0-9.]+)\)', html)
    assert numbers and all(n.startswith("0.") for n in numbers), numbers[:5]
    assert "Lemma 0.1" in html and not re.search(r"Lemma 1\b(?!\.)", html)
    # each kind counts from 1, though the intro (unnumbered too) holds a figure before it
    assert numbers[0] == "0.1", numbers[:3]
    figures = re.findall(r'<span class="caption-number">Fig(?:ure|\.) ([0-9.]+)', html)
    assert figures and figures[0] == "0.1", figures[:3]


#: TeX that MathJax did not get: a command (``\kappa``) or ``$…$`` outside the page's maths
TEX_RE = re.compile(r"\\[A-Za-z]{2,}|\$[^$]+\$")


class _ReaderText(HTMLParser):
    """The text a reader of the page sees as prose: no code, maths source, script or cell
    output, but the captions of the figures that a cell draws."""

    SKIP = {"script", "style", "pre", "code", "title"}
    SKIP_CLASSES = {"math", "cell_output", "highlight"}
    VOID = {"br", "img", "meta", "link", "input", "hr", "wbr", "source", "col"}

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[bool | None] = []  # True: skipped; None: read (a caption); False: as above
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag not in self.VOID:
            classes = set((dict(attrs).get("class") or "").split())
            skip = tag in self.SKIP or bool(classes & self.SKIP_CLASSES)
            self.stack.append(True if skip else None if tag == "figcaption" else False)

    def handle_endtag(self, tag: str) -> None:
        if tag not in self.VOID and self.stack:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        if next((s for s in reversed(self.stack) if s is not False), None) is None:
            self.text.append(data)


def test_no_raw_tex_or_label_in_the_prose_a_reader_sees():
    """Every formula reaches MathJax and every label is shown as what it names ("Theorem 3.2"):
    in the chapters, in the generated pages (figures, ledger, concordance) and in the alt text
    of the figures. A line of a paragraph that starts with ``+`` or ``-`` inside ``$…$`` makes
    a list and leaves the formula as raw TeX; a caption copied as text shows its labels."""
    root = BUILD / "html"
    pages = [p for p in sorted([*root.glob("*.html"), *(root / "book").glob("*.html")])
             if p.stem not in ("prf-prf", "genindex", "search", "index")]  # index: a redirect
    assert pages, "no built pages: run the build first"
    bad = []
    for page in pages:
        html = page.read_text(encoding="utf-8")
        reader = _ReaderText()
        reader.feed(html)
        text = " ".join(" ".join(reader.text).split())
        alts = " ".join(re.findall(r'<img[^>]*\balt="([^"]*)"', html))
        for where, found in (("text", text), ("alt text", alts)):
            for m in list(TEX_RE.finditer(found)) + list(LABEL.finditer(found)):
                bad.append(f"{page.name} ({where}): …{found[max(0, m.start() - 50):m.end() + 20]}…")
    assert not bad, f"{len(bad)} raw TeX commands or labels shown to readers:\n" + "\n".join(
        bad[:25])


#: a <script> that loads MathJax, and its address
MATHJAX_SCRIPT = re.compile(r'<script[^>]*\bsrc="([^"]*mathjax[^"]*)"', re.IGNORECASE)


def test_mathjax_comes_with_the_book_not_from_a_cdn():
    """Every page that loads MathJax loads the copy in the book's _static/ (bookkit.local_mathjax,
    from the pinned wheel), which is there with its fonts: the built book reads offline."""
    root = BUILD / "html"
    pages = [p for p in root.rglob("*.html") if "_static" not in p.relative_to(root).parts]
    assert pages, "no built pages: run the build first"
    remote, missing, loaded = [], [], 0
    for page in pages:
        html = page.read_text(encoding="utf-8", errors="replace")
        for src in MATHJAX_SCRIPT.findall(html):
            loaded += 1
            if "://" in src or src.startswith("//"):
                remote.append(f"{page.relative_to(root)}: {src}")
            elif not (page.parent / src.split("?", 1)[0]).is_file():
                missing.append(f"{page.relative_to(root)}: {src}")
        if re.search(r"cdn\.jsdelivr\.net|cdnjs\.cloudflare\.com|mathjax@", html):
            remote.append(f"{page.relative_to(root)}: names a MathJax CDN")
    assert loaded, "no page loads MathJax"
    assert not remote, "pages that load MathJax from the network:\n" + "\n".join(remote[:10])
    assert not missing, "MathJax scripts missing from the build:\n" + "\n".join(missing[:10])
    fonts = root / "_static" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2"
    assert any(fonts.glob("MathJax_Main-Regular.woff")), f"no MathJax fonts in {fonts}"


#: The two chapters read again from their built pages, and how far that reading may differ.
READ_AGAIN, READING_AGREES = ("02_linear_collapse", "05_landscape"), 0.10


@pytest.mark.parametrize("chapter", READ_AGAIN)
def test_reading_time_model_agrees_with_a_reading_of_the_built_page(chapter):
    """The instructors' reading time of a chapter (``bookkit.lists``, counted in its MyST
    source) against a second reading of the same chapter: its built page's article counted
    as a reader meets it (words including titles, glued numbers and folded solutions; each
    MathJax formula; each rendered proof; the code cells shown), at the same rates from
    ``_config.yml``. Within 10 %: this checks the counting, not the rates, which are stated
    assumptions (book/instructors.md)."""
    import yaml

    from bookkit import lists as kit

    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    r = kit.rates(config["parse"]["myst_substitutions"])
    page = BUILD / "html" / "book" / f"{chapter}.html"
    text = (ROOT / "book" / f"{chapter}.md").read_text(encoding="utf-8")
    source = kit.reading_minutes(kit.source_counts(text), r)
    read = kit.reading_minutes(kit.page_counts(page.read_text(encoding="utf-8")), r)
    assert abs(read - source) <= READING_AGREES * read, (chapter, source, read)
