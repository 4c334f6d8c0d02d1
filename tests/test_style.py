"""House rules that keep the chapters readable (CONTRIBUTING.md lists them).

No code cell over 40 lines, no empty cell, no code line wider than the page, check cells
folded in the HTML, the last cell prints the chapter's ledger summary, notebook code passes
the linter, seeds come from gmmlib.seeding, and every Makefile target is defined once.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "book").glob("*.ipynb"))
MAX_CELL_LINES = 40
MAX_LINE = 100


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _code(path: Path) -> list[tuple[int, str, set[str]]]:
    return [(i, "".join(c["source"]), set(c.get("metadata", {}).get("tags", [])))
            for i, c in enumerate(_cells(path)) if c["cell_type"] == "code"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_code_cell_over_40_lines(path):
    long = [(i, len(src.splitlines())) for i, src, _ in _code(path) if len(src.splitlines()) > MAX_CELL_LINES]
    assert not long, f"{path.name}: cells (index, lines) over {MAX_CELL_LINES} lines: {long}; split them"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_empty_cell(path):
    empty = [i for i, c in enumerate(_cells(path)) if not "".join(c["source"]).strip()]
    assert not empty, f"{path.name}: empty cells {empty}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_code_lines_fit_the_page(path):
    wide = [(i, n + 1) for i, src, tags in _code(path) if "remove-cell" not in tags
            for n, line in enumerate(src.splitlines()) if len(line) > MAX_LINE]
    assert not wide, f"{path.name}: (cell, line) wider than {MAX_LINE} characters: {wide}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_last_cell_prints_the_ledger_summary(path):
    code = _code(path)
    assert code and "print(ledger.summary())" in code[-1][1], (
        f"{path.name}: the last code cell must print(ledger.summary())")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_check_cells_fold_away(path):
    bare = [i for i, src, tags in _code(path)
            if re.search(r"^ledger\.(close|within_se|below|above)\(", src, re.M)
            and not re.search(r"^(fig|ax|plt)\b|plt\.show\(\)", src, re.M)
            and not tags & {"hide-input", "remove-input", "remove-cell"}]
    assert not bare, f"{path.name}: check cells {bare} should carry the hide-input tag"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_one_seed_convention(path):
    sources = "\n".join(src for _, src, tags in _code(path) if "remove-cell" not in tags)
    assert re.search(r"Seeds\(chapter=\d+\)", sources), f"{path.name}: no Seeds(chapter=N)"
    typed = re.findall(r"default_rng\(\s*\d|manual_seed\(\s*\d|\bSEED\w*\s*=\s*\d", sources)
    assert not typed, f"{path.name}: typed seeds {typed}; use seeds.rng(name) / seeds.int(name)"


def _strip_magics(src: str) -> str:
    """The cell's source with IPython magics (``%pip``, ``!ls``) replaced by ``pass``, indentation kept."""
    return "\n".join(line[:len(line) - len(line.lstrip())] + "pass  # magic"
                     if line.lstrip().startswith(("%", "!")) else line for line in src.splitlines())


def _joins_statements(src: str) -> bool:
    """True when a ``;`` token (not one inside a string or comment) is followed by more code."""
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(_strip_magics(src) + "\n").readline)
              if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT)]
    return any(t.type == tokenize.OP and t.string == ";" and nxt.type not in (tokenize.NEWLINE, tokenize.ENDMARKER)
               for t, nxt in zip(tokens, tokens[1:]))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_global_and_no_semicolons(path):
    bad = [i for i, src, _ in _code(path) if re.search(r"^\s*global\s", src, re.M) or _joins_statements(src)]
    assert not bad, f"{path.name}: cells {bad} use `global` or join statements with `;`"


def test_the_semicolon_rule_reads_tokens_not_text():
    assert _joins_statements("a = 1; b = 2")
    assert not _joins_statements('print("a; b")\nx = 1  # c; d')
    assert not _joins_statements("plt.plot([1]);")


def test_notebook_code_passes_the_linter(tmp_path):
    for path in NOTEBOOKS:
        lines = []
        for i, src, _ in _code(path):
            if src.startswith("# Run this chapter:"):  # the generated setup cell (tests/test_book.py checks it)
                continue
            lines.append(f"# cell {i}\n{_strip_magics(src)}\n")
        (tmp_path / f"{path.stem}.py").write_text("\n".join(lines), encoding="utf-8")
    # E402/F811: cells import and redefine as a chapter goes; B018: a cell's last expression is its display.
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--config", str(ROOT / "pyproject.toml"),
         "--extend-ignore", "E402,E501,F811,B018", str(tmp_path)],
        capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_make_target_is_defined_once():
    result = subprocess.run(["make", "-n", "-f", str(ROOT / "Makefile"), "help"], cwd=ROOT,
                            capture_output=True, text=True)
    assert "overriding recipe" not in result.stderr and "ignoring old recipe" not in result.stderr, result.stderr
    targets = re.findall(r"^([a-zA-Z_-]+):", (ROOT / "Makefile").read_text(), re.M)
    dupes = sorted({t for t in targets if targets.count(t) > 1})
    assert not dupes, f"Makefile defines these targets more than once: {dupes}"
