"""The undocumented internals the build reads: one function each, guarded by test_bookkit.py."""

import functools
from importlib.metadata import version
from typing import Any


class InternalsChanged(RuntimeError):
    """An internal that the book reads is not where or what it was (after an upgrade)."""


def _reads(package: str, what: str):
    """A failure to read ``what`` raises :class:`InternalsChanged` naming ``package``'s version."""
    def wrap(fn):
        @functools.wraps(fn)
        def guarded(*args: Any) -> Any:
            try:
                return fn(*args)
            except (AttributeError, ImportError, KeyError, TypeError) as exc:
                raise InternalsChanged(f"{package} {version(package)}: {what} changed "
                                       "(bookkit.internals)") from exc
        return guarded
    return wrap


@_reads("sphinx", "env.toc_fignumbers / env.toc_secnumbers")
def numbers(env: Any, doc: str) -> tuple[dict[str, dict[str, tuple[int, ...]]], tuple[int, ...]]:
    """Sphinx: a page's live ``{figtype: {id: (3, 2)}}`` and its section number (``()``: none)."""
    return env.toc_fignumbers.get(doc, {}), tuple(env.toc_secnumbers.get(doc, {}).get("", ()))


@_reads("sphinx-proof", "env.proof_list")
def proofs(env: Any) -> dict[str, dict[str, str]]:
    """sphinx-proof: every statement ``{label: {docname, kind, countertype}}``."""
    return {label: {"docname": i["docname"], "countertype": i["countertype"],
                    "kind": i["realtype"].split(":")[-1]}
            for label, i in getattr(env, "proof_list", {}).items()}


@_reads("sphinx-exercise", "env.sphinx_exercise_registry")
def exercises(env: Any) -> list[dict[str, Any]]:
    """sphinx-exercise: every exercise ``{label, docname, title}`` (its registry)."""
    from sphinx_exercise.nodes import exercise_subtitle

    return [{"label": label, "docname": i["docname"], "title": next(
                (n.astext().strip() for n in i["node"].findall(exercise_subtitle)), "")}
            for label, i in getattr(env, "sphinx_exercise_registry", {}).items()
            if i["type"] == "exercise"]


@_reads("sphinx-exercise", "sphinx_exercise.nodes")
def solution_nodes() -> tuple[type, ...]:
    """sphinx-exercise: the node classes of ``{solution}`` and ``{solution-start}``."""
    from sphinx_exercise.nodes import solution_node, solution_start_node

    return solution_node, solution_start_node


@_reads("myst-nb", "NbMetadataCollector.get_exec_data")
def exec_data(env: Any, doc: str) -> dict[str, Any]:
    """myst-nb: a page's execution record (``runtime`` in s, ``succeeded``) or ``{}``."""
    from myst_nb.sphinx_ import NbMetadataCollector

    return dict(NbMetadataCollector.get_exec_data(env, doc) or {})


@_reads("jupyter-client", "KernelManager's transport, ip and cache_ports")
def kernels_over_ipc(folder: str) -> None:
    """jupyter_client: the kernels this process starts (myst-nb's and jupyter-cache's, which take
    no kernel settings) talk to it over IPC sockets under ``folder``, not over TCP, which the
    kernel warns is unencrypted. A manager given an explicit transport keeps it."""
    import uuid

    from jupyter_client.manager import KernelManager

    if getattr(KernelManager, "_bookkit_ipc", False):
        return
    init = KernelManager.__init__

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        if "transport" not in self.config.get("KernelManager", {}):
            # an absolute path, one per kernel: the kernel's cwd is not this process's
            self.transport, self.cache_ports = "ipc", False
            self.ip = f"{folder}/{uuid.uuid4().hex[:12]}"

    KernelManager.__init__, KernelManager._bookkit_ipc = __init__, True


@_reads("sphinx", "env.toc_secnumbers")
def section_numbers(env: Any, doc: str) -> dict[str, tuple[int, ...]]:
    """Sphinx: a page's section numbers ``{"#anchor": (3, 2)}`` (``""``: the page's title)."""
    return {anchor: tuple(n) for anchor, n in env.toc_secnumbers.get(doc, {}).items()}


