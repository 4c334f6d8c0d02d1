"""``make bench``'s second part: gmmlib's kernels at the scales the book's claims need.

Streaming softmax attention on 4·10⁶ tokens (peak memory beyond the inputs) and against
torch's SDPA on 10⁵ (time); Gauss–Hermite quadrature against Monte Carlo at equal time.
Run as ``python benchmarks/kernels.py``; writes ``_build/kernels.json``.
"""

import json
import timeit
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "_build" / "kernels.json"


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
        while _best(lambda m=m: monte_carlo(m, rng), 20) < t and m < 2**26:  # timed alike
            m *= 2
        rows.append({"nodes": n, "seconds": t, "samples": m,
                     "mc_error": abs(monte_carlo(m, rng) - exact),
                     "quad_error": abs(risk(*mixture_nodes(mix, n)) - exact)})
        print("{nodes:>4} {quad_error:9.1e} {samples:>11,} {mc_error:9.1e}".format(**rows[-1]))
    return rows


if __name__ == "__main__":
    report = {"attention": attention(), "quadrature": quadrature()}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(report, indent=1))
    print(f"written to {OUT}")
