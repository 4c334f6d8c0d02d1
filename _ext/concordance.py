"""Sphinx extension: credit the papers where their results are used, and the concordance appendix.

* ``{paper} <bibkey> <result>`` — written next to a result or figure of the book that comes
  from (or corresponds to) a numbered result or figure of a paper. Options: ``:book:`` (the
  book's labels, comma-separated: theorems, figures, equations, sections) and ``:status:``
  (``reproduced``, ``extended``, ``differs`` or ``not-covered``); the content says what the
  book does with it. It renders as a small "In the paper" note with the citation.
* ``{concordance}`` — replaced, once every page is read, by one table per paper: each of its
  results and figures listed in ``book/paper_results.yml``, in the paper's order, with the
  book's labels (linked), the status and the note.
* Writes ``_build/concordance.json`` and warns — an error under ``-W`` — when a result of the
  registry has no row, when a row names a result the registry does not list, or when a
  ``:book:`` label does not exist.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from docutils import nodes
from docutils.nodes import make_id  # as Sphinx forms equation ids (lower case)
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import make_refnode

from doctables import para as _para  # _ext/ is on the path of local extensions
from doctables import table

logger = logging.getLogger(__name__)

STATUSES = ("reproduced", "extended", "differs", "not-covered")
STATUS_TEXT = {
    "reproduced": "reproduced",
    "extended": "extended by the book",
    "differs": "differs in the book",
    "not-covered": "not covered",
}
REGISTRY = "book/paper_results.yml"
ENV_KEY = "paper_concordance_rows"


def load_registry(srcdir: str | Path) -> dict[str, Any]:
    """The registry of the papers' numbered results (``book/paper_results.yml``)."""
    return yaml.safe_load((Path(srcdir) / REGISTRY).read_text(encoding="utf-8"))


class concordance_placeholder(nodes.General, nodes.Element):
    """Replaced by the concordance tables once every page is read."""


class PaperDirective(SphinxDirective):
    """``{paper} <bibkey> <result name…>``: this is result X of paper Y."""

    required_arguments = 2
    final_argument_whitespace = True
    has_content = True
    option_spec = {"book": directives.unchanged, "status": directives.unchanged_required}

    def run(self) -> list[nodes.Node]:
        key, result = self.arguments[0], " ".join(self.arguments[1:]).strip()
        status = self.options.get("status", "").strip()
        if status not in STATUSES:
            raise self.error(f"{{paper}} :status: must be one of {', '.join(STATUSES)}, got {status!r}")
        labels = [s.strip() for s in self.options.get("book", "").split(",") if s.strip()]
        if status != "not-covered" and not labels:
            raise self.error("{paper} needs :book: labels unless its status is not-covered")
        note = "\n".join(self.content).strip()
        if not note:
            raise self.error("{paper} needs a sentence saying what the book does with the result")
        serial = self.env.new_serialno("paper")
        target_id = f"paper-{self.env.docname.split('/')[-1]}-{serial}"
        rows = getattr(self.env, ENV_KEY, [])
        rows.append({"docname": self.env.docname, "key": key, "result": result, "book": labels,
                     "status": status, "note": note, "target": target_id})
        setattr(self.env, ENV_KEY, rows)

        box = nodes.admonition(classes=["note", "paper-credit", f"paper-{status}"])
        box += nodes.title(text="In the paper")
        text = f"**{result}** of {{cite:t}}`{key}` — *{STATUS_TEXT[status]}*. {note}"
        self.state.nested_parse(StringList([text], source=self.env.docname), self.content_offset, box)
        return [nodes.target("", "", ids=[target_id]), box]


class ConcordanceDirective(SphinxDirective):
    has_content = False

    def run(self) -> list[nodes.Node]:
        docs = getattr(self.env, "paper_concordance_docs", set())
        docs.add(self.env.docname)
        self.env.paper_concordance_docs = docs
        return [concordance_placeholder()]


def _always_reread(app: Sphinx, env: Any, added: set, changed: set, removed: set) -> list[str]:
    return sorted(getattr(env, "paper_concordance_docs", set()))


def _purge(app: Sphinx, env: Any, docname: str) -> None:
    setattr(env, ENV_KEY, [r for r in getattr(env, ENV_KEY, []) if r["docname"] != docname])
    getattr(env, "paper_concordance_docs", set()).discard(docname)


def _merge(app: Sphinx, env: Any, docnames: Any, other: Any) -> None:
    setattr(env, ENV_KEY, getattr(env, ENV_KEY, []) + getattr(other, ENV_KEY, []))
    env.paper_concordance_docs = (getattr(env, "paper_concordance_docs", set())
                                  | getattr(other, "paper_concordance_docs", set()))


