"""Sphinx extension: the Toolkit numbers its equations, figures, lemmas and exercises "0.n".

The Toolkit (``book/00_toolkit``) sits in an unnumbered part of ``_toc.yml`` so that the
chapters after it keep the numbers 1 to 10. Sphinx then numbers what it holds "(1)",
"Lemma 1", "Figure 1", which a reader takes for Chapter 1's. Once Sphinx has assigned the
numbers, this prefixes a 0 to every number of the pages listed in ``chapter_zero_docs``:
"(0.1)", "Lemma 0.1", "Figure 0.3", "Exercise 0.2", wherever they are shown or referred to.
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx


def _prefix_zero(app: Sphinx, env: Any) -> list[str]:
    for doc in app.config.chapter_zero_docs:
        if env.toc_secnumbers.get(doc):
            continue  # the page is numbered after all: leave Sphinx's numbers
        for numbers in env.toc_fignumbers.get(doc, {}).values():
            for key, number in numbers.items():
                if number and number[0] != 0:
                    numbers[key] = (0, *number)
    return []


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("chapter_zero_docs", ["book/00_toolkit"], "env")
    # after sphinx's TocTreeCollector has assigned the figure numbers (default priority 500)
    app.connect("env-get-updated", _prefix_zero, priority=900)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
