"""The edition, the chapters' setup cells, ``make sync``, ``make release`` (stdlib at import)."""

import argparse
import datetime
import re
import subprocess
import sys
from pathlib import Path

SETUP_MARKER = "# Run this chapter:"
VERSION = r'^__version__ = "([^"]*)"$'
SETUP_TAG = "remove-cell"
WIDTH = 79
SETUP_CELL = """\
# Run this chapter: outside the book's repository (Colab, Binder, a
# downloaded notebook) this installs gmmlib and what the chapters import:
# <WHAT>.
try:
    import gmmlib
except ImportError:  # only outside the repository
    import importlib.util
    import subprocess
    import sys
    REPO = "<URL>"
    REF = "<REF>"
    if sys.version_info < (3, 10):
        raise RuntimeError("gmmlib needs Python 3.10 or newer, not "
                           + sys.version.split()[0]) from None
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
                "newer; then run this cell again.") from None
    importlib.invalidate_caches()  # see the package installed a moment ago
    import gmmlib  # noqa: F401"""


def _root(root: Path | None) -> Path:
    """``root``, or the book found from the working directory (bookkit.toc.find_root)."""
    from .toc import find_root

    return find_root(root)


def read_version(root: Path | None = None) -> str:
    """``gmmlib.__version__``, read from ``gmmlib/__init__.py`` without importing gmmlib."""
    root = _root(root)
    text = (root / "gmmlib" / "__init__.py").read_text(encoding="utf-8")
    return re.search(VERSION, text, re.M)[1]


def read_repository(root: Path | None = None) -> tuple[str, str]:
    """``(repository.url, repository.branch)`` of ``_config.yml``."""
    root = _root(root)
    import yaml

    repo = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))["repository"]
    return str(repo["url"]).rstrip("/"), str(repo.get("branch", "main"))


def is_development(version: str) -> bool:
    return ".dev" in version


def canonical_source(root: Path | None = None) -> str:
    """The setup cell for the repository and the edition configured under ``root``."""
    root = _root(root)
    (url, branch), version = read_repository(root), read_version(root)
    ref, what = ((branch, f"the development version, from the branch {branch}")
                 if is_development(version) else
                 (f"v{version}", f"edition {version}, from its tag v{version}"))
    return SETUP_CELL.replace("<URL>", url).replace("<REF>", ref).replace("<WHAT>", what)


def chapters(root: Path | None = None) -> list[Path]:
    """The chapters' MyST sources on disk, ``book/NN_*.md``, sorted."""
    root = _root(root)
    return sorted((root / "book").glob("[0-9][0-9]_*.md"))


def edition_problems(root: Path | None = None) -> list[str]:
    """Why the version and the launch buttons' ``repository.branch`` disagree (none: ``[]``)."""
    root = _root(root)
    version, branch = read_version(root), read_repository(root)[1]
    if is_development(version) and re.fullmatch(r"v\d+(\.\d+)*", branch):
        return [f"the development version {version} is read at the tag {branch}: set main"]
    if not is_development(version) and branch != f"v{version}":
        return [f"the release {version} is read at {branch}, not v{version}"]
    return []


def sync(root: Path | None = None, write: bool = True) -> list[tuple[Path, str]]:
    """``(chapter, why)`` for each chapter whose setup cell is not canonical; ``write``: fix it."""
    root = _root(root)
    import jupytext
    import nbformat

    source, found = canonical_source(root), []
    for path in chapters(root):
        for file in (path, path.with_suffix(".ipynb"))[: 1 + write]:
            fmt = "md:myst" if file.suffix == ".md" else "ipynb"
            nb = jupytext.read(file, fmt=fmt)
            cell = next(c for c in nb.cells if c.cell_type == "code")
            tags = list(cell.metadata.get("tags", []))
            if cell.source == source and SETUP_TAG in tags:
                continue
            if file == path:
                found.append((path, f"its first code cell is not the setup cell [{SETUP_TAG}]"))
            if write:
                if not cell.source.lstrip().startswith(SETUP_MARKER):
                    cell, tags = nbformat.v4.new_code_cell(""), []
                    nb.cells.insert(0, cell)
                cell.source, cell.metadata["tags"] = source, tags + [SETUP_TAG] * (
                    SETUP_TAG not in tags)
                jupytext.write(nb, file, fmt=fmt)
    return found


def check(root: Path | None = None) -> list[tuple[Path, str]]:
    """``(file, why)`` for the configuration and for every chapter whose setup cell is wrong."""
    root = _root(root)
    long = [(root / "_config.yml", f"the setup cell's line {n} has {len(line)} characters, more "
             f"than {WIDTH}: shorten repository.url or the cell")
            for n, line in enumerate(canonical_source(root).splitlines(), 1) if len(line) > WIDTH]
    return [(root / "_config.yml", why) for why in edition_problems(root)] + long + \
        sync(root, write=False)


# ------------------------------------------------------------------------------- make release
def git(root: Path, *args: str, check: bool = True) -> str:
    run = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    if check and run.returncode:
        raise RuntimeError(f"git {' '.join(args)} failed:\n{run.stderr.strip()}")
    return run.stdout.strip()


def _edit(root: Path, name: str, pattern: str, repl, flags: int = 0) -> None:
    path = root / name
    text, n = re.subn(pattern, repl, path.read_text(encoding="utf-8"), count=1,
                      flags=flags | re.M)
    if n == 0:
        raise ValueError(f"{path}: nothing matches {pattern!r}")
    path.write_text(text, encoding="utf-8")


