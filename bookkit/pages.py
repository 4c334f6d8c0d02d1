"""What the generated pages share: tables, links to labels, lists made once all is read."""

import re
from collections.abc import Callable, Sequence
from typing import Any

from docutils import nodes
from docutils.nodes import make_id  # as Sphinx forms equation ids (lower case)
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import make_refnode

from bookkit import internals, toc

logger = logging.getLogger(__name__)


def para(*children: nodes.Node | str) -> nodes.paragraph:
    """A paragraph of text and nodes."""
    p = nodes.paragraph()
    for c in children:
        p += nodes.Text(c) if isinstance(c, str) else c
    return p


def table(header: Sequence[str], rows: Sequence[Sequence[nodes.Node | str | list]],
          widths: Sequence[int],
          classes: Sequence[str] = ("ledger-table",)) -> nodes.table:
    """A table with a header row; a cell is a paragraph node, a list of nodes, or text."""
    group = nodes.tgroup("", *(nodes.colspec(colwidth=w) for w in widths), cols=len(header))
    group += nodes.thead("", nodes.row("", *(nodes.entry("", para(h)) for h in header)))
    group += nodes.tbody("", *(nodes.row("", *(
        nodes.entry("", *c) if isinstance(c, list) else
        nodes.entry("", c if isinstance(c, nodes.paragraph) else para(c)) for c in cells))
        for cells in rows))
    return nodes.table("", group, classes=list(classes))


def title(app: Sphinx, doc: str) -> str:
    """A page's title as text (its docname if it has none)."""
    return internals.title(app.env, doc) or doc


def page_link(app: Sphinx, fromdoc: str, doc: str, text: str | None = None,
              strong: bool = False) -> nodes.Node:
    """A link to a page, its title as text unless given."""
    text = title(app, doc) if text is None else text
    return make_refnode(app.builder, fromdoc, doc, "",
                        nodes.strong(text=text) if strong else nodes.Text(text))


def number(numbers: Sequence[int]) -> str:
    return ".".join(map(str, numbers))


def _title(app: Sphinx, doc: str, target: str, fromdoc: str) -> list[nodes.Node]:
    """The title of the element ``target`` names in ``doc`` (an admonition's), or ``[]``."""
    return next((borrowed(n.children, fromdoc) for n in app.env.get_doctree(doc).findall(
        nodes.title) if target in n.parent["ids"]), [])


def link(app: Sphinx, fromdoc: str, label: str) -> nodes.Node | None:
    """A link to a label with its number ("Theorem 3.2", "Equation (4.1)"), or ``None``."""
    env = app.env
    claims = internals.proofs(env)
    if label in claims:
        info = claims[label]
        got = internals.numbers(env, info["docname"])[0].get(info["countertype"], {}).get(label)
        text = f"{info['kind'].title()} {number(got or ())}".strip()
        return make_refnode(app.builder, fromdoc, info["docname"], label, nodes.Text(text))
    equations = internals.equations(env)
    if label in equations:
        doc, target = equations[label], make_id(f"equation-{label}")
        got = internals.numbers(env, doc)[0].get("displaymath", {}).get(target)
        text = f"Equation ({number(got)})" if got else f"Equation {label}"
        return make_refnode(app.builder, fromdoc, doc, target, nodes.Text(text))
    std = internals.std_labels(env)
    if label in std:
        doc, target, title = std[label]["docname"], std[label]["id"], std[label]["title"]
        got = internals.numbers(env, doc)[0].get("figure", {}).get(target)
        shown = ([nodes.Text(f"Figure {number(got)}")] if got else [nodes.Text(title)] if title
                 else _title(app, doc, target, fromdoc) or [nodes.Text(label)])
        return make_refnode(app.builder, fromdoc, doc, target, nodes.inline("", "", *shown))
    return None


LABEL = re.compile(r"\b(?:eq|thm|prop|lem|cor|def|rem|fig|ex)-\d\d-[\w-]*\w")


def linked(app: Sphinx, fromdoc: str, text: str) -> nodes.paragraph:
    """``text`` with each book label in it a link to what it labels."""
    out, end = para(), 0
    for m in LABEL.finditer(text):
        out += [nodes.Text(text[end:m.start()]), link(app, fromdoc, m[0]) or nodes.Text(m[0])]
        end = m.end()
    out += nodes.Text(text[end:])
    return out


