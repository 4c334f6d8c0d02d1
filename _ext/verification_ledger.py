"""Sphinx extension: the book's verification ledger.

Every check cell of a chapter calls a :class:`gmmlib.checks.Ledger`, which appends an
entry (chapter, claim label, value, reference, tolerance and why, method, verdict) to
``_build/ledger/<chapter>.json`` while the notebook executes. This extension

* points those files at ``<outdir>/../ledger`` for the kernels of this build
  (``GMMLIB_LEDGER_DIR``),
* provides ``{unchecked} <label>``: a visible note, next to a claim, saying why it is not
  checked numerically,
* renders ``{verification-ledger}`` (the appendix page) after every chapter has executed,
  from the entries of this very build: totals, then one table per chapter, each claim
  linked to its theorem, proposition, lemma, corollary or equation,
* writes ``_build/ledger.json`` (all entries) and ``_build/ledger_claims.json`` (every
  claim of the book with its number of checks or its reason for having none),
* shows, for each check whose evidence is random, the smallest relative error of the claim
  it detects (``CheckResult.detectable``, also in ``ledger.json``),
* warns — an error under ``-W`` — when a claim has neither a check nor an ``{unchecked}``
  note, when a random check cannot see a 10 % error, or when a recorded check failed.
"""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.nodes import make_id  # as Sphinx forms equation ids (lower case)
from docutils.parsers.rst import directives
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import make_refnode

from gmmlib.checks import LEDGER_ENV, MAX_DETECTABLE  # one definition of each (gmmlib is installed)

from doctables import para as _para  # _ext/ is on the path of local extensions
from doctables import register_generated, table

logger = logging.getLogger(__name__)

CLAIM_TYPES = ("theorem", "proposition", "lemma", "corollary")


def method_category(method: str) -> str:
    """Group the free-text ``method`` of a check into the categories the ledger counts."""
    m = method.lower()
    if "train" in m or "sgd" in m or "adam" in m or "gradient descent" in m or "gradient flow" in m:
        return "trained model or optimisation"
    if "monte carlo" in m or "prompt" in m or "simulation" in m or "sampled" in m:
        return "Monte Carlo"
    if "quadrature" in m:
        return "quadrature"
    if "scipy" in m or "numpy.linalg" in m or "independent" in m or "tweedie" in m or "finite difference" in m:
        return "independent computation"
    return "closed form"


def detects(entry: dict[str, Any]) -> str:
    """The ledger's "detects" cell: the relative error a random check sees, or "exact" for the others."""
    d = entry.get("detectable")
    if d is None:
        return "deterministic"
    flag = "" if d <= MAX_DETECTABLE else f" — above the book's {MAX_DETECTABLE:.0%}"
    return f"random: {d:.1%}{flag}"


def ledger_dir(app: Sphinx) -> Path:
    return Path(app.outdir).parent / "ledger"


def load_entries(folder: Path) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    for path in sorted(folder.glob("*.json")):
        entries.extend(json.loads(path.read_text(encoding="utf-8")))
    return entries


class UncheckedDirective(SphinxDirective):
    """``{unchecked} <claim label>`` with the reason as content."""

    required_arguments = 1
    has_content = True
    option_spec = {"class": directives.class_option}

    def run(self) -> list[nodes.Node]:
        label = self.arguments[0]
        reason = " ".join(self.content).strip()
        if not reason:
            raise self.error("{unchecked} needs a reason as its content")
        notes = getattr(self.env, "verification_unchecked", {})
        notes[label] = {"docname": self.env.docname, "reason": reason}
        self.env.verification_unchecked = notes
        admonition = nodes.admonition(classes=["note", "ledger-unchecked"])
        admonition += nodes.title(text="Not checked numerically")
        self.state.nested_parse(self.content, self.content_offset, admonition)
        target = nodes.target("", "", ids=[f"unchecked-{label}"])
        return [target, admonition]


def _purge(app: Sphinx, env: Any, docname: str) -> None:
    notes = getattr(env, "verification_unchecked", {})
    for label in [k for k, v in notes.items() if v["docname"] == docname]:
        del notes[label]


def _merge(app: Sphinx, env: Any, docnames: Any, other: Any) -> None:
    env.verification_unchecked = {**getattr(env, "verification_unchecked", {}),
                                  **getattr(other, "verification_unchecked", {})}


def _on_init(app: Sphinx) -> None:
    folder = ledger_dir(app)
    folder.mkdir(parents=True, exist_ok=True)
    os.environ[LEDGER_ENV] = str(folder)  # the kernels of this build inherit it



