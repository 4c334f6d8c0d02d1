"""The homework of every chapter (``assignments/``): built with Otter Assign and graded locally.

One module-scoped build writes every chapter's student and graded versions (and the two
control submissions) into a temporary folder, then grades, for every chapter, three
submissions with the autograder (Otter's Python API, no Docker): the reference solutions must
get full marks; the student version left blank, and the reference with each question's near
miss (the cells tagged ``near-miss`` in the source) substituted, must lose points on *every*
question. All 33 gradings run, two at a time (one kernel each): about a minute and a half of
wall time on two idle cores (build and grading), so no subset is needed.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _load(name: str):
    """``assignments/<name>.py`` as ``assignments_<name>`` (no clash with PyPI's ``build``)."""
    path = REPO / "assignments" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"assignments_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pickling a Grade from a worker process finds its class
    spec.loader.exec_module(module)
    return module


build = _load("build")
grade_module = _load("grade")

SOURCES = build.sources()
CHAPTERS = [s.stem for s in SOURCES]
KINDS = ("reference", "blank", "near_miss")
#: Each chapter's homework must have at least this many auto-graded questions.
MIN_QUESTIONS = 3


def _questions(source: Path) -> list[str]:
    """The question names of a master source, in order."""
    master, _ = build.split_master(source)
    return [re.search(r"^name:\s*(\S+)", c.source, re.M).group(1) for c in master.cells
            if c.cell_type == "raw" and c.source.lstrip().startswith("# BEGIN QUESTION")]


def _submission(folder: Path, chapter: str, kind: str) -> Path:
    if kind == "reference":
        return folder / "autograder" / f"{chapter}.ipynb"
    return folder / "controls" / f"{kind}.ipynb"


def _grade(job: tuple[str, str, str]):
    folder, chapter, kind = job
    return chapter, kind, grade_module.grade(Path(folder), _submission(Path(folder), chapter, kind))


def _build(job: tuple[str, str]) -> str:
    source, out = job
    return str(build.build(Path(source), Path(out)))


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """Every chapter built as ``make assignments`` does (assignments/build.py), two at a time."""
    out = tmp_path_factory.mktemp("assignments")
    with ProcessPoolExecutor(max_workers=2) as pool:
        list(pool.map(_build, [(str(s), str(out)) for s in SOURCES]))
    return out


@pytest.fixture(scope="module")
def grades(built):
    jobs = [(str(built / ch), ch, kind) for ch in CHAPTERS for kind in KINDS]
    with ProcessPoolExecutor(max_workers=2) as pool:
        return {(ch, kind): g for ch, kind, g in pool.map(_grade, jobs)}


def test_every_chapter_has_a_homework():
    chapters = sorted(p.stem for p in (REPO / "book").glob("[0-9][0-9]_*.md"))
    assert CHAPTERS == chapters


@pytest.mark.parametrize("source", SOURCES, ids=CHAPTERS)
def test_questions_name_exercises_of_their_chapter(source):
    cited = re.findall(r"Exercise (ex-\d\d-[\w-]+)", source.read_text())
    chapter = (REPO / "book" / f"{source.stem}.md").read_text()
    labels = set(re.findall(r"^:label: (ex-[\w-]+)$", chapter, re.M))
    assert cited and set(cited) <= labels, set(cited) - labels


@pytest.mark.parametrize("source", SOURCES, ids=CHAPTERS)
def test_each_question_has_public_and_hidden_tests_and_a_near_miss(source):
    master, near_misses = build.split_master(source)
    questions = _questions(source)
    assert len(questions) >= MIN_QUESTIONS
    assert sorted(near_misses) == sorted(questions), "every question needs a near-miss cell"
    # the tests of each question: a public cell and a hidden one (a first line '# HIDDEN')
    in_tests, kinds, question = False, {}, None
    for cell in master.cells:
        text = cell.source.lstrip()
        if cell.cell_type == "raw" and text.startswith("# BEGIN QUESTION"):
            question = re.search(r"^name:\s*(\S+)", cell.source, re.M).group(1)
        elif cell.cell_type == "raw":
            opens, closes = text.startswith("# BEGIN TESTS"), text.startswith("# END TESTS")
            in_tests = opens or (in_tests and not closes)
        elif in_tests:
            kind = "hidden" if text.startswith("# HIDDEN") else "public"
            kinds.setdefault(question, set()).add(kind)
    assert all(kinds.get(q) == {"public", "hidden"} for q in questions), kinds


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_student_version_holds_no_solution_and_no_hidden_test(built, chapter):
    folder = built / chapter
    student = (folder / "student" / f"{chapter}.ipynb").read_text()
    for leak in ("BEGIN SOLUTION", "# SOLUTION", "HIDDEN", "near-miss", "converged_quadrature(",
                 "monte_carlo_mean("):
        assert leak not in student, f"{leak!r} in the student version of {chapter}"
    assert not (folder / "student" / "autograder.zip").exists()
    tests = json.loads(student)["metadata"]["otter"]["tests"]
    assert all(not case["hidden"] for t in tests.values() for suite in t["suites"]
               for case in suite["cases"])
    assert (folder / "autograder" / "autograder.zip").is_file()


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_reference_solutions_get_full_marks(grades, chapter):
    g = grades[chapter, "reference"]
    assert g.score == g.possible > 0, "\n".join(g.failures)


@pytest.mark.parametrize("chapter", CHAPTERS)
@pytest.mark.parametrize("kind", ["blank", "near_miss"])
def test_controls_lose_points_on_every_question(grades, chapter, kind):
    g = grades[chapter, kind]
    questions = _questions(build.HERE / f"{chapter}.py")
    assert g.score < g.possible
    full = set(questions) - set(g.lost)
    assert sorted(g.lost) == sorted(questions), f"{kind}: full marks on {full}"


def test_sources_pass_ruff_at_100_columns():
    # assignments/ruff.toml sets 100 columns there; this file is held to the same
    for target in (["assignments"], ["--line-length", "100", "--extend-select", "E501",
                                     "tests/test_assignments.py"]):
        result = subprocess.run([sys.executable, "-m", "ruff", "check", *target], cwd=REPO,
                                capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr
