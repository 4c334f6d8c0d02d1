"""The homework of every chapter (``assignments/``): built with Otter Assign and graded locally.

One build writes every chapter's student and graded versions (and the three control
submissions) into ``_build/test-cache/`` (once for all sessions that read the same inputs), then
grades, for every chapter, four submissions
with the autograder (Otter's Python API, no Docker): the reference solutions and the book's own
method (the cells tagged ``book-method`` substituted) must get full marks; the student version
left blank, and the reference with each question's near miss (the cells tagged ``near-miss``)
substituted, must lose points on *every* auto-graded question. All 44 gradings run two at a time
(one kernel each); the whole module took 12 minutes on two cores shared at a load of 8 (the 33
gradings before the book-method control took a minute and a half on two idle cores).

What the student gets is checked as a student meets it: every cell that holds a ``...`` to fill
in is editable (Otter locks the question's text, never an answer cell), each question has a
public test that checks a value with a message, the notebook imports no gmmlib name that a
hidden test computes its expected value with, and each chapter has a question graded by hand
with its rubric. With ``--built``, no hidden expected value may be printed in the chapter's
page. The student's path in JupyterLab itself is ``tests/assignments/test_homework_browser.py``.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import io
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
import tokenize
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[2]


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
KINDS = ("reference", "blank", "near_miss", "book_method")
#: Each chapter's homework must have at least this many auto-graded questions ...
MIN_QUESTIONS = 3
#: ... and this many free-response questions (``manual: true``), graded by hand with a rubric.
MIN_MANUAL = 1
ANSWER_TAG = build.ANSWER_TAG
#: What a public test may check without checking a value: shape, type, size, being callable.
SHAPE_ONLY = {"shape", "ndim", "size", "dtype", "len", "isinstance", "type", "callable",
              "hasattr", "issubclass"}
#: The calls that compare values (a public assert that calls one checks a value).
COMPARING = {"allclose", "isclose", "array_equal", "assert_allclose", "approx", "all", "any"}


def _configs(source: Path) -> list[dict]:
    master, _ = build.split_master(source)
    return build.question_configs(master)


def _questions(source: Path, manual: bool = False) -> list[str]:
    """The names of a master's auto-graded questions (or those graded by hand), in order."""
    return [q["name"] for q in _configs(source) if bool(q.get("manual")) == manual]


def _test_cells(source: Path) -> dict[str, dict[str, list[str]]]:
    """Each question's test cells, ``{"public": [...], "hidden": [...]}``, from the master."""
    master, _ = build.split_master(source)
    in_tests, found, question = False, {}, None
    for cell in master.cells:
        text = cell.source.lstrip()
        if cell.cell_type == "raw" and text.startswith("# BEGIN QUESTION"):
            question = re.search(r"^name:\s*(\S+)", cell.source, re.M).group(1)
        elif cell.cell_type == "raw":
            opens, closes = text.startswith("# BEGIN TESTS"), text.startswith("# END TESTS")
            in_tests = opens or (in_tests and not closes)
        elif in_tests:
            kind = "hidden" if text.startswith("# HIDDEN") else "public"
            found.setdefault(question, {"public": [], "hidden": []})[kind].append(cell.source)
    return found


def _locked(cell) -> bool:
    """Otter's lock: ``editable: false`` or ``deletable: false`` in the cell's metadata."""
    return cell.metadata.get("editable") is False or cell.metadata.get("deletable") is False


def _has_blank(cell) -> bool:
    """Whether a cell holds a ``...`` to fill in: the Ellipsis of Python code (a token, not text
    in a string or a comment), or Otter's free-response placeholder in Markdown."""
    if cell.cell_type == "markdown":
        return cell.source.strip() == grade_module.PLACEHOLDER
    if cell.cell_type != "code":
        return False
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(cell.source).readline))
    except (tokenize.TokenError, SyntaxError):
        return "..." in cell.source
    return any(t.type == tokenize.OP and t.string == "..." for t in tokens)


def _student(built: Path, chapter: str):
    return nbformat.read(built / chapter / "student" / f"{chapter}.ipynb", as_version=4)


