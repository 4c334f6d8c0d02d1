"""Docutils helpers shared by the book's generated appendix tables (ledger, concordance)."""

from __future__ import annotations

from collections.abc import Sequence

from docutils import nodes


def para(*children: nodes.Node | str) -> nodes.paragraph:
    """A paragraph of text and nodes."""
    p = nodes.paragraph()
    for c in children:
        p += nodes.Text(c) if isinstance(c, str) else c
    return p


def table(header: Sequence[str], rows: Sequence[Sequence[nodes.Node | str]], widths: Sequence[int],
          classes: Sequence[str] = ("ledger-table",)) -> nodes.table:
    """A table with a header row; a cell is a paragraph node, or text wrapped in one."""
    out = nodes.table(classes=list(classes))
    group = nodes.tgroup(cols=len(header))
    out += group
    for w in widths:
        group += nodes.colspec(colwidth=w)
    thead = nodes.thead()
    group += thead
    row = nodes.row()
    for h in header:
        row += nodes.entry("", para(h))
    thead += row
    tbody = nodes.tbody()
    group += tbody
    for cells in rows:
        row = nodes.row()
        for cell in cells:
            row += nodes.entry("", cell if isinstance(cell, nodes.paragraph) else para(cell))
        tbody += row
    return out
