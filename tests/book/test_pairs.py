"""Each chapter is a MyST Markdown notebook (the source) paired by jupytext with a stripped .ipynb.

The ``.md`` is what one edits, reviews and builds; the ``.ipynb`` beside it is the same
notebook, without outputs, for Colab's and Binder's launch links. After editing a chapter run
``.venv/bin/jupytext --sync book/NN_name.md`` (the pre-commit hook does it too).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..conftest import chapter_sources, read_chapter

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = chapter_sources(ROOT)
SYNC = "run `.venv/bin/jupytext --sync book/{}` (the .md is the source)"


def _cells(nb) -> list[dict]:
    return [
        {
            "type": c.cell_type,
            "source": c.source.strip("\n"),
            "tags": list(c.metadata.get("tags", [])),
            "mystnb": c.metadata.get("mystnb", {}),
        }
        for c in nb.cells
    ]


def test_every_notebook_has_its_source():
    orphans = [
        p.name
        for p in (ROOT / "book").glob("[0-9][0-9]_*.ipynb")
        if not p.with_suffix(".md").is_file()
    ]
    assert not orphans, f"notebooks without their MyST source book/NN_*.md: {orphans}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_the_pair_exists_and_is_declared(path):
    ipynb = path.with_suffix(".ipynb")
    assert ipynb.is_file(), f"{path.name} has no paired {ipynb.name}: " + SYNC.format(path.name)
    formats = read_chapter(path).metadata.get("jupytext", {}).get("formats", "")
    assert set(formats.split(",")) == {"ipynb", "md:myst"}, (
        f"{path.name}: jupytext formats {formats!r}, expected 'ipynb,md:myst'"
    )


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
        raise AssertionError(
            f"{path.name} and {ipynb.name} differ in cells {differ} (cell {i}: {what}): {hint}"
        )


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_the_notebook_is_stored_stripped(path):
    ipynb = path.with_suffix(".ipynb")
    if not ipynb.is_file():
        pytest.skip("no pair")
    nb = json.loads(ipynb.read_text(encoding="utf-8"))
    dirty = [
        i
        for i, c in enumerate(nb["cells"])
        if c["cell_type"] == "code" and (c.get("outputs") or c.get("execution_count") is not None)
    ]
    assert not dirty, f"{ipynb.name}: code cells {dirty} carry outputs: " + SYNC.format(path.name)
    extra = sorted(set(nb.get("metadata", {})) - {"jupytext", "kernelspec", "language_info"})
    assert not extra, (
        f"{ipynb.name}: notebook metadata {extra} (widget state, execution data) must not be stored"
    )
    run = [i for i, c in enumerate(nb["cells"]) if "execution" in c.get("metadata", {})]
    assert not run, f"{ipynb.name}: cells {run} carry execution timings"


def test_pre_commit_syncs_the_pairs():
    config = (ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8")
    assert "jupytext" in config and "--sync" in config, (
        ".pre-commit-config.yaml has no jupytext --sync hook for book/*.md"
    )


def test_launch_buttons_of_a_myst_chapter_open_its_notebook(tmp_path):
    """A page built from book/ch.md, its paired ch.ipynb excluded (Colab, Binder open the .ipynb).

    (The built book's own pages are checked in tests/book/test_browser.py.)
    """
    import subprocess
    import sys

    import yaml

    jb = Path(sys.executable).parent / "jupyter-book"
    if not jb.exists():
        pytest.skip("jupyter-book is not installed next to this Python")
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    (tmp_path / "book").mkdir()
    (tmp_path / "_config.yml").write_text(
        yaml.safe_dump(
            {
                "title": "pair",
                "execute": {"execute_notebooks": "off"},
                "exclude_patterns": [p for p in config["exclude_patterns"] if p == "book/*.ipynb"]
                + ["_build"],
                "launch_buttons": config["launch_buttons"],
                "repository": config["repository"],
            }
        )
    )
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: intro\nparts:\n  - caption: P\n"
        "    chapters:\n      - file: book/ch\n"
    )
    (tmp_path / "intro.md").write_text("# Intro\n")
    source = (
        CHAPTERS[0].read_text(encoding="utf-8").split("\n---\n", 1)[0] + "\n---\n\n# A chapter\n\n"
        "```{code-cell}\nx = 1\n```\n"
    )
    (tmp_path / "book" / "ch.md").write_text(source, encoding="utf-8")
    subprocess.run(
        [str(Path(sys.executable).parent / "jupytext"), "--sync", str(tmp_path / "book" / "ch.md")],
        check=True,
        capture_output=True,
    )
    assert (tmp_path / "book" / "ch.ipynb").is_file()
    proc = subprocess.run(
        [str(jb), "build", str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    html = (tmp_path / "_build" / "html" / "book" / "ch.html").read_text(encoding="utf-8")
    url, branch = config["repository"]["url"].rstrip("/"), config["repository"]["branch"]
    owner_repo = "/".join(url.split("/")[-2:])
    assert (
        f'href="https://colab.research.google.com/github/{owner_repo}/blob/{branch}/book/ch.ipynb"'
        in html
    )
    assert (
        f'href="https://mybinder.org/v2/gh/{owner_repo}/{branch}?urlpath=tree/book/ch.ipynb"'
        in html
    )
