"""Grade submissions of one chapter's homework locally, without Docker (Otter's Python API).

``python assignments/grade.py _build/assignments/NN_name SUBMISSION.ipynb ... [--csv scores.csv]``
grades each notebook against ``_build/assignments/NN_name/autograder/autograder.zip`` in this
environment (gmmlib importable), prints one line per submission (score, maximum, the questions
that lost points) and, with ``--csv``, writes them as a table. It is ``otter run`` for many
submissions at once.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Grade:
    """One graded submission: its score, the maximum, and the questions below full marks."""

    submission: str
    score: float
    possible: float
    lost: tuple[str, ...]
    failures: tuple[str, ...] = ()


def grade(assignment: Path, submission: Path) -> Grade:
    """Grade ``submission`` with ``assignment/autograder/autograder.zip``, in this environment."""
    from otter.api import grade_submission

    zip_path = Path(assignment) / "autograder" / "autograder.zip"
    results = grade_submission(str(Path(submission).resolve()), str(zip_path.resolve()), quiet=True)
    lost = tuple(name for name, res in results.results.items() if res.score < res.possible)
    failures = tuple(f"{case.test_case.name}:\n{case.message}" for res in results.results.values()
                     for case in res.test_case_results if not case.passed)
    return Grade(str(submission), float(results.total), float(results.possible), lost, failures)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("assignment", type=Path,
                        help="the built chapter folder, _build/assignments/NN_name")
    parser.add_argument("submissions", type=Path, nargs="+")
    parser.add_argument("--csv", type=Path, help="write the scores to this CSV file")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every failed test case")
    args = parser.parse_args(argv)
    os.environ.setdefault("GMMLIB_HEADLESS", "1")
    grades = [grade(args.assignment, s) for s in args.submissions]
    for g in grades:
        lost = f"  lost points in {', '.join(g.lost)}" if g.lost else ""
        print(f"{g.submission}: {g.score:g} / {g.possible:g}{lost}")
        if args.verbose:
            print("\n".join(g.failures))
    if args.csv:
        with args.csv.open("w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["submission", "score", "possible", "lost"])
            writer.writerows([g.submission, g.score, g.possible, " ".join(g.lost)] for g in grades)
    return 0


if __name__ == "__main__":
    sys.exit(main())
