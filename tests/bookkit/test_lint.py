"""The whole tree passes the linter configured in pyproject.toml: ``ruff check .``, the notebooks'
setup cells included (pre-commit runs the same)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_ruff_is_clean():
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _functions(folder: str):
    import ast

    for path in sorted((ROOT / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield path, node


def test_no_function_takes_more_than_eight_positional_arguments():
    """A function with more arguments than that takes a small dataclass instead."""
    import ast

    many = []
    for folder in ("gmmlib", "bookkit", "assignments"):
        for path, node in _functions(folder):
            if isinstance(node, ast.ClassDef):
                continue
            args = node.args.posonlyargs + node.args.args
            n = len(args) - (bool(args) and args[0].arg in ("self", "cls"))
            if n > 8:
                many.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({n})")
    assert not many, many


def test_the_ledger_class_stays_small():
    """Each kind of check is a small class of gmmlib.runtime.comparisons; the Ledger only runs
    them."""
    import ast

    (node,) = [n for p, n in _functions("gmmlib")
               if isinstance(n, ast.ClassDef) and n.name == "Ledger"]
    assert node.end_lineno - node.lineno + 1 <= 250
