"""The edition in the pages: ``{{ edition }}``, ``{{ pin_* }}`` (the instructors' page),
``{edition-links}``, ``{edition-bibtex}``."""

import datetime as dt
import re
from pathlib import Path
from typing import Any

import yaml
from docutils import nodes
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.util.docutils import SphinxDirective

from bookkit import toc
from bookkit.edition import git, is_development, read_repository, read_version
from bookkit.notebooks import BRANCH_PREFIX, BINDER, COLAB, branch, launch_urls
from bookkit.pages import para

def edition(root: Path) -> dict[str, str]:
    """Everything the intro says about this edition, read from the files that own it."""
    cff = yaml.safe_load((root / "CITATION.cff").read_text(encoding="utf-8"))
    (url, branch), version = read_repository(root), read_version(root)
    dev = is_development(version)
    tag = branch if dev else f"v{version}"
    # an entity (tests/bookkit/test_publishing)
    authors = " and ".join(a["name"] for a in cff["authors"])
    commit = git(root, "rev-parse", "HEAD", check=False) if dev else ""
    if dev:
        where = f"the branch {branch}" + (f" at commit {commit[:12]}" if commit else "")
        statement = (f"the development version {version} of the book, built from {where} of "
                     "its repository: not an edition, its text and code can still change")
    else:
        statement = f"edition {version} of the book, the git tag {tag} of its repository"
    return {
        "version": version, "tag": tag, "url": url, "owner": url.split("/")[-2],
        "repo": url.split("/")[-1], "chapter": toc.chapters(root)[0],
        "title": str(cff["title"]), "authors": authors,
        "year": str(cff.get("date-released", ""))[:4] or str(dt.date.today().year),
        "development": "1" if dev else "", "commit": commit, "statement": statement,
    }


def released_tags(root: Path) -> list[str]:
    """The repository's edition tags ``vX.Y.Z``, newest first (none in a clone without tags)."""
    tags = git(root, "tag", "--list", "v*", check=False).split()
    final = [t for t in tags if re.fullmatch(r"v\d+\.\d+\.\d+", t)]
    return sorted(final, key=lambda t: tuple(map(int, t[1:].split("."))), reverse=True)


def pinning(e: dict[str, str], tags: list[str]) -> dict[str, str]:
    """The instructors' page's ``{{ pin_* }}``: the repository's links at the edition to pin.

    In an edition that is its own tag; in a development version the newest tag the clone knows,
    or, when it knows none, ``vX.Y.Z`` and a sentence saying that no edition was tagged yet."""
    url, repo, chapter = e["url"], f"{e['owner']}/{e['repo']}", e["chapter"]
    if not e["development"]:
        tag = e["tag"]
        status = f"these pages are that edition, {e['version']}, and the links below show its tag"
    elif tags:
        tag = tags[0]
        status = f"the newest when these pages were built was `{tag}`, the tag the links below show"
    else:
        tag = "vX.Y.Z"
        status = ("when these pages were built no edition had been tagged yet: once one is, "
                  "put its tag where the links below show `vX.Y.Z`")
    return {
        "repository": url, "owner_repo": repo, "pin_tag": tag, "pin_status": status,
        # the link's text is its address without the scheme (the theme shortens a github.com
        # link whose text is its address to "owner/repo")
        "pin_releases": f"[{url.split('://', 1)[-1]}/releases]({url}/releases)",
        "pin_source": f"`{url}/tree/{tag}`",
        "pin_colab": f"`{COLAB.rstrip('/')}/github/{repo}/blob/{BRANCH_PREFIX}{tag}/{chapter}`",
        "pin_binder": (f"`{BINDER.rstrip('/')}/v2/gh/{repo}/{BRANCH_PREFIX}{tag}"
                       f"?urlpath=tree/{chapter}`"),
        "pin_clone": f"`git clone --branch {tag} {url}`",
        "pin_pip": f'`pip install otter-grader==7.0.0 "gmmlib[book] @ git+{url}@{tag}"`',
    }


