"""Sphinx extension: the book's edition (its version and git tag) in its pages.

The version is written once, as ``__version__`` in ``gmmlib/__init__.py``; the repository is
``repository.url`` in ``_config.yml``; title, authors and year come from ``CITATION.cff``. From
them this extension provides, for ``book/intro.md``:

- the MyST substitutions ``{{ edition }}`` (``0.3.0``), ``{{ edition_tag }}`` (``v0.3.0``) and
  ``{{ edition_statement }}`` (a sentence saying which edition these pages are);
- ``{edition-links}``: the links an instructor gives a class for this edition: the source at the
  tag, the edition's release (PDF, ledger, HTML), and a chapter in Colab and on Binder at the tag;
- ``{edition-bibtex}``: a BibTeX record of this edition, its author braced (``{{Softmax GMM Book
  Team}}``) so that BibTeX reads one name, not a person called "Team".

A development version (``0.3.0.dev0``, the book on ``main``) is said to be one: the statement
says "development version", the links point at ``main``, the BibTeX record cites the commit the
pages were built from (``@misc``), and the footer of every page says so. So a release
(``make release``) updates the intro with no edit.
"""

from __future__ import annotations

import ast
import datetime as dt
import re
import subprocess
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


def is_development(version: str) -> bool:
    return ".dev" in version


def _commit(root: Path) -> str:
    """The commit the pages are built from (``""`` outside a git checkout)."""
    try:
        run = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    return run.stdout.strip() if run.returncode == 0 else ""


def _released(root: Path) -> list[str]:
    """The editions listed in CHANGELOG.md (``## X.Y.Z — date``), newest first."""
    path = root / "CHANGELOG.md"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    return re.findall(r"^## (\d+\.\d+\.\d+) — ", text, re.M)


def edition(root: Path) -> dict[str, str]:
    """Everything the intro says about this edition, read from the files that own it."""
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    cff = yaml.safe_load((root / "CITATION.cff").read_text(encoding="utf-8"))
    url = str(config["repository"]["url"]).rstrip("/")
    owner, repo = url.split("/")[-2:]
    version = read_version(root)
    development = is_development(version)
    branch = str(config["repository"].get("branch", "main"))
    tag = branch if development else f"v{version}"
    chapters = sorted((root / "book").glob("[0-9]*.ipynb"))
    chapter = f"book/{chapters[0].name}" if chapters else "book/intro.md"
    authors = " and ".join(a.get("name") or f"{a.get('family-names')}, {a.get('given-names')}"
                           for a in cff.get("authors", []))
    commit = _commit(root) if development else ""
    year = str(cff.get("date-released", ""))[:4] or str(dt.date.today().year)
    if development:
        where = f"the branch {branch}" + (f" at commit {commit[:12]}" if commit else "")
        statement = (f"the development version {version} of the book, built from {where} of "
                     "its repository: not an edition, its text and code can still change")
    else:
        statement = f"edition {version} of the book, the git tag {tag} of its repository"
    return {
        "version": version, "tag": tag, "url": url, "owner": owner, "repo": repo,
        "chapter": chapter, "title": str(cff["title"]), "authors": authors, "year": year,
        "site": f"https://{owner}.github.io/{repo}/", "development": "1" if development else "",
        "commit": commit, "statement": statement,
        "latest": next(iter(_released(root)), ""),
    }


def _set_substitutions(app: Sphinx, config: Config) -> None:
    info = edition(Path(app.srcdir))
    subs = dict(getattr(config, "myst_substitutions", None) or {})
    subs.setdefault("edition", info["version"])
    subs.setdefault("edition_tag", info["tag"])
    subs.setdefault("edition_statement", info["statement"])
    config.myst_substitutions = subs
    if info["development"]:
        options = dict(getattr(config, "html_theme_options", None) or {})
        footer = options.get("extra_footer", "")
        options["extra_footer"] = (f"{footer} Development version {info['version']}, not an "
                                   "edition.").strip()
        config.html_theme_options = options


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
        if e["development"]:
            items += _item(f"The text and code of the development version (branch {tag}): ",
                           _link(f"{url}/tree/{tag}"))
            items += _item("The released editions, each with its PDF, verification ledger and "
                           "HTML (pin one of these for a course): ", _link(f"{url}/releases"))
            items += _item(f"A chapter in Colab (gmmlib installed from {tag}): ", _link(colab))
        else:
            items += _item("The text and code of this edition: ", _link(f"{url}/tree/{tag}"))
            items += _item("Its release, with the PDF, the verification ledger and the HTML: ",
                           _link(f"{url}/releases/tag/{tag}"))
            items += _item("A chapter of this edition in Colab (gmmlib installed from the same "
                           "tag): ", _link(colab))
        items += _item("The same chapter on Binder: ", _link(binder))
        return [items]


def bibtex(e: dict[str, str]) -> str:
    """The BibTeX record of the edition ``e`` (:func:`edition`); the author is braced so that
    an entity stays one name."""
    title = e["title"].replace("Gaussian", "{G}aussian")
    author = f"{{{{{e['authors']}}}}}"
    if e["development"]:
        ref = e["commit"] or e["tag"]
        key = "softmax_gmm_book_dev_" + (e["commit"][:7] or "main")
        return (
            f"@misc{{{key},\n"
            f"  author       = {author},\n"
            f"  title        = {{{title}}},\n"
            f"  howpublished = {{Development version {e['version']}}},\n"
            f"  year         = {{{e['year']}}},\n"
            f"  url          = {{{e['url']}/tree/{ref}}},\n"
            f"  note         = {{Development version {e['version']}"
            + (f", commit {e['commit'][:12]}" if e["commit"] else "")
            + ", not a released edition. Text CC BY 4.0, code MIT}\n}"
        )
    key = "softmax_gmm_book_" + e["tag"].replace(".", "_")
    return (
        f"@book{{{key},\n"
        f"  author    = {author},\n"
        f"  title     = {{{title}}},\n"
        f"  edition   = {{{e['version']}}},\n"
        f"  year      = {{{e['year']}}},\n"
        f"  publisher = {{GitHub}},\n"
        f"  url       = {{{e['url']}/tree/{e['tag']}}},\n"
        f"  note      = {{Edition {e['version']} (git tag {e['tag']}). Text CC BY 4.0, code MIT}}\n"
        f"}}"
    )


class EditionBibtex(SphinxDirective):
    """A BibTeX record of this edition (of the commit, for a development version)."""

    def run(self) -> list[nodes.Node]:
        e = edition(Path(self.env.srcdir))
        out: list[nodes.Node] = []
        if e["development"]:
            advice = ("For a citation that stays valid, cite a released edition (the "
                      "repository's releases and CHANGELOG.md list them; each has its own "
                      "record on its pages). This development version is cited by its commit:")
            out.append(nodes.paragraph(text=advice))
        text = bibtex(e)
        # a citation record, copied whole: long URLs wrap softly in the page (book.css), never scroll
        out.append(nodes.literal_block(text, text, language="bibtex", classes=["edition-bibtex"]))
        return out


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", _set_substitutions)
    app.add_directive("edition-links", EditionLinks)
    app.add_directive("edition-bibtex", EditionBibtex)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
