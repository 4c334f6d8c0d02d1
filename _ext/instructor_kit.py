"""Sphinx extension: the generated tables of the "For instructors" page (book/instructors.md).

``{chapter-plan}``
    One row per chapter, in the order of the table of contents: its prerequisites (the chapters
    its "**Prerequisites**" paragraph references), its estimated reading time, how many
    lectures it makes, and how long its code ran in the build that made the page (myst-nb's
    execution data, the numbers of the execution-status appendix). The reading time is
    computed from the chapter's source: words of prose at :data:`WORDS_PER_MINUTE`, plus
    :data:`MINUTES_PER_EQUATION` per displayed equation and :data:`CODE_LINES_PER_MINUTE` for
    the code shown in the page (cells whose input is removed or folded do not count). A chapter
    of up to :data:`MINUTES_PER_LECTURE` minutes of reading makes one lecture, longer ones two.
``{reading-rates}``
    The sentence that states those rates (so that the page never types them).
``{homework-exercises}``
    The book's exercises grouped by the kind their title gives (``Warm-up (★)``,
    ``Derivation (★★)``, ``Computation (★★)``, ``Open problem (★★★)``): warm-ups for class,
    derivations and computations for homework, open problems for projects; linked.

Everything is computed when the page is built; nothing is typed.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import make_refnode

from doctables import exercise_item, exercises, register_generated

WORDS_PER_MINUTE = 120        # careful reading of mathematical prose
MINUTES_PER_EQUATION = 1.0    # a displayed equation is read, not skimmed
CODE_LINES_PER_MINUTE = 15    # code shown in the page
MINUTES_PER_LECTURE = 60      # reading time that one 90-minute lecture covers
KINDS = [
    ("Warm-up", "In class or as a self-check (★)"),
    ("Derivation", "Homework: derivations (★★)"),
    ("Computation", "Homework: computations, run in the chapter's notebook (★★)"),
    ("Open problem", "Projects (★★★)"),
]
HIDDEN_TAGS = ("remove-cell", "remove-input", "hide-input", "hide-cell")


class ReadingRates(SphinxDirective):
    has_content = False

    def run(self) -> list[nodes.Node]:
        text = (f"Reading times assume {WORDS_PER_MINUTE} words of prose a minute, "
                f"{MINUTES_PER_EQUATION:g} minute per displayed equation and "
                f"{CODE_LINES_PER_MINUTE} lines of shown code a minute; a chapter of up to "
                f"{MINUTES_PER_LECTURE} minutes of reading makes one 90-minute lecture, a "
                "longer one two. They are computed from each chapter's source when the book "
                "is built, as are the run times, which come from the build's execution record "
                "(the execution-status appendix).")
        return [nodes.paragraph(text=text)]


# ------------------------------------------------------------------- reading the sources
def source_counts(text: str) -> dict[str, int]:
    """Words of prose, displayed equations and shown code lines of a MyST notebook source."""
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)  # jupytext front matter
    words = equations = code = 0
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith("```{code-cell}"):
            j = i + 1
            header: list[str] = []
            body: list[str] = []
            in_yaml = j < len(lines) and lines[j].strip() == "---"
            if in_yaml:
                j += 1
                while j < len(lines) and lines[j].strip() != "---":
                    header.append(lines[j])
                    j += 1
                j += 1
            while j < len(lines) and lines[j].startswith(":"):
                header.append(lines[j])
                j += 1
            while j < len(lines) and not lines[j].startswith("```"):
                body.append(lines[j])
                j += 1
            if not any(tag in "\n".join(header) for tag in HIDDEN_TAGS):
                code += sum(1 for b in body if b.strip())
            i = j + 1
            continue
        if stripped.startswith("$$") or stripped.startswith("```{math}"):
            equations += 1
            closer = "$$" if stripped.startswith("$$") else "```"
            if stripped.startswith("$$") and stripped.endswith("$$") and len(stripped) > 2:
                i += 1
                continue
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(closer) \
                    and not lines[i].strip().endswith(closer):
                i += 1
            i += 1
            continue
        if stripped.startswith(("```", ":::", "+++", "(")) or re.match(r"^:[\w-]+:", stripped):
            i += 1
            continue
        prose = re.sub(r"\$[^$]+\$", " x ", line)           # inline math: one word
        prose = re.sub(r"\{[\w:-]+\}`([^`]*)`", r"\1", prose)  # roles: their text
        words += len(re.findall(r"[^\W\d_][\w'’-]*", prose))
        i += 1
    return {"words": words, "equations": equations, "code_lines": code}


def reading_minutes(counts: dict[str, int]) -> float:
    return (counts["words"] / WORDS_PER_MINUTE + counts["equations"] * MINUTES_PER_EQUATION
            + counts["code_lines"] / CODE_LINES_PER_MINUTE)


def lectures(minutes: float) -> int:
    return 1 if minutes <= MINUTES_PER_LECTURE else 2


# ------------------------------------------------------------------------- rendering
def _chapters(env: Any) -> list[str]:
    order = env.toctree_includes.get(env.config.root_doc, [])
    return [d for d in order if re.match(r"\d\d_", d.split("/")[-1])]


def _number(env: Any, doc: str) -> str:
    numbers = env.toc_secnumbers.get(doc, {}).get("", ())
    return ".".join(map(str, numbers))


def _entry(*children: nodes.Node | str) -> nodes.entry:
    para = nodes.paragraph()
    for child in children:
        para += nodes.Text(child) if isinstance(child, str) else child
    return nodes.entry("", para)


def _table(header: list[str], rows: list[list[nodes.entry]], widths: list[int]) -> nodes.table:
    table = nodes.table(classes=["instructor-plan"])
    group = nodes.tgroup(cols=len(header))
    table += group
    for w in widths:
        group += nodes.colspec(colwidth=w)
    head = nodes.thead()
    row = nodes.row()
    for h in header:
        row += _entry(h)
    head += row
    group += head
    body = nodes.tbody()
    for cells in rows:
        row = nodes.row()
        for cell in cells:
            row += cell
        body += row
    group += body
    return table


def _labels(env: Any) -> dict[str, str]:
    """{label: chapter docname} for every label defined in a chapter's source."""
    found: dict[str, str] = {}
    for doc in _chapters(env):
        text = Path(env.doc2path(doc)).read_text(encoding="utf-8")
        for label in re.findall(r"^\s*(?::label:|name:)\s*([\w-]+)\s*$|^\(([\w-]+)\)=\s*$",
                                text, re.M):
            found.setdefault(label[0] or label[1], doc)
    return found


