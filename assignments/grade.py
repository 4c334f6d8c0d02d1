"""Grade a class's submissions of one chapter's homework locally, without Docker (Otter's API).

Usage::

    python assignments/grade.py _build/assignments/NN_name SUBMISSION.ipynb ... \\
        [--csv scores.csv] [--answers answers.md] [-v]

Each notebook is graded against ``_build/assignments/NN_name/autograder/autograder.zip`` in this
environment (gmmlib importable), one after the other, and gets one line: its auto-graded score
out of the auto-graded maximum, the questions that lost points, and the points of the questions
graded by hand (``manual: true`` in the master), which are pending.

A file that cannot be graded does not stop the class: a missing file, a file that is not a
notebook (invalid JSON, not nbformat), a notebook of another assignment (Otter's
``assignment_name`` in its metadata) or a grading that fails gets one line naming the file and
the reason (on standard error), an empty score and its error in the CSV; the others are graded.

``--csv`` writes one row per file: ``submission, score, possible, lost, manual_pending, error``.
``--answers`` writes, when the homework has questions graded by hand, a Markdown file for the
instructor: each such question's prompt, its reference answer and rubric, then each student's
text; by default it is the CSV's path with the suffix ``.answers.md`` (``scores.answers.md``), and
without ``--csv`` nothing is written unless ``--answers`` is given. ``-v`` prints every failed
test case (to write feedback).

Exit status: 0 when every file was graded, 1 when at least one file could not be, 2 for a usage
error (an assignment folder without ``autograder/autograder.zip``, an unknown option). It is
``otter run`` for a whole class at once.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

#: The text Otter puts in a free-response cell before the student writes in it.
PLACEHOLDER = "_Type your answer here, replacing this text._"
BEGIN, END = "<!-- BEGIN QUESTION -->", "<!-- END QUESTION -->"


@dataclass(frozen=True)
class Grade:
    """One submission: its auto-graded score and maximum, the questions below full marks, the
    points of the questions graded by hand (pending), their answers, and why it could not be
    graded (``error``; then ``score`` is ``None``)."""

    submission: str
    score: float | None
    possible: float
    lost: tuple[str, ...]
    failures: tuple[str, ...] = ()
    error: str = ""
    manual_pending: float = 0.0
    answers: tuple[tuple[str, str], ...] = ()  # (question, the student's free-response text)


class SubmissionError(Exception):
    """A submission that cannot be graded; its message is one line."""


def one_line(error: BaseException) -> str:
    """An exception as one line: its type and its message, whitespace collapsed, shortened."""
    text = " ".join(str(error).split())
    text = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def assignment_name(assignment: Path) -> str:
    """The assignment's name, as Otter Assign wrote it in the graded version's config."""
    config = Path(assignment) / "autograder" / "otter_config.json"
    return json.loads(config.read_text()).get("assignment_name") or Path(assignment).name


def manual_questions(assignment: Path) -> list[dict]:
    """The questions graded by hand (``autograder/manual.json``, written by build.py)."""
    path = Path(assignment) / "autograder" / "manual.json"
    return json.loads(path.read_text()) if path.is_file() else []


def read_submission(assignment: Path, submission: Path):
    """The submission as a notebook, or a ``SubmissionError`` saying why it cannot be graded."""
    import nbformat

    path = Path(submission)
    if not path.is_file():
        raise SubmissionError("no such file" if not path.exists() else "not a file")
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as error:  # invalid JSON, not a notebook, unreadable bytes
        reason = "invalid JSON" if type(error).__name__ == "NotJSONError" else one_line(error)
        raise SubmissionError(f"not a readable notebook ({reason})") from None
    if not isinstance(nb.get("cells"), list):
        raise SubmissionError("not a notebook (no list of cells)")
    expected = assignment_name(assignment)
    got = nb.get("metadata", {}).get("otter", {}).get("assignment_name")
    if got is None:
        raise SubmissionError(f"not a notebook of {expected!r} (no Otter assignment name in it)")
    if got != expected:
        raise SubmissionError(f"a notebook of assignment {got!r}, not of {expected!r}")
    return nb


def free_responses(nb, questions: list[dict]) -> dict[str, str]:
    """Each question's free-response text in the notebook ``nb``.

    Otter Assign opens a question graded by hand with the comment ``<!-- BEGIN QUESTION -->`` in
    its (locked) prompt cell and closes it with ``<!-- END QUESTION -->`` in the next Markdown
    cell; the answer is what the student wrote in the editable cells in between. A block is
    matched to its question by the prompt's first line, so cells added or deleted do not matter.
    """
    blocks, current = [], None
    for cell in nb.cells:
        text = cell.get("source", "")
        text = "".join(text) if isinstance(text, list) else text
        if cell.get("cell_type") == "markdown" and END in text:
            current = None
        if cell.get("cell_type") == "markdown" and BEGIN in text:
            current = [text, []]
            blocks.append(current)
            continue
        locked = cell.get("metadata", {}).get("editable") is False
        if current is not None and not locked and text.strip() not in ("", PLACEHOLDER):
            current[1].append(text.strip())
    found = {}
    for q in questions:
        first = q["prompt"].strip().splitlines()[0] if q["prompt"].strip() else None
        for opening, texts in blocks:
            if first and first in opening:
                found[q["name"]] = "\n\n".join(texts)
    return {q["name"]: found.get(q["name"], "") for q in questions}


@contextmanager
def _quiet_stderr():
    """Send what the grading kernel writes on file descriptor 2 to a temporary file."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


