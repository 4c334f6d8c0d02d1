"""Slides: one reveal.js deck per chapter, made by the HTML build from the chapter's doctree.

When the HTML build writes a chapter's page (``html-page-context``: its doctree resolved, its
images copied), it writes ``slides/NN_name.html`` under the same output, so the site carries
the decks: a deck's address is the site's followed by :func:`deck_uri` (``slides/NN_name.html``),
and the chapter's page links to it ("Slides" in the theme's download menu).
A deck holds, in the chapter's order, a title slide (the chapter's number and title, a link to
its page); the tl;dr (the admonition of class ``tldr``); one slide per theorem, proposition,
lemma and corollary (its numbered title and its statement, without the proof); one per captioned
figure (the image the executed build produced, with its numbered caption; a slider figure shows
its first frame); then the chapter's checks, a few verdicts a slide (mark, what was checked and
the comparison, each linked to its row in the verification ledger). No slide is written by hand:
each is the chapter's own node rendered by the HTML builder's translator, as in the page, with
its links pointed back at the book. reveal.js comes from the pinned sphinx-revealjs wheel
(copied to ``_static/revealjs/``); MathJax is the book's own copy (``bookkit.local_mathjax``)
under the book's MathJax configuration, so a deck reads offline.
"""

from __future__ import annotations

import html
import json
import posixpath
import re
import shutil
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.builders import Builder
from sphinx.errors import ConfigError
from sphinx.util.osutil import relative_uri

from bookkit import internals, toc
from bookkit.ledger import CHECKS
from bookkit.local_mathjax import local_path
from bookkit.pages import store

#: The decks' folder under the HTML output (a deck per chapter: ``slides/NN_name.html``).
SLIDES = "slides"
#: The statements a deck shows (sphinx-proof's kinds); definitions and remarks stay in the page.
STATEMENTS = ("theorem", "proposition", "lemma", "corollary")
#: The verdicts of the chapter's checks on one slide, at most.
VERDICTS_PER_SLIDE = 8
#: reveal.js's files a deck loads (under the wheel's ``revealjs/``); the theme's fonts beside.
REVEAL_FILES = ("dist/reset.css", "dist/reveal.css", "dist/reveal.js", "dist/theme/white.css")
REVEAL_FONTS = "dist/theme/fonts/source-sans-pro"
_SLIDER_FRAME = re.compile(r'<img class="gmm-slider-frame" src="(data:image/[^"]+)"')

#: The deck's own style: the book's boxes (statements, tl;dr), figures and verdicts on a slide.
CSS = """
.reveal { font-size: 30px; }
.reveal .slides section { text-align: left; }
.reveal .slides section.deck-title { text-align: center; }
.reveal h1, .reveal h2 { text-transform: none; }
.reveal h1 { font-size: 1.7em; } .reveal h2 { font-size: 1.2em; }
.reveal .admonition, .reveal div.proof { box-sizing: border-box; border-left: 6px solid #2a6f97;
  background: #f2f7fb; padding: 0.3em 0.8em; margin: 0.4em 0; }
.reveal div.tldr { border-left-color: #b5651d; background: #fdf6ec; }
.reveal .admonition-title, .reveal p.admonition-title { font-weight: bold; margin: 0.2em 0; }
.reveal .headerlink, .reveal .deck-hidden { display: none; }
.reveal mjx-container[display="true"] { max-width: 100%; overflow-x: auto; overflow-y: hidden; }
.reveal .eqno { float: right; }
.reveal figure { margin: 0; text-align: center; }
.reveal figure img { max-height: 560px; max-width: 100%; margin: 0 auto; }
.reveal figcaption { font-size: 0.55em; text-align: left; }
.reveal .caption-number { font-weight: bold; }
.reveal ul.verdicts { font-size: 0.62em; list-style: none; margin-left: 0; }
.reveal ul.verdicts li { margin: 0.35em 0; }
.reveal .deck-source { font-size: 0.55em; }
.reveal a { color: #1a5a85; }
"""

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>{title}</title>
{css}
<style>{style}</style>
<script>window.MathJax = {mathjax_config};</script>
<script defer src="{mathjax}"></script>
</head>
<body>
<div class="reveal"><div class="slides">
{slides}
</div></div>
<script src="{reveal}"></script>
<script>Reveal.initialize({{hash: true, width: 1280, height: 800, margin: 0.04,
  center: false, slideNumber: "c/t"}});
// a slide whose content, typeset, is taller than the deck is set in smaller type until it fits
function fit(slide) {{
  const bottom = () => Math.max(0, ...[...slide.children].map(c => c.offsetTop + c.offsetHeight));
  for (let size = 100; size > 50 && bottom() > 770; size -= 5) {{
    slide.style.fontSize = size - 5 + "%";
  }}
}}
window.MathJax.startup = {{pageReady: () => MathJax.startup.defaultPageReady().then(() => {{
  fit(Reveal.getCurrentSlide());
  Reveal.on("slidechanged", event => fit(event.currentSlide));
}})}};</script>
</body>
</html>
"""


def deck_uri(docname: str) -> str:
    """A chapter's deck, relative to the root of the HTML output (``slides/03_name.html``)."""
    return f"{SLIDES}/{toc.name(docname)}.html"


