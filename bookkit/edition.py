"""The edition: the version, the chapters' setup cells, ``make sync`` and ``make release``.

The version is written once, ``gmmlib.__version__``: a development version installs gmmlib from
``repository.branch`` of ``_config.yml``, a release ``X.Y.Z`` from its tag ``vX.Y.Z``. Imports
only the standard library at first, so that ``release --pending`` runs on a bare Python.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SETUP_MARKER = "# Run this chapter:"
SETUP_TAGS = ["remove-cell"]
WIDTH = 79
SETUP_CELL = """\
# Run this chapter: outside the book's repository (Colab, Binder, a
# downloaded notebook) this installs gmmlib and what the chapters import:
# <WHAT>.
try:
    import gmmlib
except ImportError:  # only outside the repository
    import importlib.util, subprocess, sys
    REPO = "<URL>"
    REF = "<REF>"
    if sys.version_info < (3, 10):
        raise RuntimeError("gmmlib needs Python 3.10 or newer, not "
                           + sys.version.split()[0])
    steps = [[f"gmmlib[book] @ git+{REPO}@{REF}"]]
    if importlib.util.find_spec("torch") is None:
        CPU = "https://download.pytorch.org/whl/cpu"  # not CUDA's GBs
        steps.insert(0, ["torch", "--index-url", CPU])
    for step in steps:
        pip = [sys.executable, "-m", "pip", "install", "-q", *step]
        run = subprocess.run(pip, capture_output=True, text=True)
        if run.returncode:
            raise RuntimeError(
                f"Installing failed: {' '.join(step)}\\n{run.stderr[-1500:]}\\n"
                f"Check that the reference {REF} exists at {REPO}, that this "
                "machine reaches the network, and that its Python is 3.10 or "
                "newer; then run this cell again.")
    importlib.invalidate_caches()  # see the package installed a moment ago
    import gmmlib"""


def read_version(root: Path = ROOT) -> str:
    """``gmmlib.__version__``, read from ``gmmlib/__init__.py`` without importing gmmlib."""
    for node in ast.parse((root / "gmmlib" / "__init__.py").read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "__version__":
            return str(ast.literal_eval(node.value))
    raise ValueError(f"{root}/gmmlib/__init__.py: no `__version__ = \"X.Y.Z\"`")


def read_repository(root: Path = ROOT) -> tuple[str, str]:
    """``(repository.url, repository.branch)`` of ``_config.yml``."""
    import yaml

    repo = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))["repository"]
    return str(repo["url"]).rstrip("/"), str(repo.get("branch", "main"))


def is_development(version: str) -> bool:
    return ".dev" in version


def canonical_source(root: Path = ROOT) -> str:
    """The setup cell for the repository and the edition configured under ``root``."""
    (url, branch), version = read_repository(root), read_version(root)
    ref, what = ((branch, f"the development version, from the branch {branch}")
                 if is_development(version) else
                 (f"v{version}", f"edition {version}, from its tag v{version}"))
    return SETUP_CELL.replace("<URL>", url).replace("<REF>", ref).replace("<WHAT>", what)


def chapters(root: Path = ROOT) -> list[Path]:
    """The chapters' MyST sources on disk, ``book/NN_*.md``, sorted."""
    return sorted((root / "book").glob("[0-9][0-9]_*.md"))


def _setup_index(nb) -> int | None:
    return next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"), None)


def _problem(nb, source: str) -> str | None:
    i = _setup_index(nb)
    if i is None or nb.cells[i].source != source:
        return "its first code cell is not the canonical setup cell"
    if not set(SETUP_TAGS) <= set(nb.cells[i].metadata.get("tags", [])):
        return f"its setup cell lacks the tags {SETUP_TAGS}"
    return None


def edition_problems(root: Path = ROOT) -> list[str]:
    """Why the version and the launch buttons' ``repository.branch`` disagree (none: ``[]``)."""
    version, branch = read_version(root), read_repository(root)[1]
    if is_development(version) and re.fullmatch(r"v\d+(\.\d+)*", branch):
        return [f"the development version {version} is read at the tag {branch}: set main"]
    if not is_development(version) and branch != f"v{version}":
        return [f"the release {version} is read at {branch}, not v{version}"]
    return []


