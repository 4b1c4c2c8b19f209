"""How long the what-if takes on a million requests: the slot model against the step model (issue 45).

A synthetic day of 1 M requests (Poisson arrivals, log-normal prompt and output tokens, about 11.6 requests/s) is
replayed once (`replay`) and with its 80 % interval (`predict`: nine speed levels and the trace's noise) on

- the slot model (dedicated, 8 replicas × 64 slots), and
- the step model (vLLM on 8 replicas, 256 sequences each, chunked prefill with 8,192 tokens a step),

printing the wall time of each and the steps the scheduler ran. The step replay jumps over runs of decode-only steps,
so its loop turns about three times per request whatever the output lengths.

    python bench/bench_step_replay.py [--requests 1000000]

Target: the step model's replay of a million requests in well under a minute on this 2-core machine (it is a
benchmark, not a test: no timing is ever asserted).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planner.whatif.deployment import parse_deployment  # noqa: E402
from planner.whatif.interval import predict  # noqa: E402
from planner.whatif.replay import replay  # noqa: E402
from planner.whatif.trace import Trace  # noqa: E402

SPREAD = ",usd_per_gpu_h=3.2,speed_sd=0.1"
SLOTS = "dedicated:name=slots 8×64,replicas=8,slots=64,prefill=12000,decode=60" + SPREAD
STEPS = "dedicated:name=vllm 8×256,engine=vllm,replicas=8,prefill=12000,decode=60,step_ms=15" + SPREAD


def day_trace(n: int, seed: int = 0) -> Trace:
    rng = np.random.default_rng(seed)
    gap_ms = 86_400_000 / n
    return Trace(
        1_764_460_800_000 + np.cumsum(rng.exponential(gap_ms, n)),
        np.round(rng.lognormal(7.0, 1.0, n)),
        np.zeros(n),
        np.round(rng.lognormal(4.5, 0.8, n)) + 1,
        f"synthetic day, {n:,} requests",
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=1_000_000)
    args = ap.parse_args()
    t = day_trace(args.requests)
    load0 = os.getloadavg()[0]
    print(f"{t.source}; load average {load0:.1f} on {os.cpu_count()} CPUs")
    for spec in (SLOTS, STEPS):
        dep = parse_deployment(spec)
        w = time.perf_counter()
        rep = replay(dep, t)
        one = time.perf_counter() - w
        w = time.perf_counter()
        pred = predict(dep, t)
        both = time.perf_counter() - w
        p95 = pred.bands["p95"]
        steps = f", {rep.engine_steps:,} scheduler steps" if rep.engine_steps else ""
        print(
            f"{dep.name:<14} replay {one:6.1f} s, with its interval ({pred.draws} replays) {both:6.1f} s; "
            f"p95 {p95.describe(pred.level)}{steps}"
        )
    print(f"load average {load0:.1f} → {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