def _prerequisites(app: Sphinx, fromdoc: str, doc: str, text: str,
                   labels: dict[str, str]) -> list[nodes.Node]:
    """Links to the chapters that the chapter's **Prerequisites** paragraph references."""
    found = re.search(r"\*\*Prerequisites?[.:]?\*\*:?(.*?)(?:\n\s*\n|\Z)", text, re.S)
    if not found:
        return [nodes.Text("not stated")]
    refs = re.findall(r"\{(?:ref|numref|prf:ref|eq)\}`(?:[^`<]*<)?([\w-]+)>?`", found.group(1))
    docs = [labels[r] for r in refs if r in labels and labels[r] != doc]
    out: list[nodes.Node] = []
    for target in dict.fromkeys(docs):
        if out:
            out.append(nodes.Text(", "))
        number = _number(app.env, target)
        title = app.env.titles[target].astext() if target in app.env.titles else target
        out.append(make_refnode(app.builder, fromdoc, target, "",
                                nodes.Text(f"Ch. {number}" if number else title)))
    return out or [nodes.Text("background only (see the chapter)")]


def _plan(app: Sphinx, fromdoc: str) -> list[nodes.Node]:
    env = app.env
    rows = []
    total_read = total_run = 0.0
    total_lectures = 0
    labels = _labels(env)
    for doc in _chapters(env):
        text = Path(env.doc2path(doc)).read_text(encoding="utf-8")
        counts = source_counts(text)
        minutes = reading_minutes(counts)
        n_lectures = lectures(minutes)
        # myst-nb's execution record (NbMetadataCollector), as the execution-status page reads it
        exec_data = (getattr(env, "nb_metadata", {}) or {}).get(doc, {}).get("exec_data") or {}
        runtime = exec_data.get("runtime")
        run = f"{runtime:.0f} s" if isinstance(runtime, (int, float)) else "not executed"
        if exec_data and not exec_data.get("succeeded", True):
            run += " (failed)"
        total_read += minutes
        total_run += runtime if isinstance(runtime, (int, float)) else 0.0
        total_lectures += n_lectures
        title = env.titles[doc].astext() if doc in env.titles else doc
        number = _number(env, doc)
        link = make_refnode(app.builder, fromdoc, doc, "",
                            nodes.Text(f"{number} {title}".strip()))
        rows.append([
            _entry(link),
            _entry(*_prerequisites(app, fromdoc, doc, text, labels)),
            _entry(f"{math.ceil(minutes)} min ({counts['words']} words, "
                   f"{counts['equations']} equations, {counts['code_lines']} code lines)"),
            _entry(str(n_lectures)),
            _entry(run),
        ])
    rows.append([_entry(nodes.strong(text="The book")), _entry(""),
                 _entry(f"{math.ceil(total_read)} min"), _entry(str(total_lectures)),
                 _entry(f"{total_run:.0f} s")])
    header = ["Chapter", "Prerequisites", "Reading time", "Lectures", "Run time"]
    return [_table(header, rows, [30, 22, 28, 8, 12])]


def _kind(title: str) -> str:
    for kind, _ in KINDS:
        if title.startswith(kind):
            return kind
    return ""


def _homework(app: Sphinx, fromdoc: str) -> list[nodes.Node]:
    groups: dict[str, list[tuple[str, str, tuple[int, ...], str]]] = defaultdict(list)
    for entry in exercises(app.env):
        groups[_kind(entry[3])].append(entry)
    out: list[nodes.Node] = []
    for kind, heading in [*KINDS, ("", "Not yet classified (no kind in the title)")]:
        items = groups.get(kind, [])
        if not items:
            continue
        para = nodes.paragraph()
        para += nodes.strong(text=f"{heading}: {len(items)}")
        out.append(para)
        bullets = nodes.bullet_list()
        for entry in items:
            bullets += exercise_item(app, fromdoc, *entry)
        out.append(bullets)
    return out or [nodes.paragraph(text="The book has no exercises yet.")]


def setup(app: Sphinx) -> dict[str, Any]:
    register_generated(app, {"chapter-plan": ("plan", _plan), "homework-exercises": ("homework", _homework)})
    app.add_directive("reading-rates", ReadingRates)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