def _claims(app: Sphinx) -> dict[str, dict[str, Any]]:
    """Every claim (theorem, proposition, lemma, corollary) of the book, from sphinx-proof."""
    env = app.env
    out = {}
    for label, info in getattr(env, "proof_list", {}).items():
        kind = info.get("realtype", info.get("type", ""))
        kind = kind.split(":")[-1]
        if kind in CLAIM_TYPES:
            out[label] = {"docname": info["docname"], "kind": kind}
    return out


def _claim_number(app: Sphinx, label: str, docname: str) -> str:
    env = app.env
    info = env.proof_list.get(label)
    if info is None:
        return label
    try:
        countertype = info["countertype"]
        number = ".".join(map(str, env.toc_fignumbers[docname][countertype][label]))
    except (KeyError, TypeError):
        number = ""
    return f"{info['realtype'].split(':')[-1].title()} {number}".strip()


def _chapter_entries(app: Sphinx) -> dict[str, list[dict[str, Any]]]:
    docs = set(app.env.found_docs)
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for entry in load_entries(ledger_dir(app)):
        docname = f"book/{entry['chapter']}"
        if docname in docs:  # entries of chapters no longer in the book are ignored
            grouped[docname].append(entry)
    return dict(sorted(grouped.items()))


def _claim_link(app: Sphinx, fromdoc: str, label: str, chapter_doc: str) -> nodes.Node:
    claims = _claims(app)
    builder = app.builder
    if label in claims:
        todoc = claims[label]["docname"]
        return make_refnode(builder, fromdoc, todoc, label, nodes.Text(_claim_number(app, label, todoc)))
    math_labels = app.env.get_domain("math").data.get("objects", {})
    if label in math_labels:
        todoc = math_labels[label][0]
        eq_num = app.env.toc_fignumbers.get(todoc, {}).get("displaymath", {}).get(make_id(f"equation-{label}"))
        text = f"Equation ({'.'.join(map(str, eq_num))})" if eq_num else f"Equation {label}"
        return make_refnode(builder, fromdoc, todoc, make_id(f"equation-{label}"), nodes.Text(text))
    return make_refnode(builder, fromdoc, chapter_doc, label, nodes.Text(label))


def _render(app: Sphinx, docname: str) -> list[nodes.Node]:
    """The ledger page's content: the summary, then one table of checks per chapter."""
    grouped = _chapter_entries(app)
    all_entries = [e for entries in grouped.values() for e in entries]
    claims = _claims(app)
    unchecked = getattr(app.env, "verification_unchecked", {})
    checked_labels = {e["claim"] for e in all_entries}
    methods = Counter(method_category(e["method"]) for e in all_entries)
    n_pass = sum(bool(e["passed"]) for e in all_entries)
    random = [e["detectable"] for e in all_entries if e.get("detectable") is not None]

    content: list[nodes.Node] = []
    summary = table(
        ["chapter", "checks", "passed", "claims checked", "claims with a note instead"],
        [
            [make_refnode(app.builder, docname, doc, "", nodes.Text(app.env.titles[doc].astext()))
             if doc in app.env.titles else _para(doc),
             str(len(entries)), str(sum(bool(e["passed"]) for e in entries)),
             str(len({e["claim"] for e in entries})),
             str(sum(1 for k, v in unchecked.items() if v["docname"] == doc))]
            for doc, entries in grouped.items()
        ]
        + [[_para("all chapters"), str(len(all_entries)), str(n_pass), str(len(checked_labels)),
            str(len(unchecked))]],
        [40, 12, 12, 16, 20],
    )
    content.append(_para(
        f"This build ran {len(all_entries)} checks, of which {n_pass} passed, covering "
        f"{len(checked_labels)} claims in {len(grouped)} chapters; "
        f"{sum(1 for c in claims if c in checked_labels)} of the book's {len(claims)} theorems, "
        f"propositions, lemmas and corollaries are checked numerically and "
        f"{sum(1 for c in claims if c not in checked_labels and c in unchecked)} carry a note "
        "saying why not. "
        f"Every check names a wrong answer that the same comparison must reject (its negative control): "
        f"{sum(bool(c['rejected']) for e in all_entries for c in (e.get('controls') or []))} of "
        f"{sum(len(e.get('controls') or []) for e in all_entries)} controls were rejected. By method: "
        + ", ".join(f"{k} {v}" for k, v in sorted(methods.items(), key=lambda kv: -kv[1])) + ". "
        f"{len(random)} checks compare with random evidence (Monte Carlo, finite prompts, training "
        "from random starts); each states the smallest relative error of its claim that it would "
        f"detect, and fails when that exceeds {MAX_DETECTABLE:.0%}"
        + (f" (largest in this build: {max(random):.1%})." if random else ".")
    ))
    content.append(summary)

    for doc, entries in grouped.items():
        title = app.env.titles[doc].astext() if doc in app.env.titles else doc
        section = nodes.section(ids=[f"ledger-{doc.split('/')[-1]}"], names=[f"ledger {doc}"])
        section += nodes.title(text=title)
        section += _para("Chapter: ", make_refnode(app.builder, docname, doc, "", nodes.Text(title)))
        rows = []
        for e in entries:
            verdict = "✔ " if e["passed"] else "✘ FAILED "
            what = _para(e["what"] + " — ")
            what += nodes.emphasis(text=e["method"])
            claim_cell = _para(verdict, _claim_link(app, docname, e["claim"], doc))
            if e.get("index"):
                claim_cell.insert(0, nodes.target("", "", ids=[f"check-{e['chapter']}-{e['index']}"]))
            controls = e.get("controls") or []
            control_cell = _para("; ".join(
                f"{'rejects' if c['rejected'] else 'DOES NOT REJECT'} {c['name']}: {c['margin']}"
                for c in controls) or "none")
            rows.append([
                claim_cell,
                what,
                e["comparison"],
                e["why"],
                detects(e),
                control_cell,
            ])
        section += table(["claim", "what is compared — how the reference was obtained", "result",
                           "why this tolerance", "smallest error it detects",
                           "negative control: the wrong answer it rejects"],
                          rows, [12, 26, 20, 16, 9, 17])
        content.append(section)
    return content