def revealjs_files() -> Path:
    """The ``revealjs`` folder of the installed sphinx-revealjs wheel (reveal.js 5)."""
    try:
        from sphinx_revealjs.utils import get_internal_static_path
    except ImportError as exc:
        raise ConfigError("the slides take reveal.js from the sphinx-revealjs package, which "
                          "is not installed: run `make install`") from exc
    return Path(get_internal_static_path()) / "revealjs"


def copy_revealjs(outdir: Path) -> Path:
    """Copy what a deck loads of reveal.js to ``outdir/_static/revealjs/`` (files already there
    with the same size are kept); returns that folder."""
    source, target = revealjs_files(), Path(outdir, "_static", "revealjs")
    names = [Path(n) for n in REVEAL_FILES] + [
        f.relative_to(source) for f in sorted((source / REVEAL_FONTS).rglob("*")) if f.is_file()]
    for name in names:
        dest = target / name
        if not dest.is_file() or dest.stat().st_size != (source / name).stat().st_size:
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / name, dest)
    return target


# ------------------------------------------------------------------------- what a deck shows
def statement_kind(node: nodes.Node) -> str | None:
    """``"theorem"``, ``"lemma"``, … for a sphinx-proof statement, else ``None``."""
    if not isinstance(node, nodes.Element) or "countertype" not in node \
            or not type(node).__name__.endswith("_node"):
        return None
    return str(node.get("realtype", node["countertype"])).split(":")[-1]


def _is_tldr(node: nodes.Node) -> bool:
    return isinstance(node, nodes.Admonition) and "tldr" in node.get("classes", [])


def _is_figure(node: nodes.Node) -> bool:
    """A captioned figure whose picture is an image or a slider figure's frames."""
    if not isinstance(node, nodes.figure) or node.next_node(nodes.caption) is None:
        return False
    return node.next_node(nodes.image) is not None or any(
        _SLIDER_FRAME.search(r.astext()) for r in node.findall(nodes.raw))


def _in_exercise(node: nodes.Node) -> bool:
    """Inside an exercise or a solution (sphinx-exercise): not the chapter's argument."""
    parent = node.parent
    while parent is not None:
        if type(parent).__name__.startswith(("exercise", "solution")):
            return True
        parent = parent.parent
    return False


def key_nodes(doctree: nodes.Node) -> list[tuple[str, nodes.Element]]:
    """What a chapter's deck shows, in the chapter's order: ``("tldr", admonition)``,
    ``("statement", node)`` and ``("figure", figure)``; nothing inside another one or inside an
    exercise or its solution."""
    found: list[tuple[str, nodes.Element]] = []
    taken: set[int] = set()
    for node in doctree.findall(nodes.Element):
        kind = ("tldr" if _is_tldr(node) else
                "statement" if statement_kind(node) in STATEMENTS else
                "figure" if _is_figure(node) else None)
        if kind is None or _in_exercise(node):
            continue
        parent, inside = node.parent, False
        while parent is not None and not inside:
            inside, parent = id(parent) in taken, parent.parent
        if not inside:
            taken.add(id(node))
            found.append((kind, node))
    return found


def retarget(node: nodes.Element, docname: str) -> nodes.Element:
    """``node``'s links, relative to the chapter's page, made relative to its deck: a link
    within the page goes to the page (``../book/03_name.html#thm-03-…``)."""
    here, page = posixpath.dirname(docname), posixpath.relpath(f"{docname}.html", SLIDES)
    for ref in node.findall(nodes.reference):
        uri = ref.get("refuri", "")
        if "refid" in ref and not uri:
            uri = "#" + ref.attributes.pop("refid")
        if not uri or "://" in uri or uri.startswith(("mailto:", "data:")):
            continue
        path, _, fragment = uri.partition("#")
        target = posixpath.relpath(posixpath.normpath(posixpath.join(here, path)), SLIDES) \
            if path else page
        ref["refuri"] = target + (f"#{fragment}" if fragment else "")
    return node


def _slider_frame(figure: nodes.figure) -> nodes.figure:
    """A slider figure as a plain one: its first frame as the image, its caption as alt text."""
    raw = next(r for r in figure.findall(nodes.raw) if _SLIDER_FRAME.search(r.astext()))
    src = _SLIDER_FRAME.search(raw.astext()).group(1)
    alt = html.escape(figure.next_node(nodes.caption).astext(), quote=True)
    frame = nodes.raw("", f'<img src="{src}" alt="{alt}">', format="html")
    out = figure.copy()
    out += [frame, figure.next_node(nodes.caption).deepcopy()]
    return out


# ------------------------------------------------------------------------------- rendering
def _claim_name(env: Any, label: str) -> str:
    """``"Theorem 3.1"`` for a statement's label, ``""`` for another claim."""
    info = internals.proofs(env).get(label)
    if info is None:
        return ""
    number = internals.numbers(env, info["docname"])[0].get(info["countertype"], {}).get(label)
    return f"{info['kind'].title()} {'.'.join(map(str, number))}" if number else ""