def _submission(folder: Path, chapter: str, kind: str) -> Path:
    if kind == "reference":
        return folder / "autograder" / f"{chapter}.ipynb"
    return folder / "controls" / f"{kind}.ipynb"


#: what jupyter_client raises when a kernel exits before it answers at all (none of the
#: submission has run): its TCP ports, chosen free a moment before, were taken by another kernel
#: that started at the same time (the build's, the other worker's)
KERNEL_NOT_STARTED = "Kernel died before replying to kernel_info"


def _grade(job: tuple[str, str, str]):
    """Grade one submission; a kernel that did not start is started again (twice at most)."""
    folder, chapter, kind = job
    for _ in range(3):
        grade = grade_module.grade(Path(folder), _submission(Path(folder), chapter, kind))
        if KERNEL_NOT_STARTED not in grade.error:
            break
    return chapter, kind, grade


def _build(job: tuple[str, str]) -> str:
    source, out = job
    return str(build.build(Path(source), Path(out)))


#: where the homework built for the tests is kept, one folder per digest of its inputs
CACHE = REPO / "_build" / "test-cache"


def _inputs_digest() -> str:
    """A digest of every file the homework build and its grading read: the masters and the build
    and grading code (``assignments/``), gmmlib (Otter Assign runs the reference solutions and
    their tests), the chapters and the pinned environment. Any change gives a new folder."""
    files = [*(REPO / "assignments").rglob("*"), *(REPO / "gmmlib").rglob("*.py"),
             *(REPO / "book").glob("*.md"), REPO / "constraints.txt"]

    def source(path: Path) -> bool:  # not a tool's cache (ruff's, written while tests run)
        parts = path.relative_to(REPO).parts
        return path.is_file() and not any(p.startswith(".") or p == "__pycache__" for p in parts)

    digest = hashlib.sha256()
    for path in sorted(filter(source, files)):
        digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


