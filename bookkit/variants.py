"""The book's variants, chosen by environment variables: ``BOOK_EXECUTE`` and ``BOOK_STUDENTS``.

``_config.yml`` describes the strict build of CI and ``make test`` (every notebook executed
afresh). ``BOOK_EXECUTE=cache`` (``make book``) uses myst-nb's cache mode: a chapter whose code
cells are unchanged since its last execution comes from the jupyter-cache in
``_build/.jupyter_cache`` (keyed on the code cells, not on gmmlib: after changing gmmlib use
``make book-fresh``); any other mode is passed to myst-nb as it is. ``BOOK_STUDENTS=1``
(``make book-students``) leaves every solution out of the pages (sphinx-exercise's own
``hide_solutions`` crashes on solutions holding code cells, in 1.2.1); their code still runs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.transforms.post_transforms import SphinxPostTransform

from bookkit import internals

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


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", _configure, priority=900)
    app.add_post_transform(RemoveSolutions)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