def borrowed(children: Sequence[nodes.Node], fromdoc: str) -> list[nodes.Node]:
    """Copies of another page's nodes for ``fromdoc``: no ids; references resolve from there."""
    out = [c.deepcopy() for c in children]
    for node in (n for c in out for n in c.findall(nodes.Element)):
        node["ids"] = []
        if isinstance(node, addnodes.pending_xref):
            node["refdoc"] = fromdoc
    return out


def exercises(app: Sphinx) -> list[tuple[str, str, tuple[int, ...], str]]:
    """Every exercise as ``(docname, label, number, title)``, in the book's order."""
    order, out = {doc: i for i, doc in enumerate(toc.pages(app.srcdir))}, []
    for e in internals.exercises(app.env):
        num = internals.numbers(app.env, e["docname"])[0].get("exercise", {}).get(e["label"], ())
        out.append((e["docname"], e["label"], tuple(num), e["title"]))
    return sorted(out, key=lambda e: (order.get(e[0], 10**6), e[0], e[2]))


def exercise_item(app: Sphinx, fromdoc: str, doc: str, label: str, num: tuple[int, ...],
                  text: str) -> nodes.list_item:
    """A list item "Exercise 3.2 — title" linked to the exercise."""
    p = para(make_refnode(app.builder, fromdoc, doc, label,
                          nodes.Text(f"Exercise {number(num)}".strip())))
    if text:
        p += nodes.Text(f" — {text}")
    return nodes.list_item("", p)


def store(env: Any, name: str) -> dict[str, Any]:
    """``{docname: what the page holds}``, kept in the build environment under ``name``."""
    return env.__dict__.setdefault(name, {})


def merged(env: Any, name: str) -> list[Any]:
    """Every page's list in :func:`store` as one list, the pages in name order."""
    return [x for _, entries in sorted(store(env, name).items()) for x in entries]


def warn(kind: str, text: str, subtype: str, location: str | None = None) -> None:
    """A warning of type ``kind`` (a strict build fails on it)."""
    logger.warning(f"{kind}: {text}", type=kind, subtype=subtype, location=location)


def keep_per_page(app: Sphinx, name: str) -> None:
    """Forget a page's entry in :func:`store` when it is read again; merge parallel reads."""
    app.connect("env-purge-doc", lambda app, env, doc: store(env, name).pop(doc, None))
    app.connect("env-merge-info", lambda app, env, docs, other: store(env, name).update(
        {d: v for d, v in store(other, name).items() if d in docs}))


class generated(nodes.General, nodes.Element):
    """Where a generated list goes, replaced once every page has been read."""


DOCS = "bookkit_generated_docs"  # the pages holding a placeholder, read again at every build
Render = Callable[[Sphinx, str], list[nodes.Node]]


def register_generated(app: Sphinx, lists: dict[str, Render]) -> None:
    """Register generated lists: ``{directive name: render(app, fromdoc) -> nodes}``."""
    app.add_node(generated, override=True)
    for name in lists:
        app.add_directive(name, type(f"Generated_{name}", (SphinxDirective,), {
            "run": lambda self, name=name: _placeholder(self, name)}))

    class Resolve(SphinxPostTransform):
        default_priority = 5  # before Sphinx resolves the references that the lists hold

        def run(self, **kwargs: Any) -> None:
            for ph in list(self.document.findall(generated)):
                if ph["kind"] in lists:
                    ph.replace_self(lists[ph["kind"]](self.app, self.env.docname))

    app.add_post_transform(Resolve)
    # Sphinx loads MathJax on the pages it saw maths in when reading; a list's maths comes later
    app.set_html_assets_policy("always")
    app.connect("env-get-outdated", lambda app, env, *a: sorted(store(env, DOCS)))
    keep_per_page(app, DOCS)


def _placeholder(directive: SphinxDirective, kind: str) -> list[nodes.Node]:
    store(directive.env, DOCS)[directive.env.docname] = True
    return [generated(kind=kind)]
