"""How the chapters execute: cache or force, the students' edition, headless kernels, tracebacks."""

import atexit
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.errors import ExtensionError
from sphinx.transforms.post_transforms import SphinxPostTransform

from bookkit import internals
from bookkit.run import first_line
from gmmlib.runtime.plotting import HEADLESS_ENV


def students_edition() -> bool:
    """Whether this build is the students' edition (``BOOK_STUDENTS`` set and not ``0``)."""
    return os.environ.get("BOOK_STUDENTS", "").strip() not in ("", "0")


def _configure(app: Sphinx, config: Config) -> None:
    """``BOOK_EXECUTE=cache`` (``make book``): myst-nb's mode, one cache for every variant."""
    mode = os.environ.get("BOOK_EXECUTE", "").strip()
    if mode:
        config.nb_execution_mode = mode
        config.nb_execution_cache_path = str(Path(app.srcdir) / "_build" / ".jupyter_cache")


class RemoveSolutions(SphinxPostTransform):
    """The students' edition: no solution (``hide_solutions`` crashes on one holding code)."""

    default_priority = 50

    def run(self, **kwargs: Any) -> None:
        solutions = internals.solution_nodes() if students_edition() else ()
        for node in list(self.document.findall(lambda n: isinstance(n, solutions))):
            node.parent.remove(node)


def _error_outputs(app: Sphinx, doctree: nodes.document) -> None:
    """A cell that replied "ok" with a traceback as output fails the build, naming the cell."""
    for block in doctree.findall(nodes.literal_block):
        found = internals.code_cell(block) if "traceback" in block["classes"] else None
        if found is None:
            continue
        cell, source = found
        error = next((ln for ln in reversed(block.astext().splitlines()) if ln.strip()), "")
        raise ExtensionError(
            f"{app.env.doc2path(app.env.docname, False)}, cell {cell.get('cell_index')} "
            f"(`{first_line(source)}`): its output shows an error: {first_line(error, 200)}")


def setup(app: Sphinx) -> dict[str, Any]:
    # myst-nb's and jupyter-cache's kernels inherit this process's environment (neither offers
    # a kernel environment): headless, gmmlib makes no widget, whose messages stalled executions
    os.environ[HEADLESS_ENV] = "1"
    # the kernels talk to the build over local IPC sockets, not unencrypted TCP (about which
    # each kernel printed a warning); a short folder: a socket's path is at most ~100 bytes
    sockets = tempfile.mkdtemp(prefix="bookkit-kernels-")
    atexit.register(shutil.rmtree, sockets, ignore_errors=True)
    internals.kernels_over_ipc(sockets)
    app.connect("config-inited", _configure, priority=900)
    app.add_post_transform(RemoveSolutions)
    app.connect("doctree-read", _error_outputs)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
