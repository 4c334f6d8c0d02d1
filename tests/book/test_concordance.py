"""The concordance with the papers: every numbered result and figure a row, every row a label.

These tests read the sources (no build needed); the strict build checks the same through
``bookkit/concordance.py`` and writes ``_build/concordance.json`` (tested in test_built_book.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from ..conftest import chapter_sources, read_chapter

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "book"
REGISTRY = yaml.safe_load((BOOK / "paper_results.yml").read_text(encoding="utf-8"))
STATUSES = {"reproduced", "extended", "differs", "not-covered"}
PAPER_RE = re.compile(r"^```+\{paper\}\s+(\S+)\s+(.+?)\s*\n((?::\w+:.*\n)*)", re.M)


def _markdown_sources() -> dict[str, str]:
    """The Markdown of every page: a chapter's Markdown cells (via jupytext), other pages whole."""
    chapters = chapter_sources(ROOT)
    out = {}
    for path in chapters:
        cells = read_chapter(path).cells
        out[path.name] = "\n".join(c.source for c in cells if c.cell_type == "markdown")
    for path in sorted(BOOK.glob("*.md")):
        if path not in chapters:
            out[path.name] = path.read_text(encoding="utf-8")
    return out


def _labels() -> set[str]:
    """Every label a {paper} row may name: claims, equations, sections, figures (metadata too)."""
    labels: set[str] = set()
    for text in _markdown_sources().values():
        labels |= set(re.findall(r"^:(?:label|name):\s*(\S+)", text, re.M))
        labels |= set(re.findall(r"^\((\S+)\)=\s*$", text, re.M))
        labels |= set(re.findall(r"\$\$\s*\((\S+)\)", text))
    for path in chapter_sources(ROOT):
        for cell in read_chapter(path).cells:
            fig = cell.metadata.get("mystnb", {}).get("figure", {})
            if fig.get("name"):
                labels.add(fig["name"])
    return labels


def _rows() -> list[dict]:
    rows = []
    for page, text in _markdown_sources().items():
        for key, result, opts in PAPER_RE.findall(text):
            options = dict(re.findall(r"^:(\w+):\s*(.*)$", opts, re.M))
            rows.append(
                {
                    "page": page,
                    "key": key,
                    "result": result.strip(),
                    "status": options.get("status", ""),
                    "book": [s.strip() for s in options.get("book", "").split(",") if s.strip()],
                }
            )
    return rows


ROWS = _rows()


def test_registry_is_well_formed():
    assert set(REGISTRY) >= {"gabet2026softmax", "boursier2026softmax"}
    bib = (ROOT / "references.bib").read_text(encoding="utf-8")
    for key, paper in REGISTRY.items():
        assert f"{{{key}," in bib, f"{key} is not in references.bib"
        names = [item["name"] for item in paper["results"]]
        assert len(names) == len(set(names)), f"{key}: a result is listed twice"
    figures = {
        item["name"]
        for item in REGISTRY["gabet2026softmax"]["results"]
        if item["name"].startswith("Figure")
    }
    assert figures == {f"Figure {i}" for i in range(1, 6)}, "the seed paper has five figures"


@pytest.mark.parametrize(
    "key,name", [(k, item["name"]) for k, p in REGISTRY.items() for item in p["results"]]
)
def test_every_paper_result_has_a_row(key, name):
    assert any(r["key"] == key and r["result"] == name for r in ROWS), (
        f"{name} of {key} has no {{paper}} row: add one next to the book's result "
        f"(or, if the book does not "
        "cover it, in book/concordance.md with :status: not-covered)"
    )


def test_every_row_names_a_listed_result_a_status_and_existing_labels():
    labels = _labels()
    listed = {(k, item["name"]) for k, p in REGISTRY.items() for item in p["results"]}
    assert ROWS, "no {paper} directive in the book"
    for r in ROWS:
        where = f"{r['page']}: {{paper}} {r['key']} {r['result']}"
        assert (r["key"], r["result"]) in listed, f"{where} is not in book/paper_results.yml"
        assert r["status"] in STATUSES, (
            f"{where}: status {r['status']!r} is not one of {sorted(STATUSES)}"
        )
        assert r["book"] or r["status"] == "not-covered", f"{where}: :book: labels missing"
        missing = [lab for lab in r["book"] if lab not in labels]
        assert not missing, f"{where} names labels the book does not have: {missing}"
