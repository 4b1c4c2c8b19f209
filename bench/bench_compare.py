"""Benchmark the comparison: bootstrap CI speed (vectorised vs a per-resample loop) and compare()+report end to end.

The Compare page recomputes on every filter change, so the bootstrap must stay interactive:
this prints the vectorised numpy bootstrap (planner.compare.bootstrap) side by side with the obvious
baseline, a Python loop of planner.percentiles.percentile over resamples, and the time to compare five
endpoints from a temp SQLite store and render the self-contained HTML report.

  python bench/bench_compare.py            # defaults: n = 1,000 and 10,000 per endpoint, 2,000 resamples
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.compare import compare, report_html  # noqa: E402
from planner.compare.bootstrap import bootstrap_difference  # noqa: E402
from planner.percentiles import percentile  # noqa: E402
from planner.store import open_store  # noqa: E402
from tests.support.compare_seed import seed_endpoint  # noqa: E402


def _loop_difference(a: np.ndarray, b: np.ndarray, n_boot: int, seed: int) -> tuple[float, float]:
    """Baseline: one Python-level resample and one sorted percentile per iteration."""
    rng = np.random.default_rng(seed)
    diffs = []
    for _ in range(n_boot):
        ra = rng.choice(a, len(a)).tolist()
        rb = rng.choice(b, len(b)).tolist()
        diffs.append(percentile(rb, 0.95).value - percentile(ra, 0.95).value)
    return percentile(diffs, 0.025).value, percentile(diffs, 0.975).value


def _best_of(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000", help="samples per endpoint, comma-separated")
    ap.add_argument("--n-boot", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    print(f"bootstrap of the p95 difference, {args.n_boot} resamples (best of {args.repeats}):")
    print(f"{'n per endpoint':>15} {'vectorised ms':>15} {'python loop ms':>15} {'speed-up':>9}")
    for n in (int(s) for s in args.sizes.split(",")):
        a, b = 300 * np.exp(rng.normal(0, 0.25, n)), 330 * np.exp(rng.normal(0, 0.25, n))
        vec = _best_of(lambda a=a, b=b: bootstrap_difference(a, b, n_boot=args.n_boot), args.repeats)
        loop = _best_of(lambda a=a, b=b: _loop_difference(a, b, args.n_boot, 1), 1)
        print(f"{n:>15,} {vec:>15,.0f} {loop:>15,.0f} {loop / vec:>8.1f}x")

    with tempfile.TemporaryDirectory() as tmp:
        eng = open_store(f"sqlite:///{Path(tmp) / 'planner.db'}")
        names = [f"ep-{i}" for i in range(5)]
        for i, name in enumerate(names):
            seed_endpoint(eng, name, median_ms=300 + 40 * i, n=2000, seed=i)
        t_cmp = _best_of(lambda: compare(eng, names), args.repeats)
        cmp = compare(eng, names)
        t_html = _best_of(lambda: report_html(cmp), args.repeats)
        size_mb = len(report_html(cmp).encode()) / 1e6
        eng.dispose()
    print(f"compare() of 5 endpoints × 2,000 samples (SQLite, 10 pairwise CIs): {t_cmp:,.0f} ms")
    print(f"report_html (plotly.js inline): {t_html:,.0f} ms, {size_mb:.1f} MB")


if __name__ == "__main__":
    main()
