#!/usr/bin/env python3
"""Release an edition of the book: ``make release VERSION=X.Y.Z``.

``main`` always carries a development version (``0.3.0.dev0``): its setup cells install gmmlib
from the branch ``main`` and the site says "development version". A release is two commits,
made here on the current branch (nothing is tagged or pushed):

1. **the release commit** ``Release X.Y.Z``: ``__version__ = "X.Y.Z"`` in
   ``gmmlib/__init__.py``; ``repository.branch`` in ``_config.yml`` (the launch buttons'
   branch) set to the tag ``vX.Y.Z``; every chapter's setup cell rewritten to install
   ``gmmlib[book]`` at ``vX.Y.Z`` (``scripts/sync_setup_cells.py``); CHANGELOG.md's
   ``## Unreleased`` section moved under ``## X.Y.Z — <today>``; ``CITATION.cff``'s
   ``version`` and ``date-released``;
2. **the development commit** ``Start <next>``: the next development version (by default
   the next minor one, ``X.(Y+1).0.dev0``, because an edition is a round of work, one a
   semester at most; ``--next X.Y.(Z+1).dev0`` for a corrections-only follow-up), the branch
   back to ``main``, the setup cells back to ``main``, a fresh empty ``## Unreleased`` section
   and ``CITATION.cff`` without a release date.

Then push ``main``: the workflow (``.github/workflows/book.yml``, job ``release``) finds the
commit that carries the final version ``X.Y.Z`` among the pushed commits, builds the book from
it, creates the tag ``vX.Y.Z`` at that commit and the GitHub release with the HTML, the PDF and
the ledger (``python scripts/release.py --pending BEFORE AFTER`` is how it finds the commit).

The files this touches must have no uncommitted change, and the tag must not exist yet.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FINAL = re.compile(r"\d+\.\d+\.\d+")
DEV = re.compile(r"(\d+)\.(\d+)\.(\d+)\.dev(\d+)")
UNRELEASED = "## Unreleased"
PLACEHOLDERS = (
    "What changed since the last edition (the release moves this section under the version).",
    "Errors of earlier editions corrected here: the page, the wrong statement, the correction\n"
    "and the issue that reported it.",
)
UNRELEASED_TEMPLATE = f"""## Unreleased

{PLACEHOLDERS[0]}

### Errata

{PLACEHOLDERS[1]}

