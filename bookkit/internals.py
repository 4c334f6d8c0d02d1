"""The undocumented internals the build reads: one function each, guarded by test_bookkit.py."""

from importlib.metadata import version
from typing import Any


class InternalsChanged(RuntimeError):
    """An internal that the book reads is not where or what it was (after an upgrade)."""


def _changed(package: str, what: str) -> InternalsChanged:
    return InternalsChanged(f"{package} {version(package)}: {what} changed (bookkit.internals)")


def numbers(env: Any, doc: str) -> tuple[dict[str, dict[str, tuple[int, ...]]], tuple[int, ...]]:
    """Sphinx: a page's live ``{figtype: {id: (3, 2)}}`` and its section number (``()``: none)."""
    fig, sec = getattr(env, "toc_fignumbers", None), getattr(env, "toc_secnumbers", None)
    if not isinstance(fig, dict) or not isinstance(sec, dict):
        raise _changed("sphinx", "env.toc_fignumbers / env.toc_secnumbers")
    return fig.get(doc, {}), tuple(sec.get(doc, {}).get("", ()))


def proofs(env: Any) -> dict[str, dict[str, str]]:
    """sphinx-proof: every statement ``{label: {docname, kind, countertype}}``."""
    try:
        return {label: {"docname": i["docname"], "countertype": i["countertype"],
                        "kind": i["realtype"].split(":")[-1]}
                for label, i in getattr(env, "proof_list", {}).items()}
    except (KeyError, TypeError, AttributeError) as exc:
        raise _changed("sphinx-proof", "env.proof_list") from exc


def exercises(env: Any) -> list[dict[str, Any]]:
    """sphinx-exercise: every exercise ``{label, docname, title}`` (its registry)."""
    from sphinx_exercise.nodes import exercise_subtitle

    try:
        return [{"label": label, "docname": i["docname"], "title": next(
                    (n.astext().strip() for n in i["node"].findall(exercise_subtitle)), "")}
                for label, i in getattr(env, "sphinx_exercise_registry", {}).items()
                if i["type"] == "exercise"]
    except (KeyError, TypeError, AttributeError) as exc:
        raise _changed("sphinx-exercise", "env.sphinx_exercise_registry") from exc


def solution_nodes() -> tuple[type, ...]:
    """sphinx-exercise: the node classes of ``{solution}`` and ``{solution-start}``."""
    try:
        from sphinx_exercise.nodes import solution_node, solution_start_node
    except ImportError as exc:
        raise _changed("sphinx-exercise", "sphinx_exercise.nodes") from exc
    return solution_node, solution_start_node


def exec_data(env: Any, doc: str) -> dict[str, Any]:
    """myst-nb: a page's execution record (``runtime`` in s, ``succeeded``) or ``{}``."""
    from myst_nb.sphinx_ import NbMetadataCollector

    try:
        data = NbMetadataCollector.get_exec_data(env, doc) or {}
    except AttributeError as exc:
        raise _changed("myst-nb", "NbMetadataCollector.get_exec_data") from exc
    if not isinstance(data, dict):
        raise _changed("myst-nb", "the execution record")
    return data
