"""House rules that keep the chapters readable (CONTRIBUTING.md lists them).

They read each chapter's MyST source ``book/NN_*.md`` (through jupytext, as the build does):
no code cell over 40 lines, no empty cell, no code line over 79 characters (the page shows
about 77), no ``assert`` in shown code (the ledger checks), check cells folded in the HTML, the
last cell prints the chapter's ledger summary, chapter code passes the linter, seeds come from
gmmlib.runtime.seeding, no measured number typed into the prose (it is glued from the cell that
computed it), and every Makefile target is defined once.
"""

from __future__ import annotations

import io
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

from ..conftest import chapter_cells, chapter_sources, read_chapter

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = chapter_sources(ROOT)
MAX_CELL_LINES = 40
#: The widest code line of a shown cell: the page's code column holds about 77 characters at a
#: 1280-pixel window with the book's CSS (tests/book/test_browser.py measures it).
MAX_LINE = 79
#: Exact constants that may be typed into the prose, one per line: ``value  # reason``.
EXACT_NUMBERS = ROOT / "tests" / "exact_numbers.txt"


def _code(path: Path) -> list[tuple[int, str, set[str]]]:
    return chapter_cells(path, "code")


def _shown(tags: set[str]) -> bool:
    return not tags & {"remove-cell", "remove-input"}


def test_there_are_chapters():
    assert CHAPTERS, "book/ holds no chapter source book/NN_*.md"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_no_code_cell_over_40_lines(path):
    long = [
        (i, len(src.splitlines()))
        for i, src, _ in _code(path)
        if len(src.splitlines()) > MAX_CELL_LINES
    ]
    assert not long, (
        f"{path.name}: cells (index, lines) over {MAX_CELL_LINES} lines: {long}; split them"
    )


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_no_empty_cell(path):
    empty = [i for i, src, _ in chapter_cells(path) if not src.strip()]
    assert not empty, f"{path.name}: empty cells {empty}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_code_lines_fit_the_page(path):
    wide = [
        (i, n + 1, len(line))
        for i, src, tags in _code(path)
        if "remove-cell" not in tags
        for n, line in enumerate(src.splitlines())
        if len(line) > MAX_LINE
    ]
    assert not wide, (
        f"{path.name}: {len(wide)} code lines wider than {MAX_LINE} characters "
        f"(cell, line in cell, length): {wide}"
    )


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_no_assert_in_shown_code(path):
    found = []
    for i, src, tags in _code(path):
        if not _shown(tags):
            continue
        tokens = tokenize.generate_tokens(io.StringIO(_strip_magics(src) + "\n").readline)
        found += [
            (i, t.start[0]) for t in tokens if t.type == tokenize.NAME and t.string == "assert"
        ]
    assert not found, (
        f"{path.name}: `assert` in shown code (cell, line): {found}; a claim is checked "
        "through the ledger, a figure's size by slider_figure itself"
    )


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_last_cell_prints_the_ledger_summary(path):
    code = _code(path)
    assert code and "print(ledger.summary())" in code[-1][1], (
        f"{path.name}: the last code cell must print(ledger.summary())"
    )


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_check_cells_fold_away(path):
    bare = [
        i
        for i, src, tags in _code(path)
        if re.search(r"^ledger\.(close|within_se|below|above)\(", src, re.M)
        and not re.search(r"^(fig|ax|plt)\b|plt\.show\(\)", src, re.M)
        and not tags & {"hide-input", "remove-input", "remove-cell"}
    ]
    assert not bare, f"{path.name}: check cells {bare} should carry the hide-input tag"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_one_seed_convention(path):
    sources = "\n".join(src for _, src, tags in _code(path) if "remove-cell" not in tags)
    assert re.search(r"Seeds\(chapter=\d+\)", sources), f"{path.name}: no Seeds(chapter=N)"
    typed = re.findall(r"default_rng\(\s*\d|manual_seed\(\s*\d|\bSEED\w*\s*=\s*\d", sources)
    assert not typed, f"{path.name}: typed seeds {typed}; use seeds.rng(name) / seeds.int(name)"


