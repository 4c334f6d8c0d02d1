"""The generated lists: figures, exercises, and the instructors' chapter plan and homework."""

import math
import re
from collections import defaultdict
from html.parser import HTMLParser
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


#: The reading rates, named as in ``_config.yml`` (``parse.myst_substitutions``), stated there only.
RATES = ("words_per_minute", "minutes_per_inline_formula", "minutes_per_equation",
         "minutes_per_proof", "code_lines_per_minute", "minutes_per_lecture")
INLINE_MATH = re.compile(r"(?<![$\\])\$(?!\$)[^$\n]+?(?<!\\)\$")
PROOF = re.compile(r"^[ \t]*(`{3,}|:{3,})\{prf:proof\}", re.M)


def rates(substitutions: dict[str, Any]) -> dict[str, float]:
    """The reading rates, stated once in ``_config.yml`` (``parse.myst_substitutions``)."""
    return {k: float(substitutions[k]) for k in RATES}


def source_counts(text: str) -> dict[str, int]:
    """What takes time to read in a MyST notebook source: words of prose (formulas and markup
    not counted as words), inline formulas, displayed equations, proofs, and lines of the code
    the page shows (not the cells it hides or removes)."""
    counts = dict.fromkeys(("words", "inline", "equations", "proofs", "code_lines"), 0)
    for cell in jupytext.reads(text, fmt="md:myst").cells:
        if cell.cell_type == "code":
            if not HIDDEN_TAGS & set(cell.metadata.get("tags", [])):
                counts["code_lines"] += sum(1 for line in cell.source.splitlines() if line.strip())
            continue
        prose, n = DISPLAY_MATH.subn("", cell.source)
        counts["equations"] += n
        counts["proofs"] += len(PROOF.findall(prose))
        for line in map(str.strip, prose.splitlines()):
            if not (line.startswith(("```", ":::", "+++", "(")) or re.match(r"^:[\w-]+:", line)):
                line, k = INLINE_MATH.subn(" ", line)                # inline math: a formula
                counts["inline"] += k
                line = re.sub(r"\{[\w:-]+\}`([^`]*)`", r"\1", line)  # roles: their text
                counts["words"] += len(re.findall(r"[^\W\d_][\w'’-]*", line))
    return counts


def reading_minutes(counts: dict[str, int], r: dict[str, float]) -> float:
    """Minutes of careful reading: words at ``words_per_minute``, each inline formula, each
    displayed equation and each proof (to follow its argument, on top of its words and
    formulas) at its own minutes, shown code at ``code_lines_per_minute``. No cap."""
    return (counts["words"] / r["words_per_minute"]
            + counts["inline"] * r["minutes_per_inline_formula"]
            + counts["equations"] * r["minutes_per_equation"]
            + counts["proofs"] * r["minutes_per_proof"]
            + counts["code_lines"] / r["code_lines_per_minute"])


def lectures(minutes: float, r: dict[str, float]) -> int:
    """The 90-minute lectures a chapter's reading fills: one per ``minutes_per_lecture`` begun
    (no cap: a long chapter takes as many as its reading needs)."""
    return max(1, math.ceil(minutes / r["minutes_per_lecture"] - 1e-9))


class _PageReading(HTMLParser):
    """What a reader meets in a built chapter page's article (``article.bd-article``)."""

    VOID = {"br", "img", "meta", "link", "input", "hr", "wbr", "source", "col"}

    def __init__(self) -> None:
        super().__init__()
        self.counts = dict.fromkeys(("words", "inline", "equations", "proofs", "code_lines"), 0)
        self.stack: list[str] = []  # per open element: "article", "skip", "code" or ""
        self.code: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag in self.VOID:
            return
        classes = set((dict(attrs).get("class") or "").split())
        inside = "article" in self.stack
        kind = "article" if tag == "article" and "bd-article" in classes else ""
        if inside and "math" in classes:
            self.counts["equations" if tag == "div" else "inline"] += 1
            kind = "skip"
        elif inside and tag == "div" and classes == {"proof", "admonition"}:  # not a statement
            self.counts["proofs"] += 1
        elif inside and ("tag_hide-input" in classes or "tag_hide-cell" in classes
                         or tag in ("script", "style") or "cell_output" in classes):
            kind = "skip"  # folded code, outputs (a verdict, a figure) are not read as prose
        elif inside and "cell_input" in classes:
            kind = "code"
        self.stack.append(kind)

    def handle_endtag(self, tag: str) -> None:
        if tag in self.VOID or not self.stack:
            return
        if self.stack.pop() == "code":
            self.counts["code_lines"] += sum(1 for x in "".join(self.code).splitlines()
                                             if x.strip())
            self.code = []

    def handle_data(self, data: str) -> None:
        if "article" not in self.stack or "skip" in self.stack:
            return
        if "code" in self.stack:
            self.code.append(data)
        else:
            self.counts["words"] += len(re.findall(r"[^\W\d_][\w'’-]*", data))


def page_counts(html: str) -> dict[str, int]:
    """The same counts as ``source_counts``, read again from a chapter's built page: words of the
    article's text (glued numbers, links, titles, the folded solutions included), inline
    formulas and displays as MathJax receives them, proofs as sphinx-proof renders them, the
    lines of code cells the page shows (not those folded by ``hide-input``), no cell output."""
    reader = _PageReading()
    reader.feed(html)
    return reader.counts


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
                     f"{math.ceil(minutes)} min ({counts['words']} words, {counts['inline']} "
                     f"inline formulas, {counts['equations']} displays, {counts['proofs']} proofs, "
                     f"{counts['code_lines']} code lines)",
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
