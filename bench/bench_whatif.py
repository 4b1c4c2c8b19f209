"""Benchmark the what-if replay: a 1,000,000-request day per candidate, and prediction vs measurement.

Part 1 (speed): a synthetic day of 1M requests shaped like an office (busy 09–18 UTC), prompts
log-normal around 3k tokens with ~70% cached, replayed against four candidates (a serverless pool
that scales out and in, two dedicated sizes, dedicated with serverless overflow). Prints the replay
time and the replay + results time per candidate next to the target (≤ 10 s per candidate).

Part 2 (proof): a longer trace (default 6 virtual hours at 120×, ~3 min: quiet hours with cold starts after idle
gaps, busy hours that queue) sent in real time, compressed `--speedup` times, to the simulated
endpoint configured like the candidate while the probe engine measures; prints predicted vs
measured p50/p95 per hour and the p95 error (target: within 10% at every hour with n ≥ 20).

  python bench/bench_whatif.py                 # both parts (part 2 takes hours × 3600 / speedup s)
  python bench/bench_whatif.py --skip-proof    # speed only
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.whatif.deployment import parse_deployment  # noqa: E402
from planner.whatif.proof import prove  # noqa: E402
from planner.whatif.replay import replay  # noqa: E402
from planner.whatif.results import compare  # noqa: E402
from planner.whatif.trace import Trace  # noqa: E402

DAY0_MS = 1_764_460_800_000  # 2025-11-30 00:00 UTC
H_MS = 3_600_000
OFFICE = np.array([1, 1, 1, 1, 1, 2, 3, 6, 10, 14, 16, 17, 16, 16, 17, 16, 14, 10, 7, 5, 3, 2, 2, 1], dtype=float)
TARGET_S = 10.0

CANDIDATES = [
    "serverless:name=serverless ≤24×4,window=300,cold=20,slots=4,"
    "max=24,prefill=12000,decode=60,rtt=40,usd_per_mtok=0.3",
    "dedicated:name=dedicated 24×4,replicas=24,slots=4,prefill=12000,decode=60,usd_per_gpu_h=3.2,rtt=40",
    "dedicated:name=dedicated 13×4,replicas=13,slots=4,prefill=12000,decode=60,usd_per_gpu_h=3.2,rtt=40",
    "dedicated:name=dedicated 8×4 + overflow,replicas=8,slots=4,prefill=12000,decode=60,usd_per_gpu_h=3.2,rtt=40,"
    "overflow_max=16,overflow_cold=20,overflow_window=300,overflow_usd_per_mtok=0.3",
]


def million_day(n: int, seed: int = 0) -> Trace:
    """n requests over one UTC day with the office hour shape."""
    rng = np.random.default_rng(seed)
    per_hour = rng.multinomial(n, OFFICE / OFFICE.sum())
    arrival = np.sort(np.concatenate([DAY0_MS + h * H_MS + rng.uniform(0, H_MS, k) for h, k in enumerate(per_hour)]))
    prompt = np.round(rng.lognormal(np.log(3000), 0.8, n))
    cached = np.round(prompt * rng.uniform(0.5, 0.9, n))
    output = np.round(rng.lognormal(np.log(80), 0.7, n))
    return Trace(arrival, prompt, cached, output, source=f"synthetic {n:,}-request day")


def speed(n: int) -> None:
    trace = million_day(n)
    print(f"== Part 1: replay speed, {trace.n:,} requests in one day (target ≤ {TARGET_S:.0f} s per candidate)")
    print(f"   machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} (shared; figures are noisy)")
    print(
        f"{'candidate':<34} {'replay s':>9} {'+results s':>11} {'p50 ms':>8}"
        f" {'p95 ms':>8} {'p99 ms':>8} {'cold starts':>12} {'cost $':>10}  target"
    )
    for spec in CANDIDATES:
        dep = parse_deployment(spec)
        t0 = time.perf_counter()
        replay(dep, trace)
        t_replay = time.perf_counter() - t0
        t0 = time.perf_counter()
        c = compare(trace, [dep]).candidates[0]
        t_all = time.perf_counter() - t0
        if not c.ok:
            print(f"{dep.name:<34} {t_replay:>9.2f} {t_all:>11.2f}  {c.message}")
            continue
        p = c.overall
        verdict = "ok" if t_all <= TARGET_S else "SLOW"
        print(
            f"{dep.name:<34} {t_replay:>9.2f} {t_all:>11.2f} {p['p50'].value:>8,.0f} {p['p95'].value:>8,.0f} "
            f"{p['p99'].value:>8,.0f} {c.cold_starts:>12,} {c.cost_usd:>10,.2f}  {verdict}"
        )


def proof_trace(hours: int, seed: int = 11) -> Trace:
    """Alternating quiet (30 req/h, with a 12-minute gap past the 600 s window) and busy (250 req/h) hours."""
    rng = np.random.default_rng(seed)
    parts = []
    for h in range(hours):
        start = DAY0_MS + h * H_MS
        if h % 2 == 0:
            parts.append(start + np.sort(rng.uniform(12 * 60_000, H_MS, 30)))  # idle 0–12 min: a cold start
        else:
            parts.append(start + np.sort(rng.uniform(0, H_MS, 250)))
    arrival = np.concatenate(parts)
    n = len(arrival)
    return Trace(
        arrival,
        rng.integers(300, 3000, n).astype(float),
        np.zeros(n),
        rng.integers(1, 4, n).astype(float),
        source="proof trace",
    )


def proof(hours: int, speedup: float) -> None:
    spec = "serverless:name=proof,window=600,cold=30,slots=2,max=1,prefill=100,decode=1,usd_per_mtok=0.3"
    trace = proof_trace(hours)
    print(
        f"\n== Part 2: prediction vs measurement, {trace.n:,} requests over {hours} virtual hours at {speedup:g}× "
        f"(≈{hours * 3600 / speedup:,.0f} s real)"
    )
    print(f"   candidate: {spec}")
    print(f"   load average {os.getloadavg()[0]:.2f} before the run")
    r = prove(parse_deployment(spec), trace, speedup=speedup)
    print(
        f"   sent {r.n_sent:,}, failed {r.n_failed}, wall {r.wall_s:,.1f} s, network segment measured "
        f"{r.network_ms:,.0f} ms (simulated) = {r.network_ms / speedup:.2f} ms real"
    )
    print(f"   cold starts: predicted {r.predicted_cold_starts}, endpoint reports {r.endpoint_cold_starts}")
    if r.decode_overrun is not None:
        print(
            f"   the endpoint's decode ran {r.decode_overrun:+.1%} against its configured rate "
            "(timer lateness on this machine; it stretches slot holds and so queueing)"
        )
    print(f"{'hour':>4} {'n':>5} {'pred p50':>9} {'meas p50':>9} {'pred p95':>9} {'meas p95':>9} {'p95 err':>8}")
    for h in r.hours:
        flag = "" if h.enough else "  (n < 20)"
        print(
            f"{h.hour:>4} {h.n:>5} {h.predicted_p50.value:>9,.0f} {h.measured_p50.value:>9,.0f} "
            f"{h.predicted_p95.value:>9,.0f} {h.measured_p95.value:>9,.0f} {h.p95_error_fraction:>+8.1%}{flag}"
        )
    print(
        f"worst |p95 error| over hours with n ≥ 20: {r.worst_p95_error():.1%} — target ≤ 10%: "
        f"{'met' if r.within(0.10) else 'NOT met'}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="requests in the speed day")
    ap.add_argument("--hours", type=int, default=6, help="virtual hours in the proof trace")
    ap.add_argument("--speedup", type=float, default=120.0, help="time compression of the proof run")
    ap.add_argument("--skip-proof", action="store_true")
    ap.add_argument("--skip-speed", action="store_true")
    args = ap.parse_args()
    if not args.skip_speed:
        speed(args.n)
    if not args.skip_proof:
        proof(args.hours, args.speedup)


if __name__ == "__main__":
    main()
