"""The undocumented internals the build reads, one function per package, each guarded by a test.

Sphinx, sphinx-proof, sphinx-exercise and myst-nb offer no public API for these; every read
of them goes through here, and ``tests/test_bookkit.py`` fails naming the package and its
version when an upgrade changes one (:class:`InternalsChanged`).
"""

from __future__ import annotations

from importlib.metadata import version
from typing import Any


class InternalsChanged(RuntimeError):
    """An internal that the book reads is not where or what it was (after an upgrade)."""


def _changed(package: str, what: str) -> InternalsChanged:
    return InternalsChanged(f"{package} {version(package)}: {what} changed; update bookkit/internals.py")


def numbers(env: Any, docname: str) -> tuple[dict[str, dict[str, tuple[int, ...]]], tuple[int, ...]]:
    """Sphinx: a page's figure numbers ``{figtype: {id: (3, 2)}}`` (the live dict, which
    ``chapter_zero`` rewrites) and its section number (``()`` when unnumbered).

    ``env.toc_fignumbers`` and ``env.toc_secnumbers`` are filled by Sphinx's TocTreeCollector;
    ``StandardDomain.get_fignumber`` reads them but needs the target's node.
    """
    fig, sec = getattr(env, "toc_fignumbers", None), getattr(env, "toc_secnumbers", None)
    if not isinstance(fig, dict) or not isinstance(sec, dict):
        raise _changed("sphinx", "env.toc_fignumbers / env.toc_secnumbers")
    return fig.get(docname, {}), tuple(sec.get(docname, {}).get("", ()))


def proofs(env: Any) -> dict[str, dict[str, str]]:
    """sphinx-proof: every statement ``{label: {docname, kind, countertype}}`` (``env.proof_list``;
    its ``prf`` domain keeps no data)."""
    out = {}
    for label, info in getattr(env, "proof_list", {}).items():
        try:
            out[label] = {"docname": info["docname"], "countertype": info["countertype"],
                          "kind": info["realtype"].split(":")[-1]}
        except (KeyError, TypeError, AttributeError) as exc:
            raise _changed("sphinx-proof", "env.proof_list's entries") from exc
    return out


def exercises(env: Any) -> list[dict[str, Any]]:
    """sphinx-exercise: every exercise ``{label, docname, title}`` (``env.sphinx_exercise_registry``),
    and the node classes of its solutions (:func:`solution_nodes`)."""
    from sphinx_exercise.nodes import exercise_subtitle

    out = []
    for label, info in getattr(env, "sphinx_exercise_registry", {}).items():
        try:
            if info["type"] != "exercise":
                continue
            subtitle = next(iter(info["node"].findall(exercise_subtitle)), None)
            out.append({"label": label, "docname": info["docname"],
                        "title": subtitle.astext().strip() if subtitle is not None else ""})
        except (KeyError, TypeError, AttributeError) as exc:
            raise _changed("sphinx-exercise", "env.sphinx_exercise_registry") from exc
    return out


def solution_nodes() -> tuple[type, ...]:
    """sphinx-exercise: the node classes of ``{solution}`` and of a gated ``{solution-start}``."""
    try:
        from sphinx_exercise.nodes import solution_node, solution_start_node
    except ImportError as exc:
        raise _changed("sphinx-exercise", "sphinx_exercise.nodes") from exc
    return solution_node, solution_start_node


def exec_data(env: Any, docname: str) -> dict[str, Any]:
    """myst-nb: a page's execution record (``runtime`` in s, ``succeeded``), or ``{}``: the
    numbers of the execution-status page (``NbMetadataCollector.get_exec_data``)."""
    from myst_nb.sphinx_ import NbMetadataCollector

    try:
        data = NbMetadataCollector.get_exec_data(env, docname)
    except AttributeError as exc:
        raise _changed("myst-nb", "NbMetadataCollector.get_exec_data") from exc
    if data is not None and not isinstance(data, dict):
        raise _changed("myst-nb", "the execution record")
    return data or {}
