#!/usr/bin/env python3
"""Execute book notebooks in fresh kernels and report each one's wall time.

Usage::

    python scripts/run_notebook.py book/01_infinite_prompt_limit.ipynb [more.ipynb ...] [--out DIR]

Each notebook runs with its own folder as working directory (as in the book's build).
The stored notebook is never modified; with ``--out`` the executed copy is written there.
A cell that has not replied after ``--cell-timeout`` seconds (default 180), or a notebook
still running after ``--notebook-timeout`` seconds (default 600), fails with a message that
names the notebook and the cell. Exits non-zero if any notebook fails or stalls.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import nbrun  # noqa: E402  (scripts/ is not a package)


def _watchdog(seconds: float, state: dict, report: Path | None) -> threading.Timer:
    """Last resort if the client itself hangs outside a cell: kill the kernel, say where, exit 3."""
    def fire() -> None:
        where = f"{state.get('notebook', '?')}, cell {state.get('cell')} (`{state.get('line', '')}`)"
        msg = f"{where}: the runner hung and is exiting after {seconds:.0f} s"
        print(msg, file=sys.stderr, flush=True)
        if report is not None:
            report.write_text(json.dumps(asdict(nbrun.Outcome(state.get("notebook", "?"), "stalled", seconds, msg,
                                                               state.get("cell"), state.get("line", "")))))
        import psutil

        for child in psutil.Process().children(recursive=True):  # the kernel this runner started
            try:
                child.kill()
            except psutil.Error:
                pass
        os._exit(3)

    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()
    return timer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=None, help="folder for the executed copies")
    parser.add_argument("--cell-timeout", type=float, default=nbrun.CELL_TIMEOUT_S, help="seconds per cell")
    parser.add_argument("--notebook-timeout", type=float, default=nbrun.NOTEBOOK_TIMEOUT_S,
                        help="seconds per notebook (wall clock)")
    parser.add_argument("--json", type=Path, default=None,
                        help="write the outcome of the (single) notebook to this file, as JSON")
    parser.add_argument("--memory", action="store_true", help="measure the kernel's peak resident memory")
    parser.add_argument("--quiet", action="store_true", help="print nothing (with --json)")
    args = parser.parse_args(argv)
    if args.json is not None and len(args.notebooks) != 1:
        parser.error("--json takes a single notebook")
    status = 0
    for path in args.notebooks:
        state = {"notebook": nbrun.display_name(path)}

        def progress(index: int, line: str, state=state) -> None:
            state.update(cell=index, line=line)
            if args.json is not None:
                nbrun.write_progress(args.json, index, line)

        timer = _watchdog(args.notebook_timeout + nbrun.HARD_MARGIN_S / 2, state, args.json)
        outcome = nbrun.execute(path, cell_timeout=args.cell_timeout, notebook_timeout=args.notebook_timeout,
                                out_dir=args.out, measure_memory=args.memory, on_progress=progress)
        timer.cancel()
        if args.json is not None:
            args.json.write_text(nbrun.outcome_json(outcome))
        if not args.quiet:
            print(nbrun.summary_line(outcome), file=sys.stdout if outcome.ok else sys.stderr, flush=True)
        status = status or (0 if outcome.ok else 1)
    return status


if __name__ == "__main__":
    sys.exit(main())
