"""Sphinx extension: accessibility fixes that the theme and the extensions do not make.

1. Every image of a captioned figure gets its caption as alternative text. myst-nb turns a cell's ``mystnb.figure.caption`` into a figure whose image has no ``alt``, and
Sphinx then writes the image's *file name* as its alt text, which is what a screen reader reads
out. After each page is read, this extension gives every image inside a figure with a caption
the caption's text as ``alt`` when the image has none or a generic one (a file name, a path,
"image", "png", ...). An alt written on purpose (``mystnb.image.alt``, ``:alt:``) is kept.
Mathematics in a caption is turned into readable text (``$\\kappa = a^\\top \\Gamma a$`` ->
"κ = aᵀ Γ a", roughly as it is spoken), since alt text is not typeset.
2. The bibliography's entries are list items. Sphinx writes the citation list as
``role="list"`` whose entries have the deprecated ``role="doc-biblioentry"``, which axe-core
reports as a critical violation (a list without list items); they become ``role="listitem"``.

``tests/test_browser.py`` runs axe-core on every page and checks every figure's alt text.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx

GENERIC_ALT = re.compile(r"^\s*(|image|img|figure|fig|png|svg|jpe?g|plot|output|\S+\.(png|svg|jpe?g|gif|webp))\s*$",
                         re.IGNORECASE)
# TeX commands read as words or symbols; any other \name keeps its name without the backslash
TEX_WORDS = {
    "top": "ᵀ", "intercal": "ᵀ", "mathsf{T}": "ᵀ", "cdot": "·", "times": "×", "le": "≤", "leq": "≤",
    "ge": "≥", "geq": "≥", "ne": "≠", "neq": "≠", "approx": "≈", "sim": "~", "propto": "∝",
    "infty": "∞", "to": "→", "rightarrow": "→", "mapsto": "↦", "in": "∈", "sum": "Σ", "prod": "Π",
    "int": "∫", "partial": "∂", "nabla": "∇", "pm": "±", "mid": "|", "ldots": "…", "dots": "…",
    "cdots": "…", "quad": " ", "qquad": " ", "log": "log", "exp": "exp", "tr": "tr", "min": "min",
    "max": "max", "sqrt": "√", "lVert": "‖", "rVert": "‖", "Vert": "‖", "|": "‖", "langle": "⟨",
    "rangle": "⟩", "hat": "", "bar": "", "tilde": "", "mathbb": "", "mathcal": "", "mathrm": "",
    "mathbf": "", "operatorname": "", "boldsymbol": "", "text": "", "left": "", "right": "",
    "big": "", "Big": "", "bigl": "", "bigr": "", ",": " ", ";": " ", "!": "",
}


def _greek(name: str) -> str | None:
    for kind in ("SMALL", "CAPITAL"):
        if name[:1].isupper() != (kind == "CAPITAL"):
            continue
        variant = name.removeprefix("var").upper().replace("LAMBDA", "LAMDA")  # Unicode's spelling
        try:
            return unicodedata.lookup(f"GREEK {kind} LETTER {variant}")
        except KeyError:
            return None
    return None


def tex_to_text(tex: str) -> str:
    """A readable, plain-text rendering of a short TeX formula (for alt text, not for display)."""
    out = re.sub(r"\\frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}", r"(\1)/(\2)", tex)

    def command(match: re.Match) -> str:
        name = match.group(1)
        if name in TEX_WORDS:
            return TEX_WORDS[name]
        return _greek(name) or name

    out = re.sub(r"\\([A-Za-z]+|[,;!|])", command, out)
    out = re.sub(r"\^\{?\s*ᵀ\s*\}?", "ᵀ", out)
    out = out.replace("{", "").replace("}", "").replace("~", " ")
    return " ".join(out.split())


def caption_text(caption: nodes.Element) -> str:
    """The caption as one line of plain text, with its mathematics made readable."""
    parts: list[str] = []
    for node in caption.findall(nodes.Text):
        parent = node.parent
        if isinstance(parent, nodes.math) or type(parent).__name__ == "math":
            parts.append(tex_to_text(node.astext()))
        else:
            parts.append(node.astext())
    return " ".join("".join(parts).split())


def is_generic(image: nodes.image) -> bool:
    alt = image.get("alt")
    if alt is None:
        return True
    uri = str(image.get("uri", ""))
    return bool(GENERIC_ALT.match(alt)) or alt.strip() == uri or (uri and alt.strip() == uri.rsplit("/", 1)[-1])


def fill_figure_alt_text(app: Sphinx, doctree: nodes.document) -> None:
    for figure in doctree.findall(nodes.figure):
        captions = [c for c in figure.findall(nodes.caption)]
        if not captions:
            continue
        text = caption_text(captions[0])
        if not text:
            continue
        for image in figure.findall(nodes.image):
            if is_generic(image):
                image["alt"] = text


def bibliography_entries_are_list_items(app: Sphinx, pagename: str, templatename: str,
                                        context: dict, doctree: Any) -> None:
    body = context.get("body")
    if body and 'role="doc-biblioentry"' in body:
        context["body"] = body.replace('role="doc-biblioentry"', 'role="listitem"')


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("doctree-read", fill_figure_alt_text)
    app.connect("html-page-context", bibliography_entries_are_list_items)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
