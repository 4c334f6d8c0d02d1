"""Build the homework of every chapter with Otter Assign (otter-grader), and its controls.

``python assignments/build.py [--out _build/assignments] [NN_name ...]`` reads each master
source ``assignments/NN_name.py`` (a jupytext percent notebook in Otter Assign's format) and
writes, under ``<out>/NN_name/``:

- ``student/NN_name.ipynb``: the homework to hand out (no solutions, public tests only);
- ``autograder/``: the graded version (``NN_name.ipynb`` with the reference solutions, every
  test, and ``autograder.zip``, which ``otter run`` and ``assignments/grade.py`` use), and
  ``manual.json``: the questions graded by hand (``manual: true``: name, points, prompt, and the
  reference answer with its rubric), which ``grade.py`` reads to write out the students' answers;
- ``controls/blank.ipynb`` and ``controls/near_miss.ipynb``: two submissions the grader must not
  give full marks: the student version untouched, and the reference solutions with each
  question's plausible wrong answer (the cells tagged ``near-miss`` of the source) substituted;
- ``controls/book_method.ipynb``: a submission that must get full marks: the reference solutions
  with each question's answer as the book's own method computes it (the cells tagged
  ``book-method``: a quadrature of the chapter's size, the chapter's grid), so that no hidden
  tolerance is tighter than the method the book teaches.

Cells tagged ``near-miss`` or ``book-method`` never reach Otter: they are taken out of the master
before ``otter assign`` and put back, after their question's solution, only in their control.

The master's format, per question (``tests/assignments/test_assignments.py`` checks each
point): a raw
``# BEGIN QUESTION`` cell (``name``, ``points``; ``manual: true`` for a free-response question);
the Markdown prompt; a raw ``# BEGIN SOLUTION`` cell, the answer cell(s) (given set-up code may
stay; lines ending ``# SOLUTION`` and blocks between ``# BEGIN SOLUTION``/``# END SOLUTION``
comments become ``...``), a raw ``# END SOLUTION`` cell; for an auto-graded question, a cell tagged
``near-miss`` (a plausible wrong answer, which must lose points) and, in at least one question
of the chapter, a cell tagged ``book-method`` (the answer by the chapter's own method, which
must get full marks); then raw ``# BEGIN TESTS``, public test cells (at least one
``assert condition, "message"`` that compares a value, not only a shape or a type), hidden test
cells (first line ``# HIDDEN``) that compute their expected value themselves, importing there the
gmmlib functions they use (the notebook must not import them: its answer would be one call),
with a comment justifying the tolerance, raw ``# END TESTS``; and raw ``# END QUESTION``. A
free-response question has no tests: its solution block is a Markdown cell with the reference
answer and a "Rubric" giving points per item (in the graded version only). No graded value may
be printed in the chapter's page at four significant digits or more (a ``--built`` test).

In the student version every answer cell (a cell of a ``# BEGIN SOLUTION`` block, a free-response
cell) carries Otter's answer tag ``otter_answer_cell`` and is editable; everything else that Otter
locks stays locked. (With ``strip_solutions_from_all_cells: true`` Otter leaves the solution tag
``otter_assign_solution_cell`` on the code answer cells of the student version; it is renamed.)
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jupytext
import nbformat
import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
NEAR_MISS = "near-miss"
BOOK_METHOD = "book-method"
SUBSTITUTES = {NEAR_MISS: "near_miss", BOOK_METHOD: "book_method"}  # cell tag -> control name
ANSWER_TAG = "otter_answer_cell"  # Otter's tag of a cell the student writes in
SOLUTION_TAG = "otter_assign_solution_cell"  # Otter's tag of a reference solution's cell


def sources(root: Path = HERE) -> list[Path]:
    """The master sources ``assignments/NN_*.py``, in chapter order."""
    return sorted(root.glob("[0-9][0-9]_*.py"))


def split_master(source: Path,
                 tag: str = NEAR_MISS) -> tuple[nbformat.NotebookNode, dict[str, list[str]]]:
    """The master without its near-miss and book-method cells, and the code of the cells tagged
    ``tag`` per question."""
    nb = jupytext.read(source)
    question, substitutes, kept = None, {}, []
    for cell in nb.cells:
        if cell.cell_type == "raw" and cell.source.lstrip().startswith("# BEGIN QUESTION"):
            found = re.search(r"^name:\s*(\S+)", cell.source, flags=re.MULTILINE)
            question = found.group(1) if found else None
        tags = set(cell.metadata.get("tags", [])) & set(SUBSTITUTES)
        if tags:
            if question is None:
                raise ValueError(f"{source.name}: a {tags.pop()} cell outside a question")
            if tag in tags:
                substitutes.setdefault(question, []).append(cell.source)
            continue
        kept.append(cell)
    nb.cells = kept
    return nb, substitutes


def question_configs(master: nbformat.NotebookNode) -> list[dict]:
    """The config of every question (the YAML of its ``# BEGIN QUESTION`` cell), in order, with
    its prompt (the Markdown cells before its solution) and, for a question graded by hand, its
    reference answer and rubric (the Markdown cells of its solution block)."""
    questions, where = [], None
    for cell in master.cells:
        text = cell.source.lstrip()
        if cell.cell_type == "raw" and text.startswith("# BEGIN QUESTION"):
            config = yaml.safe_load(text.split("\n", 1)[1]) if "\n" in text else {}
            questions.append({"manual": False, **(config or {}), "prompt": "", "reference": ""})
            where = "prompt"
        elif cell.cell_type == "raw" and questions:
            for marker, now in (("# BEGIN SOLUTION", "reference"), ("# END SOLUTION", None),
                                ("# BEGIN TESTS", None), ("# END QUESTION", None)):
                where = now if text.startswith(marker) else where
        elif cell.cell_type == "markdown" and where:
            part = questions[-1][where]
            questions[-1][where] = f"{part}\n\n{cell.source}".strip()
    return questions


def open_answer_cells(student: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The student version with each solution cell tagged as Otter's answer cell, never locked."""
    nb = nbformat.from_dict(student)
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if SOLUTION_TAG in tags or ANSWER_TAG in tags:
            cell.metadata["tags"] = [ANSWER_TAG, *(t for t in tags if t not in
                                                   (SOLUTION_TAG, ANSWER_TAG))]
            for key in ("editable", "deletable"):
                cell.metadata.pop(key, None)
    return nb


def near_miss_submission(reference: nbformat.NotebookNode,
                         near_misses: dict[str, list[str]]) -> nbformat.NotebookNode:
    """The reference notebook with each question's near miss run just before its check."""
    nb = nbformat.from_dict(reference)
    cells, seen = [], set()
    for cell in nb.cells:
        found = (re.search(r'grader\.check\("([^"]+)"\)', cell.source)
                 if cell.cell_type == "code" else None)
        if found and found.group(1) in near_misses:
            for code in near_misses[found.group(1)]:
                cells.append(nbformat.v4.new_code_cell(code))
            seen.add(found.group(1))
        cells.append(cell)
    missing = set(near_misses) - seen
    if missing:
        raise ValueError(f"no grader.check cell for the near misses of {sorted(missing)}")
    nb.cells = cells
    return nb


def build(source: Path, out: Path) -> Path:
    """Build one chapter's homework under ``out/<source stem>`` and return that folder."""
    name = source.stem
    out = Path(out).resolve()  # otter assign runs in out/.masters
    dest = out / name
    master_dir = out / ".masters"
    master_dir.mkdir(parents=True, exist_ok=True)
    master, near_misses = split_master(source)
    master_path = master_dir / f"{name}.ipynb"
    nbformat.write(master, master_path)
    if dest.exists():
        shutil.rmtree(dest)
    cmd = [sys.executable, "-m", "otter", "assign", "--no-pdfs", str(master_path), str(dest)]
    done = subprocess.run(cmd, cwd=master_dir, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"otter assign failed for {name}:\n{done.stdout}\n{done.stderr}")
    zips = sorted((dest / "autograder").glob(f"{name}-autograder_*.zip"))
    if len(zips) != 1:
        raise RuntimeError(f"otter assign wrote {len(zips)} autograder zips for {name}")
    zips[0].rename(dest / "autograder" / "autograder.zip")  # a stable name, not a timestamp
    student_path = dest / "student" / f"{name}.ipynb"
    nbformat.write(open_answer_cells(nbformat.read(student_path, as_version=4)), student_path)
    manual = [{k: q.get(k) for k in ("name", "points", "prompt", "reference")}
              for q in question_configs(master) if q.get("manual")]
    (dest / "autograder" / "manual.json").write_text(json.dumps(manual, indent=1,
                                                                ensure_ascii=False) + "\n")
    controls = dest / "controls"
    controls.mkdir()
    shutil.copy(dest / "student" / f"{name}.ipynb", controls / "blank.ipynb")
    reference = nbformat.read(dest / "autograder" / f"{name}.ipynb", as_version=4)
    nbformat.write(near_miss_submission(reference, near_misses), controls / "near_miss.ipynb")
    _, book_methods = split_master(source, BOOK_METHOD)
    nbformat.write(near_miss_submission(reference, book_methods), controls / "book_method.ipynb")
    return dest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*", help="NN_name stems (default: every chapter)")
    parser.add_argument("--out", type=Path, default=REPO / "_build" / "assignments")
    args = parser.parse_args(argv)
    chosen = [s for s in sources() if not args.chapters or s.stem in args.chapters]
    if not chosen:
        parser.error("no master source matches")
    for source in chosen:
        print("built", build(source, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
