"""Reading order: what a first reading skips or has not reached yet is not needed.

Two rules of CONTRIBUTING.md, read in every chapter's MyST source ``book/NN_*.md``:

* An *optional* box (``Optional on first reading``, folded) may be skipped, so notation it
  introduces with "we write $X$ for ..." must not be used outside optional boxes: define it in
  the main text instead (``test_optional_boxes_define_no_notation_used_outside``).
* A *Check your understanding* admonition closes its section: its questions and answers may
  point back, never forward. A ``{eq}``, ``{prf:ref}``, ``{ref}`` or ``{numref}`` target in it that
  the same chapter defines further down is a forward reference
  (``test_check_your_understanding_points_only_back``). An exercise (``ex-…``) is exempt: pointing
  to the exercise that takes a question further uses nothing from it.

The notation rule reads only explicit definitions ("we write $X$ for", "write $X$ for"),
so it does not guess which symbol a sentence defines; a symbol of one character (a generic
letter such as $d$) is left to the reader.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ..conftest import chapter_sources

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = chapter_sources(ROOT)

#: where each kind of label is defined: ``(label)=``, ``:label: x``, ``:name: x``,
#: ``$$ (eq-…)`` and the ``name:`` of a figure in a cell's metadata
_DEFINITIONS = [
    re.compile(r"^\(([A-Za-z0-9_:-]+)\)=\s*$", re.M),
    re.compile(r"^:label:\s*([A-Za-z0-9_:-]+)\s*$", re.M),
    re.compile(r"^:name:\s*([A-Za-z0-9_:-]+)\s*$", re.M),
    re.compile(r"^\$\$\s*\(([A-Za-z0-9_:-]+)\)\s*$", re.M),
    re.compile(r"^\s+name:\s*([A-Za-z0-9_:-]+)\s*$", re.M),
]
#: ``{eq}`x```, ``{prf:ref}`x```, ``{numref}`x```, ``{ref}`x``` or ``{ref}`text <x>```
_REFERENCE = re.compile(r"\{(?:eq|prf:ref|ref|numref)\}`(?:[^`<]*<)?([A-Za-z0-9_:-]+)>?`")
_CHECK_START = re.compile(r"^(:{4,})\{admonition\} Check your understanding\s*$", re.M)
_OPTIONAL_START = re.compile(r"^(:{4,})\{admonition\} Optional on first reading", re.M)
_WE_WRITE = re.compile(
    r"\b[Ww]e write (\$[^$]+\$)(?:\s*\([^)]*\))? for\b|\bwrite (\$[^$]+\$) for\b")


def _blocks(text: str, start: re.Pattern) -> list[tuple[int, int]]:
    """``(begin, end)`` offsets of the colon-fenced admonitions that ``start`` opens."""
    spans = []
    for m in start.finditer(text):
        fence = m.group(1)
        close = re.compile(r"^" + re.escape(fence) + r"\s*$", re.M)
        end = close.search(text, m.end())
        spans.append((m.start(), end.end() if end else len(text)))
    return spans


def definitions(text: str) -> dict[str, int]:
    """Each label the chapter defines, with the offset of its first definition."""
    found: dict[str, int] = {}
    for pattern in _DEFINITIONS:
        for m in pattern.finditer(text):
            found.setdefault(m.group(1), m.start())
            found[m.group(1)] = min(found[m.group(1)], m.start())
    return found


def forward_references(text: str) -> list[str]:
    """References inside a "Check your understanding" box to a label defined further down."""
    defined = definitions(text)
    found = []
    for begin, end in _blocks(text, _CHECK_START):
        for m in _REFERENCE.finditer(text, begin, end):
            label = m.group(1)
            if label.startswith("ex-"):  # an exercise to go on to, not a definition used
                continue
            if label in defined and defined[label] > end:
                line = text.count("\n", 0, m.start()) + 1
                found.append(f"line {line}: {m.group(0)} (defined at line "
                             f"{text.count(chr(10), 0, defined[label]) + 1})")
    return found


def _normalised(math: str) -> str:
    return re.sub(r"\s+", "", math.strip("$"))


def notation_leaks(text: str) -> list[str]:
    """Symbols that an optional box introduces ("we write $X$ for") and the main text uses."""
    boxes = _blocks(text, _OPTIONAL_START)
    inside = lambda pos: any(b <= pos < e for b, e in boxes)  # noqa: E731
    outside_math = [(m.start(), _normalised(m.group(0)))
                    for m in re.finditer(r"\$[^$\n]+\$", text) if not inside(m.start())]
    found = []
    for begin, end in boxes:
        for m in _WE_WRITE.finditer(text, begin, end):
            symbol = _normalised(m.group(1) or m.group(2))
            if len(symbol) < 2:
                continue
            # an operator written after a generic matrix (Γ ⊕ 0, then A ⊕ 0): match its tail too
            tail = re.sub(r"^(?:\\[A-Za-z]+|[A-Za-z])", "", symbol)
            forms = [symbol] + ([tail] if len(tail) >= 3 and tail[0] == "\\" else [])
            uses = [pos for pos, math in outside_math if any(f in math for f in forms)]
            if uses:
                line = text.count("\n", 0, uses[0]) + 1
                found.append(f"{m.group(1) or m.group(2)} is defined in an optional box (line "
                             f"{text.count(chr(10), 0, m.start()) + 1}) and used at line {line}")
    return found


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_check_your_understanding_points_only_back(path):
    found = forward_references(path.read_text(encoding="utf-8"))
    assert not found, (f"{path.name}: a 'Check your understanding' box refers to what the "
                       "chapter defines later:\n" + "\n".join(found))


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_optional_boxes_define_no_notation_used_outside(path):
    found = notation_leaks(path.read_text(encoding="utf-8"))
    assert not found, (f"{path.name}: notation that a first reading skips:\n" + "\n".join(found))


def test_the_rules_catch_their_examples():
    """Each rule rejects the case it was written for, and passes the fixed version."""
    forward = ("::::{admonition} Check your understanding\n:class: dropdown check-understanding\n"
               "See {eq}`eq-later`.\n::::\n\n$$\nx\n$$ (eq-later)\n")
    assert forward_references(forward)
    back = "$$\nx\n$$ (eq-later)\n\n" + forward.split("\n\n$$")[0] + "\n"
    assert not forward_references(back)
    leak = ("::::{admonition} Optional on first reading: x\n:class: optional dropdown\n\n"
            "We write $\\Gamma\\oplus 0$ for the block matrix.\n::::\n\nThen $\\Gamma\\oplus 0$.\n")
    assert notation_leaks(leak)
    assert not notation_leaks(leak.replace("Then $\\Gamma\\oplus 0$.", "Then $\\Gamma$."))
