"""The generated lists: figures, exercises, and the instructors' chapter plan and homework."""

import math
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import jupytext
from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.nodes import make_refnode

from bookkit import internals, toc
from bookkit.execution import students_edition
from bookkit.pages import (borrowed, exercise_item, exercises, number, page_link, para,
                           register_generated, table, title)


def _in_solution(node: nodes.Node | None) -> bool:
    while node is not None and not isinstance(node, internals.solution_nodes()):
        node = node.parent
    return node is not None


def _figures(app: Sphinx, fromdoc: str) -> list[nodes.Node]:
    """Every numbered figure with its caption, by chapter (a solution's: not for students)."""
    content: list[nodes.Node] = []
    total = 0
    for doc in toc.pages(app.srcdir)[1:]:  # the chapters and appendices, not the root page
        numbers = internals.numbers(app.env, doc)[0].get("figure", {})
        items = []
        for fig in app.env.get_doctree(doc).findall(nodes.figure) if numbers else ():
            target = next((i for i in fig["ids"] if i in numbers), None)
            inside = _in_solution(fig)
            if target is None or (inside and students_edition()):
                continue
            p = para(make_refnode(app.builder, fromdoc, doc, target,
                                  nodes.Text(f"Figure {number(numbers[target])}")))
            caption = next(iter(fig.findall(nodes.caption)), None)
            p += [nodes.Text(" — "), *borrowed(caption.children, fromdoc)] if caption else []
            p += [nodes.emphasis(text=" (in an exercise's solution)")] if inside else []
            items.append((numbers[target], nodes.list_item("", p)))
        if items:
            total += len(items)
            content += [para(page_link(app, fromdoc, doc, strong=True)),
                        nodes.bullet_list("", *(i for _, i in sorted(items, key=lambda t: t[0])),
                                          classes=["figure-index"])]
    return [para(f"{total} numbered figures in {len(content) // 2} chapters."), *content]


def _exercises(app: Sphinx, fromdoc: str) -> list[nodes.Node]:
    by_doc: dict[str, list] = defaultdict(list)
    for entry in exercises(app):
        by_doc[entry[0]].append(exercise_item(app, fromdoc, *entry))
    content = [node for doc, items in by_doc.items() for node in (
        para(page_link(app, fromdoc, doc, strong=True)), nodes.bullet_list("", *items))]
    total = sum(map(len, by_doc.values()))
    return [para(f"{total} exercises in {len(by_doc)} chapters, each with a worked solution."),
            *content]


KINDS = [
    ("Warm-up", "In class or as a self-check (★)"),
    ("Derivation", "Homework: derivations (★★)"),
    ("Computation", "Homework: computations, run in the chapter's notebook (★★)"),
    ("Open problem", "Projects (★★★)"),
]
HIDDEN_TAGS = {"remove-cell", "remove-input", "hide-input", "hide-cell"}
# a displayed equation, ``$$ ... $$`` or a ``{math}`` fence, from its first line to its last
DISPLAY_MATH = re.compile(r"^[ \t]*(\$\$.*?\$\$|```\{math\}.*?```)[^\n]*$", re.M | re.S)


def rates(substitutions: dict[str, Any]) -> dict[str, float]:
    """The reading rates, stated once in ``_config.yml`` (``parse.myst_substitutions``)."""
    return {k: float(substitutions[k]) for k in ("words_per_minute", "minutes_per_equation",
                                                 "code_lines_per_minute", "minutes_per_lecture")}


def source_counts(text: str) -> dict[str, int]:
    """Words of prose, displayed equations and shown code lines of a MyST notebook source."""
    words = equations = code = 0
    for cell in jupytext.reads(text, fmt="md:myst").cells:
        if cell.cell_type == "code":
            if not HIDDEN_TAGS & set(cell.metadata.get("tags", [])):
                code += sum(1 for line in cell.source.splitlines() if line.strip())
            continue
        prose, n = DISPLAY_MATH.subn("", cell.source)
        equations += n
        for line in map(str.strip, prose.splitlines()):
            if not (line.startswith(("```", ":::", "+++", "(")) or re.match(r"^:[\w-]+:", line)):
                line = re.sub(r"\$[^$]+\$", " x ", line)              # inline math: one word
                line = re.sub(r"\{[\w:-]+\}`([^`]*)`", r"\1", line)  # roles: their text
                words += len(re.findall(r"[^\W\d_][\w'’-]*", line))
    return {"words": words, "equations": equations, "code_lines": code}


