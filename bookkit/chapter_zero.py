"""Chapter zero: the unnumbered Toolkit's equations, figures, lemmas, exercises are "0.n"."""

from typing import Any

from sphinx.application import Sphinx

from bookkit import internals


def _prefix_zero(app: Sphinx, env: Any) -> list[str]:
    for doc in app.config.chapter_zero_docs:
        fignumbers, secnumber = internals.numbers(env, doc)
        if secnumber:
            continue  # the page is numbered after all: Sphinx's numbers stand
        for figtype, numbers in fignumbers.items():
            # unnumbered pages share one counter (the intro's figure is "1"): restart it at 1
            firsts = [n[0] for n in numbers.values() if n and n[0] != 0]
            offset = min(firsts, default=1) - 1
            for key, number in list(numbers.items()):
                if number and number[0] != 0:
                    internals.set_figure_number(env, doc, figtype, key,
                                                (0, number[0] - offset, *number[1:]))
    return []


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("chapter_zero_docs", ["book/00_toolkit"], "env")
    # after Sphinx's TocTreeCollector has assigned the numbers (default priority 500)
    app.connect("env-get-updated", _prefix_zero, priority=900)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
