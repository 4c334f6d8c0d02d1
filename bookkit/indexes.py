"""The lists of figures and of exercises (``{figure-index}``, ``{exercise-index}``), chapter by chapter.

Built once every page has been read, from Sphinx's figure numbers and sphinx-exercise's
exercises: each entry links to its figure ("Figure 3.2") or exercise and gives its caption
or title. In the students' edition the figures inside solutions are left out with them.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.nodes import make_refnode

from bookkit import internals, toc
from bookkit.pages import exercise_item, exercises, number, page_link, para, register_generated
from bookkit.variants import students_edition


def figures(app: Sphinx) -> list[tuple[str, list[tuple[str, str, str, bool]]]]:
    """``[(docname, [(number, figure id, caption, in a solution), ...]), ...]``, in the book's
    order; numbered figures only."""
    solutions, out = internals.solution_nodes(), []
    for page in toc.pages(app.srcdir):
        numbers = internals.numbers(app.env, page.docname)[0].get("figure", {})
        items = []
        for fig in app.env.get_doctree(page.docname).findall(nodes.figure) if numbers else ():
            ids = [i for i in fig["ids"] if i in numbers]
            caption = next(iter(fig.findall(nodes.caption)), None)
            parent, inside = fig.parent, False
            while parent is not None and not inside:
                inside, parent = isinstance(parent, solutions), parent.parent
            if ids:
                items.append((number(numbers[ids[0]]), ids[0],
                              " ".join(caption.astext().split()) if caption else "", inside))
        if items:
            items.sort(key=lambda t: [int(x) for x in t[0].split(".") if x.isdigit()])
            out.append((page.docname, items))
    return out


def _figures(app: Sphinx, fromdoc: str) -> list[nodes.Node]:
    content: list[nodes.Node] = []
    total = 0
    for doc, items in figures(app):
        items = [t for t in items if not (students_edition() and t[3])]
        bullets = nodes.bullet_list(classes=["figure-index"])
        for num, target, caption, in_solution in items:
            p = para(make_refnode(app.builder, fromdoc, doc, target, nodes.Text(f"Figure {num}")))
            p += nodes.Text(f" — {caption}" if caption else "")
            if in_solution:
                p += nodes.emphasis(text=" (in an exercise's solution)")
            bullets += nodes.list_item("", p)
        if items:
            total += len(items)
            content += [para(page_link(app, fromdoc, doc, strong=True)), bullets]
    return [para(f"{total} numbered figures in {len(content) // 2} chapters."), *content]


def _exercises(app: Sphinx, fromdoc: str) -> list[nodes.Node]:
    by_doc: dict[str, list] = defaultdict(list)
    for entry in exercises(app):
        by_doc[entry[0]].append(entry)
    content: list[nodes.Node] = []
    for doc, items in by_doc.items():
        content += [para(page_link(app, fromdoc, doc, strong=True)),
                    nodes.bullet_list("", *(exercise_item(app, fromdoc, *e) for e in items))]
    total = sum(map(len, by_doc.values()))
    return [para(f"{total} exercises in {len(by_doc)} chapters, each with a worked solution."),
            *content]


def setup(app: Sphinx) -> dict[str, Any]:
    register_generated(app, {"figure-index": _figures, "exercise-index": _exercises})
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