def reading_minutes(counts: dict[str, int], r: dict[str, float]) -> float:
    return (counts["words"] / r["words_per_minute"] + counts["equations"]
            * r["minutes_per_equation"] + counts["code_lines"] / r["code_lines_per_minute"])


def lectures(minutes: float, r: dict[str, float]) -> int:
    return 1 if minutes <= r["minutes_per_lecture"] else 2


def _labels(app: Sphinx, chapters: list[str]) -> dict[str, str]:
    found = {k: v["docname"] for k, v in internals.std_labels(app.env).items() if v["title"]}
    found |= internals.equations(app.env)
    found |= {k: v["docname"] for k, v in internals.proofs(app.env).items()}
    return {k: d for k, d in found.items() if d in chapters}


def _prerequisites(app: Sphinx, fromdoc: str, doc: str, text: str,
                   labels: dict[str, str]) -> list[nodes.Node]:
    """Links to the chapters that the chapter's **Prerequisites** paragraph references."""
    found = re.search(r"\*\*Prerequisites?[.:]?\*\*:?(.*?)(?:\n\s*\n|\Z)", text, re.S)
    if not found:
        return [nodes.Text("not stated")]
    refs = re.findall(r"\{(?:ref|numref|prf:ref|eq)\}`(?:[^`<]*<)?([\w-]+)>?`", found.group(1))
    out: list[nodes.Node] = []
    for target in dict.fromkeys(labels[r] for r in refs if labels.get(r, doc) != doc):
        number = ".".join(map(str, internals.numbers(app.env, target)[1]))
        out += [nodes.Text(", ")] if out else []
        out.append(page_link(app, fromdoc, target, f"Ch. {number}" if number else None))
    return out or [nodes.Text("background only (see the chapter)")]


def _plan(app: Sphinx, fromdoc: str) -> list[nodes.Node]:
    chapters = toc.chapters(app.srcdir)
    labels, rows, totals = _labels(app, chapters), [], [0.0, 0, 0.0]
    r = rates(app.config.myst_substitutions)
    for doc in chapters:
        text = Path(app.env.doc2path(doc)).read_text(encoding="utf-8")
        counts, record = source_counts(text), internals.exec_data(app.env, doc)
        minutes, runtime = reading_minutes(counts, r), record.get("runtime")
        run = (f"{runtime:.0f} s" if isinstance(runtime, (int, float)) else "not executed") + (
            " (failed)" if record and not record.get("succeeded", True) else "")
        for i, x in enumerate((minutes, lectures(minutes, r), runtime or 0.0)):
            totals[i] += x
        number = ".".join(map(str, internals.numbers(app.env, doc)[1]))
        rows.append([para(page_link(app, fromdoc, doc, f"{number} {title(app, doc)}".strip())),
                     para(*_prerequisites(app, fromdoc, doc, text, labels)),
                     f"{math.ceil(minutes)} min ({counts['words']} words, {counts['equations']} "
                     f"equations, {counts['code_lines']} code lines)",
                     str(lectures(minutes, r)), run])
    rows.append([para(nodes.strong(text="The book")), "", f"{math.ceil(totals[0])} min",
                 str(totals[1]), f"{totals[2]:.0f} s"])
    return [table(["Chapter", "Prerequisites", "Reading time", "Lectures", "Run time"], rows,
                  [30, 22, 28, 8, 12], classes=("instructor-plan",))]


def _homework(app: Sphinx, fromdoc: str) -> list[nodes.Node]:
    groups: dict[str, list] = defaultdict(list)
    for entry in exercises(app):
        groups[next((k for k, _ in KINDS if entry[3].startswith(k)), "")].append(entry)
    out = [node for kind, heading in [*KINDS, ("", "Not yet classified (no kind in the title)")]
           if groups.get(kind) for node in (
               para(nodes.strong(text=f"{heading}: {len(groups[kind])}")),
               nodes.bullet_list("", *(exercise_item(app, fromdoc, *e) for e in groups[kind])))]
    return out or [para("The book has no exercises yet.")]


def setup(app: Sphinx) -> dict[str, Any]:
    register_generated(app, {"figure-index": _figures, "exercise-index": _exercises,
                             "chapter-plan": _plan, "homework-exercises": _homework})
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
