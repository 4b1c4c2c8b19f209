"""What-if vs a real engine: calibrate, then replay one trace slice at three loads, predicted vs measured (issue 14).

1. `calibrate` the endpoint (prefill on counted tokens, decode, effective parallelism) → a `dedicated:` spec.
2. A slice of `--requests` requests of a trace (`--trace FILE`, any format `whatif --log` reads — meant for the
   Azure LLM code trace; without it a synthetic production-like trace: bursty Poisson arrivals, log-normal prompt
   and output lengths, labelled as such) has its tokens scaled to a mean service of `--mean-service` s on the
   calibrated spec, then its arrival gaps scaled to utilisations 0.3, 0.6 and 0.85 (planner.whatif.levels).
3. Each level is replayed by the what-if (predicted TTFT per request) and sent for real to the endpoint in real
   time by the probe engine (planner.whatif.proof.measure_trace); p50/p95 over the same successful requests.

    python bench/bench_engine_whatif.py [--engine]               # llama.cpp from `make engine`, pinned to one core
    python bench/bench_engine_whatif.py --base-url URL --model M  # any OpenAI-compatible endpoint

Targets: predicted p95 within 15 % of measured at each level, p50 within 10 %. Each level takes about
requests × mean service ÷ (slots × ρ) seconds (200 × 0.15 s at ρ = 0.3: 100 s).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planner.probes.ttft import ProbeTarget  # noqa: E402
from planner.whatif.calibrate import calibrate  # noqa: E402
from planner.whatif.deployment import parse_deployment  # noqa: E402
from planner.whatif.levels import at_utilisation, scale_tokens  # noqa: E402
from planner.whatif.proof import measure_trace  # noqa: E402
from planner.whatif.replay import replay  # noqa: E402
from planner.whatif.trace import Trace, read_trace_file  # noqa: E402

LEVELS = (0.3, 0.6, 0.85)


def synthetic_trace(n: int, seed: int = 0) -> Trace:
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(1000, n) * rng.choice([0.2, 1.0, 3.0], n, p=[0.4, 0.4, 0.2])  # bursts and lulls
    return Trace(1_764_460_800_000 + np.cumsum(gaps), np.round(rng.lognormal(7.6, 0.9, n)), np.zeros(n),
                 np.round(rng.lognormal(3.0, 0.7, n)) + 1, "synthetic production-like trace (Azure code trace not given)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", action="store_true", help="start llama.cpp from `make engine` (bench_engine.Server)")
    ap.add_argument("--base-url")
    ap.add_argument("--model", default="gemma")
    ap.add_argument("--trace", help="a request log / trace file (cached tokens are ignored: prompts are all new)")
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--mean-service", type=float, default=0.15, help="mean slot-holding seconds after token scaling")
    ap.add_argument("--calibration-step", type=float, default=15.0)
    args = ap.parse_args()
    srv = None
    if not args.engine and not args.base_url:  # `make bench` runs every script without arguments
        if not (ROOT / ".engine" / "venv").exists():
            print("skipped: no --base-url and the engine is not set up (`make engine`)")
            return 0
        args.engine = True
    if args.engine:
        from bench.bench_engine import Server

        srv = Server(8089, 1)
        url = srv.url
    else:
        url = args.base_url
    load0 = os.getloadavg()[0]
    try:
        cal = asyncio.run(calibrate(ProbeTarget(base_url=url, model=args.model, timeout_s=120), lengths=(64, 512), n=3,
                                    decode_tokens=32, concurrencies=(1, 2), step_duration_s=args.calibration_step))
        dep = parse_deployment(cal.spec())
        print(f"calibrated in {cal.wall_s:.0f} s: {cal.spec()} (slowdown at concurrency 2: {cal.slowdown_at_max:.2f}×)")
        base = read_trace_file(args.trace) if args.trace else synthetic_trace(args.requests)
        base = base.take(np.arange(min(args.requests, base.n)))
        base = Trace(base.arrival_ms, base.prompt_tokens, np.zeros(base.n), base.output_tokens, base.source)
        small = scale_tokens(base, dep, args.mean_service)
        print(f"trace: {small.source}, {small.n} requests per level")
        print(f"{'ρ':>5} {'n':>4} {'pred p50':>9} {'meas p50':>9} {'err':>7} {'pred p95':>9} {'meas p95':>9} {'err':>7} {'wall s':>7}")
        for rho in LEVELS:
            level = at_utilisation(small, dep, rho)
            predicted = replay(dep, level).ttft_ms
            t = time.monotonic()
            samples = asyncio.run(measure_trace(level, url, speedup=1.0))
            wall = time.monotonic() - t
            ok = np.array([s.ok and s.ttft_ms is not None for s in samples])
            meas = np.array([s.ttft_ms for s, o in zip(samples, ok, strict=True) if o])
            pred = predicted[ok]
            p50p, p95p = np.percentile(pred, 50), np.percentile(pred, 95)
            p50m, p95m = np.percentile(meas, 50), np.percentile(meas, 95)
            print(f"{rho:>5} {ok.sum():>4} {p50p:>9.0f} {p50m:>9.0f} {p50p / p50m - 1:>+7.1%} {p95p:>9.0f} {p95m:>9.0f} "
                  f"{p95p / p95m - 1:>+7.1%} {wall:>7.0f}" + (f"  ({(~ok).sum()} failed)" if (~ok).any() else ""))
    finally:
        if srv is not None:
            srv.stop()
    print(f"targets: p95 within 15 %, p50 within 10 % at each level; load average {load0:.1f} → "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