def check(root: Path = ROOT) -> list[tuple[Path, str]]:
    """``(file, reason)`` for the configuration and every chapter whose setup cell is wrong."""
    import jupytext

    source = canonical_source(root)
    problems = [(root / "_config.yml", why) for why in edition_problems(root)]
    problems += [(root / "_config.yml", f"the setup cell's line {n} has {len(line)} characters, "
                  f"more than {WIDTH}: shorten repository.url or the cell")
                 for n, line in enumerate(source.splitlines(), 1) if len(line) > WIDTH]
    found = [(path, _problem(jupytext.read(path), source)) for path in chapters(root)]
    return problems + [(path, why) for path, why in found if why]


def sync(root: Path = ROOT) -> list[Path]:
    """Make every chapter's first code cell the canonical setup cell (a setup cell is replaced,
    other code is kept below a new one); write the ``.md`` and its ``.ipynb`` without outputs.
    Returns the chapters that changed."""
    import jupytext
    import nbformat
    from jupytext.cli import jupytext as jupytext_cli

    source, changed = canonical_source(root), []
    for path in chapters(root):
        nb = jupytext.read(path)
        if not _problem(nb, source):
            continue
        i = _setup_index(nb)
        if i is not None and nb.cells[i].source.lstrip().startswith(SETUP_MARKER):
            nb.cells[i].source = source
        else:
            i = 0
            nb.cells.insert(0, nbformat.v4.new_code_cell(source))
        tags = list(nb.cells[i].metadata.get("tags", []))
        nb.cells[i].metadata["tags"] = tags + [t for t in SETUP_TAGS if t not in tags]
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        jupytext.write(nb, path, fmt="md:myst")
        jupytext_cli(["--sync", "--quiet", str(path)])  # the .ipynb keeps its cell ids
        changed.append(path)
    return changed


# ------------------------------------------------------------------------------- make release
EDITED = ["gmmlib/__init__.py", "_config.yml", "CITATION.cff", "CHANGELOG.md"]


def git(root: Path, *args: str, check: bool = True) -> str:
    run = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    if check and run.returncode:
        raise RuntimeError(f"git {' '.join(args)} failed:\n{run.stderr.strip()}")
    return run.stdout.strip()


def _edit(root: Path, name: str, pattern: str, repl, count: int = 1) -> None:
    path = root / name
    text, n = re.subn(pattern, repl, path.read_text(encoding="utf-8"), count=count, flags=re.M)
    if n == 0:
        raise ValueError(f"{path}: nothing matches {pattern!r}")
    path.write_text(text, encoding="utf-8")


def _set_edition(root: Path, version: str, branch: str, date: str | None) -> None:
    """The version, the launch buttons' branch, CITATION.cff (its date only for a release)."""
    _edit(root, "gmmlib/__init__.py", r'^__version__ = "[^"]*"', f'__version__ = "{version}"')
    _edit(root, "_config.yml", r"^(repository:\n(?:[ \t]+.*\n|\s*\n)*?[ \t]+branch:[ \t]*).*$",
          lambda m: m.group(1) + branch)
    dated = f'\ndate-released: "{date}"' if date else ""
    _edit(root, "CITATION.cff", r"^version:.*(\ndate-released:.*)?$", f"version: {version}{dated}")


