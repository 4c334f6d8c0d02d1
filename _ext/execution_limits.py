"""Sphinx extension: the build's execution runs headless and its failures name the chapter and cell.

myst-nb executes each chapter with nbclient under its public settings (``_config.yml``):
``execute.timeout`` seconds per cell and ``raise_on_error``, so a failing or stalled cell
fails the build. This extension uses public hooks only, to add

* ``GMMLIB_HEADLESS=1`` in the environment the kernels inherit: no front end is attached,
  so :func:`gmmlib.plotting.interactive_figure` shows precomputed frames and creates no widget;
* at ``build-finished``, when a chapter's execution failed, one line naming the chapter and
  the cell (index and first line) and what happened (the error, or the per-cell limit);
* at ``doctree-read``, a failure for a cell that replied "ok" but whose output shows an error
  (an exception raised while its display was formatted, such as a figure whose label does not
  parse): myst-nb renders it as a traceback and nbclient does not raise.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging

from gmmlib.plotting import HEADLESS_ENV

logger = logging.getLogger(__name__)


def _first_line(text: str, width: int = 60) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= width else line[: width - 1] + "…"


def _cell_of(path: Path, text: str) -> str:
    """``cell N (`first line`)`` for the code cell of the chapter whose source begins ``text``'s cell."""
    try:
        import jupytext

        cells = jupytext.read(path).cells
    except Exception:  # the message then names the chapter only
        return "a cell"
    code = [(i, c.source.strip()) for i, c in enumerate(cells) if c.cell_type == "code" and c.source.strip()]
    whole = [(len(src), i, src) for i, src in code if src in text]  # nbclient quotes the cell's source
    first = [(len(src), i, src) for i, src in code if _first_line(src, 10_000) in text]
    if not (whole or first):
        return "a cell"
    _, i, src = max(whole or first)
    return f"cell {i} (`{_first_line(src)}`)"


def failure_line(exc: BaseException, root: Path) -> str | None:
    """One line for a failed execution: chapter, cell, and the error or the limit that fired."""
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    chain, seen = [], exc
    while seen is not None:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    cause = next((e for e in chain if isinstance(e, (CellExecutionError, CellTimeoutError))), None)
    if cause is None:
        return None
    path = next((Path(str(e)) for e in chain if type(e).__name__ == "ExecutionError"), None)
    name = "a chapter"
    if path is not None:
        try:
            name = str(path.resolve().relative_to(root))
        except ValueError:
            name = str(path)
    where = _cell_of(path, str(cause)) if path is not None and path.is_file() else "a cell"
    if isinstance(cause, CellTimeoutError):
        return f"{name}, {where}: no reply within the per-cell limit (execute.timeout): {_first_line(str(cause), 120)}"
    return f"{name}, {where}: {cause.ename}: {_first_line(str(cause.evalue), 300)}"


def _name_the_failure(app: Sphinx, exception: Exception | None) -> None:
    line = failure_line(exception, Path(app.srcdir)) if exception is not None else None
    if line:
        logger.error(f"execution failed: {line}", type="execution", subtype="cell")


def _error_outputs(app: Sphinx, doctree: nodes.document) -> None:
    for block in doctree.findall(nodes.literal_block):
        if "traceback" not in block.get("classes", []):
            continue
        cell = block.parent
        while cell is not None and cell.get("nb_element") != "cell_code":
            cell = cell.parent
        index = cell.get("cell_index") if cell is not None else None
        source = next((n.astext() for n in cell.findall(nodes.literal_block)
                       if n.parent.get("nb_element") == "cell_code_source"), "") if cell is not None else ""
        error = next((ln for ln in reversed(block.astext().splitlines()) if ln.strip()), "an error")
        raise ExtensionError(
            f"{app.env.doc2path(app.env.docname, False)}, cell {index} (`{_first_line(source)}`): its output "
            f"shows an error: {_first_line(error, 200)}")


def setup(app: Sphinx) -> dict[str, Any]:
    os.environ[HEADLESS_ENV] = "1"  # the kernels myst-nb starts inherit this process's environment
    app.connect("doctree-read", _error_outputs)
    app.connect("build-finished", _name_the_failure)
    return {"version": "0.2", "parallel_read_safe": True, "parallel_write_safe": True}
