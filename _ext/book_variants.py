"""Sphinx extension: the variants of one book, chosen by environment variables.

``_config.yml`` describes the strict build that CI and ``make test`` run (every notebook
executed afresh: ``execute_notebooks: force``). Two variants change one thing each, with no
second configuration file to keep in step:

``BOOK_EXECUTE=cache`` (``make book``)
    myst-nb's cache mode: a chapter whose code cells are unchanged since its last successful
    execution is taken from the jupyter-cache in ``_build/.jupyter_cache``, one that changed is
    executed (and cached). The cache is keyed on the code cells, not on ``gmmlib``: after
    changing ``gmmlib`` use ``make book-fresh`` (or ``make clean``). Any other value of
    ``BOOK_EXECUTE`` (``force``, ``off``, ``auto``) is passed to myst-nb as it is.

``BOOK_STUDENTS=1`` (``make book-students``)
    The same book with every solution left out: each ``{solution}`` (and gated
    ``{solution-start}``/``{solution-end}``) node is removed from the pages after
    sphinx-exercise has resolved them. sphinx-exercise's own ``hide_solutions`` would do it,
    but version 1.2.1 crashes on solutions that hold code cells. The solutions' code still runs
    (the checks in them stay in the ledger); only their text, code and output leave the page.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.transforms.post_transforms import SphinxPostTransform

EXECUTE_ENV = "BOOK_EXECUTE"
STUDENTS_ENV = "BOOK_STUDENTS"
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
        # the cache's executor starts kernels with this process's environment: no front end
        # is attached to them, so no live widget (gmmlib.plotting.live_sliders)
        os.environ.setdefault("GMMLIB_HEADLESS", "1")


class RemoveSolutions(SphinxPostTransform):
    """Remove every solution node (after sphinx-exercise's own post-transforms, 5-22)."""

    default_priority = 50

    def run(self, **kwargs: Any) -> None:
        if not students_edition():
            return
        for node in list(self.document.findall(nodes.Element)):
            if type(node).__name__ == "solution_node" and node.parent is not None:
                node.parent.remove(node)


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", _configure, priority=900)
    app.add_post_transform(RemoveSolutions)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
