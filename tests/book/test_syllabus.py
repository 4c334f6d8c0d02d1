"""The syllabus (book/syllabus.md) gives each chapter the lectures that the instructors' chapter
plan gives it.

The plan (the ``chapter-plan`` directive of :mod:`bookkit.lists`) computes a chapter's lectures from
its source: :func:`bookkit.lists.source_counts`, :func:`~bookkit.lists.reading_minutes` and
:func:`~bookkit.lists.lectures` with the rates of ``_config.yml``. This test calls the same
functions, so a change of the reading-time model shows here. The syllabus states its lectures in
tables, each after a comment ``% syllabus-table: <track> ...`` naming the tracks it belongs to; a
row is one lecture, its ``Ch.`` cell the chapter's number or ``—`` for a session that covers no
chapter. The page's prose states how many of each track's lectures its chapters take ("the
classification track's chapters (0–6) take 19 of its 20 lectures"); those sentences are read too.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest
import yaml

from bookkit import lists, toc

ROOT = Path(__file__).resolve().parents[2]
SYLLABUS = ROOT / "book" / "syllabus.md"
#: The chapters each track must cover, and its weeks. Chapter 7 no longer fits the ten-week
#: classification track, and six weeks hold only Chapters 0–3 and a closing lecture.
TRACKS = {
    "10w-classification": ({0, 1, 2, 3, 4, 5, 6}, 10),
    "10w-denoising": ({0, 1, 2, 3, 8, 9, 10}, 10),
    "6w-classification": ({0, 1, 2, 3}, 6),
    "6w-denoising": ({0, 1, 2, 3}, 6),
}
#: How the prose names each track in its sentence "the <name>'s chapters (…) take N of its M
#: lectures".
PROSE_NAMES = {
    "10w-classification": "classification track",
    "10w-denoising": "denoising track",
    "6w-classification": "six-week variant",
    "6w-denoising": "six-week variant",
}
STATED = re.compile(r"\bthe (classification track|denoising track|six-week variant)'s chapters "
                    r"\([^)]*\) take (\d+) of its (\d+) lectures")
LECTURES_A_WEEK = 2


def plan() -> dict[int, int]:
    """Each chapter's lectures, as the ``chapter-plan`` directive computes them."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    rates = lists.rates(config["parse"]["myst_substitutions"])
    out = {}
    for doc in toc.chapters(ROOT):
        text = (ROOT / f"{doc}.md").read_text(encoding="utf-8")
        minutes = lists.reading_minutes(lists.source_counts(text), rates)
        out[int(toc.name(doc)[:2])] = lists.lectures(minutes, rates)
    return out


def tables(text: str) -> dict[str, list[dict[str, str]]]:
    """The rows of the syllabus tables, by track."""
    out: dict[str, list[dict[str, str]]] = defaultdict(list)
    for found in re.finditer(r"^% syllabus-table:(.*)\n((?:\|.*\n?)+)", text, re.M):
        lines = [ln.strip().strip("|") for ln in found.group(2).strip().splitlines()]
        header = [c.strip() for c in lines[0].split("|")]
        rows = [dict(zip(header, (c.strip() for c in ln.split("|")))) for ln in lines[2:]]
        for track in found.group(1).split():
            out[track] += rows
    return out


def chapter_of(row: dict[str, str]) -> int | None:
    """The chapter a lecture covers (``None``: a session on no chapter)."""
    found = re.match(r"\d+", row["Ch."])
    return int(found.group(0)) if found else None


def mismatches(rows: list[dict[str, str]], planned: dict[int, int]) -> list[str]:
    """Where the lectures a track gives a chapter differ from the plan's."""
    given = Counter(c for c in map(chapter_of, rows) if c is not None)
    return [f"Chapter {c}: {n} lecture(s) in the syllabus, {planned.get(c)} in the plan"
            for c, n in sorted(given.items()) if planned.get(c) != n]


TABLES = tables(SYLLABUS.read_text(encoding="utf-8"))
PLAN = plan()


def test_the_plan_covers_every_chapter():
    assert sorted(PLAN) == list(range(11)), PLAN


def test_every_track_has_its_tables():
    assert set(TABLES) == set(TRACKS), sorted(TABLES)


@pytest.mark.parametrize("track", sorted(TRACKS))
def test_each_chapter_gets_the_plans_lectures(track):
    problems = mismatches(TABLES[track], PLAN)
    assert not problems, (f"{track}: the syllabus and the instructors' chapter plan disagree "
                          "(change book/syllabus.md): " + "; ".join(problems))


