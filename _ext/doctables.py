"""Docutils helpers shared by the book's generated pages: tables (ledger, concordance) and lists
(figure index, exercise index, instructors' kit)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import make_refnode


def para(*children: nodes.Node | str) -> nodes.paragraph:
    """A paragraph of text and nodes."""
    p = nodes.paragraph()
    for c in children:
        p += nodes.Text(c) if isinstance(c, str) else c
    return p


def table(header: Sequence[str], rows: Sequence[Sequence[nodes.Node | str]], widths: Sequence[int],
          classes: Sequence[str] = ("ledger-table",)) -> nodes.table:
    """A table with a header row; a cell is a paragraph node, or text wrapped in one."""
    out = nodes.table(classes=list(classes))
    group = nodes.tgroup(cols=len(header))
    out += group
    for w in widths:
        group += nodes.colspec(colwidth=w)
    thead = nodes.thead()
    group += thead
    row = nodes.row()
    for h in header:
        row += nodes.entry("", para(h))
    thead += row
    tbody = nodes.tbody()
    group += tbody
    for cells in rows:
        row = nodes.row()
        for cell in cells:
            row += nodes.entry("", cell if isinstance(cell, nodes.paragraph) else para(cell))
        tbody += row
    return out


# ----------------------------------------------------------------- generated lists
# The verification ledger, the figure index, the exercise index and the instructors' kit are
# built once every page has been read. Their directives leave a placeholder (its ``kind`` names the list); the pages
# holding one are re-read at every build, and the placeholder is replaced when the doctree is
# resolved.
DOCS_KEY = "generated_list_docs"


class generated_placeholder(nodes.General, nodes.Element):
    """Stands where a generated list goes until every page has been read."""


def placeholder_directive(kind: str) -> type[SphinxDirective]:
    """A content-less directive that records its page and leaves a placeholder of ``kind``."""

    class Placeholder(SphinxDirective):
        has_content = False

        def run(self) -> list[nodes.Node]:
            docs = getattr(self.env, DOCS_KEY, set())
            docs.add(self.env.docname)
            setattr(self.env, DOCS_KEY, docs)
            return [generated_placeholder(kind=kind)]

    Placeholder.__name__ = f"Placeholder_{kind.replace('-', '_')}"
    return Placeholder


Render = Callable[[Sphinx, str], list[nodes.Node]]


def register_generated(app: Sphinx, lists: dict[str, tuple[str, Render]]) -> None:
    """Register generated lists: ``{directive name: (kind, render(app, fromdoc) -> nodes)}``."""
    app.add_node(generated_placeholder, override=True)
    renderers = {kind: render for kind, render in lists.values()}
    for name, (kind, _) in lists.items():
        app.add_directive(name, placeholder_directive(kind))

    def reread(app: Sphinx, env: Any, added: set, changed: set, removed: set) -> list[str]:
        return sorted(getattr(env, DOCS_KEY, set()))

    def purge(app: Sphinx, env: Any, docname: str) -> None:  # the page is read again (or gone)
        getattr(env, DOCS_KEY, set()).discard(docname)

    def merge(app: Sphinx, env: Any, docnames: Any, other: Any) -> None:  # parallel reads
        setattr(env, DOCS_KEY, getattr(env, DOCS_KEY, set()) | getattr(other, DOCS_KEY, set()))

    def resolve(app: Sphinx, doctree: nodes.document, fromdoc: str) -> None:
        for ph in list(doctree.findall(generated_placeholder)):
            if ph["kind"] in renderers:
                ph.replace_self(renderers[ph["kind"]](app, fromdoc))

    app.connect("env-get-outdated", reread)
    app.connect("env-purge-doc", purge)
    app.connect("env-merge-info", merge)
    app.connect("doctree-resolved", resolve)


def toc_order(env: Any) -> dict[str, int]:
    """Position of each page in the root table of contents."""
    return {doc: i for i, doc in enumerate(env.toctree_includes.get(env.config.root_doc, []))}


def chapter_heading(app: Sphinx, fromdoc: str, doc: str) -> nodes.paragraph:
    """A paragraph with the chapter's title in bold, linked to the chapter."""
    env = app.env
    title = env.titles[doc].astext() if doc in env.titles else doc
    p = nodes.paragraph()
    p += make_refnode(app.builder, fromdoc, doc, "", nodes.strong(text=title))
    return p


def exercises(env: Any) -> list[tuple[str, str, tuple[int, ...], str]]:
    """Every exercise of sphinx-exercise's registry as ``(docname, label, number, title)``,
    in the order of the table of contents and then of the numbers."""
    order = toc_order(env)
    out = []
    for label, info in getattr(env, "sphinx_exercise_registry", {}).items():
        if info.get("type") != "exercise":
            continue
        subtitles = [n for n in info["node"].findall(nodes.Element)
                     if type(n).__name__ == "exercise_subtitle"]
        title = subtitles[0].astext().strip() if subtitles else ""
        doc = info["docname"]
        number = tuple(env.toc_fignumbers.get(doc, {}).get("exercise", {}).get(label, ()))
        out.append((doc, label, number, title))
    return sorted(out, key=lambda e: (order.get(e[0], 10**6), e[0], e[2]))


def exercise_item(app: Sphinx, fromdoc: str, doc: str, label: str, number: tuple[int, ...],
                  title: str) -> nodes.list_item:
    """A list item "Exercise 3.2 — title" linked to the exercise."""
    p = nodes.paragraph()
    text = f"Exercise {'.'.join(map(str, number))}".strip()
    p += make_refnode(app.builder, fromdoc, doc, label, nodes.Text(text))
    if title:
        p += nodes.Text(f" — {title}")
    return nodes.list_item("", p)
