"""Each chapter is a MyST Markdown notebook (the source) paired by jupytext with a stripped .ipynb.

The ``.md`` is what one edits, reviews and builds; the ``.ipynb`` beside it is the same
notebook, without outputs, for Colab's and Binder's launch links. After editing a chapter run
``.venv/bin/jupytext --sync book/NN_name.md`` (the pre-commit hook does it too).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import chapter_sources, read_chapter

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = chapter_sources(ROOT)
SYNC = "run `.venv/bin/jupytext --sync book/{}` (the .md is the source)"


def _cells(nb) -> list[dict]:
    return [{"type": c.cell_type, "source": c.source.strip("\n"),
             "tags": list(c.metadata.get("tags", [])), "mystnb": c.metadata.get("mystnb", {})}
            for c in nb.cells]


def test_every_notebook_has_its_source():
    orphans = [p.name for p in (ROOT / "book").glob("[0-9][0-9]_*.ipynb") if not p.with_suffix(".md").is_file()]
    assert not orphans, f"notebooks without their MyST source book/NN_*.md: {orphans}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_the_pair_exists_and_is_declared(path):
    ipynb = path.with_suffix(".ipynb")
    assert ipynb.is_file(), f"{path.name} has no paired {ipynb.name}: " + SYNC.format(path.name)
    formats = read_chapter(path).metadata.get("jupytext", {}).get("formats", "")
    assert set(formats.split(",")) == {"ipynb", "md:myst"}, (
        f"{path.name}: jupytext formats {formats!r}, expected 'ipynb,md:myst'")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_the_pair_holds_the_same_cells(path):
    ipynb = path.with_suffix(".ipynb")
    if not ipynb.is_file():
        pytest.skip("no pair (test_the_pair_exists_and_is_declared fails)")
    md, nb = _cells(read_chapter(path)), _cells(read_chapter(ipynb))
    hint = SYNC.format(path.name)
    assert len(md) == len(nb), f"{path.name} has {len(md)} cells, {ipynb.name} {len(nb)}: {hint}"
    differ = [i for i, (a, b) in enumerate(zip(md, nb)) if a != b]
    if differ:
        i = differ[0]
        what = [k for k in md[i] if md[i][k] != nb[i][k]]
        raise AssertionError(f"{path.name} and {ipynb.name} differ in cells {differ} (cell {i}: {what}): {hint}")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_the_notebook_is_stored_stripped(path):
    ipynb = path.with_suffix(".ipynb")
    if not ipynb.is_file():
        pytest.skip("no pair")
    nb = json.loads(ipynb.read_text(encoding="utf-8"))
    dirty = [i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"
             and (c.get("outputs") or c.get("execution_count") is not None)]
    assert not dirty, f"{ipynb.name}: code cells {dirty} carry outputs: " + SYNC.format(path.name)
    extra = sorted(set(nb.get("metadata", {})) - {"jupytext", "kernelspec", "language_info"})
    assert not extra, f"{ipynb.name}: notebook metadata {extra} (widget state, execution data) must not be stored"
    run = [i for i, c in enumerate(nb["cells"]) if "execution" in c.get("metadata", {})]
    assert not run, f"{ipynb.name}: cells {run} carry execution timings"


def test_pre_commit_syncs_the_pairs():
    config = (ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8")
    assert "jupytext" in config and "--sync" in config, (
        ".pre-commit-config.yaml has no jupytext --sync hook for book/*.md")