def _resolve(app: Sphinx, fromdoc: str, label: str) -> nodes.Node | None:
    """A link to a label of the book (claim, figure, equation or section), or None if it does not exist."""
    env, builder = app.env, app.builder
    proofs = getattr(env, "proof_list", {})
    if label in proofs:
        info = proofs[label]
        todoc = info["docname"]
        kind = info.get("realtype", info.get("type", "")).split(":")[-1].title()
        try:
            number = ".".join(map(str, env.toc_fignumbers[todoc][info["countertype"]][label]))
        except (KeyError, TypeError):
            number = ""
        return make_refnode(builder, fromdoc, todoc, label, nodes.Text(f"{kind} {number}".strip()))
    math_labels = env.get_domain("math").data.get("objects", {})
    if label in math_labels:
        todoc = math_labels[label][0]
        num = env.toc_fignumbers.get(todoc, {}).get("displaymath", {}).get(make_id(f"equation-{label}"))
        text = f"Equation ({'.'.join(map(str, num))})" if num else f"Equation {label}"
        return make_refnode(builder, fromdoc, todoc, make_id(f"equation-{label}"), nodes.Text(text))
    std = env.get_domain("std")
    anon = std.data.get("anonlabels", {})
    if label in anon:
        todoc, target = anon[label]
        fignum = env.toc_fignumbers.get(todoc, {}).get("figure", {}).get(target)
        if fignum:
            text = f"Figure {'.'.join(map(str, fignum))}"
        else:
            title = std.data.get("labels", {}).get(label, (None, None, ""))[2]
            text = title or label
        return make_refnode(builder, fromdoc, todoc, target, nodes.Text(text))
    return None


def _render(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    placeholders = list(doctree.findall(concordance_placeholder))
    if not placeholders:
        return
    registry = load_registry(app.srcdir)
    rows = getattr(app.env, ENV_KEY, [])
    content: list[nodes.Node] = []
    for key, paper in registry.items():
        section = nodes.section(ids=[f"concordance-{key}"], names=[f"concordance {key}"])
        section += nodes.title(text=paper["title"])
        table_rows = []
        for item in paper["results"]:
            mine = [r for r in rows if r["key"] == key and r["result"] == item["name"]]
            for r in mine or [None]:
                where: nodes.paragraph = _para()
                if r is None:
                    where += nodes.Text("—")
                else:
                    links = [_resolve(app, docname, lab) for lab in r["book"]]
                    for i, link in enumerate(links):
                        if i:
                            where += nodes.Text(", ")
                        where += link if link is not None else nodes.Text(r["book"][i])
                    if r["docname"] != docname:
                        if r["book"]:
                            where += nodes.Text(" ")
                        where += make_refnode(app.builder, docname, r["docname"], r["target"],
                                              nodes.Text("(note)" if r["book"] else
                                                         app.env.titles[r["docname"]].astext()))
                status = _para(STATUS_TEXT[r["status"]] if r else "no row")
                note = _para(r["note"] if r else "")
                table_rows.append([_para(f"{item['name']}: {item['title']}"), where, status, note])
        section += table(["in the paper", "in the book", "status", "what the book does"], table_rows,
                         [26, 20, 12, 42], classes=("ledger-table", "concordance-table"))
        content.append(section)
    for ph in placeholders:
        ph.replace_self(content)


def _check(app: Sphinx, env: Any) -> None:
    registry = load_registry(app.srcdir)
    rows = getattr(env, ENV_KEY, [])
    listed = {(key, item["name"]) for key, paper in registry.items() for item in paper["results"]}
    for key, name in sorted(listed):
        if not any(r["key"] == key and r["result"] == name for r in rows):
            logger.warning(f"concordance: {name} of {key} has no {{paper}} row in the book",
                           type="concordance", subtype="missing")
    for r in rows:
        if (r["key"], r["result"]) not in listed:
            logger.warning(f"concordance: {{paper}} {r['key']} {r['result']} in {r['docname']} is not in "
                           f"{REGISTRY}", type="concordance", subtype="unknown", location=r["docname"])


def _finish(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    rows = getattr(app.env, ENV_KEY, [])
    out = []
    for r in rows:
        resolved = {lab: _resolve(app, r["docname"], lab) is not None for lab in r["book"]}
        for lab, ok in resolved.items():
            if not ok:
                logger.warning(f"concordance: {{paper}} {r['key']} {r['result']} names the label '{lab}', which "
                               "the book does not have", type="concordance", subtype="label", location=r["docname"])
        out.append({**r, "resolved": resolved})
    (Path(app.outdir).parent / "concordance.json").write_text(json.dumps(out, indent=1), encoding="utf-8")


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_node(concordance_placeholder)
    app.add_directive("paper", PaperDirective)
    app.add_directive("concordance", ConcordanceDirective)
    app.connect("env-get-outdated", _always_reread)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("env-check-consistency", _check)
    app.connect("doctree-resolved", _render)
    app.connect("build-finished", _finish)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
