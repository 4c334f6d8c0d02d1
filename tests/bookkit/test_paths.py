"""Every repository path that the prose names exists: chapters, pages, README, CONTRIBUTING,
the requirements and the docstrings of gmmlib and bookkit.

A path is a run of path characters that starts with one of the repository's own folders
(``tests/``, ``gmmlib/``, ``book/`` …) or is one of its top-level files. Patterns that stand for
many files (``book/NN_name.md``, ``book/*.ipynb``, ``_build/…``, which a build writes) are not
paths of the tree and are left out.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("tests", "gmmlib", "bookkit", "book", "assignments", "benchmarks", "binder",
           ".github", ".ci", "_static")
FILES = ("requirements.txt", "constraints.txt", "pyproject.toml", "_config.yml", "_toc.yml",
         "references.bib", "CONTRIBUTING.md", "CHANGELOG.md", "CITATION.cff", "Makefile")
PATH = re.compile(r"(?<![\w./-])((?:%s)/[\w./*<>{}-]*[\w*>}]|(?:%s))(?![\w/-])"
                  % ("|".join(map(re.escape, FOLDERS)), "|".join(map(re.escape, FILES))))
# any other relative path with a file suffix, quoted as code (``scripts/run.py``): a folder
# that is gone is not in FOLDERS
QUOTED = re.compile(r"``?([\w.-]+/[\w./-]*\.[a-z]{2,5})``?")
PLACEHOLDER = re.compile(r"NN|[*<>{}]|X\.Y|_name\b|\.\.\.|/[A-Z]{2,}\b")


def prose_files() -> list[Path]:
    """The texts a reader or contributor reads for where things are."""
    found = [ROOT / name for name in ("README.md", "CONTRIBUTING.md", "requirements.txt")]
    found += sorted((ROOT / "book").glob("*.md"))
    found += sorted((ROOT / "gmmlib").rglob("*.py")) + sorted((ROOT / "bookkit").rglob("*.py"))
    return found


def named_paths(text: str) -> set[str]:
    """The repository paths ``text`` names, placeholders left out."""
    found = PATH.findall(text) + QUOTED.findall(text)
    return {p.rstrip(".") for p in found
            if not PLACEHOLDER.search(p) and not p.startswith(("_build/", ".venv/"))}


def exists(path: str) -> bool:
    """The file or folder, or a document or module named without its suffix (``book/intro``)."""
    return any((ROOT / (path + suffix)).exists() for suffix in ("", ".md", ".py"))


def test_the_pattern_finds_paths_and_leaves_placeholders():
    text = ("see `tests/gmmlib/test_limits.py`, book/intro.md and CONTRIBUTING.md; "
            "not book/NN_name.md, "
            "book/*.ipynb, _build/html or mytests/x.py; but `scripts/run.py`")
    assert named_paths(text) == {"tests/gmmlib/test_limits.py", "book/intro.md", "CONTRIBUTING.md",
                                "scripts/run.py"}
    assert exists("book/intro") and exists("tests/gmmlib/test_limits")
    assert not exists("tests/gone.py")


@pytest.mark.parametrize("path", prose_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_named_path_exists(path):
    missing = sorted(p for p in named_paths(path.read_text(encoding="utf-8"))
                     if not exists(p))
    assert not missing, f"{path.relative_to(ROOT)} names paths that do not exist: {missing}"
