"""The run-time budget is stated once, in ``_config.yml`` (``parse.myst_substitutions``), and
every place that states it agrees: ``make bench`` reads it, ``book/exec_status.md`` shows it
through the substitutions, README and CONTRIBUTING repeat its numbers and no other."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from bookkit import bench

ROOT = Path(__file__).resolve().parents[2]
SUBSTITUTIONS = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))[
    "parse"]["myst_substitutions"]
CHAPTER_S, BOOK_S = SUBSTITUTIONS["chapter_budget_s"], SUBSTITUTIONS["book_budget_s"]
# "30 s a chapter", "30 s each", "under 30 s on 2 cores", "120 s the whole book", "2 min in all"
STATED = re.compile(r"(\d+) (s|min)\b (a chapter|each|per chapter|on 2 cores|on two cores"
                    r"|(?:for )?the (?:whole )?book|in all)")


def test_the_budget_is_stated_in_the_configuration():
    assert (CHAPTER_S, BOOK_S) == (30, 120), "the developers' guide's numbers"


def test_bench_reads_the_budget_from_the_configuration(monkeypatch):
    assert bench.budget() == {"chapter_s": CHAPTER_S, "book_s": BOOK_S}
    row = {"chapter": "ch", "seconds": CHAPTER_S + 1.0, "max_s": 0, "peak_mib": 0, "verdicts": []}
    report = {"variants": [], "chapters": [row], "book_seconds": CHAPTER_S + 1.0}
    assert "OVER" in bench.markdown({**report, "budget": bench.budget()})
    config = bench.run.config()
    config["parse"]["myst_substitutions"]["chapter_budget_s"] = CHAPTER_S + 2
    monkeypatch.setattr(bench.run, "config", lambda root=None: config)
    assert "OVER" not in bench.markdown({**report, "budget": bench.budget()})


def test_the_execution_page_shows_the_budget_through_the_substitutions():
    text = (ROOT / "book" / "exec_status.md").read_text(encoding="utf-8")
    assert "{{ chapter_budget_s }} s per chapter" in text and "{{ book_budget_s }} s" in text
    assert not STATED.search(text), "a typed budget on the execution page"


def test_readme_and_contributing_state_the_same_budget():
    for name in ("README.md", "CONTRIBUTING.md"):
        text = (ROOT / name).read_text(encoding="utf-8")
        stated = {(int(n) * (60 if unit == "min" else 1), rest)
                  for n, unit, rest in STATED.findall(text)}
        seconds = {s for s, _ in stated}
        assert {CHAPTER_S, BOOK_S} <= seconds, f"{name} does not state the budget: {stated}"
        assert seconds <= {CHAPTER_S, BOOK_S}, f"{name} states another budget: {stated}"