@contextmanager
def _exclusive(path: Path):
    """An exclusive lock on ``path`` (a sibling ``.lock`` file), across processes."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def built() -> Path:
    """Every chapter built as ``make assignments`` does (assignments/build.py), two at a time.

    Built once for all the sessions that read the same inputs: ``make test`` runs pytest twice
    (beside the book's build and, with ``--built``, after it) on two workers each, and the build
    takes about a minute. The folder is named by the digest of the inputs, written complete or
    not at all (built aside, then renamed), under a lock that one worker holds while it builds
    (the other waits: the build keeps both cores busy).
    """
    out = CACHE / f"assignments-{_inputs_digest()}"
    with _exclusive(out):
        if not out.is_dir():
            partial = out.with_name(out.name + f".partial-{os.getpid()}")
            shutil.rmtree(partial, ignore_errors=True)
            partial.mkdir(parents=True)
            with ProcessPoolExecutor(max_workers=2) as pool:
                list(pool.map(_build, [(str(s), str(partial)) for s in SOURCES]))
            partial.rename(out)
            for stale in CACHE.glob("assignments-*"):  # the builds of earlier inputs
                if not stale.name.startswith(out.name):
                    shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
    return out


def _once(path: Path, compute):
    """``compute()``'s value, computed by one process for all the sessions and workers that ask
    for it (pickled at ``path``, beside the build it comes from: new inputs, a new file)."""
    with _exclusive(path):
        if not path.is_file():
            partial = path.with_name(path.name + f".partial-{os.getpid()}")
            partial.write_bytes(pickle.dumps(compute()))
            partial.rename(path)
    return pickle.loads(path.read_bytes())


def _grade_all(built: Path) -> dict:
    jobs = [(str(built / ch), ch, kind) for ch in CHAPTERS for kind in KINDS]
    with ProcessPoolExecutor(max_workers=2) as pool:
        return {(ch, kind): g for ch, kind, g in pool.map(_grade, jobs)}


@pytest.fixture(scope="session")
def grades(built):
    """The 44 gradings, two at a time, once for both of pytest's workers (the second waits for
    the first: the gradings keep both cores busy)."""
    return _once(built.with_name(built.name + ".grades.pickle"), lambda: _grade_all(built))


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
    _, near_misses = build.split_master(source)
    _, book_methods = build.split_master(source, build.BOOK_METHOD)
    questions, manual = _questions(source), _questions(source, manual=True)
    assert len(questions) >= MIN_QUESTIONS, f"{len(questions)} auto-graded questions"
    assert sorted(near_misses) == sorted(questions), "every auto-graded question needs a near miss"
    assert book_methods and set(book_methods) <= set(questions), (
        "a book-method cell (the answer by the chapter's own method) in an auto-graded question")
    # the tests of each question: a public cell and a hidden one (a first line '# HIDDEN')
    kinds = {q: {k for k, cells in t.items() if cells} for q, t in _test_cells(source).items()}
    assert all(kinds.get(q) == {"public", "hidden"} for q in questions), kinds
    assert not set(kinds) & set(manual), "a question graded by hand has no tests"


def _value_check(test: ast.expr) -> bool:
    """Whether an assert's condition compares a value, not only a shape or a type: a comparison
    none of whose sides is a shape, size, length or type, or a call of ``allclose`` and kin."""
    def shape_like(node: ast.AST) -> bool:
        return any(isinstance(n, ast.Attribute) and n.attr in SHAPE_ONLY
                   or isinstance(n, ast.Name) and n.id in SHAPE_ONLY for n in ast.walk(node))

    for node in ast.walk(test):
        if isinstance(node, ast.Compare):
            if not any(shape_like(side) for side in (node.left, *node.comparators)):
                return True
        elif isinstance(node, ast.Call) and not shape_like(node.func):
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            if name in COMPARING and not any(shape_like(a) for a in node.args):
                return True
    return False


@pytest.mark.parametrize("source", SOURCES, ids=CHAPTERS)
def test_each_question_has_a_public_test_of_a_value_with_a_message(source):
    """A student's ``grader.check`` says more than "wrong shape": for each auto-graded question,
    at least one public ``assert condition, "message"`` whose condition compares a value (a
    bound, a property, a known entry), not only shapes, lengths or types."""
    tests, missing = _test_cells(source), []
    for q in _questions(source):
        asserts = [node for cell in tests.get(q, {}).get("public", [])
                   for node in ast.walk(ast.parse(cell)) if isinstance(node, ast.Assert)]
        if not any(a.msg is not None and _value_check(a.test) for a in asserts):
            missing.append(q)
    assert not missing, f"no public assert with a message that checks a value in {missing}"


@pytest.mark.parametrize("source", SOURCES, ids=CHAPTERS)
def test_each_chapter_has_a_free_response_question_with_a_rubric(source):
    configs = [q for q in _configs(source) if q.get("manual")]
    assert len(configs) >= MIN_MANUAL, "a free-response question (manual: true) per chapter"
    for q in configs:
        assert q["prompt"], f"{q['name']}: no prompt"
        assert re.search(r"\bRubric\b", q["reference"]) and re.search(
            r"\d+(\.\d+)?\s*points?\b", q["reference"]), (
            f"{q['name']}: its solution block needs a reference answer and a Rubric with points")


def _gmmlib_names(code: str) -> dict[str, str]:
    """``{bound name: dotted path}`` of the gmmlib names a piece of code imports."""
    found = {}
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "gmmlib":
            for alias in node.names:
                found[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "gmmlib":
                    found[alias.asname or alias.name.split(".")[0]] = (
                        alias.name if alias.asname else alias.name.split(".")[0])
    return found


def _resolve(dotted: str):
    """The object a dotted gmmlib path names (a function, a class or a module)."""
    try:
        return importlib.import_module(dotted)
    except ImportError:
        module, _, name = dotted.rpartition(".")
        return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_no_answer_is_one_import_of_what_a_hidden_test_computes(built, chapter):
    """The student notebook imports (outside the test cells) no gmmlib function, class or
    module that a hidden test computes its expected value with: else the answer is one call.

    A hidden test's gmmlib names are those it imports and those it uses from the notebook's own
    imports; they are compared as objects (``gmmlib.f`` and ``gmmlib.limits.f`` are one).
    Classes are the data model (``GaussianMixture`` builds the prompt's law for both sides), not
    a computation: a hidden test may use the ones the student has."""
    student = _student(built, chapter)
    offered = {}
    for cell in student.cells:
        if cell.cell_type == "code" and "grader.check" not in cell.source:
            try:
                offered |= _gmmlib_names(cell.source)
            except SyntaxError:  # an answer cell with a bare ``...`` in an expression
                continue
    reachable = {}
    for dotted in offered.values():
        obj = _resolve(dotted)
        reachable[id(obj)] = dotted
        if type(obj).__name__ == "module":
            reachable |= {id(v): f"{dotted}.{k}" for k, v in vars(obj).items()
                          if not k.startswith("_")}
    bad = []
    for question, cells in _test_cells(build.HERE / f"{chapter}.py").items():
        for code in cells["hidden"]:
            used = _gmmlib_names(code)
            names = {n.id for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Name)}
            used |= {n: offered[n] for n in names & set(offered)}
            bad += [f"{question}: {d} (the student imports {reachable[id(_resolve(d))]})"
                    for d in used.values() if id(_resolve(d)) in reachable
                    and not isinstance(_resolve(d), type)]
    assert not bad, "hidden tests compute with what the student notebook imports: " + "; ".join(
        sorted(set(bad)))


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
def test_student_can_type_in_every_answer_cell_and_nowhere_else(built, chapter):
    """No locked cell (Otter's ``editable``/``deletable: false``) holds a ``...`` to fill in,
    every answer cell (Otter's tag ``otter_answer_cell``) is editable, and each question has
    one: a code cell before its ``grader.check``, a Markdown cell for a free response."""
    nb = _student(built, chapter)
    locked_blanks = [i for i, c in enumerate(nb.cells) if _locked(c) and _has_blank(c)]
    assert not locked_blanks, (
        f"locked cells with a ... to fill in: {locked_blanks} (put the answer in a "
        "# BEGIN SOLUTION block: Otter locks the cells of a question's text)")
    answers = [i for i, c in enumerate(nb.cells) if ANSWER_TAG in c.metadata.get("tags", [])]
    assert not [i for i in answers if _locked(nb.cells[i])], "a locked answer cell"
    assert not [i for i, c in enumerate(nb.cells) if _has_blank(c) and i not in answers], (
        "a cell to fill in without Otter's answer tag")
    source = build.HERE / f"{chapter}.py"
    checks = {re.search(r'grader\.check\("(\w+)"\)', c.source).group(1): i
              for i, c in enumerate(nb.cells) if "grader.check(" in c.source}
    previous = -1
    for q in _questions(source):
        assert any(previous < i < checks[q] and nb.cells[i].cell_type == "code"
                   for i in answers), f"{q}: no answer cell before grader.check"
        previous = checks[q]
    responses = [i for i in answers if nb.cells[i].cell_type == "markdown"]
    assert len(responses) >= len(_questions(source, manual=True)), "a free-response cell each"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_rubric_in_the_graded_version_only(built, chapter):
    student = (built / chapter / "student" / f"{chapter}.ipynb").read_text()
    graded = (built / chapter / "autograder" / f"{chapter}.ipynb").read_text()
    assert "Rubric" in graded and "Rubric" not in student
    manual = json.loads((built / chapter / "autograder" / "manual.json").read_text())
    assert [q["name"] for q in manual] == _questions(build.HERE / f"{chapter}.py", manual=True)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_reference_solutions_get_full_marks(grades, chapter):
    g = grades[chapter, "reference"]
    assert not g.error and g.score == g.possible > 0, g.error or "\n".join(g.failures)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_the_books_own_method_gets_full_marks(grades, chapter):
    """No hidden tolerance is tighter than the method the chapter teaches (its grid, its
    quadrature): the reference with each book-method cell substituted gets every auto-graded
    point."""
    g = grades[chapter, "book_method"]
    assert not g.error and g.score == g.possible > 0, g.error or "\n".join(g.failures)


@pytest.mark.parametrize("chapter", CHAPTERS)
@pytest.mark.parametrize("kind", ["blank", "near_miss"])
def test_controls_lose_points_on_every_question(grades, chapter, kind):
    g = grades[chapter, kind]
    questions = _questions(build.HERE / f"{chapter}.py")
    assert not g.error and g.score < g.possible, g.error
    full = set(questions) - set(g.lost)
    assert sorted(g.lost) == sorted(questions), f"{kind}: full marks on {full}"


def test_grade_py_grades_the_class_around_bad_files(built, tmp_path):
    """One class with a good submission, a corrupt file, a missing one and a notebook of another
    assignment: one line per bad file naming it, every file a CSV row, the good one graded,
    exit status 1 (and 0 for a class without a bad file)."""
    chapter, other = CHAPTERS[0], CHAPTERS[1]
    good = tmp_path / "good.ipynb"
    good.write_bytes(_submission(built / chapter, chapter, "reference").read_bytes())
    corrupt = tmp_path / "corrupt.ipynb"
    corrupt.write_text('{"cells": [')
    foreign = tmp_path / "foreign.ipynb"
    foreign.write_bytes(_submission(built / other, other, "reference").read_bytes())
    missing, table = tmp_path / "missing.ipynb", tmp_path / "scores.csv"
    script = REPO / "assignments" / "grade.py"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = subprocess.run([sys.executable, str(script), str(built / chapter), str(corrupt),
                          str(good), str(missing), str(foreign), "--csv", str(table)],
                         capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 1, run.stdout + run.stderr
    errors = [line for line in run.stderr.splitlines() if ": error: " in line]
    assert len(errors) == 3 and "Traceback" not in run.stderr, run.stderr
    for path, why in ((corrupt, "not a readable notebook"), (missing, "no such file"),
                      (foreign, f"assignment '{other}'")):
        assert any(line.startswith(str(path)) and why in line for line in errors), (path, errors)
    rows = {r["submission"]: r for r in __import__("csv").DictReader(table.open())}
    assert set(rows) == {str(p) for p in (corrupt, good, missing, foreign)}
    assert float(rows[str(good)]["score"]) == float(rows[str(good)]["possible"]) > 0
    assert not rows[str(good)]["error"] and all(rows[str(p)]["error"] and not rows[str(p)]["score"]
                                                 for p in (corrupt, missing, foreign))
    manual = _questions(build.HERE / f"{chapter}.py", manual=True)
    if manual:
        assert table.with_suffix(".answers.md").is_file(), "the free-response answers file"
    alone = subprocess.run([sys.executable, str(script), str(built / chapter), str(good)],
                           capture_output=True, text=True, env=env, timeout=300)
    assert alone.returncode == 0 and alone.stdout.startswith(str(good)), alone.stderr


def test_sources_pass_ruff_at_100_columns():
    # assignments/ruff.toml sets 100 columns there; this file is held to the same
    for target in (["assignments"], ["--line-length", "100", "--extend-select", "E501",
                                     "tests/assignments/test_assignments.py"]):
        result = subprocess.run([sys.executable, "-m", "ruff", "check", *target], cwd=REPO,
                                capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr


# ------------------------------------------------------- hidden values and the public pages
class _PageText(HTMLParser):
    """The text of a built page (prose, maths source, code and outputs), without scripts."""

    def __init__(self) -> None:
        super().__init__()
        self.skip, self.text = 0, []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.skip += tag in ("script", "style")

    def handle_endtag(self, tag: str) -> None:
        self.skip -= tag in ("script", "style") and self.skip > 0

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.text.append(data)


#: Significant digits at which a hidden value is looked for in a page: 4 to 6. At 3 digits a
#: chapter's hundreds of printed numbers meet most values by chance (a 3-digit string has 900
#: possibilities), so the test would cry wolf; a page that leaks an answer prints it as the
#: chapter's solution computed it, at 4 digits or more (``:.4f``, ``:.4g``, ``:.6g``).
DIGITS = (4, 5, 6)


def _renderings(value: float) -> set[str]:
    """How a page may print ``|value|`` with 4 to 6 significant digits (``%g``, fixed decimals,
    ``%e``); none for a number with fewer significant digits (an integer under 1000, 0.25, 3.5:
    common everywhere, an exact constant rather than a computed value)."""
    v = abs(value)
    if len(f"{v:.12e}".split("e")[0].replace(".", "").rstrip("0")) < DIGITS[0]:
        return set()
    general = [t for t in (f"{v:.{k}g}" for k in DIGITS) if "e" not in t]
    texts = general + [f"{v:.{k}f}" for k in range(2, 7)] + [f"{v:.{k - 1}e}" for k in DIGITS]
    return {t for t in texts if float(t) != 0  # digits as printed: 41.30 has four
            and len(t.split("e")[0].replace(".", "").lstrip("0")) >= DIGITS[0]}


def _graded_names(graded, student) -> dict[str, list[str]]:
    """Each question's graded variables: the names a solution cell of the reference assigns at
    top level and the student's cell does not give (``x = ...`` is to fill, ``x = 3`` given)."""
    def assigned(code: str, given_only: bool) -> set[str]:
        names = set()
        for node in ast.parse(code).body:
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                value = getattr(node, "value", None)
                if given_only and isinstance(value, ast.Constant) and value.value is Ellipsis:
                    continue
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        return names

    given = set()
    for cell in student.cells:
        if cell.cell_type == "code":
            try:
                given |= assigned(cell.source, True)
            except SyntaxError:
                continue
    found, pending = {}, set()
    for cell in graded.cells:
        if cell.cell_type != "code":
            continue
        check = re.search(r'grader\.check\("(\w+)"\)', cell.source)
        if check:
            found[check.group(1)], pending = sorted(pending - given), set()
        elif build.SOLUTION_TAG in cell.metadata.get("tags", []):
            pending |= assigned(cell.source, False)
    return found


DUMP = """
import json as _json, numpy as _np
_values = {}
for _q, _names in %r.items():
    for _n in _names:
        try:
            _a = _np.asarray(globals()[_n], dtype=float).ravel()[:2000]
        except Exception:
            continue
        _values[_q + ":" + _n] = [float(_x) for _x in _a if _np.isfinite(_x)]
print(_json.dumps(_values))
"""


def _hidden_values(job: tuple[str, str]) -> tuple[str, dict[str, list[float]]]:
    """Run a chapter's reference notebook and read its graded variables' values."""
    from nbclient import NotebookClient

    folder, chapter = Path(job[0]), job[1]
    graded = nbformat.read(folder / "autograder" / f"{chapter}.ipynb", as_version=4)
    names = _graded_names(graded, _student(folder.parent, chapter))
    graded.cells.append(nbformat.v4.new_code_cell(DUMP % names))
    os.environ["GMMLIB_HEADLESS"] = "1"
    NotebookClient(graded, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(folder / "autograder")}}).execute()
    out = "".join(o.get("text", "") for o in graded.cells[-1].outputs if o.output_type == "stream")
    return chapter, json.loads(out.strip().splitlines()[-1])


def _hidden_values_all(built: Path) -> dict:
    with ProcessPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(_hidden_values, [(str(built / ch), ch) for ch in CHAPTERS]))


