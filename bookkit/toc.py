"""The one reading of ``_toc.yml``: the book's pages and chapters, in order."""

from pathlib import Path

import yaml



class NoBook(FileNotFoundError):
    """No book's root (a folder with ``_config.yml``) here; its message is one line."""


def find_root(start: Path | str | None = None) -> Path:
    """The book's root: the nearest folder at or above ``start`` (by default the working
    directory) that holds the book's ``_config.yml``. bookkit never looks beside its own files:
    installed from a wheel it works on whichever book it is run in."""
    here = Path(start if start is not None else Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "_config.yml").is_file():
            return folder
    raise NoBook(f"{here}: no book here (no _config.yml in it or above): run bookkit from "
                 "the book's folder")


def name(docname: str) -> str:
    """The file name without folder or suffix (``05_landscape``)."""
    return docname.rsplit("/", 1)[-1]


def pages(root: Path | None = None) -> list[str]:
    """The docname of every page of ``_toc.yml`` under ``root`` (default: :func:`find_root`),
    the root page first."""
    toc = yaml.safe_load((find_root(root) / "_toc.yml").read_text(encoding="utf-8"))
    return [toc["root"]] + [entry["file"] for part in toc.get("parts", [])
                            for entry in part.get("chapters", [])]


def chapters(root: Path | None = None) -> list[str]:
    """The chapters: the numbered MyST notebooks ``NN_*`` (Chapter 0, the Toolkit, included)."""
    return [doc for doc in pages(root) if name(doc)[:2].isdigit()]