def verdicts(env: Any, docname: str) -> list[str]:
    """The chapter's checks as short HTML lines (the ledger's records, in the chapter's order):
    mark, the statement checked, what was checked and the comparison, linked to the ledger."""
    ledger = posixpath.relpath(posixpath.join(posixpath.dirname(docname), "ledger.html"),
                               SLIDES)
    lines = []
    for record in store(env, CHECKS).get(docname, []):
        mark = "✔" if record.get("passed") else "✘ CHECK FAILED:"
        claim = _claim_name(env, record.get("claim", ""))
        anchor = f"check-{record.get('chapter')}-{record.get('index')}"
        text = html.escape(f"{record.get('what', '')}: {record.get('comparison', '')}")
        lines.append(f'{mark} {f"<b>{claim}</b> · " if claim else ""}{text} '
                     f'<a href="{ledger}#{anchor}">[ledger]</a>')
    return lines


def render(builder: Builder, node: nodes.Element, docname: str) -> str:
    """``node`` (a copy) as the HTML builder writes it in the page, its links to the book."""
    return internals.render_html(builder, retarget(node.deepcopy(), docname),
                                 relative_uri(deck_uri(docname), "_images"))


def deck(builder: Builder, docname: str, doctree: nodes.document) -> str:
    """The chapter's deck: a complete reveal.js HTML page (see the module's docstring)."""
    env, config = builder.env, builder.config
    section = doctree.next_node(nodes.section)
    title = section.next_node(nodes.title).astext() if section is not None else docname
    number = ".".join(map(str, internals.numbers(env, docname)[1]))
    chapter = f"Chapter {number}" if number else ""
    page = posixpath.relpath(f"{docname}.html", SLIDES)
    book = html.escape(getattr(config, "html_title", "") or config.project)
    slides = [
        f'<section class="deck-title"><p>{html.escape(chapter)}</p>'
        f"<h1>{html.escape(title)}</h1><p><em>{book}</em></p>"
        f'<p class="deck-source">Slides made from the chapter: <a href="{page}">read it in '
        f"the book</a>. Arrow keys move on; Esc shows every slide.</p></section>"]
    for kind, node in key_nodes(doctree):
        if kind == "figure" and node.next_node(nodes.image) is None:
            node = _slider_frame(node)
        anchor = (node.get("ids") or [""])[0]
        link = (f'<p class="deck-source"><a href="{page}#{anchor}">In the chapter</a></p>'
                if anchor else "")
        slides.append(f'<section class="deck-{kind}">{render(builder, node, docname)}'
                      f"{link}</section>")
    lines = verdicts(env, docname)
    for start in range(0, len(lines), VERDICTS_PER_SLIDE):
        part = lines[start:start + VERDICTS_PER_SLIDE]
        count = (f" ({start // VERDICTS_PER_SLIDE + 1}/"
                 f"{-(-len(lines) // VERDICTS_PER_SLIDE)})") if len(lines) > len(part) else ""
        items = "".join(f"<li>{line}</li>" for line in part)
        slides.append(f'<section class="deck-checks"><h2>The checks{count}</h2>'
                      f'<ul class="verdicts">{items}</ul></section>')
    static = relative_uri(deck_uri(docname), "_static")
    mathjax = local_path(config)
    css = "\n".join(f'<link rel="stylesheet" href="{static}/revealjs/{name}">'
                    for name in REVEAL_FILES if name.endswith(".css"))
    return PAGE.format(
        title=html.escape(f"{chapter}. {title}" if chapter else title) + " (slides)",
        css=css, style=CSS, slides="\n".join(slides),
        mathjax_config=json.dumps(config.mathjax3_config or {}),
        mathjax=f"{static}/{mathjax}" if mathjax else config.mathjax_path,
        reveal=f"{static}/revealjs/dist/reveal.js")


def _write(app: Sphinx, pagename: str, templatename: str, context: dict,
           doctree: nodes.document | None) -> None:
    """A chapter's page is written (HTML build): write its deck beside the pages."""
    if doctree is None or app.builder.format != "html" or app.builder.name != "html" \
            or pagename not in toc.chapters(Path(app.srcdir)):
        return
    path = Path(app.outdir, deck_uri(pagename))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(deck(app.builder, pagename, doctree), encoding="utf-8")
    copy_revealjs(Path(app.outdir))


def _button(app: Sphinx, pagename: str, templatename: str, context: dict,
            doctree: nodes.document | None) -> None:
    """A chapter's page links to its deck: "Slides" in the theme's download menu."""
    if doctree is None or pagename not in toc.chapters(Path(app.srcdir)):
        return
    buttons = internals.download_buttons(context)
    if buttons is not None:
        buttons.append({"type": "link", "url": context["pathto"](deck_uri(pagename), 1),
                        "text": "Slides", "tooltip": "This chapter's slides (reveal.js)",
                        "icon": "fas fa-person-chalkboard", "label": "slides-button"})


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("html-page-context", _write)
    # after sphinx-book-theme's header buttons (priority 500)
    app.connect("html-page-context", _button, priority=600)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
