#!/usr/bin/env python3
"""Keep the "Run this chapter" setup cell of every notebook in step with ``_config.yml``.

Every ``book/*.ipynb`` starts its code with the same cell: inside the repository it just
imports ``gmmlib``; outside it (Colab) it first installs ``gmmlib`` from the repository named
by ``repository.url`` in ``_config.yml``, at the git tag of the book's edition,
``v`` + ``gmmlib.__version__`` (read from ``gmmlib/__init__.py``, the one place the version
is written). A course that links to edition 0.2.0 therefore keeps getting the gmmlib of
edition 0.2.0 when ``main`` moves on. The cell carries the ``remove-cell`` tag, so it is
executed at build time but does not appear in the HTML.

Usage::

    python scripts/sync_setup_cells.py           # rewrite the setup cells (``make sync``)
    python scripts/sync_setup_cells.py --check   # exit 1 and list the notebooks that differ

Rewriting: if a notebook's first code cell is a setup cell (its source starts with
``SETUP_MARKER``) it is replaced by the canonical one; otherwise the canonical cell is
inserted as the notebook's first cell, so no code is ever lost. Every other cell is kept;
outputs and execution counts are cleared (notebooks are stored without outputs) and the
notebook is written with nbformat (indent 1). Files are only written when they change.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parent.parent
SETUP_MARKER = "# Run this chapter:"
SETUP_TAGS = ["remove-cell"]

_TEMPLATE = """\
# Run this chapter: outside the book's repository (Colab, Binder), install gmmlib first,
# from the tag of this edition of the book ({tag}), so the code matches the text.
try:
    import gmmlib
except ImportError:  # pragma: no cover - only outside the repository
    %pip install -q "gmmlib @ git+{url}@{tag}"
    import gmmlib"""


def read_repository(root: Path = ROOT) -> tuple[str, str]:
    """Return ``(repository.url, repository.branch)`` from ``root/_config.yml``."""
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    repo = (config or {}).get("repository") or {}
    url, branch = repo.get("url"), repo.get("branch", "main")
    if not url:
        raise ValueError(f"{root / '_config.yml'}: repository.url is missing")
    return str(url).rstrip("/"), str(branch)


def read_version(root: Path = ROOT) -> str:
    """``gmmlib.__version__``, read from ``root/gmmlib/__init__.py`` without importing gmmlib."""
    path = root / "gmmlib" / "__init__.py"
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and getattr(node.targets[0], "id", None) == "__version__"):
            return str(ast.literal_eval(node.value))
    raise ValueError(f"{path}: no `__version__ = \"X.Y.Z\"` assignment")


def release_tag(root: Path = ROOT) -> str:
    """The git tag of the book's edition: ``v`` + the version (``v0.2.0``)."""
    return f"v{read_version(root)}"


def canonical_source(root: Path = ROOT) -> str:
    """The exact source of the setup cell for the repository and edition configured under ``root``."""
    url, _branch = read_repository(root)
    return _TEMPLATE.format(url=url, tag=release_tag(root))


def notebooks(root: Path = ROOT) -> list[Path]:
    """The book's notebooks, ``root/book/*.ipynb``, sorted."""
    return sorted((root / "book").glob("*.ipynb"))


def _first_code_cell(nb) -> int | None:
    return next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"), None)


def setup_cell_problem(nb, source: str) -> str | None:
    """Why the first code cell of ``nb`` is not the canonical setup cell (None if it is)."""
    i = _first_code_cell(nb)
    if i is None:
        return "no code cell"
    cell = nb.cells[i]
    if cell.source != source:
        return "first code cell is not the canonical setup cell"
    tags = cell.get("metadata", {}).get("tags", [])
    missing = [t for t in SETUP_TAGS if t not in tags]
    if missing:
        return f"setup cell lacks the tag(s) {missing}"
    return None


def check(root: Path = ROOT) -> list[tuple[Path, str]]:
    """List ``(notebook, reason)`` for every notebook whose setup cell is not canonical."""
    source = canonical_source(root)
    problems = []
    for path in notebooks(root):
        reason = setup_cell_problem(nbformat.read(path, as_version=4), source)
        if reason:
            problems.append((path, reason))
    return problems


def sync_notebook(nb, source: str) -> None:
    """Make the first code cell of ``nb`` the canonical setup cell, in place."""
    i = _first_code_cell(nb)
    if i is not None and nb.cells[i].source.lstrip().startswith(SETUP_MARKER):
        cell = nb.cells[i]
        cell.source = source
    else:
        cell = nbformat.v4.new_code_cell(source)
        if nb.get("nbformat_minor", 0) < 5:  # cell ids exist from nbformat 4.5 on
            cell.pop("id", None)
        nb.cells.insert(0, cell)
    tags = list(cell.metadata.get("tags", []))
    cell.metadata["tags"] = tags + [t for t in SETUP_TAGS if t not in tags]
    for c in nb.cells:
        if c.cell_type == "code":
            c.outputs = []
            c.execution_count = None


def sync(root: Path = ROOT) -> list[Path]:
    """Rewrite every notebook's setup cell; return the notebooks that changed."""
    source = canonical_source(root)
    changed = []
    for path in notebooks(root):
        before = path.read_text(encoding="utf-8")
        nb = nbformat.reads(before, as_version=4)
        sync_notebook(nb, source)
        after = nbformat.writes(nb) + "\n"
        if after != before:
            path.write_text(after, encoding="utf-8")
            changed.append(path)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="only report notebooks whose setup cell differs; exit 1 if any")
    parser.add_argument("--root", type=Path, default=ROOT, help="the book's root folder")
    args = parser.parse_args(argv)
    if args.check:
        problems = check(args.root)
        for path, reason in problems:
            print(f"{path.relative_to(args.root)}: {reason}", file=sys.stderr)
        if problems:
            print("Run `make sync` to rewrite the setup cells.", file=sys.stderr)
            return 1
        print(f"setup cells OK ({len(notebooks(args.root))} notebooks)")
        return 0
    changed = sync(args.root)
    for path in changed:
        print(f"rewrote {path.relative_to(args.root)}")
    print(f"{len(changed)} of {len(notebooks(args.root))} notebooks changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
