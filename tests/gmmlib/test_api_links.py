"""gmmlib's docstrings cite the book through Sphinx roles, and every label they cite exists.

A label is written as the role that links it on the API page (``:prf:ref:`` for theorem-like blocks,
``:eq:`` for equations, ``:numref:`` for figures, ``:ref:`` for sections, exercises and boxes),
never as a raw slug. The labels are read from the chapters' sources: ``(label)=`` targets,
``:label:`` and ``:name:`` options, a figure cell's ``name:`` and ``$$ (label)`` equations. A label
no chapter defines fails here (and the strict build, ``-n``, fails too).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import gmmlib

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(gmmlib.__file__).parent
SOURCES = sorted(PACKAGE.rglob("*.py"))


def module_name(path: Path) -> str:
    """``gmmlib/lda/task.py`` -> ``gmmlib.lda.task``; a package's ``__init__`` is the package."""
    parts = ("gmmlib", *path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def source_id(path: Path) -> str:
    return str(path.relative_to(PACKAGE))
SLUG = re.compile(
    r"\b(?:thm|lem|prop|cor|def|rem|conj|eq|ch|sec|fig|box|ex|tab)-\d\d(?:-[a-z0-9]+)*\b"
)
ROLE = re.compile(r":(prf:ref|eq|math:numref|numref|ref):`(?:[^`<]*<)?([^`<>]+)>?`")
DIRECTIVE = re.compile(r"^(?:`{3,}|:{3,})\{([a-z:-]+)\}")
KIND_OF_ROLE = {
    "prf:ref": "prf",
    "eq": "eq",
    "math:numref": "eq",
    "numref": "target",
    "ref": "target",
}


def book_labels() -> dict[str, set[str]]:
    """The chapters' labels by kind: ``prf`` (theorem-like), ``eq`` (equations), ``target``."""
    labels: dict[str, set[str]] = {"prf": set(), "eq": set(), "target": set()}
    for path in sorted((ROOT / "book").glob("*.md")):
        directive = None
        for line in path.read_text().splitlines():
            opened = DIRECTIVE.match(line)
            if opened:
                directive = opened.group(1)
            if m := re.match(r"^\(([\w-]+)\)=\s*$", line):
                labels["target"].add(m.group(1))
            if m := re.search(r"\$\$\s*\(([\w-]+)\)\s*$", line):
                labels["eq"].add(m.group(1))
            if m := re.match(r"^\s*:label:\s*(\S+)", line):
                kind = (
                    "prf"
                    if (directive or "").startswith("prf:")
                    else "eq"
                    if directive == "math"
                    else "target"
                )
                labels[kind].add(m.group(1))
            if m := re.match(r"^\s*:?name:\s*(\S+)", line):
                labels["target"].add(m.group(1))
    return labels


LABELS = book_labels()


def docstrings(path: Path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield getattr(node, "name", path.stem), doc


def citations():
    for path in SOURCES:
        for where, doc in docstrings(path):
            for kind, label in ROLE.findall(doc):
                yield f"{module_name(path)}.{where}", kind, label


CITATIONS = sorted(set(citations()))


def test_the_chapters_define_labels_of_every_kind():
    assert all(len(v) > 10 for v in LABELS.values()), {k: len(v) for k, v in LABELS.items()}


def test_docstrings_cite_the_book():
    assert len({label for _, _, label in CITATIONS}) >= 50


@pytest.mark.parametrize(("where", "role", "label"), CITATIONS)
def test_every_cited_label_is_defined_with_its_kind(where, role, label):
    kind = KIND_OF_ROLE[role]
    assert label in LABELS[kind], (
        f"{where} cites {label!r} with :{role}:, but no chapter defines it as a {kind} label"
        + ("" if not any(label in v for v in LABELS.values()) else " (it is another kind)")
    )


@pytest.mark.parametrize("path", SOURCES, ids=source_id)
def test_no_docstring_cites_a_raw_slug(path):
    for where, doc in docstrings(path):
        raw = SLUG.findall(ROLE.sub("", doc))
        assert not raw, f"{path.stem}.{where} cites {raw} as raw slugs: write them as roles"


@pytest.mark.parametrize("path", SOURCES, ids=source_id)
def test_every_label_in_messages_and_comments_exists(path):
    everything = set().union(*LABELS.values())
    missing = sorted(set(SLUG.findall(ROLE.sub("", path.read_text()))) - everything)
    assert not missing, f"{path.name} names labels no chapter defines: {missing}"


def test_a_wrong_label_fails():
    """The near miss: a label one character off is not defined (the test can fail)."""
    _, role, label = CITATIONS[0]
    assert label[:-1] not in LABELS[KIND_OF_ROLE[role]]


PY_ROLE = re.compile(r":(func|meth|mod|attr):`~?([\w.]+)`")


def _resolves(module, target: str) -> bool:
    """Whether a Python cross-reference in ``module``'s docstrings finds its object, as Sphinx looks
    it up: an absolute ``gmmlib.`` path, a name of the module, or a method of one of its classes."""
    import importlib
    import inspect

    parts = target.split(".")
    if parts[0] == "gmmlib":
        for i in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:i]))
            except ImportError:
                continue
            for a in parts[i:]:
                obj = getattr(obj, a, None)
            return obj is not None
    obj = module
    for a in parts:
        obj = getattr(obj, a, None)
    if obj is not None:
        return True
    return len(parts) == 1 and any(
        hasattr(cls, target) for _, cls in inspect.getmembers(module, inspect.isclass))


@pytest.mark.parametrize("path", SOURCES, ids=source_id)
def test_python_cross_references_resolve(path):
    """``-n`` flags a :func:, :meth:, :mod: or :attr: target that is not there (a moved name)."""
    import importlib

    module = importlib.import_module(module_name(path))
    missing = sorted({t for _, t in PY_ROLE.findall(path.read_text()) if not _resolves(module, t)})
    assert not missing, f"{path.name} refers to {missing}, which do not exist"
