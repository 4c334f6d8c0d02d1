"""Sphinx extension: ``{exercise-index}`` lists every exercise of the book, chapter by chapter.

Built from sphinx-exercise's registry once every page has been read, so it always matches
the chapters: each row links to the exercise ("Exercise 3.2") and gives its title.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx

from doctables import chapter_heading, exercise_item, exercises, register_generated


def _render(app: Sphinx, fromdoc: str) -> list[nodes.Node]:
    by_doc: dict[str, list] = defaultdict(list)
    for entry in exercises(app.env):
        by_doc[entry[0]].append(entry)
    content: list[nodes.Node] = []
    for doc, items in by_doc.items():
        content.append(chapter_heading(app, fromdoc, doc))
        bullets = nodes.bullet_list()
        for entry in items:
            bullets += exercise_item(app, fromdoc, *entry)
        content.append(bullets)
    total = sum(len(items) for items in by_doc.values())
    summary = nodes.paragraph(text=f"{total} exercises in {len(by_doc)} chapters, each with a worked solution.")
    return [summary, *content]


def setup(app: Sphinx) -> dict[str, Any]:
    register_generated(app, {"exercise-index": ("exercises", _render)})
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
