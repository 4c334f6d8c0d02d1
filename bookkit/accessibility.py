"""Accessibility: captions as their images' alt text, bibliography entries as list items."""

import re
import unicodedata
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx

GENERIC_ALT = re.compile(r"^\s*(|image|img|figure|fig|png|svg|jpe?g|plot|output"
                         r"|\S+\.(png|svg|jpe?g|gif|webp))\s*$", re.IGNORECASE)
# TeX commands read as symbols ("_" for a space), as their name (log), or not at all (hat);
# any other \name is a Greek letter or keeps its name without the backslash
TEX_WORDS = dict(w.split("=") for w in (
    "top=ᵀ intercal=ᵀ mathsf{T}=ᵀ cdot=· times=× le=≤ leq=≤ ge=≥ geq=≥ ne=≠ neq=≠ approx=≈ "
    "sim=~ propto=∝ infty=∞ to=→ rightarrow=→ mapsto=↦ in=∈ sum=Σ prod=Π int=∫ partial=∂ "
    "nabla=∇ pm=± mid=| ldots=… dots=… cdots=… quad=_ qquad=_ sqrt=√ lVert=‖ rVert=‖ Vert=‖ "
    "|=‖ langle=⟨ rangle=⟩ ,=_ ;=_ != log=log exp=exp tr=tr min=min max=max hat= bar= tilde= "
    "mathbb= mathcal= mathrm= mathbf= operatorname= boldsymbol= text= left= right= big= Big= "
    "bigl= bigr=").split())


def _greek(name: str) -> str | None:
    kind = "CAPITAL" if name[:1].isupper() else "SMALL"
    variant = name.removeprefix("var").upper().replace("LAMBDA", "LAMDA")  # Unicode's spelling
    try:
        return unicodedata.lookup(f"GREEK {kind} LETTER {variant}")
    except KeyError:
        return None


def tex_to_text(tex: str) -> str:
    """A readable, plain-text rendering of a short TeX formula (for alt text, not for display)."""
    out = re.sub(r"\\frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}", r"(\1)/(\2)", tex)

    def command(match: re.Match) -> str:
        name = match.group(1)
        word = TEX_WORDS.get(name)
        return word.replace("_", " ") if word is not None else _greek(name) or name

    out = re.sub(r"\\([A-Za-z]+|[,;!|])", command, out)
    out = re.sub(r"\^\{?\s*ᵀ\s*\}?", "ᵀ", out)
    return " ".join(out.replace("{", "").replace("}", "").replace("~", " ").split())


def caption_text(caption: nodes.Element) -> str:
    """The caption as one line of plain text, with its mathematics made readable."""
    parts = [tex_to_text(t.astext()) if isinstance(t.parent, nodes.math) else t.astext()
             for t in caption.findall(nodes.Text)]
    return " ".join("".join(parts).split())


def is_generic(image: nodes.image) -> bool:
    """Whether the image's alt text is missing, a file name or a generic word ("image")."""
    alt, uri = image.get("alt"), str(image.get("uri", ""))
    return alt is None or bool(GENERIC_ALT.match(alt)) or alt.strip() in (uri, uri.rsplit("/")[-1])


def fill_figure_alt_text(app: Sphinx, doctree: nodes.document) -> None:
    """A captioned figure's image with a generic alt text gets the caption's text."""
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
    app.connect("doctree-read", fill_figure_alt_text)
    app.connect("html-page-context", bibliography_entries_are_list_items)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
