"""Sphinx extension: ``{figure-index}`` lists every numbered figure of the book.

Built once every page has been read, from Sphinx's own figure numbers (``numfig``): one
entry per figure, chapter by chapter, with its number ("Figure 3.2"), linked to the figure,
and its caption as plain text. In the students' edition (``BOOK_STUDENTS``, see
``book_variants``) the figures inside exercise solutions are left out with the solutions.
"""

from __future__ import annotations

import os
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.nodes import make_refnode

from doctables import chapter_heading, register_generated


def _in_solution(node: nodes.Node) -> bool:
    parent = node.parent
    while parent is not None:
        if type(parent).__name__ in ("solution_node", "solution_start_node"):
            return True
        parent = parent.parent
    return False


def figures(env: Any) -> list[tuple[str, list[tuple[str, str, str, bool]]]]:
    """``[(docname, [(number, figure id, caption, in a solution), ...]), ...]`` in the order of
    the table of contents; only numbered figures."""
    order = env.toctree_includes.get(env.config.root_doc, [])
    out = []
    for doc in order:
        numbers = env.toc_fignumbers.get(doc, {}).get("figure", {})
        if not numbers:
            continue
        doctree = env.get_doctree(doc)
        items = []
        for fig in doctree.findall(nodes.figure):
            ids = [i for i in fig["ids"] if i in numbers]
            if not ids:
                continue
            caption = next(iter(fig.findall(nodes.caption)), None)
            text = " ".join(caption.astext().split()) if caption is not None else ""
            number = ".".join(map(str, numbers[ids[0]]))
            items.append((number, ids[0], text, _in_solution(fig)))
        items.sort(key=lambda t: [int(x) for x in t[0].split(".") if x.isdigit()])
        out.append((doc, items))
    return out


def _render(app: Sphinx, fromdoc: str) -> list[nodes.Node]:
    env = app.env
    students = os.environ.get("BOOK_STUDENTS", "").strip() not in ("", "0")
    content: list[nodes.Node] = []
    total = chapters = 0
    for doc, items in figures(env):
        items = [t for t in items if not (students and t[3])]
        if not items:
            continue
        chapters += 1
        total += len(items)
        content.append(chapter_heading(app, fromdoc, doc))
        bullets = nodes.bullet_list(classes=["figure-index"])
        for number, target, caption, in_solution in items:
            p = nodes.paragraph()
            p += make_refnode(app.builder, fromdoc, doc, target, nodes.Text(f"Figure {number}"))
            if caption:
                p += nodes.Text(f" — {caption}")
            if in_solution:
                p += nodes.emphasis(text=" (in an exercise's solution)")
            bullets += nodes.list_item("", p)
        content.append(bullets)
    return [nodes.paragraph(text=f"{total} numbered figures in {chapters} chapters."), *content]


def setup(app: Sphinx) -> dict[str, Any]:
    register_generated(app, {"figure-index": ("figures", _render)})
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