def _release_changelog(root: Path, version: str, date: str) -> None:
    """``## Unreleased`` becomes ``## <version> — <date>`` (an empty Errata heading dropped)."""
    text = (root / "CHANGELOG.md").read_text(encoding="utf-8")
    match = re.search(r"^## Unreleased[^\n]*\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    if not match:
        raise ValueError("CHANGELOG.md: no `## Unreleased` section to release")
    body = re.sub(r"^### Errata\n\s*(?=^### |\Z)", "", match.group(1), flags=re.M)
    if not re.search(r"^\s*[-*] ", body, re.M):
        raise ValueError("CHANGELOG.md: `## Unreleased` lists no change: say what the edition "
                         "changes before releasing it")
    text = text[:match.start()] + f"## {version} — {date}\n{body.rstrip()}\n\n" + text[match.end():]
    (root / "CHANGELOG.md").write_text(text, encoding="utf-8")


def release(root: Path, version: str, next_version: str | None = None,
            date: str | None = None) -> tuple[str, str]:
    """The release commit and the development commit after it; returns their shas."""
    if not re.fullmatch(r"\d+\.\d+\.\d+", version):
        raise ValueError(f"VERSION: expected X.Y.Z (for example 0.3.0), got {version!r}")
    if not is_development(read_version(root)):
        raise ValueError(f"gmmlib holds {read_version(root)}, not a development version")
    x, y, _ = version.split(".")
    next_version = next_version or f"{x}.{int(y) + 1}.0.dev0"
    if not re.fullmatch(r"\d+\.\d+\.\d+\.dev\d+", next_version):
        raise ValueError(f"--next: expected X.Y.Z.devN, got {next_version!r}")
    if git(root, "tag", "--list", f"v{version}"):
        raise ValueError(f"the tag v{version} exists already")
    paths = EDITED + [str(p.relative_to(root)) for md in chapters(root)
                      for p in (md, md.with_suffix(".ipynb")) if p.exists()]
    if git(root, "status", "--porcelain", "--", *paths):
        raise ValueError("commit or set aside the changes to " + " ".join(paths))
    date, branch = date or datetime.date.today().isoformat(), read_repository(root)[1]
    shas = []
    for step in ("release", "development"):
        if step == "release":
            _set_edition(root, version, f"v{version}", date)
            _release_changelog(root, version, date)
            message = f"Release {version}: setup cells and launch buttons at v{version}"
        else:
            _set_edition(root, next_version, "main" if branch.startswith("v") else branch, None)
            _edit(root, "CHANGELOG.md", r"^(?=## )", "## Unreleased\n\n")
            message = f"Start {next_version} (setup cells and launch buttons back on main)"
        sync(root)
        git(root, "add", "--", *paths)
        git(root, "commit", "-q", "-m", message, "--", *paths)
        shas.append(git(root, "rev-parse", "HEAD"))
    return shas[0], shas[1]


def pending(root: Path, before: str, after: str) -> tuple[str, str] | None:
    """``(version, commit)``: the newest final version among the pushed commits ``before..after``
    (first parents), at the last commit that carries it; None if none, or if its tag is
    elsewhere. A tag at that very commit counts (a re-run of the workflow replaces assets)."""
    known = set(before or "0") != {"0"} and subprocess.run(
        ["git", "merge-base", "--is-ancestor", before, after], cwd=root).returncode == 0
    span = f"{before}..{after}" if known else f"{after}~1..{after}"
    for commit in git(root, "rev-list", "--first-parent", span, check=False).split() or [after]:
        found = re.search(r'^__version__ = "(\d+\.\d+\.\d+)"$', git(
            root, "show", f"{commit}:gmmlib/__init__.py", check=False), re.M)
        if found:
            tagged = git(root, "rev-list", "-n", "1", f"v{found[1]}", check=False)
            commit = git(root, "rev-parse", commit)
            if tagged and tagged != commit:
                print(f"v{found[1]} exists at {tagged[:12]}, not {commit[:12]}", file=sys.stderr)
                return None
            return found[1], commit
    return None


def main(argv: list[str] | None = None, command: str = "sync") -> int:
    """``sync [--check]``: rewrite (or check) the setup cells; ``release X.Y.Z [--next
    X.Y.Z.devN] [--date D]``: the two commits (no tag, no push); ``release --pending BEFORE
    AFTER``: the final version to publish among the pushed commits."""
    parser = argparse.ArgumentParser(prog=f"python -m bookkit {command}", description=main.__doc__)
    if command == "release":
        parser.add_argument("version", nargs="?")
        parser.add_argument("--next", dest="next_version")
        parser.add_argument("--date")
        parser.add_argument("--pending", nargs=2, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--root", type=Path, default=ROOT)
    args = parser.parse_args(argv)
    if command == "sync":
        problems = check(args.root) if args.check else []
        for path, why in problems:
            print(f"{path.relative_to(args.root)}: {why} (run `make sync`)", file=sys.stderr)
        done = "checked" if args.check else f"{len(sync(args.root))} rewritten"
        if not problems:
            print(f"setup cells of {len(chapters(args.root))} chapters: {done}")
        return 1 if problems else 0
    if args.pending:
        found = pending(args.root, *args.pending)
        if found:
            print(f"version={found[0]}\ncommit={found[1]}")
        return 0
    if not args.version:
        parser.error("VERSION is required (make release VERSION=X.Y.Z)")
    try:
        released, developed = release(args.root, args.version, args.next_version, args.date)
    except (ValueError, RuntimeError) as err:
        print(f"release: {err}", file=sys.stderr)
        return 1
    print(f"Release commit {released[:12]} carries {args.version}, {developed[:12]} starts the next"
          " version: check them, run `make test`, push main (the workflow tags and publishes).")
    return 0
