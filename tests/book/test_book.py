"""Book-level checks that need no execution: how chapters are stored, and the toc.

A chapter is its MyST source ``book/NN_*.md`` (read here through jupytext); the paired
``.ipynb`` beside it is kept stripped for Colab's and Binder's launch buttons
(tests/book/test_pairs.py checks that the two agree).

The executed, strict build (``make test``) checks the rest: every cell runs and every
cross-reference resolves.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from bookkit import edition

from ..conftest import chapter_sources, read_chapter

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "book"
CHAPTERS = chapter_sources(ROOT)
NOTEBOOKS = sorted(BOOK.glob("*.ipynb"))
PAGES = sorted(p for p in BOOK.rglob("*") if p.suffix in {".ipynb", ".md"}
               and ".ipynb_checkpoints" not in p.parts)


def _toc_files(node) -> list[str]:
    """Every ``file:`` and ``root:`` entry of a (nested) jb-book toc."""
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("file", "root") and isinstance(value, str):
                found.append(value)
            else:
                found.extend(_toc_files(value))
    elif isinstance(node, list):
        for item in node:
            found.extend(_toc_files(item))
    return found


def _strip_suffix(path: str) -> str:
    for suffix in (".ipynb", ".md"):
        if path.endswith(suffix):
            return path[: -len(suffix)]
    return path


TOC = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
TOC_ENTRIES = [_strip_suffix(f) for f in _toc_files(TOC)]


def test_there_are_chapters():
    assert CHAPTERS, "book/ holds no chapter source book/NN_*.md"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_stored_without_outputs(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    dirty = [i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"
             and (c.get("outputs") or c.get("execution_count") is not None)]
    assert not dirty, (f"{path.name}: code cells {dirty} have outputs or an execution count; "
                       "clear them before committing (Kernel > Restart & Clear Output)")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_chapter_kernel_is_python3(path):
    name = read_chapter(path).metadata.get("kernelspec", {}).get("name")
    assert name == "python3", f"{path.name}: kernelspec name is {name!r}, expected 'python3'"


def test_setup_cells_are_canonical_and_within_79_characters():
    problems = edition.check(ROOT)
    assert not problems, "setup cells differ from the canonical one (run `make sync`):\n" + \
        "\n".join(f"  {p.relative_to(ROOT)}: {why}" for p, why in problems)
    for path in CHAPTERS:
        setup = next(c for c in read_chapter(path).cells if c.cell_type == "code").source
        long = [n for n, line in enumerate(setup.splitlines(), 1) if len(line) > edition.WIDTH]
        assert not long, f"{path.name}: setup cell lines {long} exceed {edition.WIDTH} characters"


def test_the_width_check_catches_a_long_setup_cell(monkeypatch):
    monkeypatch.setattr(edition, "SETUP_CELL", edition.SETUP_CELL + "\n# " + "x" * 78)
    assert any("more than 79" in why for _, why in edition.check(ROOT))


def test_every_book_page_is_in_the_toc():
    listed = set(TOC_ENTRIES)
    missing = [p.relative_to(ROOT).as_posix() for p in PAGES
               if _strip_suffix(p.relative_to(ROOT).as_posix()) not in listed]
    assert not missing, f"pages under book/ missing from _toc.yml: {missing}"


def test_every_chapter_in_the_toc_is_a_myst_notebook():
    """A chapter of the toc is built from its .md (the build excludes book/*.ipynb)."""
    numbered = [e for e in TOC_ENTRIES if e.startswith("book/") and e.split("/")[-1][:2].isdigit()]
    assert numbered, "the toc lists no chapter"
    missing = [e for e in numbered if not (ROOT / f"{e}.md").is_file()]
    assert not missing, f"chapters of _toc.yml without a MyST source: {missing}"
    assert sorted(f"book/{p.stem}" for p in CHAPTERS) == sorted(numbered), (
        "book/NN_*.md and the toc differ"
    )


def test_every_toc_entry_exists():
    missing = [
        e for e in TOC_ENTRIES if not any((ROOT / (e + s)).is_file() for s in (".ipynb", ".md"))
    ]
    assert not missing, f"_toc.yml entries with no .ipynb/.md file: {missing}"


def test_toc_entries_are_unique():
    dupes = sorted({e for e in TOC_ENTRIES if TOC_ENTRIES.count(e) > 1})
    assert not dupes, f"_toc.yml lists these pages more than once: {dupes}"


def test_citation_cff_is_valid_and_consistent():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    for key in (
        "cff-version",
        "message",
        "title",
        "authors",
        "version",
        "license",
        "repository-code",
        "preferred-citation",
    ):
        assert cff.get(key), f"CITATION.cff lacks {key!r}"
    assert cff["cff-version"] == "1.2.0"
    assert all(a.get("name") or a.get("family-names") for a in cff["authors"])
    assert set(cff["license"]) == {"CC-BY-4.0", "MIT"}
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert cff["repository-code"].rstrip("/") == config["repository"]["url"].rstrip("/")
    version = edition.read_version(ROOT)  # gmmlib.__version__, the one place it is written
    assert str(cff["version"]) == version, (
        "CITATION.cff and gmmlib.__version__ disagree on the version"
    )
    pref = cff["preferred-citation"]
    assert pref.get("type") and pref.get("title") and pref.get("authors")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_no_sphinx_proof_directive_folds_itself(path):
    """A fold wraps a proof (an optional admonition with class dropdown); a ``{prf:...}``
    directive given ``:class: dropdown`` has no title sphinx-togglebutton can find, and its
    script then stops, leaving every later fold of the page open."""
    import re

    text = path.read_text(encoding="utf-8")
    found = re.findall(r"\{prf:[a-z]+\}[^\n]*\n(?::[^\n]*\n)*?:class:[^\n]*dropdown", text)
    assert not found, f"{path.name}: a prf directive with :class: dropdown: {found[:1]}"
