"""The build's kernels run headless, and a cell whose output is a traceback fails the build.

myst-nb executes each chapter under ``_config.yml``'s ``execute.timeout`` and
``raise_on_error``; its error names the notebook and nbclient's the cell. Two things remain:

* ``GMMLIB_HEADLESS=1`` (:data:`gmmlib.plotting.HEADLESS_ENV`) in this process's environment,
  which the kernels of myst-nb and jupyter-cache inherit, so that
  :func:`gmmlib.plotting.interactive_figure` shows precomputed frames and makes no widget (with
  no front end a widget's messages once stalled executions). Neither myst-nb nor nbclient
  offers a kernel environment or tells a kernel that no front end is attached: this is the
  one place the build sets it.
* A cell that replied "ok" but whose output is a traceback (an exception raised while its
  display was formatted, such as a figure whose label does not parse): nbclient does not
  raise and myst-nb renders it; here it fails the build, naming the page and the cell.
"""

from __future__ import annotations

import os
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError

from gmmlib.plotting import HEADLESS_ENV


def _line(text: str, width: int) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= width else line[: width - 1] + "…"


def _error_outputs(app: Sphinx, doctree: nodes.document) -> None:
    for block in doctree.findall(nodes.literal_block):
        cell = block.parent
        while cell is not None and cell.get("nb_element") != "cell_code":
            cell = cell.parent
        if "traceback" not in block["classes"] or cell is None:
            continue
        source = next((n.astext() for n in cell.findall(nodes.literal_block)
                       if n.parent.get("nb_element") == "cell_code_source"), "")
        error = next((ln for ln in reversed(block.astext().splitlines()) if ln.strip()), "")
        raise ExtensionError(
            f"{app.env.doc2path(app.env.docname, False)}, cell {cell.get('cell_index')} "
            f"(`{_line(source, 60)}`): its output shows an error: {_line(error, 200)}")


def setup(app: Sphinx) -> dict[str, Any]:
    os.environ[HEADLESS_ENV] = "1"
    app.connect("doctree-read", _error_outputs)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
