"""How the chapters execute: cache or force, the students' edition, headless kernels, tracebacks.

``BOOK_EXECUTE=cache`` (``make book``) takes an unchanged chapter from ``_build/.jupyter_cache``
(keyed on the code cells, not gmmlib: ``make book-fresh`` after changing gmmlib).
``BOOK_STUDENTS=1`` leaves the solutions out of the pages (sphinx-exercise 1.2.1's
``hide_solutions`` crashes on solutions holding code). ``GMMLIB_HEADLESS=1`` goes into this
process's environment, which myst-nb's and jupyter-cache's kernels inherit, so that gmmlib makes
no widget (none has a front end; their messages once stalled executions): neither myst-nb nor
nbclient offers a kernel environment or says that no front end is attached. A cell that replied
"ok" with a traceback as output (its display failed) fails the build, naming page and cell.
"""

import os
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.errors import ExtensionError
from sphinx.transforms.post_transforms import SphinxPostTransform

from bookkit import internals
from gmmlib.plotting import HEADLESS_ENV

EXECUTE_ENV, STUDENTS_ENV = "BOOK_EXECUTE", "BOOK_STUDENTS"
MODES = ("force", "cache", "auto", "off", "inline")


def students_edition() -> bool:
    """Whether this build is the students' edition (``BOOK_STUDENTS`` set and not ``0``)."""
    return os.environ.get(STUDENTS_ENV, "").strip() not in ("", "0")


def _configure(app: Sphinx, config: Config) -> None:
    mode = os.environ.get(EXECUTE_ENV, "").strip()
    if mode:
        if mode not in MODES:
            raise ValueError(f"{EXECUTE_ENV}={mode!r}: expected one of {', '.join(MODES)}")
        config.nb_execution_mode = mode
        # one cache for every variant (the students' edition reuses the book's executions)
        config.nb_execution_cache_path = str(Path(app.srcdir) / "_build" / ".jupyter_cache")


class RemoveSolutions(SphinxPostTransform):
    """Remove every solution node (after sphinx-exercise's own post-transforms, 5-22)."""

    default_priority = 50

    def run(self, **kwargs: Any) -> None:
        solutions = internals.solution_nodes()
        for node in list(self.document.findall(lambda n: isinstance(n, solutions))):
            if students_edition() and node.parent is not None:
                node.parent.remove(node)


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
    app.connect("config-inited", _configure, priority=900)
    app.add_post_transform(RemoveSolutions)
    app.connect("doctree-read", _error_outputs)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
