"""The concordance: ``{paper}`` credits a paper's result, ``{concordance}`` tables them all."""

import json
from functools import partial
from pathlib import Path
from typing import Any

import yaml
from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import make_refnode

from bookkit.pages import (borrowed, keep_per_page, link, merged, para, register_generated,
                           store, table, title, warn)

STATUS_TEXT = {"reproduced": "reproduced", "extended": "extended by the book",
               "differs": "differs in the book", "not-covered": "not covered"}
REGISTRY, ROWS, NOTES = "book/paper_results.yml", "paper_concordance_rows", "paper_notes"
_warn = partial(warn, "concordance")


def load_registry(srcdir: str | Path) -> dict[str, Any]:
    """The registry of the papers' numbered results (``book/paper_results.yml``)."""
    return yaml.safe_load((Path(srcdir) / REGISTRY).read_text(encoding="utf-8"))


class PaperDirective(SphinxDirective):
    """``{paper} <bibkey> <result name…>``: this is result X of paper Y."""

    required_arguments = 2
    final_argument_whitespace = True
    has_content = True
    option_spec = {"book": directives.unchanged, "status": directives.unchanged_required}

    def run(self) -> list[nodes.Node]:
        key, result = self.arguments[0], " ".join(self.arguments[1:]).strip()
        status = self.options.get("status", "").strip()
        if status not in STATUS_TEXT:
            raise self.error(f"{{paper}} :status: must be one of {', '.join(STATUS_TEXT)}, "
                             f"got {status!r}")
        labels = [s.strip() for s in self.options.get("book", "").split(",") if s.strip()]
        if status != "not-covered" and not labels:
            raise self.error("{paper} needs :book: labels unless its status is not-covered")
        note = "\n".join(self.content).strip()
        if not note:
            raise self.error("{paper} needs a sentence saying what the book does with the result")
        target = f"paper-{self.env.docname.split('/')[-1]}-{self.env.new_serialno('paper')}"
        row = {"docname": self.env.docname, "key": key, "result": result, "book": labels,
               "status": status, "note": note, "target": target}
        store(self.env, ROWS).setdefault(self.env.docname, []).append(row)
        box = nodes.admonition(classes=["note", "paper-credit", f"paper-{status}"])
        box += nodes.title(text="In the paper")
        text = f"**{result}** of {{cite:t}}`{key}` — *{STATUS_TEXT[status]}*. {note}"
        self.state.nested_parse(StringList([text], source=self.env.docname),
                                self.content_offset, box)
        parsed = nodes.container()  # the note alone, for the concordance's table
        self.state.nested_parse(StringList([note], source=self.env.docname),
                                self.content_offset, parsed)
        store(self.env, NOTES).setdefault(self.env.docname, {})[target] = [
            c.deepcopy() for c in parsed.children]
        return [nodes.target("", "", ids=[target]), box]


def _render(app: Sphinx, fromdoc: str) -> list[nodes.Node]:
    rows, content = merged(app.env, ROWS), []
    notes = {t: n for page in store(app.env, NOTES).values() for t, n in page.items()}
    for key, paper in load_registry(app.srcdir).items():
        section = nodes.section(ids=[f"concordance-{key}"], names=[f"concordance {key}"])
        section += nodes.title(text=paper["title"])
        cells = []
        for item in paper["results"]:
            for r in [r for r in rows if (r["key"], r["result"]) == (key, item["name"])] or [None]:
                where = para("—" if r is None else "")
                for i, label in enumerate(r["book"] if r else []):
                    where += [nodes.Text(", ")] if i else []
                    where += link(app, fromdoc, label) or nodes.Text(label)
                if r is not None and r["docname"] != fromdoc:
                    where += nodes.Text(" " if r["book"] else "")
                    where += make_refnode(app.builder, fromdoc, r["docname"], r["target"],
                                          nodes.Text("(note)" if r["book"]
                                                     else title(app, r["docname"])))
                cells.append([f"{item['name']}: {item['title']}", where,
                              STATUS_TEXT[r["status"]] if r else "no row",
                              borrowed(notes.get(r["target"], []), fromdoc) if r else ""])
        section += table(["in the paper", "in the book", "status", "what the book does"], cells,
                         [26, 20, 12, 42], classes=("ledger-table", "concordance-table"))
        content.append(section)
    return content


def _finish(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    out, rows = [], merged(app.env, ROWS)
    listed = {(key, item["name"]) for key, paper in load_registry(app.srcdir).items()
              for item in paper["results"]}
    for key, name in sorted(listed - {(r["key"], r["result"]) for r in rows}):
        _warn(f"{name} of {key} has no {{paper}} row in the book", "missing")
    for r in rows:
        if (r["key"], r["result"]) not in listed:
            _warn(f"{{paper}} {r['key']} {r['result']} in {r['docname']} is not in {REGISTRY}",
                  "unknown", r["docname"])
        resolved = {lab: link(app, r["docname"], lab) is not None for lab in r["book"]}
        for lab in [lab for lab, ok in resolved.items() if not ok]:
            _warn(f"{{paper}} {r['key']} {r['result']} names the label '{lab}', which the book "
                  "does not have", "label", r["docname"])
        out.append({**r, "resolved": resolved})
    (Path(app.outdir).parent / "concordance.json").write_text(json.dumps(out, indent=1),
                                                              encoding="utf-8")


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("paper", PaperDirective)
    register_generated(app, {"concordance": _render})
    keep_per_page(app, ROWS)
    keep_per_page(app, NOTES)
    app.connect("build-finished", _finish)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