@pytest.fixture(scope="session")
def hidden_values(built):
    """Each chapter's graded values, computed once per build of the homework (``built``)."""
    return _once(built.with_name(built.name + ".hidden-values.pickle"),
                 lambda: _hidden_values_all(built))


@pytest.mark.built
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_no_hidden_value_is_printed_in_the_chapters_page(hidden_values, chapter):
    """A graded answer must not be readable in the chapter's public page (``_build/html``).

    The values are those of the reference solutions' graded variables (the names a solution
    cell assigns that the student's cell leaves as ``...``), read by running the graded
    notebook. Each is looked for, as a whole number token, at 4, 5 and 6 significant digits and
    with 2 to 6 decimals, in the page's text (prose, maths, code, outputs, solutions in their
    dropdowns). A value with fewer than 4 significant digits (an integer under 1000, 0.25) is
    not looked for: such numbers are everywhere and are exact constants, not computed answers."""
    page = REPO / "_build" / "html" / "book" / f"{chapter}.html"
    assert page.is_file(), f"{page} is missing: build the book first"
    reader = _PageText()
    reader.feed(page.read_text(encoding="utf-8"))
    text = " ".join(reader.text)
    leaks = []
    for name, values in hidden_values[chapter].items():
        for value in values:
            for shown in _renderings(value):
                if re.search(rf"(?<![\d.]){re.escape(shown)}(?!\d)", text):
                    leaks.append(f"{name} = {value!r} printed as {shown}")
    assert not leaks, f"hidden answers of {chapter} in its page: " + "; ".join(leaks[:20])