def _strip_magics(src: str) -> str:
    """The cell's source with IPython magics (``%pip``, ``!ls``) replaced by ``pass``, indentation
    kept."""
    return "\n".join(
        line[: len(line) - len(line.lstrip())] + "pass  # magic"
        if line.lstrip().startswith(("%", "!"))
        else line
        for line in src.splitlines()
    )


def _joins_statements(src: str) -> bool:
    """True when a ``;`` token (not one inside a string or comment) is followed by more code."""
    tokens = [
        t
        for t in tokenize.generate_tokens(io.StringIO(_strip_magics(src) + "\n").readline)
        if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT)
    ]
    return any(
        t.type == tokenize.OP
        and t.string == ";"
        and nxt.type not in (tokenize.NEWLINE, tokenize.ENDMARKER)
        for t, nxt in zip(tokens, tokens[1:])
    )


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_no_global_and_no_semicolons(path):
    bad = [
        i
        for i, src, _ in _code(path)
        if re.search(r"^\s*global\s", src, re.M) or _joins_statements(src)
    ]
    assert not bad, f"{path.name}: cells {bad} use `global` or join statements with `;`"


def test_the_semicolon_rule_reads_tokens_not_text():
    assert _joins_statements("a = 1; b = 2")
    assert not _joins_statements('print("a; b")\nx = 1  # c; d')
    assert not _joins_statements("plt.plot([1]);")


