#!/usr/bin/env python3
"""Execute every chapter under other base seeds; a table of chapter × seed, pass or fail, and why.

Usage::

    python scripts/seeds.py                  # seeds 1..5, 2 chapters at a time (``make seeds``)
    python scripts/seeds.py --seeds 1 7 book/05_landscape.md
    make seeds SEEDS="$(seq -s ' ' 1 20)"    # base seeds 1 to 20

Chapters that draw no random number (no ``seeds.rng(`` or ``seeds.int(`` in their code) give
the same result under every seed: they are skipped, and listed as such.

Each (chapter, seed) runs in a fresh kernel (``scripts/nbrun.py``, under the same per-cell and
per-notebook limits as the build) with ``GMMLIB_SEED=<seed>`` and its own
``GMMLIB_LEDGER_DIR``. A run fails if a cell raises (a failed check raises ``CheckFailed``) or
stalls; the table gives, for each failure, the claims of the ledger entries with
``passed == false`` or else the error. Writes ``_build/seeds.md`` and ``_build/seeds.json``;
exits non-zero if any run fails.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from dataclasses import asdict
from pathlib import Path

import nbrun  # scripts/ is on sys.path when a script runs (and tests load it by path)

ROOT = nbrun.ROOT


def failed_claims(ledger_file: Path) -> list[str]:
    """The claims (with what was compared) of the ledger entries that did not pass."""
    try:
        entries = json.loads(ledger_file.read_text())
    except (OSError, ValueError):
        return []
    return [f"{e.get('claim', '?')}: {e.get('what', '')}".rstrip(": ") for e in entries if e.get("passed") is False]


RANDOM_DRAW = re.compile(r"\bseeds\.(rng|int)\(")


def draws_random_numbers(path: Path) -> bool:
    """Whether the chapter's code takes a random draw from its seeds (``seeds.rng(`` / ``seeds.int(``)."""
    return any(cell.cell_type == "code" and RANDOM_DRAW.search(cell.source) for cell in nbrun.read(path).cells)


def verdict(outcome: nbrun.Outcome, claims: list[str]) -> str:
    if outcome.ok:
        return "pass"
    if claims:
        return "FAIL: " + "; ".join(claims)
    return f"{outcome.status.upper()}: {outcome.message}"


def markdown(chapters: list[str], seeds: list[int], cells: dict) -> str:
    lines = ["# Chapters under other base seeds (`make seeds`)", "",
             "Each chapter executed in a fresh kernel with `GMMLIB_SEED` set; a failure lists the claims "
             "of the checks that failed (or the error).", "",
             "| chapter | " + " | ".join(f"seed {s}" for s in seeds) + " |",
             "|---|" + "---|" * len(seeds)]
    for ch in chapters:
        row = [cells[ch, s]["verdict"].replace("|", "\\|") for s in seeds]
        lines.append(f"| {ch} | " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every chapter of _toc.yml")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5],
                        help="base seeds (default 1 2 3 4 5; the book's default seed is not among them)")
    parser.add_argument("--workers", type=int, default=2, help="chapters run at the same time (default 2)")
    parser.add_argument("--cell-timeout", type=float, default=nbrun.CELL_TIMEOUT_S)
    parser.add_argument("--notebook-timeout", type=float, default=nbrun.NOTEBOOK_TIMEOUT_S)
    parser.add_argument("--out", type=Path, default=ROOT / "_build", help="folder for seeds.md and seeds.json")
    args = parser.parse_args(argv)

    paths = [p.resolve() for p in args.notebooks] or nbrun.chapters()
    skipped = [p for p in paths if not draws_random_numbers(p)]
    for p in skipped:
        print(f"{nbrun.display_name(p)}: draws no random number (no seeds.rng/seeds.int): skipped", flush=True)
    paths = [p for p in paths if p not in skipped]
    work = args.out / "seeds"
    jobs = [nbrun.Job(p, {"GMMLIB_SEED": str(s), "GMMLIB_LEDGER_DIR": str(work / f"seed{s}" / "ledger")},
                      f"seed {s}") for s in args.seeds for p in paths]
    print(f"{len(jobs)} executions ({len(paths)} chapters × seeds {' '.join(map(str, args.seeds))}), "
          f"{args.workers} at a time", flush=True)
    done = {"n": 0}

    def report(job: nbrun.Job, outcome: nbrun.Outcome) -> None:
        done["n"] += 1
        print(f"[{done['n']:>3}/{len(jobs)}] {job.label}: {nbrun.summary_line(outcome)}", flush=True)

    start = time.perf_counter()
    outcomes = nbrun.run_children(jobs, workers=args.workers, scratch=work / "runs",
                                  cell_timeout=args.cell_timeout, notebook_timeout=args.notebook_timeout,
                                  report=report)
    wall = time.perf_counter() - start

    cells: dict = {}
    for job, outcome in zip(jobs, outcomes):
        seed = int(job.env["GMMLIB_SEED"])
        claims = failed_claims(Path(job.env["GMMLIB_LEDGER_DIR"]) / f"{job.path.stem}.json")
        cells[job.path.stem, seed] = {"chapter": job.path.stem, "seed": seed, "passed": outcome.ok,
                                      "failed_claims": claims, "verdict": verdict(outcome, claims),
                                      "outcome": asdict(outcome)}
    names = [p.stem for p in paths]
    args.out.mkdir(parents=True, exist_ok=True)
    skipped_names = [p.stem for p in skipped]
    text = markdown(names, args.seeds, cells)
    if skipped_names:
        text += f"\nSkipped (no random draw): {', '.join(skipped_names)}.\n"
    (args.out / "seeds.md").write_text(text)
    (args.out / "seeds.json").write_text(json.dumps({"seeds": args.seeds, "wall_s": round(wall, 1),
                                                     "skipped": skipped_names,
                                                     "runs": list(cells.values())}, indent=1))
    width = max((len(n) for n in names), default=len("chapter"))
    print(f"\n{'chapter':<{width}}  " + "  ".join(f"seed {s}" for s in args.seeds))
    for n in names:
        print(f"{n:<{width}}  " + "  ".join(f"{'pass' if cells[n, s]['passed'] else 'FAIL':<6}" for s in args.seeds))
    failures = [c for c in cells.values() if not c["passed"]]
    for c in failures:
        print(f"  {c['chapter']}, seed {c['seed']}: {c['verdict']}")
    print(f"\n{len(cells) - len(failures)}/{len(cells)} runs pass ({wall / 60:.1f} min); "
          f"written to {args.out / 'seeds.md'} and seeds.json")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
