"""The chapters' run times against the budget, and gmmlib's attention and quadrature.

``python -m bookkit bench`` (``make bench``, ``_build/bench.json``): each chapter in a fresh
kernel, one at a time: wall time and peak memory; then softmax_attention's memory on 4·10⁶
tokens and its time against torch's scaled_dot_product_attention, and Gauss–Hermite quadrature
against Monte Carlo at equal time. ``--repeat 5 --workers 2`` (``make stress``) runs each
chapter five times, two at once, for stalls and the spread of run times.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from pathlib import Path

import numpy as np

from . import run, toc


def budget() -> dict[str, float]:
    """The run-time budget, stated once: ``parse.myst_substitutions`` of ``_config.yml``."""
    subs = run.CONFIG["parse"]["myst_substitutions"]
    return {"chapter_s": float(subs["chapter_budget_s"]), "book_s": float(subs["book_budget_s"])}


def chapters(paths: list[Path], repeat: int = 1, workers: int = 1) -> dict:
    """Each chapter's wall time (median of ``repeat`` runs) and peak memory against the budget."""
    limit = budget()

    def report(i: int, outcome: run.Outcome) -> None:
        print(f"[{i + 1}/{len(paths) * repeat}] {outcome.summary()}", flush=True)

    outcomes = run.run_many([(p, {}) for _ in range(repeat) for p in paths], workers=workers,
                            report=report)
    rows = []
    print(f"\n{'chapter':<36}{'median s':>9}{'max s':>7}{'MiB':>6} ok  budget "
          f"{limit['chapter_s']:g} s")
    for i, path in enumerate(paths):
        runs = outcomes[i::len(paths)]
        times = [o.seconds for o in runs]
        row = {"chapter": path.stem, "seconds": statistics.median(times), "max_s": max(times),
               "peak_mib": max(o.peak_mib for o in runs), "ok": sum(o.ok for o in runs),
               "failures": [o.message for o in runs if not o.ok]}
        over = "OVER" if row["seconds"] >= limit["chapter_s"] else ""
        print(f"{path.stem:<36}{row['seconds']:>9.1f}{row['max_s']:>7.1f}{row['peak_mib']:>6.0f}"
              f" {row['ok']}/{repeat} {over}")
        for message in row["failures"]:
            print("  " + message)
        rows.append(row)
    total = sum(r["seconds"] for r in rows)
    print(f"{'whole book':<36}{total:>9.1f}  {'OVER ' * (total >= limit['book_s'])}"
          f"(budget {limit['book_s']:g} s)")
    return {"budget": limit, "chapters": rows, "book_seconds": round(total, 2),
            "ok": all(o.ok for o in outcomes)}


def _best(fn, repeat: int = 7) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def attention() -> dict:
    """Peak memory beyond the inputs on 4·10⁶ tokens; time against torch's SDPA on 10⁵."""
    import psutil
    import torch
    import torch.nn.functional as F

    from gmmlib import softmax_attention

    rng, d = np.random.default_rng(0), 8
    U, V, queries = np.eye(d) / np.sqrt(d), np.eye(d), rng.standard_normal((512, d))
    tokens, proc, stop = rng.standard_normal((4_000_000, d)), psutil.Process(), threading.Event()
    base = peak = proc.memory_info().rss

    def poll() -> None:
        nonlocal peak
        while not stop.wait(0.005):
            peak = max(peak, proc.memory_info().rss)

    threading.Thread(target=poll, daemon=True).start()
    softmax_attention(tokens, queries, U, V)
    stop.set()
    tokens = rng.standard_normal((100_000, d))
    Z, Q = torch.from_numpy(tokens)[None], torch.from_numpy(queries @ U.T)[None]
    with torch.no_grad():  # SDPA's q·k at scale 1 are then the scores z_j^T U z
        ours = _best(lambda: softmax_attention(tokens, queries, U, V))
        sdpa = _best(lambda: F.scaled_dot_product_attention(Q, Z, Z, scale=1.0))
        diff = np.abs(softmax_attention(tokens, queries, U, V)
                      - F.scaled_dot_product_attention(Q, Z, Z, scale=1.0)[0].numpy()).max()
    out = {"extra_peak_mib": (peak - base) / 2**20, "ours_s": ours, "sdpa_s": sdpa,
           "ratio": ours / sdpa, "max_abs_difference": float(diff)}
    print("\nsoftmax_attention: peak +{extra_peak_mib:.0f} MiB beyond the inputs on 4,000,000 "
          "tokens (budget 512 MiB); on 100,000 tokens {ratio:.2f} times SDPA's time (budget "
          "1.5), |difference| {max_abs_difference:.1e}".format(**out))
    return out


def quadrature() -> list[dict]:
    """Chapter 4's logistic risk of the Bayes score (setting C1): the error of Gauss–Hermite
    quadrature and of Monte Carlo drawing for at least as long."""
    from gmmlib import GaussianMixture
    from gmmlib.quadrature import gaussian_nodes

    mix = GaussianMixture([0.6, 0.4], [[1.0, 0.0], [0.0, 1.0]], np.stack([np.eye(2)] * 2))
    w, b, labels = np.array([1.0, -1.0]), np.log(0.6 / 0.4), np.array([1.0, -1.0])

    def quad(n: int) -> float:
        parts = [gaussian_nodes(mix.means[k], mix.covs[k], n) for k in range(2)]
        return sum(mix.weights[k] * wk @ np.logaddexp(0, -labels[k] * (x @ w + b))
                   for k, (x, wk) in enumerate(parts))

    def monte_carlo(m: int) -> float:
        X, lab = mix.sample(m, np.random.default_rng(m))
        return float(np.logaddexp(0.0, -labels[lab] * (X @ w + b)).mean())

    exact, rows = quad(120), []
    print("\nlogistic risk, setting C1, at equal time: nodes/axis, quadrature error, samples, "
          "Monte Carlo error")
    for n in (4, 8, 16, 32):
        t, m = _best(lambda n=n: quad(n), 20), 8
        while _best(lambda m=m: monte_carlo(m), 1) < t and m < 2**26:
            m *= 2
        rows.append({"nodes": n, "seconds": t, "quad_error": abs(quad(n) - exact),
                     "samples": m, "mc_error": abs(monte_carlo(m) - exact)})
        print("{nodes:>4} {quad_error:9.1e} {samples:>11,} {mc_error:9.1e}".format(**rows[-1]))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bookkit bench", description=__doc__)
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every chapter")
    parser.add_argument("--chapters", action="store_true", help="no attention and quadrature")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each chapter")
    parser.add_argument("--workers", type=int, default=1, help="chapters run at once")
    parser.add_argument("--out", type=Path, default=toc.ROOT / "_build" / "bench.json")
    args = parser.parse_args(argv)
    paths = [p.resolve() for p in args.notebooks] or [c.source() for c in toc.chapters()]
    report = chapters(paths, args.repeat, args.workers)
    if not args.chapters:
        report.update(attention=attention(), quadrature=quadrature())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    print(f"\nwritten to {args.out}")
    return 0 if report["ok"] else 1