def test_chapter_code_passes_the_linter(tmp_path):
    """Ruff on the code cells of each chapter's .md (one file per chapter, a comment per cell)."""
    for path in CHAPTERS:
        lines = []
        for i, src, _ in _code(path):
            # the generated setup cell (tests/book/test_book.py checks it)
            if src.startswith("# Run this chapter:"):
                continue
            lines.append(f"# cell {i}\n{_strip_magics(src)}\n")
        (tmp_path / f"{path.stem}.py").write_text("\n".join(lines), encoding="utf-8")
    # E402/F811: cells import and redefine as a chapter goes; B018: a cell's last expression is its
    # display.
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--no-cache",
            "--config",
            str(ROOT / "pyproject.toml"),
            "--extend-ignore",
            "E402,E501,F811,B018",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_make_target_is_defined_once():
    result = subprocess.run(
        ["make", "-n", "-f", str(ROOT / "Makefile"), "help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert (
        "overriding recipe" not in result.stderr and "ignoring old recipe" not in result.stderr
    ), result.stderr
    targets = re.findall(r"^([a-zA-Z_-]+):", (ROOT / "Makefile").read_text(), re.M)
    dupes = sorted({t for t in targets if targets.count(t) > 1})
    assert not dupes, f"Makefile defines these targets more than once: {dupes}"


# ---------------------------------------------------------------- numbers typed into the prose
#: A decimal with its exponent if any: 0.785, 12.3, 4.076e-4, 4.076\cdot 10^{-4}, 4.076 × 10⁻⁴.
NUMBER_RE = re.compile(
    r"(?<![\w.])(?P<mantissa>\d+\.\d+)(?![\d.]*\.\d)"
    r"(?P<exponent>[eE][-+−]?\d+|\s*(?:\\cdot|\\times|·|×)\s*10\^?\{?[-+−⁻]?[\d⁰¹²³⁴⁵⁶⁷⁸⁹]+\}?)?"
)
# : Numbers that name a numbered result of a paper or of the book, not a measurement ("Theorem
# 3.10").
REFERENCE_WORDS = re.compile(
    r"(?:Theorem|Proposition|Lemma|Corollary|Section|Sections|Figure|Figures|Fig\.|Eq\.|Equation|Remark|"
    r"Definition|Assumption|Example|Table|Chapter|Appendix|§|Algorithm|version|v)\s*~?$",
    re.I,
)
_SKIP = [
    re.compile(r"\{glue(?::\w+)?\}`[^`]*`"),  # glued numbers: computed, not typed
    re.compile(r"\{(?!math\})[\w:-]+\}`[^`]*`"),  # other roles: references, citations, labels
    re.compile(r"`[^`\n]*`"),  # inline code: settings and identifiers
    re.compile(
        r"^\s*:(?:label|name|class|tags|status|book|width|height|align|scale|figwidth|figclass|"
        r"nowrap|number|enumerated):.*$",
        re.M,
    ),  # directive options that are not prose
    re.compile(r"^\([\w-]+\)=\s*$", re.M),  # targets
    re.compile(r"<!--.*?-->", re.S),  # comments
    re.compile(r"\]\([^)]*\)"),  # link targets
    re.compile(r"https?://\S+"),
    # LaTeX commands: `\pm0.83` is a number after \pm
    re.compile(r"\\(?!cdot|times)[A-Za-z]+"),
]


def significant_digits(mantissa: str) -> int:
    """Significant digits of a decimal as typed: ``0.785`` 3, ``12.30`` 4, ``0.05`` 1."""
    return len(mantissa.replace(".", "").lstrip("0"))


def exact_numbers() -> dict[str, str]:
    """The allow-list: typed value -> why it is exact."""
    allowed = {}
    for n, line in enumerate(EXACT_NUMBERS.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        value, sep, reason = line.partition("#")
        assert sep and reason.strip(), f"tests/exact_numbers.txt line {n}: write `value  # reason`"
        allowed[value.strip()] = reason.strip()
    return allowed


def _blank(text: str, pattern: re.Pattern) -> str:
    """Replace every match by spaces of the same layout (newlines kept), so that positions stay
    put."""
    return pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def typed_numbers(text: str) -> list[tuple[int, str]]:
    """``(offset, number)`` of each measured-looking decimal in a piece of MyST prose."""
    # fenced blocks that are not directives (``` without {name}) are code
    for pattern in [re.compile(r"^(```+|~~~+)(?!\{)[^\n]*\n.*?^\1\s*$", re.M | re.S), *_SKIP]:
        text = _blank(text, pattern)
    found = []
    for m in NUMBER_RE.finditer(text):
        if significant_digits(m["mantissa"]) < 3:
            continue
        if REFERENCE_WORDS.search(text[max(0, m.start() - 20) : m.start()].rstrip()):
            continue
        found.append((m.start(), m.group(0).strip()))
    return found


def prose_numbers(path: Path) -> list[tuple[int, str, str]]:
    """``(line in the .md, number, where)`` for each number typed in a chapter's Markdown cells and
    captions."""
    raw = path.read_text(encoding="utf-8")
    allowed = exact_numbers()
    out, cursor = [], 0
    for cell in read_chapter(path).cells:
        start = raw.find(cell.source, cursor) if cell.source else -1
        if start < 0:
            start = cursor
        if cell.cell_type == "markdown":
            pieces = [(start, cell.source, "text")]
        else:
            caption = cell.metadata.get("mystnb", {}).get("figure", {}).get("caption", "")
            pieces = [(cursor, caption, "figure caption")] if caption else []
        for base, text, where in pieces:
            for offset, number in typed_numbers(text):
                mantissa = NUMBER_RE.match(number)["mantissa"]
                if mantissa in allowed:
                    continue
                if where == "text":
                    pos = base + offset
                else:  # a caption is folded YAML: find the number in the cell's header
                    pos = raw.find(mantissa, base, start if start > base else None)
                    pos = base if pos < 0 else pos
                out.append((raw.count("\n", 0, pos) + 1, number, where))
        cursor = start + len(cell.source)
    return out


def test_the_typed_number_rule():
    text = "the error is 0.785 and 12.3, or 4.076e-4 and $4.076\\cdot 10^{-4}$, 3.9268"
    found = typed_numbers(text)
    assert [n for _, n in found] == ["0.785", "12.3", "4.076e-4", "4.076\\cdot 10^{-4}", "3.9268"]
    assert all(text[i:].startswith(n) for i, n in found)
    # settings, two significant digits, integers, references, glue, code, labels: not measurements
    fine = (
        "step 0.6, tolerance 1e-2, L = 10^5, 0.05, 1.5, Theorem 3.10, Section 2.1.3, "
        "{glue:text}`err:.3g`, `atol=0.125`, {ref}`eq-1.25`, version 0.3.0\n:label: thm-01.234\n"
    )
    assert typed_numbers(fine) == []
    # prose options count
    assert [n for _, n in typed_numbers(":caption: a slope of 0.498\n")] == ["0.498"]
    assert [n for _, n in typed_numbers(r"attractors at $\pm0.8268$, $x\approx1.234$")] == [
        "0.8268",
        "1.234",
    ]
    assert significant_digits("0.100") == 3 and significant_digits("0.05") == 1


def test_exact_numbers_are_listed_with_a_reason():
    allowed = exact_numbers()
    for value in allowed:
        assert NUMBER_RE.fullmatch(value), f"tests/exact_numbers.txt: {value!r} is not a decimal"


def test_no_measured_number_typed_in_the_prose():
    """Every measured number in prose, captions, admonitions and solutions comes from the
    computation.

    A decimal with three or more significant digits typed into a chapter's Markdown (outside
    code, ``{glue:...}`` roles and labels) is taken for a measurement: glue it with
    ``gmmlib.runtime.glue(name, value)`` and ``{glue:text}`name:.3g```, or, when it is an exact
    constant, list it in tests/exact_numbers.txt with the reason.
    """
    report = []
    for path in CHAPTERS:
        found = prose_numbers(path)
        report += [f"  {path.name}:{line}: {number} ({where})" for line, number, where in found]
    counts = {}
    for line in report:
        name = line.split(":")[0].strip()
        counts[name] = counts.get(name, 0) + 1
    assert not report, (
        f"{len(report)} measured numbers typed into the chapters' Markdown "
        f"(per chapter: {counts}); glue them or list exact constants in "
        "tests/exact_numbers.txt:\n" + "\n".join(report)
    )


#: The opening's two reading aids, in the one form every chapter uses: a bold label on its own
#: line, then a list of what the reader will be able to do (lower-case items, each ending in ";"
#: but the last, which ends in "."); and a paragraph that opens with the bold label and a full
#: stop, then a sentence.
GOALS = re.compile(r"^\*\*Learning goals\*\*\n\n((?:- .*\n(?:  .*\n)*)+)", re.M)
PREREQUISITES = re.compile(r"^\*\*Prerequisites\.\*\* [A-Z{$]", re.M)
ANY_LABEL = re.compile(r"\*\*(Learning goals|Prerequisites)\b[^*]*\*\*[^\n]*", re.I)


def _opening_problems(text: str) -> list[str]:
    problems = [f"not in the house form: {m.group(0)[:60]!r}" for m in ANY_LABEL.finditer(text)
                if not (GOALS.match(text, m.start()) or PREREQUISITES.match(text, m.start()))]
    goals = GOALS.search(text)
    if goals is None:
        problems.append("no '**Learning goals**' line followed by a blank line and a list")
    else:
        items = [" ".join(i.split()) for i in re.split(r"^- ", goals.group(1), flags=re.M)
                 if i.strip()]
        ends = [";"] * (len(items) - 1) + ["."]
        problems += [f"learning goal {i} should start in lower case and end in {end!r}: "
                     f"{item[:40]!r}…{item[-10:]!r}"
                     for i, (item, end) in enumerate(zip(items, ends), start=1)
                     if not (item[0].islower() or item[0] in "${") or not item.endswith(end)]
    if len(PREREQUISITES.findall(text)) != 1:
        problems.append("not one paragraph opening '**Prerequisites.** ' and a sentence")
    return problems


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_learning_goals_and_prerequisites_have_one_form(path):
    """Every chapter opens its learning goals and prerequisites in the same form (issue 36)."""
    text = "\n\n".join(s for _, s, _ in chapter_cells(path, "markdown")) + "\n"
    assert not _opening_problems(text), f"{path.name}: " + "; ".join(_opening_problems(text))


def test_the_opening_rule_catches_the_other_forms():
    good = ("**Learning goals**\n\n- derive it;\n- check\n  it.\n\n**Prerequisites.** The "
            "limit of {ref}`ch-01`.\n")
    assert _opening_problems(good) == []
    for bad in (good.replace("**Learning goals**\n", "**Learning goals.** After this you can\n"),
                good.replace("**Prerequisites.** The", "**Prerequisites**: the"),
                good.replace("- derive it;", "- Derive it."),
                good.replace("**Prerequisites.** The", "The")):
        assert _opening_problems(bad), bad
