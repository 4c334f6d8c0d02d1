"""One symbol, one meaning: the reserved symbols of the notation page, read in every chapter.

``book/notation.md`` lists, in its section "One symbol, one meaning", the symbols that have a
single meaning throughout the book (δ the Dirac mass, ξ the noise level, g a test function, ...).
This test reads each chapter's MyST source ``book/NN_*.md`` and fails where one of them is
written in a form that the meaning excludes and that a regular expression can recognise: an
un-subscripted ``\\delta`` (a Dirac mass is always ``\\delta_z``), ``\\xi \\sim \\mathcal N(0, I)``
(the noise level is a number, not a random vector), ``g_j`` or ``g = ...`` (a test function is
neither indexed nor a number), ``\\sigma^2`` (σ is the logistic function), ``d\\nu`` (ν is a
standard deviation, not a law), ``G = \\nabla ...`` (G is a standard normal variable).

It cannot see every second meaning (``\\delta_k`` for a perturbation looks like a Dirac mass);
it catches the ones that have a shape. The patterns are the table ``RULES`` below, one entry per
symbol the page reserves, each with the reason a reader sees when it fails; the page and the
table must list the same symbols (``test_the_page_lists_the_checked_symbols``). To reserve a
symbol: add a row to the page's table and an entry here.

Where the patterns look:

* LaTeX patterns (``latex``) in the math of the Markdown cells (``$...$``, ``$$...$$`` and
  ``{math}`` blocks), after inline code spans are removed;
* Unicode patterns (``text``) in every cell, Markdown and code (ledger verdicts, comments and
  captions are read by the reader too).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ..conftest import chapter_sources, read_chapter

ROOT = Path(__file__).resolve().parents[2]
NOTATION = ROOT / "book" / "notation.md"
CHAPTERS = chapter_sources(ROOT)
#: Not a letter and not a backslash: the start of a one-letter symbol (not the g of \log).
_ALONE = r"(?<![A-Za-z\\])"

#: symbol as the page's table writes it -> (its one meaning, LaTeX patterns, Unicode patterns)
RULES: dict[str, tuple[str, list[str], list[str]]] = {
    r"$\delta$": (
        "the Dirac mass δ_z, always with its point as a subscript",
        [r"\\delta(?![_A-Za-z])"],                 # \delta N, \delta D, \delta\theta, \delta = …
        [r"δ(?![_₀-₉ₐₑₒₓₔₕₖₗₘₙₚₛₜᵢⱼ])"],            # δθ₀, δv₂₁, δ = … in verdicts and comments
    ),
    r"$\xi$": (
        "the noise level, a positive number (Z = X + ε, ε ~ N(0, ξ²I))",
        [r"\\xi\s*\\sim", r"\\xi_", r"\\xi\s*\\in\s*\\mathbb"],   # a random vector, an index
        [r"ξ\s*[~∼]", r"ξ_[A-Za-z0-9]"],
    ),
    "$g$": (
        "a test function, as in E[g(X)]",
        [_ALONE + r"g_[A-Za-z0-9{]", _ALONE + r"g'", _ALONE + r"g\s*=",
         _ALONE + r"g\((?:L|u|t)\)"],             # g_j, g', g = ‖VΓa‖², g(L), g(u)
        [],
    ),
    r"$\sigma$": (
        "the logistic function, never a standard deviation",
        [r"\\sigma\s*\^\s*\{?\s*2"],                # σ² as a variance
        [r"σ²"],
    ),
    r"$\nu$": (
        "the spread of a noisy component, ν² = γ² + ξ², never a law or a measure",
        [r"\\mathrm\s*d\s*\\nu\b", _ALONE + r"d\\nu\b", r"\\nu\s*\("],   # dν(y), ν(A)
        [r"dν\b"],
    ),
    "$G$": (
        "a standard normal variable or vector",
        [_ALONE + r"G\s*=\s*\\nabla", _ALONE + r"G\("],                   # a gradient, a function
        [],
    ),
    r"$\alpha$": (
        "the gates α_k(z) of a mixture; the Łojasiewicz exponent is ϑ",
        [r"1\s*-\s*2?\s*\\alpha(?![_A-Za-z])",            # (R − R*)^{1−α}, t^{−1/(1−2α)}
         r"\\alpha\s*\\in\s*\(\s*0",                         # α ∈ (0, ½]
         r"\\alpha\s*(?:=|<|\\le)\s*(?:\\frac|1/|10\^)"],   # α = ½, α < ½, α = 10^{-3}
        [r"α\s*=\s*(?:1e|0\.0|10)",                    # a significance level α = 1e-3
         r"1\s*[−-]\s*2?α(?![ₖⱼ₀-₉_(*])"],              # 1 − α, not 1 − αₖ
    ),
}

_CODE_SPAN = re.compile(r"`[^`\n]*`")
_MATH = re.compile(r"\$\$.+?\$\$|\$(?:[^$\n]|\n(?!\s*\n))+?\$|```\{math\}.+?```", re.S)


def page_symbols() -> list[str]:
    """The symbols in the first column of the page's table "One symbol, one meaning"."""
    text = NOTATION.read_text(encoding="utf-8")
    match = re.search(r"^## One symbol, one meaning.*?\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert match, f"{NOTATION.name} has no section '## One symbol, one meaning'"
    rows = [line for line in match.group(1).splitlines() if line.startswith("|")][2:]
    return [row.split("|")[1].strip() for row in rows]


def math_of(markdown: str) -> list[str]:
    """The math segments of a Markdown cell, inline code spans removed first."""
    return _MATH.findall(_CODE_SPAN.sub("", markdown))


def violations(path: Path) -> list[str]:
    """Each use of a reserved symbol in a form its meaning excludes: ``cell i: symbol: excerpt``."""
    found = []
    for i, cell in enumerate(read_chapter(path).cells):
        texts = [cell.source]
        caption = cell.metadata.get("mystnb", {}).get("figure", {}).get("caption")
        if caption:
            texts.append(caption)
        maths = math_of(cell.source) if cell.cell_type == "markdown" else []
        for symbol, (_, latex, text) in RULES.items():
            for where, patterns in ((maths, latex), (texts, text)):
                for segment in where:
                    for pattern in patterns:
                        for m in re.finditer(pattern, segment):
                            start, end = max(0, m.start() - 25), m.end() + 25
                            excerpt = segment[start:end].replace("\n", " ")
                            found.append(f"cell {i}: {symbol}: …{excerpt}…")
    return found


def test_the_page_lists_the_checked_symbols():
    listed = page_symbols()
    assert sorted(listed) == sorted(RULES), (
        f"{NOTATION.name}'s table 'One symbol, one meaning' lists {listed}, "
        "tests/book/test_notation.py "
        f"checks {sorted(RULES)}: reserve a symbol in both places")


@pytest.mark.parametrize("symbol", sorted(RULES))
def test_each_rule_catches_its_example(symbol):
    """Each pattern set rejects the second meaning it was written for (a rule that matches
    nothing would pass every chapter)."""
    examples = {
        r"$\delta$": (r"$\delta N = N_L - \mathbb E N_L$", "excess δθ₀"),
        r"$\xi$": (r"$\xi\sim\mathcal N(0,I)$", "ξ ~ N(0, I)"),
        "$g$": (r"$g = \|V\Gamma a\|^2$", None),
        r"$\sigma$": (r"variance $\sigma^2$", "σ² = 1"),
        r"$\nu$": (r"$\int f\,d\nu(y)$", None),
        "$G$": (r"$G = \nabla f(bA)$", None),
        r"$\alpha$": (r"$\|\nabla R\|\ge c(R - R^*)^{1-\alpha}$", "family-wise α = 1e-3"),
    }
    latex_example, text_example = examples[symbol]
    _, latex, text = RULES[symbol]
    assert any(re.search(p, s) for p in latex for s in math_of(latex_example)), symbol
    if text_example is not None:
        assert any(re.search(p, text_example) for p in text), symbol
    # and the one meaning passes
    allowed = {
        r"$\delta$": r"$\hat\mu_L = \frac1L\sum_i\delta_{z_i}$",
        r"$\xi$": r"$Z = X + \xi\varepsilon$",
        "$g$": r"$\mathbb E[(X - f^\star(Z))\,g(Z)] = 0$, $\log p$",
        r"$\sigma$": r"$\sigma(s_0 + s^\top x)$",
        r"$\nu$": r"$\nu^2 = \gamma^2 + \xi^2$, $S = \nu^2 I$",
        "$G$": r"$G\sim\mathcal N(0, I)$",
        r"$\alpha$": (r"$\alpha_k(z) = \operatorname{softmax}_k(\log\pi_k)$, "
                       r"$\alpha\to e_{k^\star}$"),
    }
    assert not any(re.search(p, s) for p in latex for s in math_of(allowed[symbol])), symbol


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_reserved_symbols_keep_their_meaning(path):
    found = violations(path)
    meanings = "; ".join(f"{s} is {m}" for s, (m, _, _) in RULES.items())
    assert not found, (
        f"{path.name}: {len(found)} uses of a reserved symbol with another meaning "
        f"(book/notation.md: {meanings}):\n" + "\n".join(found))


# ---------------------------------------------------------------------------------------------
# Symbols the page defines outside the reserved table: the dimension d (two uses, stated
# chapter by chapter), the Łojasiewicz exponent ϑ, Γ ⊕ 0, and the families E₁, E₂.

def _page_text() -> str:
    return NOTATION.read_text(encoding="utf-8")


def _row(symbol_start: str) -> str:
    """The page's table row whose first cell starts with ``symbol_start``."""
    rows = [line for line in _page_text().splitlines()
            if line.startswith("| " + symbol_start)]
    assert rows, f"{NOTATION.name} has no table row for {symbol_start}"
    return rows[0]


def _chapter_numbers(text: str) -> set[int]:
    """Chapter numbers named in ``text``: "Chapters 0 and 2", "Chapters 4–6", "Chapter 7"."""
    found: set[int] = set()
    for group in re.findall(r"Chapters? ([0-9][0-9–, and]*)", text):
        for a, b in re.findall(r"([0-9]+)(?:–([0-9]+))?", group):
            found.update(range(int(a), int(b or a) + 1))
    return found


def _labelled_chapters() -> set[int]:
    row = _row("$d$")
    match = re.search(r"In the labelled tasks \((.*?)\)", row)
    assert match, "the row of $d$ must say which chapters use it for the inputs of labelled tasks"
    return _chapter_numbers(match.group(1))


def test_the_page_says_how_each_chapter_uses_d():
    """Every chapter is named in the row of $d$, as a token dimension or an input dimension."""
    named = _chapter_numbers(_row("$d$"))
    numbers = {int(p.name[:2]) for p in CHAPTERS}
    assert numbers <= named, f"the row of $d$ in {NOTATION.name} names no use of d for the " \
        f"chapters {sorted(numbers - named)}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_tokens_in_d_plus_one_only_where_d_is_the_input_dimension(path):
    """A chapter whose tokens lie in R^{d+1} (or R^{d+q}) uses d for the inputs: the page must
    list it among the labelled tasks."""
    maths = [m for i, cell in enumerate(read_chapter(path).cells) if cell.cell_type == "markdown"
             for m in math_of(cell.source)]
    wider = [m for m in maths if re.search(r"\^\s*\{\s*d\s*\+\s*[1q]\s*\}", m)]
    if wider:
        assert int(path.name[:2]) in _labelled_chapters(), (
            f"{path.name} writes {wider[0]!r}: d is the input dimension there, which the row of "
            f"$d$ in {NOTATION.name} does not say")


def test_the_page_defines_the_unreserved_symbols_the_chapters_use():
    """Γ ⊕ 0, E₁ and E₂, and the Łojasiewicz exponent ϑ have rows on the page."""
    text = _page_text()
    for symbol in (r"$\Gamma\oplus 0$", "$E_1$, $E_2$", r"$\vartheta$"):
        assert "| " + symbol in text, f"{NOTATION.name} has no row for {symbol}"
    assert "Łojasiewicz" in _row(r"$\vartheta$")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_chapters_write_the_pages_forms(path):
    """The families are E₁, E₂ (not the paper's 𝓔₁, 𝓔₂); the Łojasiewicz exponent, where a
    chapter writes the inequality, is ϑ; ⊕ 0 is written after a matrix the page describes."""
    text = path.read_text(encoding="utf-8")
    assert not re.search(r"\\mathcal\s*\{?E\}?_\{?[12]", text), (
        f"{path.name} writes \\mathcal E_1 or E_2: the book's families are $E_1$, $E_2$")
    for line in text.splitlines():
        if re.search(r"\^\s*\{\s*1\s*-\s*\\?[a-z]+\s*\}", line) and "nabla" in line:
            assert r"1-\vartheta" in line.replace(" ", ""), (
                f"{path.name}: a Łojasiewicz inequality without ϑ: {line.strip()[:100]}")