"""
# the files a release edits (the chapters are added: book/NN_*.md and their .ipynb)
EDITED = ["gmmlib/__init__.py", "_config.yml", "CITATION.cff", "CHANGELOG.md"]


def _sync_module():
    spec = importlib.util.spec_from_file_location(
        "sync_setup_cells", Path(__file__).resolve().parent / "sync_setup_cells.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def git(root: Path, *args: str, check: bool = True) -> str:
    run = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    if check and run.returncode:
        raise RuntimeError(f"git {' '.join(args)} failed:\n{run.stderr.strip()}")
    return run.stdout.strip()


def next_development(version: str, step: str = "minor") -> str:
    """The development version after the release ``version``: ``X.(Y+1).0.dev0`` (``minor``)
    or ``X.Y.(Z+1).dev0`` (``patch``)."""
    if not FINAL.fullmatch(version):
        raise ValueError(f"version: expected X.Y.Z, got {version!r}")
    x, y, z = map(int, version.split("."))
    if step == "minor":
        return f"{x}.{y + 1}.0.dev0"
    if step == "patch":
        return f"{x}.{y}.{z + 1}.dev0"
    raise ValueError(f"step: expected 'minor' or 'patch', got {step!r}")


# ------------------------------------------------------------------------- the file edits
def set_version(root: Path, version: str) -> None:
    path = root / "gmmlib" / "__init__.py"
    text, n = re.subn(r'^__version__ = "[^"]*"', f'__version__ = "{version}"',
                      path.read_text(encoding="utf-8"), count=1, flags=re.M)
    if n != 1:
        raise ValueError(f"{path}: no `__version__ = \"...\"` line")
    path.write_text(text, encoding="utf-8")


def set_branch(root: Path, branch: str) -> None:
    """``repository.branch`` in ``_config.yml`` (a text edit: the comments stay)."""
    path = root / "_config.yml"
    text = path.read_text(encoding="utf-8")
    block = re.search(r"^repository:\n((?:[ \t]+.*\n|\s*\n)*)", text, re.M)
    if not block or not re.search(r"^\s+branch:", block.group(1), re.M):
        raise ValueError(f"{path}: no repository.branch")
    body = re.sub(r"^(\s+branch:\s*).*$", lambda m: m.group(1) + branch, block.group(1),
                  count=1, flags=re.M)
    path.write_text(text[:block.start(1)] + body + text[block.end(1):], encoding="utf-8")


def set_citation(root: Path, version: str, date: str | None) -> None:
    """``version`` and ``date-released`` (removed when ``date`` is None) in ``CITATION.cff``."""
    path = root / "CITATION.cff"
    lines = [line for line in path.read_text(encoding="utf-8").splitlines()
             if not line.startswith("date-released:")]
    out = []
    for line in lines:
        if line.startswith("version:"):
            out.append(f"version: {version}")
            if date:
                out.append(f'date-released: "{date}"')
        else:
            out.append(line)
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


def release_changelog(root: Path, version: str, date: str) -> None:
    """Rename ``## Unreleased`` to ``## <version> — <date>`` (it must say something)."""
    path = root / "CHANGELOG.md"
    text = path.read_text(encoding="utf-8")
    match = re.search(rf"^{UNRELEASED}[^\n]*\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    if not match:
        raise ValueError(f"{path}: no `{UNRELEASED}` section to release")
    body = match.group(1)
    # the template's placeholder sentences do not go into the edition's entry
    for placeholder in PLACEHOLDERS:
        body = body.replace(placeholder + "\n", "")
    body = re.sub(r"^### Errata\n\s*(?=^### |\Z)", "", body, flags=re.M)
    if not re.search(r"^\s*[-*] ", body, re.M):
        raise ValueError(f"{path}: the `{UNRELEASED}` section lists no change: say what the "
                         "edition changes before releasing it")
    entry = f"## {version} — {date}\n{body.rstrip()}\n\n"
    path.write_text(text[:match.start()] + entry + text[match.end():], encoding="utf-8")


def open_changelog(root: Path) -> None:
    """Put a fresh, empty ``## Unreleased`` section above the newest entry."""
    path = root / "CHANGELOG.md"
    text = path.read_text(encoding="utf-8")
    first = re.search(r"^## ", text, re.M)
    at = first.start() if first else len(text)
    path.write_text(text[:at] + UNRELEASED_TEMPLATE + text[at:], encoding="utf-8")


def _chapters(root: Path) -> list[str]:
    names = []
    for md in sorted((root / "book").glob("[0-9][0-9]_*.md")):
        names.append(str(md.relative_to(root)))
        if md.with_suffix(".ipynb").exists():
            names.append(str(md.with_suffix(".ipynb").relative_to(root)))
    return names


def _commit(root: Path, paths: list[str], message: str) -> str:
    git(root, "add", "--", *paths)
    git(root, "commit", "-q", "-m", message, "--", *paths)
    return git(root, "rev-parse", "HEAD")


def release(root: Path, version: str, *, next_version: str | None = None,
            date: str | None = None) -> tuple[str, str]:
    """Make the release commit and the development commit; return their shas."""
    sync = _sync_module()
    if not FINAL.fullmatch(version):
        raise ValueError(f"VERSION: expected X.Y.Z (for example 0.3.0), got {version!r}")
    current = sync.read_version(root)
    if not sync.is_development(current):
        raise ValueError(f"gmmlib/__init__.py holds {current}, not a development version: "
                         "is a release half-done?")
    next_version = next_version or next_development(version)
    if not DEV.fullmatch(next_version):
        raise ValueError(f"--next: expected X.Y.Z.devN, got {next_version!r}")
    tag = f"v{version}"
    if git(root, "tag", "--list", tag):
        raise ValueError(f"the tag {tag} exists already")
    paths = EDITED + _chapters(root)
    dirty = git(root, "status", "--porcelain", "--", *paths)
    if dirty:
        raise ValueError("commit or set aside these changes first:\n" + dirty)
    date = date or dt.date.today().isoformat()
    branch = sync.read_repository(root)[1]

    set_version(root, version)
    set_branch(root, tag)
    set_citation(root, version, date)
    release_changelog(root, version, date)
    sync.sync(root)
    released = _commit(root, paths, f"Release {version}: the edition {tag} (setup cells and "
                                    f"launch buttons at {tag})")

    set_version(root, next_version)
    set_branch(root, branch if not branch.startswith("v") else "main")
    set_citation(root, next_version, None)
    open_changelog(root)
    sync.sync(root)
    developed = _commit(root, paths, f"Start {next_version} (setup cells and launch buttons "
                                     "back on main)")
    return released, developed


# --------------------------------------------------------------- what the workflow releases
def version_at(root: Path, commit: str) -> str:
    text = git(root, "show", f"{commit}:gmmlib/__init__.py")
    match = re.search(r'^__version__ = "([^"]+)"', text, re.M)
    return match.group(1) if match else ""


def pending(root: Path, before: str, after: str) -> tuple[str, str] | None:
    """``(version, commit)`` of the newest final version among the commits ``before..after``
    (first-parent history), at the last commit that carries it; None if there is none or its
    tag already points elsewhere. A tag at that very commit counts as pending, so that a re-run
    of the workflow replaces the release's assets."""
    known = bool(before) and set(before) != {"0"} and subprocess.run(
        ["git", "merge-base", "--is-ancestor", before, after], cwd=root,
        capture_output=True).returncode == 0
    span = f"{before}..{after}" if known else f"{after}~1..{after}"
    commits = git(root, "rev-list", "--first-parent", span, check=False).split() or [after]
    for commit in commits:  # newest first
        version = version_at(root, commit)
        if not FINAL.fullmatch(version):
            continue
        tagged = git(root, "rev-list", "-n", "1", f"v{version}", check=False)
        if tagged and tagged != git(root, "rev-parse", commit):
            print(f"v{version} exists at {tagged[:12]}, not at {commit[:12]}: not releasing",
                  file=sys.stderr)
            return None
        return version, git(root, "rev-parse", commit)
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("version", nargs="?", help="the edition to release, X.Y.Z")
    parser.add_argument("--next", dest="next_version",
                        help="the development version after it (default X.(Y+1).0.dev0)")
    parser.add_argument("--date", help="the release date, YYYY-MM-DD (default today)")
    parser.add_argument("--pending", nargs=2, metavar=("BEFORE", "AFTER"),
                        help="print `version=X.Y.Z` and `commit=SHA` of the edition to release "
                             "among the commits BEFORE..AFTER (nothing if none)")
    parser.add_argument("--root", type=Path, default=ROOT)
    args = parser.parse_args(argv)
    if args.pending:
        found = pending(args.root, *args.pending)
        if found:
            print(f"version={found[0]}\ncommit={found[1]}")
        return 0
    if not args.version:
        parser.error("VERSION is required (make release VERSION=X.Y.Z)")
    try:
        released, developed = release(args.root, args.version, next_version=args.next_version,
                                      date=args.date)
    except (ValueError, RuntimeError) as err:
        print(f"release: {err}", file=sys.stderr)
        return 1
    print(f"Release commit {released[:12]} carries {args.version}; {developed[:12]} starts the "
          "next development version.\nCheck them (git show), run `make test`, then push main: "
          f"the workflow tags v{args.version} at {released[:12]} and publishes the release.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