def _set_substitutions(app: Sphinx, config: Config) -> None:
    root = Path(app.srcdir)
    info, options = edition(root), dict(config.html_theme_options)
    config.myst_substitutions = {"edition": info["version"], "edition_tag": info["tag"],
                                 "edition_statement": info["statement"],
                                 **pinning(info, released_tags(root)),
                                 **config.myst_substitutions}
    if info["development"]:
        options["extra_footer"] = (f"{options.get('extra_footer', '')} Development version "
                                   f"{info['version']}, not an edition.").strip()
        config.html_theme_options = options


def _item(text: str, url: str) -> nodes.list_item:
    # the text is the address without its scheme: the theme shortens a github.com link whose
    # text is its address to "owner/repo", which would hide the tag
    return nodes.list_item("", para(text, nodes.reference("", url.split("://", 1)[-1],
                                                          refuri=url, internal=False)))


class EditionLinks(SphinxDirective):
    """A list of this edition's links (source, release, Colab, Binder: a reader notebook)."""

    def run(self) -> list[nodes.Node]:
        e = edition(Path(self.env.srcdir))
        tag, url = e["tag"], e["url"]
        launch = launch_urls(Path(self.env.srcdir), e["chapter"])
        colab, binder = launch["Colab"], launch["Binder"]
        tag_or_branch = branch(Path(self.env.srcdir))
        if e["development"]:
            items = [(f"The text and code of the development version (branch {tag}): ",
                      f"{url}/tree/{tag}"),
                     ("The released editions, each with its PDF, verification ledger and HTML "
                      "(pin one of these for a course): ", f"{url}/releases"),
                     (f"A chapter in Colab (its reader notebook, branch {tag_or_branch}; "
                      f"gmmlib installed from {tag}): ", colab)]
        else:
            items = [("The text and code of this edition: ", f"{url}/tree/{tag}"),
                     ("Its release, with the PDF, the verification ledger and the HTML: ",
                      f"{url}/releases/tag/{tag}"),
                     (f"A chapter of this edition in Colab (its reader notebook, branch "
                      f"{tag_or_branch}; gmmlib installed from the tag): ", colab)]
        items.append(("The same chapter on Binder: ", binder))
        return [nodes.bullet_list("", *(_item(text, link) for text, link in items))]


def bibtex(e: dict[str, str]) -> str:
    """The BibTeX record of the edition ``e`` (the author braced: an entity stays one name)."""
    fields = {"author": f"{{{e['authors']}}}",
              "title": e["title"].replace("Gaussian", "{G}aussian")}
    if e["development"]:
        kind, key = "misc", "softmax_gmm_book_dev_" + (e["commit"][:7] or "main")
        commit = f", commit {e['commit'][:12]}" if e["commit"] else ""
        fields.update(howpublished=f"Development version {e['version']}", year=e["year"],
                      url=f"{e['url']}/tree/{e['commit'] or e['tag']}",
                      note=f"Development version {e['version']}{commit}, not a released "
                      "edition. Text CC BY 4.0, code MIT")
    else:
        kind, key = "book", "softmax_gmm_book_" + e["tag"].replace(".", "_")
        fields.update(edition=e["version"], year=e["year"], publisher="GitHub",
                      url=f"{e['url']}/tree/{e['tag']}",
                      note=f"Edition {e['version']} (git tag {e['tag']}). Text CC BY 4.0, "
                      "code MIT")
    width = max(map(len, fields))
    body = ",\n".join(f"  {k:<{width}} = {{{v}}}" for k, v in fields.items())
    return f"@{kind}{{{key},\n{body}\n}}"


class EditionBibtex(SphinxDirective):
    """A BibTeX record of this edition (of the commit, for a development version)."""

    def run(self) -> list[nodes.Node]:
        e = edition(Path(self.env.srcdir))
        text = bibtex(e)  # copied whole: long URLs wrap softly in the page (book.css)
        return [para("For a citation that stays valid, cite a released edition (the "
                     "repository's releases and CHANGELOG.md list them; each has its own record "
                     "on its pages). This development version is cited by its commit:")
                ] * bool(e["development"]) + [
            nodes.literal_block(text, text, language="bibtex", classes=["edition-bibtex"])]


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", _set_substitutions)
    app.add_directive("edition-links", EditionLinks)
    app.add_directive("edition-bibtex", EditionBibtex)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
