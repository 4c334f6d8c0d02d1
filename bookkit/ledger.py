"""The verification ledger: the checks' records, read from the cells' outputs, on one page."""

import json
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import make_refnode

from bookkit import internals
from bookkit.pages import (keep_per_page, link, linked, merged, page_link, para,
                           register_generated, store, table, title, warn)
from gmmlib.runtime.verdicts import MAX_DETECTABLE, MIME_TYPE, RECORD_SCHEMA

CLAIM_TYPES = ("theorem", "proposition", "lemma", "corollary")
CHECKS, UNCHECKED = "ledger_checks", "ledger_unchecked"
_warn = partial(warn, "ledger")


class check_record(nodes.General, nodes.Element):
    """A check's record (``node["record"]``), until collected."""


class CheckRecords:
    """myst-nb mime renderer: a record becomes a node, never the output shown (priority None)."""

    mime_priority_overrides = [("*", MIME_TYPE, None)]

    @staticmethod
    def handle_mime(renderer: Any, data: Any, inline: bool) -> list[nodes.Element] | None:
        if data.mime_type != MIME_TYPE or inline:
            return None
        record = json.loads(json.dumps(data.content))  # a plain dict
        if not isinstance(record, dict) or record.get("schema") != RECORD_SCHEMA:
            found = record.get("schema", 1) if isinstance(record, dict) else "?"
            raise ExtensionError(
                f"a check's record has schema {found}, this gmmlib writes {RECORD_SCHEMA}: the "
                "executed outputs come from another gmmlib (a cached build); run make book-fresh")
        return [check_record(record=record)]


def _collect(app: Sphinx, doctree: nodes.document) -> None:
    """A page's checks' records, kept per page (the nodes leave the doctree)."""
    found = list(doctree.findall(check_record))
    if found:
        store(app.env, CHECKS)[app.env.docname] = [n["record"] for n in found]
    for n in found:
        n.parent.remove(n)


class UncheckedDirective(SphinxDirective):
    """``{unchecked} <claim label>`` with the reason as content."""

    required_arguments = 1
    has_content = True

    def run(self) -> list[nodes.Node]:
        label, reason = self.arguments[0], " ".join(self.content).strip()
        if not reason:
            raise self.error("{unchecked} needs a reason as its content")
        store(self.env, UNCHECKED).setdefault(self.env.docname, []).append(
            {"label": label, "docname": self.env.docname, "reason": reason})
        box = nodes.admonition(classes=["note", "ledger-unchecked"])
        box += nodes.title(text="Not checked numerically")
        self.state.nested_parse(self.content, self.content_offset, box)
        return [nodes.target("", "", ids=[f"unchecked-{label}"]), box]


METHODS = {"trained model or optimisation": "train|sgd|adam|gradient descent|gradient flow",
           "Monte Carlo": "monte carlo|prompt|simulation|sampled", "quadrature": "quadrature",
           "independent computation": "scipy|numpy.linalg|independent|tweedie|finite difference"}


def method_category(method: str) -> str:
    """Group the free-text ``method`` of a check into the categories the ledger counts."""
    return next((k for k, words in METHODS.items()
                 if any(w in method.lower() for w in words.split("|"))), "closed form")


def detects(entry: dict[str, Any]) -> str:
    """The "smallest error it detects" cell: the relative error a random check sees."""
    d = entry.get("detectable")
    if d is None:
        return "deterministic"
    return f"random: {d:.1%}" + ("" if d <= MAX_DETECTABLE else
                                 f" — above the book's {MAX_DETECTABLE:.0%}")


def claims(env: Any) -> dict[str, dict[str, str]]:
    """Every theorem, proposition, lemma and corollary of the book."""
    return {k: v for k, v in internals.proofs(env).items() if v["kind"] in CLAIM_TYPES}


