"""The one reading of ``_toc.yml``: the book's pages and chapters, in order."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

#: The repository's root (this package lives in ``<root>/bookkit``).
ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Page:
    """One entry of the table of contents: its docname (``book/05_landscape``) and its part."""

    docname: str
    part: str
    numbered: bool

    @property
    def name(self) -> str:
        """The file name without folder or suffix (``05_landscape``)."""
        return self.docname.rsplit("/", 1)[-1]

    @property
    def is_chapter(self) -> bool:
        """A chapter is a numbered MyST notebook ``NN_*`` (Chapter 0, the Toolkit, included)."""
        return self.name[:2].isdigit()

    def source(self, root: Path = ROOT) -> Path:
        """The page's source file: its ``.md`` (a chapter's MyST source), else its ``.ipynb``."""
        md = root / f"{self.docname}.md"
        return md if md.is_file() else root / f"{self.docname}.ipynb"


def pages(root: Path = ROOT) -> list[Page]:
    """Every page of ``_toc.yml`` under ``root``, the root page first, in reading order."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    out = [Page(toc["root"], "", False)]
    for part in toc.get("parts", []):
        for entry in part.get("chapters", []):
            out.append(Page(entry["file"], part.get("caption", ""), bool(part.get("numbered"))))
    return out


def chapters(root: Path = ROOT) -> list[Page]:
    """The chapters (``NN_*`` pages), in order."""
    return [p for p in pages(root) if p.is_chapter]
