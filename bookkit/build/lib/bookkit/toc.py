"""The one reading of ``_toc.yml``: the book's pages and chapters, in order."""

from pathlib import Path

import yaml

#: The repository's root (this package lives in ``<root>/bookkit``).
ROOT = Path(__file__).resolve().parent.parent


def name(docname: str) -> str:
    """The file name without folder or suffix (``05_landscape``)."""
    return docname.rsplit("/", 1)[-1]


def pages(root: Path = ROOT) -> list[str]:
    """The docname of every page of ``_toc.yml`` under ``root``, the root page first."""
    toc = yaml.safe_load((Path(root) / "_toc.yml").read_text(encoding="utf-8"))
    return [toc["root"]] + [entry["file"] for part in toc.get("parts", [])
                            for entry in part.get("chapters", [])]


def chapters(root: Path = ROOT) -> list[str]:
    """The chapters: the numbered MyST notebooks ``NN_*`` (Chapter 0, the Toolkit, included)."""
    return [doc for doc in pages(root) if name(doc)[:2].isdigit()]