@_reads("sphinx-book-theme", "context['header_buttons'] (the launch-buttons group)")
def launch_buttons(context: dict[str, Any]) -> list[dict[str, Any]]:
    """sphinx-book-theme: the launch buttons of a page (``{"text": "Colab", "url": …}``, the
    dicts its template reads), ``[]`` on a page without them."""
    groups = [b for b in context["header_buttons"] if b.get("label") == "launch-buttons"]
    buttons = [button for group in groups for button in group["buttons"]]
    missing = [key for button in buttons for key in ("url", "text") if key not in button]
    if missing:
        raise KeyError(missing[0])
    return buttons


@_reads("sphinx", "env.toc_fignumbers (written)")
def set_figure_number(env: Any, doc: str, figtype: str, target: str,
                      number: tuple[int, ...]) -> None:
    """Sphinx: write one number into ``env.toc_fignumbers`` (Chapter 0's "0.n"), after
    checking that the entry is there to be rewritten."""
    numbers = env.toc_fignumbers[doc][figtype]
    assert target in numbers, f"{doc}: no {figtype} {target} to renumber"
    numbers[target] = tuple(number)


@_reads("sphinx", "the math domain's data['objects']")
def equations(env: Any) -> dict[str, str]:
    """Sphinx: every labelled display ``{label: docname}``."""
    return {label: entry[0] for label, entry in env.get_domain("math").data["objects"].items()}


@_reads("sphinx", "the std domain's data['labels'] and data['anonlabels']")
def std_labels(env: Any) -> dict[str, dict[str, Any]]:
    """Sphinx: every ``(label)=`` target ``{label: {docname, id, title}}`` (title ``""`` for a
    target without one)."""
    data = env.get_domain("std").data
    titled = data.get("labels", {})
    return {label: {"docname": doc, "id": target, "title": titled.get(label, ("", "", ""))[2]}
            for label, (doc, target) in data["anonlabels"].items()}


@_reads("sphinx", "env.titles")
def title(env: Any, doc: str) -> str | None:
    """Sphinx: a page's title as text, ``None`` for a page it does not know."""
    return env.titles[doc].astext() if doc in env.titles else None


@_reads("myst-nb", "the nb_element attributes of a code cell's nodes")
def code_cell(node: Any) -> tuple[Any, str] | None:
    """myst-nb: the code cell a node sits in and the cell's source, or ``None`` outside one."""
    cell = node
    while cell is not None and cell.get("nb_element") != "cell_code":
        cell = cell.parent
    if cell is None:
        return None
    from docutils import nodes

    source = next((n.astext() for n in cell.findall(nodes.literal_block)
                   if n.parent.get("nb_element") == "cell_code_source"), "")
    return cell, source


def nb_element(node: Any) -> str | None:
    """myst-nb: what part of a notebook a container node is (``"cell_code"``,
    ``"cell_code_source"``, ``"mime_bundle"`` …), ``None`` for other nodes. Guarded by the upgrade
    test through :func:`code_cell`, which reads the same attribute."""
    return node.get("nb_element")


@_reads("sphinx-book-theme", "context['header_buttons'] (the download-buttons group)")
def download_buttons(context: dict[str, Any]) -> list[dict[str, Any]] | None:
    """sphinx-book-theme: the list of the download menu's buttons of a page (the dicts its
    template reads, ``{"type": "link", "url": …, "text": …}``; a button appended to it shows in
    the menu), ``None`` on a page without that menu (or under another theme)."""
    groups = [b for b in context.get("header_buttons", []) if b.get("label") == "download-buttons"]
    if not groups:
        return None
    buttons = groups[0]["buttons"]
    if not isinstance(buttons, list) or any("text" not in b for b in buttons):
        raise TypeError("download buttons")
    return buttons


@_reads("sphinx", "StandaloneHTMLBuilder's docwriter, docsettings and imgpath")
def render_html(builder: Any, node: Any, imgpath: str) -> str:
    """Sphinx: one node as the HTML builder writes it in a page (``write_doc``: its docwriter
    and document settings; images under ``imgpath``), as an HTML fragment. Its
    ``render_partial`` would run docutils' writer transforms, which turn sphinx-proof's
    statements into plain admonitions and fail."""
    from docutils.io import StringOutput
    from docutils.utils import new_document

    document = new_document("<fragment>", builder.docsettings)
    document.append(node)
    saved, builder.imgpath = builder.imgpath, imgpath
    try:
        builder.docwriter.write(document, StringOutput(encoding="utf-8"))
        builder.docwriter.assemble_parts()
        return builder.docwriter.parts["fragment"]
    finally:
        builder.imgpath = saved