def grade(assignment: Path, submission: Path) -> Grade:
    """Grade ``submission`` with ``assignment/autograder/autograder.zip``, in this environment.

    Never raises for a bad submission: the returned ``Grade`` then has ``score=None`` and says
    why in ``error`` (one line).
    """
    from otter.api import grade_submission

    zip_path = Path(assignment) / "autograder" / "autograder.zip"
    manual = manual_questions(assignment)
    pending = float(sum(q.get("points") or 1 for q in manual))
    try:
        nb = read_submission(assignment, submission)
        with _quiet_stderr():
            results = grade_submission(str(Path(submission).resolve()), str(zip_path.resolve()),
                                       quiet=True)
    except Exception as error:
        message = str(error) if isinstance(error, SubmissionError) else (
            f"grading failed ({one_line(error)})")
        return Grade(str(submission), None, 0.0, (), error=message, manual_pending=pending)
    lost = tuple(name for name, res in results.results.items() if res.score < res.possible)
    failures = tuple(f"{case.test_case.name}:\n{case.message}" for res in results.results.values()
                     for case in res.test_case_results if not case.passed)
    answers = tuple(free_responses(nb, manual).items())
    return Grade(str(submission), float(results.total), float(results.possible), lost, failures,
                 manual_pending=pending, answers=answers)


def write_answers(path: Path, assignment: Path, grades: list[Grade]) -> None:
    """The free-response answers of the class, for the instructor, as one Markdown file."""
    manual = manual_questions(assignment)
    lines = [f"# Free-response answers: {assignment_name(assignment)}", "",
             "Written by `assignments/grade.py`: for each question graded by hand, its prompt, "
             "the reference answer with its rubric, then each student's text.", ""]
    for q in manual:
        lines += [f"## {q['name']} ({q.get('points') or 1:g} points)", "", q["prompt"], "",
                  "### Reference answer and rubric", "", q["reference"] or "(none given)", ""]
        for g in grades:
            text = dict(g.answers).get(q["name"], "")
            shown = f"(not graded: {g.error})" if g.error else text or "(no answer)"
            lines += [f"### {g.submission}", "", *(f"> {line}".rstrip()
                                                   for line in shown.splitlines()), ""]
    Path(path).write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="grade.py", description=__doc__.split("\n\n")[0],
        epilog="Exit status: 0 when every file was graded, 1 when one could not be, 2 on a usage "
               "error. See the module docstring (or the book's page For instructors).")
    parser.add_argument("assignment", type=Path,
                        help="the built chapter folder, _build/assignments/NN_name")
    parser.add_argument("submissions", type=Path, nargs="+", help="the notebooks to grade")
    parser.add_argument("--csv", type=Path, help="write the scores to this CSV file")
    parser.add_argument("--answers", type=Path,
                        help="write the free-response answers to this Markdown file "
                             "(default with --csv: the CSV's path with .answers.md)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every failed test case")
    args = parser.parse_args(argv)
    if not (args.assignment / "autograder" / "autograder.zip").is_file():
        parser.error(f"{args.assignment}: no autograder/autograder.zip (run assignments/build.py)")
    os.environ.setdefault("GMMLIB_HEADLESS", "1")
    manual = manual_questions(args.assignment)
    grades = []
    for submission in args.submissions:
        g = grade(args.assignment, submission)
        grades.append(g)
        if g.error:
            print(f"{g.submission}: error: {g.error}", file=sys.stderr, flush=True)
            continue
        lost = f"  lost points in {', '.join(g.lost)}" if g.lost else ""
        by_hand = f"  + {g.manual_pending:g} to grade by hand" if g.manual_pending else ""
        print(f"{g.submission}: {g.score:g} / {g.possible:g}{lost}{by_hand}", flush=True)
        if args.verbose:
            print("\n".join(g.failures))
    if args.csv:
        with args.csv.open("w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["submission", "score", "possible", "lost", "manual_pending", "error"])
            writer.writerows([g.submission, "" if g.score is None else g.score,
                              g.possible if g.score is not None else "", " ".join(g.lost),
                              g.manual_pending, g.error] for g in grades)
    answers = args.answers or (args.csv.with_suffix(".answers.md") if args.csv else None)
    if manual and answers:
        write_answers(answers, args.assignment, grades)
        print(f"free-response answers of {', '.join(q['name'] for q in manual)}: {answers}")
    failed = [g for g in grades if g.error]
    if failed:
        print(f"{len(failed)} of {len(grades)} files could not be graded", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
