"""Accessibility: captions as their images' alt text, bibliography entries as list items."""

import re
from typing import Any

from docutils import nodes
from pylatexenc import latex2text
from sphinx.application import Sphinx

GENERIC_ALT = re.compile(r"^\s*(|image|img|figure|fig|png|svg|jpe?g|plot|output"
                         r"|\S+\.(png|svg|jpe?g|gif|webp))\s*$", re.IGNORECASE)
_TEXT = latex2text.get_default_latex_context_db()  # with two symbols it would drop: \| and \ne
_TEXT.add_context_category("book", prepend=True, macros=[
    latex2text.MacroTextSpec("|", "‖"), latex2text.MacroTextSpec("ne", "≠")])


def tex_to_text(tex: str) -> str:
    """A readable, plain-text rendering of a short TeX formula (for alt text, not for display)."""
    text = latex2text.LatexNodes2Text(math_mode="text", latex_context=_TEXT).latex_to_text(tex)
    return " ".join(text.split())


def caption_text(caption: nodes.Element) -> str:
    """The caption as one line of plain text, with its mathematics made readable."""
    parts = [tex_to_text(t.astext()) if isinstance(t.parent, nodes.math) else t.astext()
             for t in caption.findall(nodes.Text)]
    return " ".join("".join(parts).split())


def is_generic(image: nodes.image) -> bool:
    """Whether the image's alt text is missing, a file name or a generic word ("image")."""
    alt, uri = image.get("alt"), str(image.get("uri", ""))
    return alt is None or bool(GENERIC_ALT.match(alt)) or alt.strip() in (uri, uri.rsplit("/")[-1])


def fill_figure_alt_text(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """A captioned figure's image with a generic alt text gets the caption's text (its
    references resolved: "Proposition 1.2", not the label)."""
    for figure in doctree.findall(nodes.figure):
        caption = next(iter(figure.findall(nodes.caption)), None)
        text = caption_text(caption) if caption is not None else ""
        for image in figure.findall(nodes.image) if text else ():
            if is_generic(image):
                image["alt"] = text


def bibliography_entries_are_list_items(app: Sphinx, pagename: str, templatename: str,
                                        context: dict, doctree: Any) -> None:
    """Bibliography entries get ``role="listitem"``."""
    if 'role="doc-biblioentry"' in (context.get("body") or ""):
        context["body"] = context["body"].replace('role="doc-biblioentry"', 'role="listitem"')


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("doctree-resolved", fill_figure_alt_text)
    app.connect("html-page-context", bibliography_entries_are_list_items)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