def _finish(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    grouped = _chapter_entries(app)
    entries = [e for es in grouped.values() for e in es]
    build = Path(app.outdir).parent
    (build / "ledger.json").write_text(json.dumps(entries, indent=1), encoding="utf-8")
    claims = _claims(app)
    unchecked = getattr(app.env, "verification_unchecked", {})
    counts = Counter(e["claim"] for e in entries)
    listing = [
        {"label": label, "kind": info["kind"], "docname": info["docname"], "checks": counts.get(label, 0),
         "unchecked_reason": unchecked.get(label, {}).get("reason")}
        for label, info in sorted(claims.items())
    ]
    (build / "ledger_claims.json").write_text(json.dumps(listing, indent=1), encoding="utf-8")
    for item in listing:
        if item["checks"] == 0 and not item["unchecked_reason"]:
            logger.warning(
                f"verification ledger: {item['kind']} '{item['label']}' in {item['docname']} has no "
                "check and no {unchecked} note saying why", type="ledger", subtype="incomplete",
            )
    for label in sorted(set(unchecked) - set(claims)):
        logger.warning(f"verification ledger: {{unchecked}} names an unknown claim '{label}'",
                       type="ledger", subtype="unknown")
    for e in entries:
        controls = e.get("controls") or []
        if not controls:
            logger.warning(f"verification ledger: a check of '{e['claim']}' in {e['chapter']} names no negative "
                           "control (a wrong answer the same comparison must reject)",
                           type="ledger", subtype="no-control")
        elif not all(c["rejected"] for c in controls):
            logger.warning(f"verification ledger: a check of '{e['claim']}' in {e['chapter']} does not reject "
                           "its negative control", type="ledger", subtype="weak-control")
    for e in entries:
        if e.get("detectable") is not None and e["detectable"] > MAX_DETECTABLE:
            logger.warning(f"verification ledger: a random check of '{e['claim']}' in {e['chapter']} detects only "
                           f"a {e['detectable']:.1%} error (the book asks for {MAX_DETECTABLE:.0%})",
                           type="ledger", subtype="weak-power")
    for e in entries:
        if not e["passed"]:
            logger.warning(f"verification ledger: a check of '{e['claim']}' failed in {e['chapter']}",
                           type="ledger", subtype="failed")


def setup(app: Sphinx) -> dict[str, Any]:
    register_generated(app, {"verification-ledger": ("ledger", _render)})  # rendered once all pages are read
    app.add_directive("unchecked", UncheckedDirective)
    app.connect("builder-inited", _on_init)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("build-finished", _finish)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
