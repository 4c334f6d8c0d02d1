#!/usr/bin/env python3
"""Benchmark the book: every chapter's wall time and peak memory, and gmmlib's scaling.

Usage::

    python scripts/bench.py            # all of it (``make bench``)
    python scripts/bench.py --chapters # only the chapters
    python scripts/bench.py --kernels  # only the attention and quadrature figures

Each chapter listed in ``_toc.yml`` is executed in a fresh kernel (as in the build), one at a
time, through ``scripts/nbrun.py`` (180 s per cell, 600 s per chapter: a stall fails with the
chapter and cell named); its wall time and the peak resident memory of its kernel (polled
every 50 ms) are reported, with the whole book's total. Then:

* ``softmax_attention`` on 4·10⁶ tokens in d = 8 with 512 queries (float64): the peak
  memory it adds beyond its inputs (budget 512 MiB);
* on 10⁵ tokens, its time against ``torch.nn.functional.scaled_dot_product_attention`` on
  the same scores, measured side by side (budget: within 1.5×);
* Gauss–Hermite quadrature against Monte Carlo for a population logistic risk: the error
  of each at equal time.

A table goes to the terminal and everything to ``_build/bench.json``. Budgets are checked
by reading the output (this is a benchmark, not a test).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import psutil

import nbrun  # scripts/ is on sys.path when a script runs (and tests load it by path)

ROOT = Path(__file__).resolve().parent.parent
CHAPTER_BUDGET_S = 30.0
BOOK_BUDGET_S = 120.0


def chapters() -> list[Path]:
    return nbrun.chapters(ROOT)


def run_chapters(paths: list[Path]) -> list[dict]:
    """Each chapter in its own runner process and fresh kernel, one at a time (nbrun's limits apply)."""
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        outcomes = nbrun.run_children([nbrun.Job(p, {"GMMLIB_LEDGER_DIR": str(Path(tmp) / "ledger")}) for p in paths],
                                      workers=1, scratch=Path(tmp), measure_memory=True)
    rows = []
    for path, o in zip(paths, outcomes):
        if not o.ok:
            print(f"  {path.name} {o.status.upper()}: {o.message}", file=sys.stderr)
        rows.append({"chapter": path.stem, "seconds": o.seconds, "peak_mib": o.peak_mib or 0.0, "ok": o.ok,
                     "status": o.status, "message": o.message})
    return rows


def bench_attention() -> dict:
    import torch
    import torch.nn.functional as F

    from gmmlib import softmax_attention

    torch.set_num_threads(os.cpu_count() or 1)
    rng = np.random.default_rng(0)
    out: dict = {}

    # Memory: 4e6 tokens, d = 8, 512 queries, float64.
    d, L_big, n_q = 8, 4_000_000, 512
    tokens = rng.standard_normal((L_big, d))
    queries = rng.standard_normal((n_q, d))
    U, V = np.eye(d) / np.sqrt(d), np.eye(d)
    gc.collect()
    proc = psutil.Process()
    base = proc.memory_info().rss
    peak = {"rss": base}
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            peak["rss"] = max(peak["rss"], proc.memory_info().rss)
            time.sleep(0.005)

    watcher = threading.Thread(target=poll, daemon=True)
    watcher.start()
    t0 = time.perf_counter()
    result = softmax_attention(tokens, queries, U, V)
    t_big = time.perf_counter() - t0
    stop.set()
    watcher.join()
    out["big_prompt"] = {
        "tokens": L_big, "d": d, "queries": n_q, "input_mib": round((tokens.nbytes + queries.nbytes) / 2**20, 1),
        "extra_peak_mib": round((peak["rss"] - base) / 2**20, 1), "seconds": round(t_big, 2),
        "finite": bool(np.isfinite(result).all()), "budget_mib": 512,
    }
    del tokens, result
    gc.collect()

    # Time: 1e5 tokens against scaled_dot_product_attention on the same scores.
    L = 100_000
    tokens = rng.standard_normal((L, d))
    Zt = torch.from_numpy(tokens)
    Qt = torch.from_numpy(queries @ U.T)  # SDPA's q·k with scale 1 are then our scores z_j^T U z

    def ours() -> None:
        softmax_attention(tokens, queries, U, V)

    def sdpa() -> None:
        with torch.no_grad():
            F.scaled_dot_product_attention(Qt[None], Zt[None], Zt[None], scale=1.0)

    with torch.no_grad():
        ref = F.scaled_dot_product_attention(Qt[None], Zt[None], Zt[None], scale=1.0)[0].numpy()
    agree = float(np.abs(softmax_attention(tokens, queries, U, V) - ref).max())
    times = {"ours": [], "sdpa": []}
    for _ in range(7):  # interleaved, best of 7
        for name, fn in (("ours", ours), ("sdpa", sdpa)):
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    best = {k: min(v) for k, v in times.items()}
    out["vs_sdpa"] = {"tokens": L, "d": d, "queries": n_q, "ours_s": round(best["ours"], 4),
                      "sdpa_s": round(best["sdpa"], 4), "ratio": round(best["ours"] / best["sdpa"], 3),
                      "max_abs_difference": agree, "budget_ratio": 1.5}
    return out


def _equal_time(quad_fn, mc_fn, exact: float, nodes: tuple[int, ...]) -> list[dict]:
    """For each quadrature size, the quadrature error and a Monte Carlo error at (at least) the same time."""
    rows = []
    for n in nodes:
        reps = 20
        t0 = time.perf_counter()
        for _ in range(reps):
            val = quad_fn(n)
        t = (time.perf_counter() - t0) / reps
        rng = np.random.default_rng(n)
        n_mc = 8
        while True:  # double the sample until Monte Carlo takes as long as the quadrature
            t0 = time.perf_counter()
            mc = mc_fn(n_mc, rng)
            t_mc = time.perf_counter() - t0
            if t_mc >= t or n_mc >= 2**26:
                break
            n_mc *= 2
        rows.append({"nodes_per_axis": n, "quad_seconds": t, "quad_error": abs(val - exact),
                     "mc_samples": n_mc, "mc_seconds": t_mc, "mc_error": abs(mc - exact)})
    return rows


def bench_quadrature() -> dict:
    """Gauss–Hermite against Monte Carlo at equal time, on two population risks of the book."""
    from gmmlib import GaussianMixture
    from gmmlib.denoising import bayes_denoiser
    from gmmlib.quadrature import gaussian_nodes, mixture_nodes

    # Chapter 4's setting C1: the logistic risk of the Bayes score.
    mix = GaussianMixture([0.6, 0.4], [[1.0, 0.0], [0.0, 1.0]], np.stack([np.eye(2)] * 2))
    w, b, labels = np.array([1.0, -1.0]), np.log(0.6 / 0.4), np.array([1.0, -1.0])

    def logistic(n: int) -> float:
        total = 0.0
        for k in range(2):
            nodes, weights = gaussian_nodes(mix.means[k], mix.covs[k], n)
            total += mix.weights[k] * weights @ np.logaddexp(0.0, -labels[k] * (nodes @ w + b))
        return total

    def logistic_mc(n: int, rng: np.random.Generator) -> float:
        X, lab = mix.sample(n, rng)
        return float(np.logaddexp(0.0, -labels[lab] * (X @ w + b)).mean())

    # Chapter 8's denoising task: the Bayes MSE E‖X − E[X|Z]‖² = E tr Cov(X|Z).
    prior = GaussianMixture.isotropic([0.5, 0.5], [[3.0, 0.0], [0.0, 3.0]], 1.0)
    xi = 2.0
    noisy = prior.convolve(xi**2)
    within = np.trace(prior.covs[0] - prior.covs[0] @ np.linalg.solve(noisy.covs[0], prior.covs[0]))

    def bayes(n: int) -> float:
        nodes, weights, _ = mixture_nodes(noisy, n)
        post = noisy.posterior(nodes)
        experts = prior.means[None] + np.einsum("kji,nkj->nki", np.linalg.solve(noisy.covs, prior.covs),
                                                nodes[:, None, :] - prior.means[None])
        mean = np.einsum("nk,nkd->nd", post, experts)
        spread = np.einsum("nk,nk->n", post, np.sum(experts**2, axis=-1)) - np.sum(mean**2, axis=-1)
        return float(within + weights @ spread)

    def bayes_mc(n: int, rng: np.random.Generator) -> float:
        X, _ = prior.sample(n, rng)
        Z = X + xi * rng.standard_normal(X.shape)
        return float(np.mean(np.sum((X - bayes_denoiser(prior, xi, Z)) ** 2, axis=1)))

    out = {}
    for name, quad_fn, mc_fn in (("logistic risk, setting C1 (Chapter 4)", logistic, logistic_mc),
                                 ("Bayes denoising MSE (Chapter 8)", bayes, bayes_mc)):
        exact = quad_fn(120)
        out[name] = {"reference": exact, "rows": _equal_time(quad_fn, mc_fn, exact, (4, 8, 16, 32))}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chapters", action="store_true", help="only execute the chapters")
    parser.add_argument("--kernels", action="store_true", help="only the attention and quadrature figures")
    args = parser.parse_args()
    both = not (args.chapters or args.kernels)
    report: dict = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                                "platform": platform.platform()}}
    if args.chapters or both:
        rows = run_chapters(chapters())
        total = sum(r["seconds"] for r in rows)
        report["chapters"] = rows
        report["book_seconds"] = round(total, 2)
        print(f"\n{'chapter':<34}{'seconds':>9}{'peak MiB':>10}  budget")
        for r in rows:
            flag = "ok" if r["ok"] and r["seconds"] < CHAPTER_BUDGET_S else "OVER" if r["ok"] else r["status"].upper()
            print(f"{r['chapter']:<34}{r['seconds']:>9.1f}{r['peak_mib']:>10.0f}  {flag} (< {CHAPTER_BUDGET_S:.0f} s)")
        print(f"{'whole book':<34}{total:>9.1f}{'':>10}  {'ok' if total < BOOK_BUDGET_S else 'OVER'} (< {BOOK_BUDGET_S:.0f} s)")
    if args.kernels or both:
        att = bench_attention()
        report["attention"] = att
        big, vs = att["big_prompt"], att["vs_sdpa"]
        print(f"\nsoftmax_attention, {big['tokens']:,} tokens × d={big['d']}, {big['queries']} queries: "
              f"{big['seconds']:.1f} s, peak +{big['extra_peak_mib']:.0f} MiB beyond the {big['input_mib']:.0f} MiB "
              f"of inputs ({'ok' if big['extra_peak_mib'] <= 512 else 'OVER'} ≤ 512 MiB)")
        print(f"softmax_attention vs scaled_dot_product_attention, {vs['tokens']:,} tokens: "
              f"{vs['ours_s'] * 1e3:.1f} ms vs {vs['sdpa_s'] * 1e3:.1f} ms, ratio {vs['ratio']:.2f} "
              f"({'ok' if vs['ratio'] <= 1.5 else 'OVER'} ≤ 1.5), max |difference| {vs['max_abs_difference']:.1e}")
        quad = bench_quadrature()
        report["quadrature"] = quad
        for name, table in quad.items():
            print(f"\n{name}: Gauss–Hermite quadrature vs Monte Carlo at equal time (reference {table['reference']:.12f})")
            print(f"{'nodes/axis':>10}{'time':>10}{'quad error':>12}{'MC samples':>12}{'MC time':>10}{'MC error':>11}")
            for r in table["rows"]:
                print(f"{r['nodes_per_axis']:>10}{r['quad_seconds'] * 1e3:>8.2f}ms{r['quad_error']:>12.1e}"
                      f"{r['mc_samples']:>12,}{r['mc_seconds'] * 1e3:>8.2f}ms{r['mc_error']:>11.1e}")
    out = ROOT / "_build" / "bench.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(report, indent=1))
    print(f"\nwritten to {out.relative_to(ROOT)}")
    return 0 if all(r["ok"] for r in report.get("chapters", [])) else 1  # a failed or stalled chapter


if __name__ == "__main__":
    sys.exit(main())
