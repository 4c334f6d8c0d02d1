"""``make bench|stress|seeds``: each chapter in a fresh kernel against the run-time budget."""

import argparse
import json
import re
import statistics
from pathlib import Path

from . import run, toc

RANDOM_DRAW = re.compile(r"\bseeds\.(rng|int)\(")


def budget() -> dict[str, float]:
    """The run-time budget, stated once: ``parse.myst_substitutions`` of ``_config.yml``."""
    subs = run.config()["parse"]["myst_substitutions"]
    return {"chapter_s": float(subs["chapter_budget_s"]), "book_s": float(subs["book_budget_s"])}


def draws_random_numbers(path: Path) -> bool:
    """Whether the chapter's code draws from its seeds (``seeds.rng(`` or ``seeds.int(``)."""
    return any(c.cell_type == "code" and RANDOM_DRAW.search(c.source) for c in run.read(path).cells)


def verdict(outcome: run.Outcome) -> str:
    """``pass``, the claim whose check failed (``CheckFailed`` names it in brackets), or why."""
    if outcome.ok:
        return "pass"
    failed = "CheckFailed" in outcome.message
    claims = re.findall(r"\[([^\]]+)\]", outcome.message) if failed else []
    return f"FAIL: {', '.join(claims)}" if claims else f"{outcome.status.upper()}: " \
        + outcome.message


def sweep(paths: list[Path], variants: list[dict], workers: int = 1) -> dict:
    """Each chapter under each kernel environment of ``variants``: times, memory, verdicts."""
    jobs = [(p, env) for env in variants for p in paths]  # a chapter's runs spread over time
    outcomes = run.run_many(jobs, workers, report=lambda i, o: print(
        f"[{i + 1}/{len(jobs)}] {o.summary()}", flush=True))
    rows = []
    for i, path in enumerate(paths):
        runs = outcomes[i::len(paths)]
        rows.append({"chapter": path.stem, "seconds": statistics.median(o.seconds for o in runs),
                     "max_s": max(o.seconds for o in runs),
                     "peak_mib": max(o.peak_mib for o in runs),
                     "verdicts": [verdict(o) for o in runs]})
    return {"budget": budget(), "variants": variants, "chapters": rows,
            "book_seconds": round(sum(r["seconds"] for r in rows), 2),
            "ok": all(o.ok for o in outcomes)}


def markdown(report: dict) -> str:
    """The sweep as a Markdown table, the budget's excesses marked."""
    limit, runs = report["budget"], report["variants"]
    heads = [" ".join(f"{k}={v}" for k, v in env.items()) or f"run {n + 1}"
             for n, env in enumerate(runs)]
    lines = ["| chapter | median s | max s | MiB | " + " | ".join(heads) + " |",
             "|---" * (4 + len(runs)) + "|"]
    for r in report["chapters"]:
        over = " OVER" * (r["seconds"] >= limit["chapter_s"])
        cells = [f"{r['seconds']:.1f}{over}", f"{r['max_s']:.1f}", f"{r['peak_mib']:.0f}",
                 *(v.replace("|", "\\|") for v in r["verdicts"])]
        lines.append(f"| {r['chapter']} | " + " | ".join(cells) + " |")
    total = report["book_seconds"]
    lines.append(f"\n{len(report['chapters'])} chapters: {total:.1f} s"
                 f"{' OVER' * (total >= limit['book_s'])}; budget {limit['chapter_s']:g} s a "
                 f"chapter, {limit['book_s']:g} s the book.")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bookkit bench", description=__doc__)
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every chapter")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each chapter")
    parser.add_argument("--seeds", type=int, nargs="+", help="base seeds to run under")
    parser.add_argument("--workers", type=int, default=1, help="chapters run at once")
    parser.add_argument("--out", type=Path, default=Path("_build") / "bench.json")
    args = parser.parse_args(argv)
    root = toc.find_root()
    paths = [p.resolve() for p in args.notebooks] or [root / f"{c}.md" for c in toc.chapters(root)]
    skipped = [p.stem for p in paths if args.seeds and not draws_random_numbers(p)]
    variants = [{"GMMLIB_SEED": str(s)} for s in args.seeds or []] or [{}] * args.repeat
    report = sweep([p for p in paths if p.stem not in skipped], variants, args.workers)
    table = markdown(report) + f"\nSkipped (no random draw): {', '.join(skipped)}.\n" * bool(
        skipped)
    print("\n" + table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    args.out.with_suffix(".md").write_text(table)
    print(f"written to {args.out} and {args.out.with_suffix('.md').name}")
    return 0 if report["ok"] else 1
