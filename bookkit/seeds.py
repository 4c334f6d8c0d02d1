"""The chapters under other base seeds: which claim fails where (``make seeds``).

``python -m bookkit seeds [--seeds 1 2 3 4 5] [chapters]``: each chapter that draws random
numbers (``seeds.rng(`` or ``seeds.int(`` in its code) in a fresh kernel with ``GMMLIB_SEED``
set, two at a time; writes ``_build/seeds.md`` and ``seeds.json``; exits 1 on any failure.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from . import run, toc

RANDOM_DRAW = re.compile(r"\bseeds\.(rng|int)\(")


def draws_random_numbers(path: Path) -> bool:
    """Whether the chapter's code draws from its seeds."""
    return any(c.cell_type == "code" and RANDOM_DRAW.search(c.source)
               for c in run.read(path).cells)


def verdict(outcome: run.Outcome) -> str:
    """``pass``, the claim whose check failed (``CheckFailed`` names it in brackets), or why."""
    claims = re.findall(r"\[([^\]]+)\]", outcome.message) * ("CheckFailed" in outcome.message)
    return ("pass" if outcome.ok else f"FAIL: {', '.join(claims)}" if claims
            else f"{outcome.status.upper()}: {outcome.message}")


def markdown(names: list[str], seeds: list[int], verdicts: dict) -> str:
    """The chapter × seed table, in Markdown."""
    lines = ["# Chapters under other base seeds (`make seeds`)", "",
             "| chapter | " + " | ".join(f"seed {s}" for s in seeds) + " |",
             "|---|" + "---|" * len(seeds)]
    lines += [f"| {n} | " + " | ".join(verdicts[n, s].replace("|", "\\|") for s in seeds) + " |"
              for n in names]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bookkit seeds", description=__doc__)
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every chapter")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--workers", type=int, default=2, help="chapters run at once")
    parser.add_argument("--out", type=Path, default=toc.ROOT / "_build")
    args = parser.parse_args(argv)
    paths = [p.resolve() for p in args.notebooks] or [c.source() for c in toc.chapters()]
    skipped = [p.stem for p in paths if not draws_random_numbers(p)]
    paths = [p for p in paths if p.stem not in skipped]
    jobs = [(p, {"GMMLIB_SEED": str(s)}) for s in args.seeds for p in paths]
    outcomes = run.run_many(jobs, workers=args.workers,
                            report=lambda i, o: print(jobs[i][1], o.summary(), flush=True))
    verdicts = {(p.stem, int(env["GMMLIB_SEED"])): verdict(o) for (p, env), o in zip(jobs, outcomes)}
    text = markdown([p.stem for p in paths], args.seeds, verdicts)
    text += f"\nSkipped (no random draw): {', '.join(skipped)}.\n" * bool(skipped)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "seeds.md").write_text(text)
    (args.out / "seeds.json").write_text(json.dumps(
        [{"chapter": c, "seed": s, "verdict": v} for (c, s), v in verdicts.items()], indent=1))
    print(text)
    return 0 if all(v == "pass" for v in verdicts.values()) else 1