@pytest.mark.parametrize("track", sorted(TRACKS))
def test_each_track_covers_its_chapters_in_its_weeks(track):
    chapters, weeks = TRACKS[track]
    rows = TABLES[track]
    assert {chapter_of(r) for r in rows} - {None} == chapters
    assert [int(r["Lecture"]) for r in rows] == list(range(1, LECTURES_A_WEEK * weeks + 1))
    assert [int(r["Week"]) for r in rows] == [
        (int(r["Lecture"]) + LECTURES_A_WEEK - 1) // LECTURES_A_WEEK for r in rows]


@pytest.mark.parametrize("track", sorted(TRACKS))
def test_proofs_belong_to_the_lectures_chapter(track):
    for row in TABLES[track]:
        labels = re.findall(r"\{prf:ref\}`([\w-]+)`", row["Present"] + row["Assign"])
        chapter = chapter_of(row)
        wrong = [lb for lb in labels if chapter is None or lb.split("-")[1] != f"{chapter:02d}"]
        assert not wrong, f"{track}, lecture {row['Lecture']} (Ch. {row['Ch.']}): {wrong}"


def test_homework_names_an_assignment():
    text = SYLLABUS.read_text(encoding="utf-8")
    named = set(re.findall(r"`(\d\d_\w+)\.py`", text))
    assert named, "the syllabus names no homework"
    missing = sorted(n for n in named if not (ROOT / "assignments" / f"{n}.py").is_file())
    assert not missing, f"homework without its assignments/NN_name.py: {missing}"
    for track, rows in TABLES.items():
        for row in rows:
            for number in re.findall(r"HW (\d+)", row["Homework due"]):
                assert int(number) in TRACKS[track][0], f"{track}: HW {number} off the track"


def stated_counts(text: str) -> dict[str, tuple[int, int]]:
    """What the prose says each track's chapters take: ``{name: (chapter lectures, lectures)}``."""
    found = STATED.findall(" ".join(text.split()))
    return {name: (int(n), int(m)) for name, n, m in found}


@pytest.mark.parametrize("track", sorted(TRACKS))
def test_the_prose_states_the_tables_counts(track):
    rows = TABLES[track]
    actual = (sum(chapter_of(r) is not None for r in rows), len(rows))
    stated = stated_counts(SYLLABUS.read_text(encoding="utf-8")).get(PROSE_NAMES[track])
    assert stated == actual, (f"{track}: the prose says its chapters take {stated} "
                              f"(chapter lectures, lectures), the tables {actual}")


def test_a_stale_count_in_the_prose_is_caught():
    """Negative control: a stale count is read as stated (so the comparison above fails on it),
    and a sentence out of the form is not read at all (so that track's test fails for want of
    it)."""
    assert stated_counts("so the classification track's chapters (0–6) take 12 of its\n 20 "
                         "lectures, and") == {"classification track": (12, 20)}
    assert stated_counts("the classification track's chapters take 19 of its 20 lectures") == {}


def test_chapter_7_is_left_out_because_it_does_not_fit():
    """The prose says what Chapter 7 would add to the ten-week classification track; it must be
    the plan's lectures, and must overflow the track (else put Chapter 7 back in its table)."""
    found = re.search(r"Chapter 7\*\* \((\d+) lectures in the plan\) would bring the "
                      r"classification track to (\d+) lectures",
                      " ".join(SYLLABUS.read_text(encoding="utf-8").split()))
    assert found, "the syllabus no longer says why Chapter 7 is left out"
    rows = TABLES["10w-classification"]
    with_7 = sum(chapter_of(r) is not None for r in rows) + PLAN[7]
    assert (int(found.group(1)), int(found.group(2))) == (PLAN[7], with_7)
    assert with_7 > len(rows), "Chapter 7 now fits the classification track: put it back"


def test_a_chapter_short_of_its_lectures_is_caught():
    """Negative control: the plan giving Chapter 3 one lecture more than the syllabus gives."""
    rows = TABLES["10w-denoising"]
    assert mismatches(rows, {**PLAN, 3: PLAN[3] + 1}) == [
        f"Chapter 3: {PLAN[3]} lecture(s) in the syllabus, {PLAN[3] + 1} in the plan"]
    assert mismatches(rows[:-1] + [{**rows[0], "Ch.": "8"}], PLAN) == [
        f"Chapter 8: {PLAN[8] + 1} lecture(s) in the syllabus, {PLAN[8]} in the plan"]
