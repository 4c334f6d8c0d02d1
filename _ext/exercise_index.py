"""Sphinx extension: ``{exercise-index}`` lists every exercise of the book, chapter by chapter.

Built from sphinx-exercise's registry once every page has been read, so it always matches
the chapters: each row links to the exercise ("Exercise 3.2") and gives its title.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import make_refnode


class exercise_index_placeholder(nodes.General, nodes.Element):
    """Replaced by the index once every page has been read."""


class ExerciseIndexDirective(SphinxDirective):
    has_content = False

    def run(self) -> list[nodes.Node]:
        docs = getattr(self.env, "exercise_index_docs", set())
        docs.add(self.env.docname)
        self.env.exercise_index_docs = docs
        return [exercise_index_placeholder()]


def _reread(app: Sphinx, env: Any, added: set, changed: set, removed: set) -> list[str]:
    return sorted(getattr(env, "exercise_index_docs", set()))


def _number(env: Any, docname: str, label: str) -> str:
    numbers = env.toc_fignumbers.get(docname, {}).get("exercise", {}).get(label)
    return ".".join(map(str, numbers)) if numbers else ""


def _render(app: Sphinx, doctree: nodes.document, fromdoc: str) -> None:
    placeholders = list(doctree.findall(exercise_index_placeholder))
    if not placeholders:
        return
    env = app.env
    registry = getattr(env, "sphinx_exercise_registry", {})
    by_doc: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    for label, info in registry.items():
        if info.get("type") != "exercise":
            continue
        node = info["node"]
        subtitles = [n for n in node.findall(nodes.Element) if type(n).__name__ == "exercise_subtitle"]
        title = subtitles[0].astext().strip() if subtitles else ""
        by_doc[info["docname"]].append((_number(env, info["docname"], label), label, title))
    order = {doc: i for i, doc in enumerate(env.toctree_includes.get(env.config.root_doc, []))}
    content: list[nodes.Node] = []
    total = 0
    for doc in sorted(by_doc, key=lambda d: (order.get(d, 10**6), d)):
        items = sorted(by_doc[doc], key=lambda t: [int(x) for x in t[0].split(".") if x.isdigit()] or [0])
        total += len(items)
        chapter = env.titles[doc].astext() if doc in env.titles else doc
        para = nodes.paragraph()
        para += make_refnode(app.builder, fromdoc, doc, "", nodes.strong(text=chapter))
        content.append(para)
        bullets = nodes.bullet_list()
        for number, label, title in items:
            item = nodes.list_item()
            p = nodes.paragraph()
            p += make_refnode(app.builder, fromdoc, doc, label, nodes.Text(f"Exercise {number}".strip()))
            if title:
                p += nodes.Text(f" — {title}")
            item += p
            bullets += item
        content.append(bullets)
    summary = nodes.paragraph(text=f"{total} exercises in {len(by_doc)} chapters, each with a worked solution.")
    for ph in placeholders:
        ph.replace_self([summary, *content])


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_node(exercise_index_placeholder)
    app.add_directive("exercise-index", ExerciseIndexDirective)
    app.connect("env-get-outdated", _reread)
    app.connect("doctree-resolved", _render)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
