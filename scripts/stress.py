#!/usr/bin/env python3
"""Execute every chapter several times in fresh kernels; report stalls, failures and run times.

Usage::

    python scripts/stress.py                 # every chapter 5 times, 2 at a time (``make stress``)
    python scripts/stress.py --repeat 10 book/09_iterated_denoiser.ipynb
    python scripts/stress.py --ref HEAD      # the committed chapters and gmmlib, not the working tree

Each execution is a child process with its own kernel (``scripts/nbrun.py``), under the per-cell
and per-notebook limits, so a stall ends as a message naming the chapter and the cell. The
runs of a chapter are spread over the whole session (round-robin), not back to back. Prints a
table (runs, ok, failed, stalled, min / median / max seconds per chapter), writes it with every
outcome to ``_build/stress.json``, and exits non-zero if any execution failed or stalled.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import nbrun  # scripts/ is on sys.path when a script runs (and tests load it by path)

ROOT = nbrun.ROOT


def export_ref(ref: str, into: Path) -> Path:
    """The tree of git revision ``ref`` (chapters, gmmlib, _toc.yml) extracted under ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "archive", ref], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def table(rows: list[dict]) -> str:
    head = f"{'chapter':<34}{'runs':>5}{'ok':>4}{'fail':>5}{'stall':>6}{'min s':>8}{'median s':>10}{'max s':>8}"
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['chapter']:<34}{r['runs']:>5}{r['ok']:>4}{r['failed']:>5}{r['stalled']:>6}"
                     f"{r['min_s']:>8.1f}{r['median_s']:>10.1f}{r['max_s']:>8.1f}")
    return "\n".join(lines)


def summarize(paths: list[Path], outcomes: list[nbrun.Outcome]) -> list[dict]:
    rows = []
    for path in paths:
        mine = [o for o in outcomes if Path(o.notebook).stem == path.stem]
        times = [o.seconds for o in mine if o.ok] or [o.seconds for o in mine] or [0.0]
        rows.append({"chapter": path.stem, "runs": len(mine), "ok": sum(o.ok for o in mine),
                     "failed": sum(o.status in ("failed", "crashed") for o in mine),
                     "stalled": sum(o.status == "stalled" for o in mine),
                     "min_s": min(times), "median_s": statistics.median(times), "max_s": max(times)})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every chapter of _toc.yml")
    parser.add_argument("--repeat", type=int, default=5, help="executions of each chapter (default 5)")
    parser.add_argument("--workers", type=int, default=2, help="chapters run at the same time (default 2)")
    parser.add_argument("--cell-timeout", type=float, default=nbrun.CELL_TIMEOUT_S)
    parser.add_argument("--notebook-timeout", type=float, default=nbrun.NOTEBOOK_TIMEOUT_S)
    parser.add_argument("--ref", default=None, help="run the chapters and gmmlib of this git revision")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "stress.json")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="stress-") as tmp:
        tmp = Path(tmp)
        env: dict[str, str] = {}
        root = ROOT
        if args.ref:
            root = export_ref(args.ref, tmp / "tree")
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))
        paths = ([root / p.resolve().relative_to(ROOT) if args.ref else p.resolve() for p in args.notebooks]
                 or nbrun.chapters(root))
        jobs = [nbrun.Job(p, {**env, "GMMLIB_LEDGER_DIR": str(tmp / "ledger" / f"run{r + 1}")}, f"run {r + 1}")
                for r in range(args.repeat) for p in paths]
        print(f"{len(jobs)} executions ({len(paths)} chapters × {args.repeat}), {args.workers} at a time"
              + (f", from {args.ref}" if args.ref else ", from the working tree"), flush=True)
        done = {"n": 0}
        start = time.perf_counter()

        def report(job: nbrun.Job, outcome: nbrun.Outcome) -> None:
            done["n"] += 1
            print(f"[{done['n']:>3}/{len(jobs)}] {job.label}: {nbrun.summary_line(outcome)}", flush=True)

        outcomes = nbrun.run_children(jobs, workers=args.workers, scratch=tmp / "runs",
                                      cell_timeout=args.cell_timeout, notebook_timeout=args.notebook_timeout,
                                      report=report)
        wall = time.perf_counter() - start

    rows = summarize(paths, outcomes)
    print()
    print(table(rows))
    bad = [o for o in outcomes if not o.ok]
    print(f"\n{len(outcomes)} executions in {wall / 60:.1f} min: {len(outcomes) - len(bad)} ok, "
          f"{sum(o.status == 'stalled' for o in bad)} stalled, {sum(o.status != 'stalled' for o in bad)} failed")
    for o in bad:
        print(f"  {o.status}: {o.message}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "source": args.ref or "working tree", "repeat": args.repeat, "workers": args.workers,
        "cell_timeout_s": args.cell_timeout, "notebook_timeout_s": args.notebook_timeout,
        "wall_s": round(wall, 1), "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "chapters": rows, "executions": [asdict(o) for o in outcomes]}, indent=1))
    print(f"written to {args.out}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
