#!/usr/bin/env python3
"""Execute book notebooks in fresh kernels and report each one's wall time.

Usage::

    python scripts/run_notebook.py book/01_infinite_prompt_limit.ipynb [more.ipynb ...] [--out DIR]

Each notebook runs with its own folder as working directory (as in the book's build).
The stored notebook is never modified; with ``--out`` the executed copy is written there.
Exits non-zero if a cell fails.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError


def run(path: Path, out_dir: Path | None = None, timeout: int = 300) -> float:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - start
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, out_dir / path.name)
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=None, help="folder for the executed copies")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per cell")
    args = parser.parse_args()
    status = 0
    for path in args.notebooks:
        try:
            elapsed = run(path.resolve(), args.out, args.timeout)
            print(f"{path}: ok in {elapsed:.1f} s")
        except CellExecutionError as exc:
            print(f"{path}: FAILED\n{exc}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