def _render(app: Sphinx, fromdoc: str) -> list[nodes.Node]:
    grouped = dict(sorted(store(app.env, CHECKS).items()))
    every = merged(app.env, CHECKS)
    book_claims, notes = claims(app.env), {n["label"]: n for n in merged(app.env, UNCHECKED)}
    checked = {e["claim"] for e in every}
    n_pass = sum(bool(e["passed"]) for e in every)
    random = [e["detectable"] for e in every if e.get("detectable") is not None]
    controls = [c for e in every for c in e.get("controls") or []]
    methods = Counter(method_category(e["method"]) for e in every).most_common()
    summary = table(
        ["chapter", "checks", "passed", "claims checked", "claims with a note instead"],
        [[para(page_link(app, fromdoc, doc)), str(len(es)), str(sum(e["passed"] for e in es)),
          str(len({e["claim"] for e in es})),
          str(sum(v["docname"] == doc for v in notes.values()))] for doc, es in grouped.items()]
        + [["all chapters", str(len(every)), str(n_pass), str(len(checked)), str(len(notes))]],
        [40, 12, 12, 16, 20])
    content: list[nodes.Node] = [para(
        f"This build ran {len(every)} checks, of which {n_pass} passed, covering "
        f"{len(checked)} claims in {len(grouped)} chapters; "
        f"{sum(c in checked for c in book_claims)} of the book's {len(book_claims)} theorems, "
        "propositions, lemmas and corollaries are checked numerically and "
        f"{sum(c not in checked and c in notes for c in book_claims)} carry a note saying why "
        "not. Every check names a wrong answer that the same comparison must reject (its "
        f"negative control): {sum(bool(c['rejected']) for c in controls)} of {len(controls)} "
        "controls were rejected. By method: " + ", ".join(f"{k} {v}" for k, v in methods)
        + f". {len(random)} checks compare with random evidence (Monte Carlo, finite prompts, "
        "training from random starts); each states the smallest relative error of its claim "
        f"that it would detect, and fails when that exceeds {MAX_DETECTABLE:.0%}"
        + (f" (largest in this build: {max(random):.1%})." if random else ".")), summary]
    for doc, es in grouped.items():
        section = nodes.section(ids=[f"ledger-{doc.split('/')[-1]}"], names=[f"ledger {doc}"])
        section += nodes.title(text=title(app, doc))
        section += para("Chapter: ", page_link(app, fromdoc, doc))
        rows = []
        for e in es:
            claim = para("✔ " if e["passed"] else "✘ FAILED ", link(app, fromdoc, e["claim"])
                         or make_refnode(app.builder, fromdoc, doc, e["claim"],
                                         nodes.Text(e["claim"])))
            claim.insert(0, nodes.target("", "", ids=[f"check-{e['chapter']}-{e['index']}"]))
            what = linked(app, fromdoc, e["what"] + " — ")
            what += nodes.emphasis("", "", *linked(app, fromdoc, e["method"]).children)
            tested = "; ".join(f"{'rejects' if c['rejected'] else 'DOES NOT REJECT'} "
                               f"{c['name']}: {c['margin']}" for c in e.get("controls") or [])
            rows.append([claim, what, *(linked(app, fromdoc, t) for t in (
                e["comparison"], e["why"], detects(e), tested or "none"))])
        section += table(["claim", "what is compared — how the reference was obtained", "result",
                          "why this tolerance", "smallest error it detects",
                          "negative control: the wrong answer it rejects"],
                         rows, [12, 26, 20, 16, 9, 17])
        content.append(section)
    return content


def _finish(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    every, build = merged(app.env, CHECKS), Path(app.outdir).parent
    (build / "ledger.json").write_text(json.dumps(every, indent=1), encoding="utf-8")
    notes = {n["label"]: n for n in merged(app.env, UNCHECKED)}
    counts = Counter(e["claim"] for e in every)
    listing = [{"label": label, "kind": info["kind"], "docname": info["docname"],
                "checks": counts.get(label, 0),
                "unchecked_reason": notes.get(label, {}).get("reason")}
               for label, info in sorted(claims(app.env).items())]
    (build / "ledger_claims.json").write_text(json.dumps(listing, indent=1), encoding="utf-8")
    for item in listing:
        if item["checks"] == 0 and not item["unchecked_reason"]:
            _warn(f"{item['kind']} '{item['label']}' in {item['docname']} has no check and no "
                  "{unchecked} note saying why", "incomplete")
    for label in sorted(set(notes) - {i["label"] for i in listing}):
        _warn(f"{{unchecked}} names an unknown claim '{label}'", "unknown")
    for e in every:
        where = f"a check of '{e['claim']}' in {e['chapter']}"
        if not e.get("controls"):
            _warn(f"{where} names no negative control (a wrong answer the same comparison must "
                  "reject)", "no-control")
        elif not all(c["rejected"] for c in e["controls"]):
            _warn(f"{where} does not reject its negative control", "weak-control")
        if e.get("detectable") is not None and e["detectable"] > MAX_DETECTABLE:
            _warn(f"a random check of '{e['claim']}' in {e['chapter']} detects only a "
                  f"{e['detectable']:.1%} error (the book asks for {MAX_DETECTABLE:.0%})",
                  "weak-power")
        if not e["passed"]:
            _warn(f"{where} failed", "failed")


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_node(check_record)
    app.add_directive("unchecked", UncheckedDirective)
    app.connect("doctree-read", _collect)
    keep_per_page(app, CHECKS)
    keep_per_page(app, UNCHECKED)
    register_generated(app, {"verification-ledger": _render})
    app.connect("build-finished", _finish)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
