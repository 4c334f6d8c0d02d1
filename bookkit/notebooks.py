"""Reader notebooks: each chapter as plain Markdown and its code cells, for Colab and Binder.

The HTML build writes ``_build/notebooks/book/NN_name.ipynb`` (and the introduction's) from the
doctrees it has just resolved (``doctree-resolved``: nothing is read or executed again, a second
or two for the whole book); the builder ``notebooks`` (``jupyter-book build . --builder custom
--custom-builder notebooks``) writes only them, from an existing build's environment when the
configuration is the same. References carry their numbers ("Proposition 3.1", "(3.4)"),
citations read author–year, glued values their values. Code cells are the page's own, in order,
the setup cell (removed from the HTML) first; Markdown is what Jupyter and Colab render:
theorems, proofs and admonitions under a bold title, folds as ``<details>``, maths as ``$…$``
and ``$$…$$`` (``\\tag{3.4}`` on numbered displays), figure captions as text under the cell
that draws them. No outputs, kernel ``python3``.

The launch buttons and the edition's links open these notebooks where the workflow publishes
them: the branch ``notebooks-<ref>`` (:func:`branch`), the tree of ``<ref>`` (``main`` or an
edition's tag) with the reader notebooks in place of the jupytext pairs, so that Binder builds
its image from ``binder/`` as before and Colab opens ``book/NN_name.ipynb`` on that branch.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

import nbformat
from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.builders import Builder

from bookkit import internals, toc
from bookkit.edition import SETUP_MARKER, canonical_source, read_repository

#: The published notebooks' branch is this prefix followed by the ref (``notebooks-main``).
BRANCH_PREFIX = "notebooks-"
COLAB = "https://colab.research.google.com"
BINDER = "https://mybinder.org"
KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}
_ESCAPE = re.compile(r"([\\`*_<$])")


def branch(root: Path) -> str:
    """The branch that holds the reader notebooks of this build (``notebooks-main``,
    ``notebooks-v0.3.0``): ``repository.branch`` of ``_config.yml``, the edition's tag in a
    release."""
    return BRANCH_PREFIX + read_repository(root)[1]


def site(root: Path) -> str:
    """The published book's address, ``https://OWNER.github.io/REPO/`` (README)."""
    owner, repo = read_repository(root)[0].split("/")[-2:]
    return f"https://{owner.lower()}.github.io/{repo}/"


def launch_urls(root: Path, docname: str, colab: str = COLAB, binder: str = BINDER,
                interface: str = "classic") -> dict[str, str]:
    """``{"Colab": url, "Binder": url}`` of the reader notebook of page ``docname``."""
    owner, repo = read_repository(root)[0].split("/")[-2:]
    ref, path = branch(root), f"{docname}.ipynb"
    ui = {"classic": "tree", "jupyterlab": "lab/tree"}.get(interface, "tree")
    return {"Colab": f"{colab.rstrip('/')}/github/{owner}/{repo}/blob/{ref}/{path}",
            "Binder": f"{binder.rstrip('/')}/v2/gh/{owner}/{repo}/{ref}?urlpath={ui}/{path}"}


def _text(text: str) -> str:
    """Text as Markdown: characters Markdown or MathJax would read as markup escaped."""
    return _ESCAPE.sub(r"\\\1", text.replace("\n", " "))


class Code(int):
    """A code cell of the chapter (its index among myst-nb's cells) in a list of blocks."""


