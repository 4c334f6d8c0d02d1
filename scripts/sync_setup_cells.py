#!/usr/bin/env python3
"""Keep the "Run this chapter" setup cell of every notebook in step with ``_config.yml``.

Every chapter (``book/NN_*.md``, the MyST source, paired with its ``.ipynb`` by jupytext)
starts its code with the same cell: inside the repository it just imports ``gmmlib``;
outside it (Colab, Binder, a downloaded notebook) it first installs ``gmmlib[book]`` from the
repository named by ``repository.url`` in ``_config.yml``. What it installs follows the
version (``gmmlib/__init__.py``, the one place it is written): a development version
(``0.3.0.dev0``) installs the branch ``repository.branch`` (``main``); a released one
(``0.3.0``) installs its tag ``v0.3.0``, so a course that links to an edition keeps getting
that edition's gmmlib when ``main`` moves on. A failed install raises an error that says what
failed and what to check. The cell carries the ``remove-cell`` tag: executed at build time,
absent from the HTML.

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
import re
import sys
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parent.parent
SETUP_MARKER = "# Run this chapter:"
SETUP_TAGS = ["remove-cell"]

_TEMPLATE = r"""# Run this chapter: outside the book's repository (Colab, Binder, a downloaded
# notebook) this installs gmmlib and what the chapters import:
# {what}.
try:
    import gmmlib
except ImportError:  # only outside the repository
    import importlib.util, subprocess, sys
    REPO, REF = "{url}", "{ref}"
    if sys.version_info < (3, 10):
        raise RuntimeError(f"gmmlib needs Python 3.10 or newer, not {{sys.version.split()[0]}}")
    pip = [sys.executable, "-m", "pip", "install", "-q"]
    steps = [pip + [f"gmmlib[book] @ git+{{REPO}}@{{REF}}"]]
    if importlib.util.find_spec("torch") is None:  # never the multi-GB CUDA build
        steps.insert(0, pip + ["torch", "--index-url", "https://download.pytorch.org/whl/cpu"])
    for step in steps:
        run = subprocess.run(step, capture_output=True, text=True)
        if run.returncode:
            raise RuntimeError(
                f"Installing failed: {{' '.join(step[5:])}}\n{{run.stderr[-1500:]}}\nCheck that "
                f"the reference {{REF}} exists at {{REPO}}, that this machine reaches the "
                "network, and that its Python is 3.10 or newer; then run this cell again.")
    importlib.invalidate_caches()  # see the package installed a moment ago
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


def is_development(version: str) -> bool:
    """Whether ``version`` is a development version (``0.3.0.dev0``): the book on ``main``."""
    return ".dev" in version


def release_tag(root: Path = ROOT) -> str:
    """The git tag of the book's edition: ``v`` + the version (``v0.3.0``)."""
    return f"v{read_version(root)}"


def install_ref(root: Path = ROOT) -> str:
    """What the setup cells install from: the branch for a development version, else the tag."""
    version = read_version(root)
    return read_repository(root)[1] if is_development(version) else f"v{version}"


def canonical_source(root: Path = ROOT) -> str:
    """The exact source of the setup cell for the repository and edition configured under ``root``."""
    url, branch = read_repository(root)
    version = read_version(root)
    what = (f"the development version, from the branch {branch}" if is_development(version)
            else f"edition {version}, from its tag v{version}, so the code matches the text")
    return _TEMPLATE.format(url=url, ref=install_ref(root), what=what)


def notebooks(root: Path = ROOT) -> list[Path]:
    """The book's chapters, ``root/book/NN_*.md`` (MyST notebooks, the sources one edits), sorted."""
    return sorted((root / "book").glob("[0-9][0-9]_*.md"))


def read_chapter(path: Path):
    """A chapter's cells, read from its MyST Markdown source with jupytext."""
    import jupytext

    return jupytext.read(path)


def write_chapter(nb, path: Path) -> None:
    """Write a chapter's MyST source and its paired, output-free ``.ipynb`` beside it."""
    import jupytext

    for c in nb.cells:
        if c.cell_type == "code":
            c.outputs = []
            c.execution_count = None
    jupytext.write(nb, path, fmt="md:myst")
    jupytext.write(nb, path.with_suffix(".ipynb"), fmt="ipynb")


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


def edition_problems(root: Path = ROOT) -> list[str]:
    """Why the version and ``repository.branch`` disagree (an empty list if they agree).

    A development version is read on a branch (the launch buttons and the setup cells follow
    ``main``), never at a tag; a released version ``X.Y.Z`` is read at its tag ``vX.Y.Z``.
    """
    version, branch = read_version(root), read_repository(root)[1]
    if is_development(version):
        if re.fullmatch(r"v\d+(\.\d+)*", branch):
            return [f"the version {version} is a development version but repository.branch is "
                    f"the tag {branch}: set it to main"]
        return []
    if branch != f"v{version}":
        return [f"the version {version} is a release but repository.branch is {branch}, not "
                f"v{version} (scripts/release.py sets both)"]
    return []


def check(root: Path = ROOT) -> list[tuple[Path, str]]:
    """List ``(notebook, reason)`` for every notebook whose setup cell is not canonical, and
    ``(_config.yml, reason)`` if the version and the launch buttons' branch disagree."""
    source = canonical_source(root)
    problems = [(root / "_config.yml", reason) for reason in edition_problems(root)]
    for path in notebooks(root):
        reason = setup_cell_problem(read_chapter(path), source)
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
        nb = read_chapter(path)
        i = _first_code_cell(nb)
        if i is not None and nb.cells[i].source == source and not setup_cell_problem(nb, source):
            continue
        sync_notebook(nb, source)
        write_chapter(nb, path)
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