def _set_edition(root: Path, version: str, branch: str, date: str | None) -> None:
    _edit(root, "gmmlib/__init__.py", VERSION, f'__version__ = "{version}"')
    _edit(root, "_config.yml", r"^(repository:\n(?:[ \t]+.*\n|\s*\n)*?[ \t]+branch:[ \t]*).*$",
          lambda m: m.group(1) + branch)
    dated = f'\ndate-released: "{date}"' if date else ""
    _edit(root, "CITATION.cff", r"^version:.*(\ndate-released:.*)?$", f"version: {version}{dated}")
    sync(root)


def release(root: Path, version: str, next_version: str | None = None,
            date: str | None = None) -> tuple[str, str]:
    """The release commit and the next development version's (``X.(Y+1).0.dev0``); no tag."""
    if not re.fullmatch(r"\d+\.\d+\.\d+", version):
        raise ValueError(f"VERSION: expected X.Y.Z (for example 0.3.0), got {version!r}")
    x, y, _ = version.split(".")
    next_version = next_version or f"{x}.{int(y) + 1}.0.dev0"
    if not re.fullmatch(r"\d+\.\d+\.\d+\.dev\d+", next_version):
        raise ValueError(f"--next: expected X.Y.Z.devN, got {next_version!r}")
    if not is_development(read_version(root)):
        raise ValueError(f"gmmlib holds {read_version(root)}, not a development version")
    if git(root, "tag", "--list", f"v{version}"):
        raise ValueError(f"the tag v{version} exists already")
    paths = ["gmmlib/__init__.py", "_config.yml", "CITATION.cff", "CHANGELOG.md"] + [
        str(p.relative_to(root)) for md in chapters(root) for p in (md, md.with_suffix(".ipynb"))
        if p.exists()]
    if git(root, "status", "--porcelain", "--", *paths):
        raise ValueError("commit or set aside the changes to " + " ".join(paths))
    date, branch = date or datetime.date.today().isoformat(), read_repository(root)[1]

    def commit(message: str) -> str:
        git(root, "add", "--", *paths)
        git(root, "commit", "-q", "-m", message, "--", *paths)
        return git(root, "rev-parse", "HEAD")

    def notes(match: re.Match) -> str:
        body = re.sub(r"^### Errata\n\s*(?=^### |\Z)", "", match.group(1), flags=re.M)
        if not re.search(r"^\s*[-*] ", body, re.M):
            raise ValueError("CHANGELOG.md: `## Unreleased` lists no change: say what it changes")
        return f"## {version} — {date}\n{body.rstrip()}\n\n"

    _set_edition(root, version, f"v{version}", date)
    _edit(root, "CHANGELOG.md", r"^## Unreleased[^\n]*\n(.*?)(?=^## |\Z)", notes, re.S)
    released = commit(f"Release {version}: setup cells and launch buttons at v{version}")
    _set_edition(root, next_version, "main" if branch.startswith("v") else branch, None)
    _edit(root, "CHANGELOG.md", r"^(?=## )", "## Unreleased\n\n")
    return released, commit(f"Start {next_version}: setup cells and launch buttons on main")


def pending(root: Path, before: str, after: str) -> tuple[str, str] | None:
    """``(version, commit)``: the newest final version pushed in ``before..after``, or None."""
    known = set(before or "0") != {"0"} and subprocess.run(
        ["git", "merge-base", "--is-ancestor", before, after], cwd=root,
        capture_output=True).returncode == 0
    span = f"{before}..{after}" if known else f"{after}~1..{after}"
    for commit in git(root, "rev-list", "--first-parent", span, check=False).split() or [after]:
        found = re.search(VERSION, git(root, "show", f"{commit}:gmmlib/__init__.py",
                                        check=False), re.M)
        if found and re.fullmatch(r"\d+\.\d+\.\d+", found[1]):
            tagged = git(root, "rev-list", "-n", "1", f"v{found[1]}", check=False)
            commit = git(root, "rev-parse", commit)
            if tagged and tagged != commit:
                print(f"v{found[1]} exists at {tagged[:12]}, not {commit[:12]}", file=sys.stderr)
                return None
            return found[1], commit
    return None


def main(argv: list[str]) -> int:
    """``sync [--check]``, ``release X.Y.Z [--next V] [--date D]``, ``release --pending B A``."""
    parser = argparse.ArgumentParser(prog="python -m bookkit", description=main.__doc__)
    parser.add_argument("command", choices=["sync", "release"])
    parser.add_argument("version", nargs="?")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--next", dest="next_version")
    parser.add_argument("--date")
    parser.add_argument("--pending", nargs=2, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--root", type=Path, default=None,
                        help="the book's folder (default: found from the working directory)")
    args = parser.parse_args(argv)
    try:
        args.root = _root(args.root)
        if args.command == "sync":
            problems = check(args.root) if args.check else sync(args.root)
            for path, why in problems:
                print(f"{path.relative_to(args.root)}: {why if args.check else 'rewritten'}")
            done = ("canonical" if not problems else "run `make sync`") if args.check \
                else f"{len(problems)} rewritten"
            print(f"setup cells of {len(chapters(args.root))} chapters: {done}")
            return 1 if problems and args.check else 0
        if args.pending:
            found = pending(args.root, *args.pending)
            if found:
                print(f"version={found[0]}\ncommit={found[1]}")
            return 0
        released, developed = release(args.root, args.version or "", args.next_version, args.date)
    except (ValueError, RuntimeError) as err:
        print(f"{args.command}: {err}", file=sys.stderr)
        return 1
    print(f"Release commit {released[:12]} carries {args.version}, {developed[:12]} starts the next"
          " version: check them, run `make test`, push main (the workflow tags and publishes).")
    return 0