class Renderer:
    """A resolved doctree as Markdown blocks (``str``) and code cells (:class:`Code`).

    Parameters
    ----------
    builder
        The builder (its environment gives the numbers of figures, equations, statements).
    docname
        The page rendered.
    """

    def __init__(self, builder: Builder, docname: str):
        self.builder, self.docname = builder, docname
        self.fignumbers = internals.numbers(builder.env, docname)[0]
        self.secnumbers = internals.section_numbers(builder.env, docname)
        self.site = site(Path(builder.srcdir))
        self.depth = 0

    # ------------------------------------------------------------------------ helpers
    def number(self, figtype: str, node: nodes.Element) -> str:
        ids = node.get("ids") or [""]
        return ".".join(map(str, self.fignumbers.get(figtype, {}).get(ids[0], ())))

    def children(self, node: nodes.Element) -> list:
        out: list = []
        for child in node.children:
            out += self.blocks(child)
        return out

    @staticmethod
    def has_code(blocks: list) -> bool:
        return any(isinstance(b, Code) for b in blocks)

    def titled(self, title: str, body: list, fold: bool) -> list:
        """A statement or box: a bold title, then its body; a fold as ``<details>`` (when no
        code cell sits inside: a fold cannot span cells, it is then shown open)."""
        if fold and not self.has_code(body):
            return [f"<details>\n<summary>{title}</summary>\n", *body, "</details>"]
        return [f"**{title}**" if title else "", *body]

    # ------------------------------------------------------------------------ blocks
    def blocks(self, node: nodes.Node) -> list:
        """The blocks of ``node``: Markdown strings and :class:`Code` cells, in order."""
        if isinstance(node, nodes.Text):
            return [_text(node.astext())] if node.astext().strip() else []
        for cls in type(node).__mro__:
            method = getattr(self, f"b_{cls.__name__}", None)
            if method:
                return method(node)
        return self.children(node)

    def b_comment(self, node):
        return []

    b_target = b_substitution_definition = b_raw = b_index = b_meta = b_comment
    b_system_message = b_exercise_end_node = b_solution_start_node = b_comment
    b_solution_end_node = b_comment

    def b_section(self, node):
        title = node.next_node(nodes.title) if node.children else None
        if title is None or title.parent is not node:
            return self.children(node)  # a statement's body (sphinx-proof's section)
        self.depth += 1
        number = self.secnumbers.get("#" + node["ids"][0] if self.depth > 1 else "", ())
        number = ".".join(map(str, number))
        heading = "#" * min(self.depth, 6) + " " + (f"{number} " if number else "") + \
            self.inline(title)
        out = [heading, *[b for c in node.children if c is not title for b in self.blocks(c)]]
        self.depth -= 1
        return out

    def b_title(self, node):
        return [f"**{self.inline(node)}**"]

    def b_paragraph(self, node):
        return [self.inline(node)]

    def b_rubric(self, node):
        return [f"**{self.inline(node)}**"]

    def b_literal_block(self, node):
        lang = node.get("language", "")
        lang = "python" if lang in ("ipython3", "ipython", "default") else lang
        return [f"```{lang}\n{node.astext()}\n```"]

    def b_math_block(self, node):
        latex = node.astext().strip()
        if node.get("nowrap"):
            return [latex]
        number = self.number("displaymath", node) if node.get("label") else ""
        tag = f"\n\\tag{{{number}}}" if number else ""
        return [f"$$\n{latex}{tag}\n$$"]

    def _list(self, node, marker) -> list:
        items = []
        for i, item in enumerate(node.children, 1):
            lead = marker(i)
            text = "\n\n".join(b for b in self.children(item) if isinstance(b, str) and b)
            items.append(lead + text.replace("\n", "\n" + " " * len(lead)))
        return ["\n".join(items)]

    def b_bullet_list(self, node):
        return self._list(node, lambda i: "- ")

    def b_enumerated_list(self, node):
        start = int(node.get("start", 1))
        return self._list(node, lambda i: f"{start + i - 1}. ")

    def b_block_quote(self, node):
        return ["> " + "\n>\n> ".join(
            b.replace("\n", "\n> ") for b in self.children(node) if isinstance(b, str) and b)]

    def b_table(self, node):
        rows = [[_cell(self.inline(e)) for e in row.children]
                for row in node.findall(nodes.row)]
        if not rows:
            return []
        width = max(map(len, rows))
        rows = [r + [""] * (width - len(r)) for r in rows]
        lines = ["| " + " | ".join(rows[0]) + " |", "|" + " --- |" * width]
        return ["\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows[1:]])]

    def b_figure(self, node):
        caption = node.next_node(nodes.caption)
        image = node.next_node(nodes.image)
        out = [f"![{_text(image.get('alt', ''))}]({self._uri(image['uri'])})"] if image else []
        number = self.number("figure", node)
        label = f"Figure {number}. " if number else ""
        return out + ([f"*{label}{self.inline(caption)}*"] if caption else [])

    def b_image(self, node):
        return [f"![{_text(node.get('alt', ''))}]({self._uri(node['uri'])})"]

    def b_container(self, node):
        kind = internals.nb_element(node)
        if kind == "cell_code":
            # the code cell, then the captions of the figures its outputs show (the image
            # itself appears when the reader runs the cell)
            captions = [self.b_figure_caption(f) for f in node.findall(nodes.figure)]
            return [Code(node["cell_index"]), *filter(None, captions)]
        if kind and kind.startswith("cell_code"):
            return []
        if node.get("design_component") == "dropdown":
            rubric = node.next_node(nodes.rubric) if node.get("has_title") else None
            body = [b for c in node.children if c is not rubric for b in self.blocks(c)]
            return self.titled(self.inline(rubric) if rubric else "", body, fold=True)
        if kind in ("mime_bundle",) or "cell_output" in node.get("classes", []):
            return []
        return self.children(node)

    def b_dropdown_main(self, node):
        # sphinx-design's dropdown after its HTML transform (the HTML build's doctree)
        title = next((c for c in node.children if type(c).__name__ == "dropdown_title"), None)
        body = [b for c in node.children if c is not title for b in self.blocks(c)]
        return self.titled(self.inline(title).strip(), body, fold=True)

    def b_figure_caption(self, figure):
        caption = figure.next_node(nodes.caption)
        if caption is None:
            return ""
        number = self.number("figure", figure)
        return f"*{'Figure ' + number + '. ' if number else ''}{self.inline(caption)}*"

    def b_Admonition(self, node):
        # admonitions, sphinx-proof statements and proofs, sphinx-exercise's boxes
        name = type(node).__name__
        classes = node.get("classes", [])
        title = next((c for c in node.children if isinstance(c, nodes.title)), None)
        text = self.inline(title) if title is not None else ""
        rest = [c for c in node.children if c is not title]
        if name.endswith("_node") and "countertype" in node:  # sphinx-proof
            kind = node.get("realtype", node["countertype"]).split(":")[-1].title()
            number = self.number(node["countertype"], node) \
                if name != "unenumerable_node" else ""
            text = " ".join(filter(None, (kind, number, text.strip())))
        elif name in ("exercise_enumerable_node", "exercise_node"):
            # sphinx-exercise's title holds the subtitle in parentheses
            number = self.number("exercise", node) if name == "exercise_enumerable_node" else ""
            text = " ".join(filter(None, ("Exercise", number, text.strip())))
        elif name == "proof_node":
            text = ""
        elif not text:
            text = name.split("_")[0].title() if name != "admonition" else ""
        body = [b for c in rest for b in self.blocks(c)]
        return self.titled(text, body, fold="dropdown" in classes)

    def b_proof_node(self, node):
        body = self.children(node)  # sphinx-proof: an admonition whose text opens "Proof. "
        first = next((i for i, b in enumerate(body) if isinstance(b, str) and b.strip()), None)
        if first is not None and body[first].startswith("Proof. "):
            body[first] = "*Proof.* " + body[first][len("Proof. "):]
        return self.titled("Proof" if "dropdown" in node.get("classes", []) else "", body,
                           fold="dropdown" in node.get("classes", []))

    def b_topic(self, node):
        return self.b_Admonition(node)

    b_sidebar = b_topic

    # ------------------------------------------------------------------------ inline
    def inline(self, node: nodes.Node | None) -> str:
        if node is None:
            return ""
        if isinstance(node, nodes.Text):
            return _text(node.astext())
        tag = type(node).__name__
        if tag == "math":
            return f"${node.astext().strip()}$"
        inner = "".join(self.inline(c) for c in node.children)
        if tag == "emphasis":
            return f"*{inner}*" if inner.strip() else inner
        if tag == "strong":
            return f"**{inner}**" if inner.strip() else inner
        if tag == "literal":
            return f"`{node.astext()}`"
        if tag in ("superscript", "subscript"):
            return f"<{tag[:3]}>{inner}</{tag[:3]}>"
        if tag in ("target", "index", "comment", "raw", "footnote_reference"):
            return ""
        if tag == "image":
            return self.b_image(node)[0]
        if tag == "reference":
            return self._reference(node, inner)
        if isinstance(node, addnodes.pending_xref):
            return inner
        if isinstance(node, nodes.TextElement) or isinstance(node, nodes.Inline):
            return inner
        return " ".join(b for b in self.blocks(node) if isinstance(b, str))

    def _uri(self, uri: str) -> str:
        if "://" in uri or uri.startswith("data:"):
            return uri
        return self.site + uri.lstrip("/")

    def _reference(self, node: nodes.reference, inner: str) -> str:
        """An external link stays a link; a reference inside the book reads as its number or
        title (no anchor slug): a link to the page of the book online when it is another
        page, text alone within this chapter."""
        uri = node.get("refuri", "")
        if uri and "://" in uri and not node.get("internal"):
            return f"[{inner}]({uri})"
        page = uri.split("#", 1)[0]
        if not page:
            return inner
        doc = posixpath.normpath(posixpath.join(posixpath.dirname(self.docname), page))
        doc = re.sub(r"\.(html|ipynb)$", "", doc)
        return inner if doc == self.docname else f"[{inner}]({self.site}{doc}.html)"


def _cell(text: str) -> str:
    """A table cell's text on one line, its pipes escaped outside maths (Jupyter sets maths
    aside before it reads the table: ``$\\|x\\|$`` stays a norm)."""
    parts = re.split(r"(\$[^$]+\$)", text.replace("\n", " "))
    return "".join(p if p.startswith("$") else p.replace("|", r"\|") for p in parts)


def reader_notebook(builder: Builder, docname: str, doctree: nodes.document,
                    cells: list[nbformat.NotebookNode]) -> nbformat.NotebookNode:
    """The reader notebook of the chapter ``docname``.

    Parameters
    ----------
    builder, docname, doctree
        The builder, the chapter and its resolved doctree.
    cells
        The chapter's cells as myst-nb reads them (the indices its doctree's cells carry),
        with the code cells that the HTML removes.

    Returns
    -------
    nbformat.NotebookNode
        Every code cell of the chapter in order, Markdown between them, no outputs; the code
        cells before the chapter's first Markdown (the setup cell) come first. A page without
        the setup cell gets it first.
    """
    code = {i: c.source for i, c in enumerate(cells) if c.cell_type == "code"}
    setup = canonical_source(Path(builder.srcdir))
    if not next(iter(code.values()), "").startswith(SETUP_MARKER):
        code[-1] = setup  # a page without the chapters' setup cell (the introduction) gets it
    first_text = next((i for i, c in enumerate(cells) if c.cell_type == "markdown"), len(cells))
    renderer = Renderer(builder, docname)
    blocks = renderer.children(doctree)
    heading = next((i for i, b in enumerate(blocks) if isinstance(b, str)
                    and b.startswith("# ")), None)
    if heading is not None:  # where this notebook comes from, under the chapter's title
        what = "chapter" if docname in toc.chapters(Path(builder.srcdir)) else "page"
        blocks.insert(heading + 1, (
            f"*A notebook to run: this {what} of [{_title(builder.config)}]"
            f"({renderer.site}{docname}.html), with every code cell of the book. The first "
            "cell installs what it needs when run outside the book's repository; a figure "
            "appears when its cell runs, its caption is below the cell.*"))
    out, text, pending = [], [], sorted(code)

    def flush() -> None:
        source = "\n\n".join(t for t in text if t.strip()).strip()
        if source:
            out.append({"cell_type": "markdown", "metadata": {}, "source": source})
        text.clear()

    def code_upto(index: int) -> None:
        while pending and pending[0] <= index:
            flush()
            out.append({"cell_type": "code", "metadata": {}, "source": code[pending.pop(0)],
                        "outputs": [], "execution_count": None})

    code_upto(first_text - 1)
    for block in blocks:
        if isinstance(block, Code):
            code_upto(int(block))
        else:
            text.append(block)
    flush()
    code_upto(len(cells))
    for n, cell in enumerate(out):
        cell["id"] = f"{docname.rsplit('/', 1)[-1][:2]}-{n:03d}"  # stable: readable diffs
    # validated once, by the caller (per cell, nbformat's constructors take seconds)
    return nbformat.from_dict({
        "nbformat": 4, "nbformat_minor": 5, "cells": out,
        "metadata": {"kernelspec": dict(KERNELSPEC), "language_info": {"name": "python"}}})


def _title(config: Any) -> str:
    """The book's title (Jupyter Book sets ``html_title``, not ``project``)."""
    return getattr(config, "html_title", "") or config.project


def _source_cells(path: Path) -> list[nbformat.NotebookNode]:
    """The cells of a MyST notebook as myst-nb reads them (its doctree's ``cell_index``)."""
    from myst_nb.core.read import read_myst_markdown_notebook

    return read_myst_markdown_notebook(path.read_text(encoding="utf-8"), path=path).cells


def _notebook_cells(app: Sphinx, docname: str) -> list[nbformat.NotebookNode]:
    """The cells of a page of the book that is a notebook (a chapter, the introduction), or
    ``[]``: a page of text alone gets no reader notebook."""
    path = Path(app.env.doc2path(docname))
    if docname not in toc.pages(Path(app.srcdir)) or path.suffix != ".md":
        return []
    cells = _source_cells(path)
    return cells if any(c.cell_type == "code" for c in cells) else []


def _write(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """A notebook page's resolved doctree (HTML build, or the ``notebooks`` builder) → its
    reader notebook in ``_build/notebooks`` (the HTML build's sibling folder)."""
    builder = app.builder
    cells = _notebook_cells(app, docname) if builder.name in ("html", NotebookBuilder.name) \
        else []
    if not cells:
        return
    folder = Path(app.outdir) if builder.name == NotebookBuilder.name else \
        Path(app.outdir).parent / NotebookBuilder.name
    nb = reader_notebook(builder, docname, doctree, cells)
    nbformat.validate(nb)
    path = folder / f"{docname}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


class NotebookBuilder(Builder):
    """``notebooks``: only the reader notebooks (the HTML build writes them as well)."""

    name = "notebooks"
    format = "ipynb"
    epilog = "The reader notebooks are in %(outdir)s."

    def get_outdated_docs(self) -> list[str]:
        return sorted(set(toc.pages(Path(self.srcdir))) & set(self.env.found_docs))

    def get_target_uri(self, docname: str, typ: str | None = None) -> str:
        return f"{docname}.ipynb"

    def prepare_writing(self, docnames: set[str]) -> None:
        pass

    def write_doc(self, docname: str, doctree: nodes.document) -> None:
        pass  # doctree-resolved wrote it (_write)


def _mime_priorities(app: Sphinx, config: Any) -> None:
    """myst-nb picks one output per builder: give the ``notebooks`` builder HTML's choice (the
    reader notebooks keep no output; without a list every output warns)."""
    config.nb_mime_priority_overrides = [*config.nb_mime_priority_overrides, *(
        (NotebookBuilder.name, mime, rank) for rank, mime in enumerate((
            "application/vnd.gmmlib.check+json", "text/html", "image/png", "text/plain")))]


# ---------------------------------------------------------------------------- launch buttons
def _launch_buttons(app: Sphinx, pagename: str, templatename: str, context: dict,
                    doctree: Any) -> None:
    """The theme's Colab and Binder buttons of a chapter open its reader notebook."""
    buttons = internals.launch_buttons(context)
    if not buttons:
        return
    config = app.config.html_theme_options.get("launch_buttons", {})
    urls = launch_urls(Path(app.srcdir), pagename, config.get("colab_url") or COLAB,
                       config.get("binderhub_url") or BINDER,
                       config.get("notebook_interface", "classic"))
    for button in buttons:
        if button.get("text") in urls:
            button["url"] = urls[button["text"]]


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_builder(NotebookBuilder)
    app.connect("config-inited", _mime_priorities)
    app.connect("doctree-resolved", _write)
    # after sphinx-book-theme's add_launch_buttons (priority 501)
    app.connect("html-page-context", _launch_buttons, priority=600)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
