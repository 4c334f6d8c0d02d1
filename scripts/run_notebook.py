#!/usr/bin/env python3
"""Execute book chapters in fresh kernels and report each one's wall time.

Usage::

    python scripts/run_notebook.py book/01_infinite_prompt_limit.md [more.md ...] [--out DIR]

A chapter is its MyST source ``book/NN_*.md`` (executed through jupytext, as the build does)
or a notebook ``.ipynb``. Each runs with its own folder as working directory (as in the
book's build). The stored file is never modified; with ``--out`` the executed copy
(``.ipynb``) is written there.
A cell that has not replied after ``--cell-timeout`` seconds (default 180), or a notebook
still running after ``--notebook-timeout`` seconds (default 600), fails with a message that
names the notebook and the cell. Exits non-zero if any notebook fails or stalls.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbrun  # scripts/ is on sys.path when a script runs (and tests load it by path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path, help="chapters: .md (MyST) or .ipynb")
    parser.add_argument("--out", type=Path, default=None, help="folder for the executed copies")
    parser.add_argument("--cell-timeout", type=float, default=nbrun.CELL_TIMEOUT_S, help="seconds per cell")
    parser.add_argument("--notebook-timeout", type=float, default=nbrun.NOTEBOOK_TIMEOUT_S,
                        help="seconds per notebook (wall clock)")
    parser.add_argument("--json", type=Path, default=None,
                        help="write the outcome of the (single) notebook to this file, as JSON")
    parser.add_argument("--memory", action="store_true", help="measure the kernel's peak resident memory")
    parser.add_argument("--quiet", action="store_true", help="print nothing (with --json)")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="also print the N slowest cells of each notebook (seconds, index, first line)")
    args = parser.parse_args(argv)
    if args.json is not None and len(args.notebooks) != 1:
        parser.error("--json takes a single notebook")
    status = 0
    for path in args.notebooks:
        def progress(index: int, line: str) -> None:  # read by run_children if this process is killed
            nbrun.write_progress(args.json, index, line)

        outcome = nbrun.execute(path, cell_timeout=args.cell_timeout, notebook_timeout=args.notebook_timeout,
                                out_dir=args.out, measure_memory=args.memory,
                                on_progress=progress if args.json is not None else None,
                                profile=args.profile)
        if args.json is not None:
            args.json.write_text(nbrun.outcome_json(outcome))
        if not args.quiet:
            print(nbrun.summary_line(outcome), file=sys.stdout if outcome.ok else sys.stderr, flush=True)
        status = status or (0 if outcome.ok else 1)
    return status


if __name__ == "__main__":
    sys.exit(main())
