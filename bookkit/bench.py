"""``make bench|stress|seeds``: the chapters against the run-time budget; attention, quadrature."""

import argparse
import json
import re
import statistics
import timeit
from pathlib import Path

import numpy as np

from . import run, toc

RANDOM_DRAW = re.compile(r"\bseeds\.(rng|int)\(")


def budget() -> dict[str, float]:
    """The run-time budget, stated once: ``parse.myst_substitutions`` of ``_config.yml``."""
    subs = run.CONFIG["parse"]["myst_substitutions"]
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


def _best(fn, repeat: int = 7) -> float:
    return min(timeit.repeat(fn, number=1, repeat=repeat))


def attention() -> dict:
    """Peak memory beyond the inputs on 4·10⁶ tokens; time against torch's SDPA on 10⁵."""
    import tracemalloc

    import torch
    import torch.nn.functional as F

    from gmmlib import softmax_attention

    rng, d = np.random.default_rng(0), 8
    U, V, queries = np.eye(d) / np.sqrt(d), np.eye(d), rng.standard_normal((512, d))
    tokens = rng.standard_normal((4_000_000, d))
    tracemalloc.start()  # numpy's arrays are traced: the peak beyond the inputs
    softmax_attention(tokens, queries, U, V)
    extra = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    tokens = rng.standard_normal((100_000, d))
    Z, Q = torch.from_numpy(tokens)[None], torch.from_numpy(queries @ U.T)[None]
    with torch.no_grad():  # SDPA's q·k at scale 1 are then the scores z_j^T U z
        ours = _best(lambda: softmax_attention(tokens, queries, U, V))
        sdpa = _best(lambda: F.scaled_dot_product_attention(Q, Z, Z, scale=1.0))
        diff = np.abs(softmax_attention(tokens, queries, U, V)
                      - F.scaled_dot_product_attention(Q, Z, Z, scale=1.0)[0].numpy()).max()
    out = {"extra_peak_mib": extra, "ours_s": ours, "sdpa_s": sdpa,
           "ratio": ours / sdpa, "max_abs_difference": float(diff)}
    print("\nsoftmax_attention: peak +{extra_peak_mib:.0f} MiB beyond the inputs on 4,000,000 "
          "tokens (budget 512 MiB); on 100,000 tokens {ratio:.2f} times SDPA's time (budget "
          "1.5), |difference| {max_abs_difference:.1e}".format(**out))
    return out


def quadrature() -> list[dict]:
    """Chapter 4's logistic risk (C1): quadrature's error and Monte Carlo's at equal time."""
    from gmmlib import GaussianMixture
    from gmmlib.quadrature import mixture_nodes

    mix = GaussianMixture([0.6, 0.4], [[1.0, 0.0], [0.0, 1.0]], np.stack([np.eye(2)] * 2))
    w, b, labels = np.array([1.0, -1.0]), np.log(0.6 / 0.4), np.array([1.0, -1.0])

    def risk(X: np.ndarray, weights: np.ndarray, k: np.ndarray) -> float:
        return float(weights @ np.logaddexp(0.0, -labels[k] * (X @ w + b)))

    def monte_carlo(m: int, rng: np.random.Generator) -> float:
        X, k = mix.sample(m, rng)
        return risk(X, np.full(m, 1 / m), k)

    exact, rows, rng = risk(*mixture_nodes(mix, 120)), [], np.random.default_rng(0)
    print("\nlogistic risk (setting C1) at equal time: nodes/axis, quadrature's error, Monte "
          "Carlo's samples and error")
    for n in (4, 8, 16, 32):
        t, m = _best(lambda n=n: risk(*mixture_nodes(mix, n)), 20), 8
        while _best(lambda m=m: monte_carlo(m, rng), 1) < t and m < 2**26:
            m *= 2
        rows.append({"nodes": n, "seconds": t, "samples": m,
                     "mc_error": abs(monte_carlo(m, rng) - exact),
                     "quad_error": abs(risk(*mixture_nodes(mix, n)) - exact)})
        print("{nodes:>4} {quad_error:9.1e} {samples:>11,} {mc_error:9.1e}".format(**rows[-1]))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bookkit bench", description=__doc__)
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every chapter")
    parser.add_argument("--chapters", action="store_true", help="no attention and quadrature")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each chapter")
    parser.add_argument("--seeds", type=int, nargs="+", help="base seeds to run under")
    parser.add_argument("--workers", type=int, default=1, help="chapters run at once")
    parser.add_argument("--out", type=Path, default=toc.ROOT / "_build" / "bench.json")
    args = parser.parse_args(argv)
    paths = [p.resolve() for p in args.notebooks] or [toc.ROOT / f"{c}.md" for c in toc.chapters()]
    skipped = [p.stem for p in paths if args.seeds and not draws_random_numbers(p)]
    variants = [{"GMMLIB_SEED": str(s)} for s in args.seeds or []] or [{}] * args.repeat
    report = sweep([p for p in paths if p.stem not in skipped], variants, args.workers)
    table = markdown(report) + f"\nSkipped (no random draw): {', '.join(skipped)}.\n" * bool(
        skipped)
    print("\n" + table)
    if not args.chapters:
        report.update(attention=attention(), quadrature=quadrature())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    args.out.with_suffix(".md").write_text(table)
    print(f"written to {args.out} and {args.out.with_suffix('.md').name}")
    return 0 if report["ok"] else 1
