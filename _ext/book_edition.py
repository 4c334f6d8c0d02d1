"""Sphinx extension: the book's edition (its version and git tag) in its pages.

The version is written once, as ``__version__`` in ``gmmlib/__init__.py``; the repository is
``repository.url`` in ``_config.yml``; title, authors and year come from ``CITATION.cff``. From
them this extension provides, for ``book/intro.md``:

- the MyST substitutions ``{{ edition }}`` (``0.2.0``) and ``{{ edition_tag }}`` (``v0.2.0``);
- ``{edition-links}``: the links an instructor gives a class for this edition: the source at the
  tag, the edition's release (PDF, ledger, HTML), and a chapter in Colab and on Binder at the tag;
- ``{edition-bibtex}``: a BibTeX record of this edition.

So a new edition (``make sync`` after a version bump) updates the intro with no edit.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import yaml
from docutils import nodes
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.util.docutils import SphinxDirective

COLAB = "https://colab.research.google.com/github"
BINDER = "https://mybinder.org/v2/gh"


def read_version(root: Path) -> str:
    tree = ast.parse((root / "gmmlib" / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "__version__":
            return str(ast.literal_eval(node.value))
    raise ValueError("gmmlib/__init__.py has no __version__")


def edition(root: Path) -> dict[str, str]:
    """Everything the intro says about this edition, read from the files that own it."""
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    cff = yaml.safe_load((root / "CITATION.cff").read_text(encoding="utf-8"))
    url = str(config["repository"]["url"]).rstrip("/")
    owner, repo = url.split("/")[-2:]
    version = read_version(root)
    tag = f"v{version}"
    chapters = sorted((root / "book").glob("[0-9]*.ipynb"))
    chapter = f"book/{chapters[0].name}" if chapters else "book/intro.md"
    authors = " and ".join(a.get("name") or f"{a.get('family-names')}, {a.get('given-names')}"
                           for a in cff.get("authors", []))
    return {
        "version": version, "tag": tag, "url": url, "owner": owner, "repo": repo,
        "chapter": chapter, "title": str(cff["title"]), "authors": authors,
        "year": str(cff.get("date-released", ""))[:4],
        "site": f"https://{owner}.github.io/{repo}/",
    }


def _set_substitutions(app: Sphinx, config: Config) -> None:
    info = edition(Path(app.srcdir))
    subs = dict(getattr(config, "myst_substitutions", None) or {})
    subs.setdefault("edition", info["version"])
    subs.setdefault("edition_tag", info["tag"])
    config.myst_substitutions = subs


def _link(url: str) -> nodes.reference:
    # the text is the address without its scheme: the theme shortens a github.com link whose
    # text is its address to "owner/repo", which would hide the tag
    return nodes.reference("", url.split("://", 1)[-1], refuri=url, internal=False)


def _item(*parts: nodes.Node | str) -> nodes.list_item:
    para = nodes.paragraph()
    for part in parts:
        para += nodes.Text(part) if isinstance(part, str) else part
    return nodes.list_item("", para)


class EditionLinks(SphinxDirective):
    """A list of this edition's links (source, release, Colab, Binder)."""

    def run(self) -> list[nodes.Node]:
        e = edition(Path(self.env.srcdir))
        tag, url = e["tag"], e["url"]
        chapter = e["chapter"]
        colab = f"{COLAB}/{e['owner']}/{e['repo']}/blob/{tag}/{chapter}"
        binder = f"{BINDER}/{e['owner']}/{e['repo']}/{tag}?urlpath=tree/{chapter}"
        items = nodes.bullet_list()
        items += _item("The text and code of this edition: ", _link(f"{url}/tree/{tag}"))
        items += _item("Its release, with the PDF, the verification ledger and the HTML: ",
                       _link(f"{url}/releases/tag/{tag}"))
        items += _item("A chapter of this edition in Colab (gmmlib installed from the same tag): ",
                       _link(colab))
        items += _item("The same chapter on Binder: ", _link(binder))
        return [items]


class EditionBibtex(SphinxDirective):
    """A BibTeX record of this edition."""

    def run(self) -> list[nodes.Node]:
        e = edition(Path(self.env.srcdir))
        title = e["title"].replace("Gaussian", "{G}aussian")
        key = "softmax_gmm_book_" + e["tag"].replace(".", "_")
        text = (
            f"@book{{{key},\n"
            f"  author    = {{{{{e['authors']}}}}},\n"
            f"  title     = {{{title}}},\n"
            f"  edition   = {{{e['version']}}},\n"
            f"  year      = {{{e['year']}}},\n"
            f"  publisher = {{GitHub}},\n"
            f"  url       = {{{e['url']}/tree/{e['tag']}}},\n"
            f"  note      = {{Edition {e['version']} (git tag {e['tag']}). Text CC BY 4.0, code MIT}}\n"
            f"}}"
        )
        block = nodes.literal_block(text, text, language="bibtex")
        return [block]


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", _set_substitutions)
    app.add_directive("edition-links", EditionLinks)
    app.add_directive("edition-bibtex", EditionBibtex)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
