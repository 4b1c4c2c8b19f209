"""`ttft-planner sweep` against the simulator in another process: the knee, and the client's CPU per request.

The simulated endpoint (1 slot, 100 ms of prefill per request: ~10 requests/s) runs in its own process,
so the CPU time reported is the sweeping client's alone (the CLI, as users run it). Then AIPerf and GuideLLM
(bench/peers.py: each in its own virtual environment, "skipped" when not installed) send the same number of
requests of the same size to the same endpoint, at concurrency 1, and their CPU per request (whole process,
start-up included, as for ours) is printed beside ours.

    python bench/bench_sweep.py [--step-duration 5] [--no-peers]

Target: the knee between 5 and 15 requests/s (the endpoint's capacity is ~10), send lag p95 ≤ 5 ms,
client CPU per request well under the peers' (the issue measured 17–18 CPU-s per AIPerf/GuideLLM run
where `probe` used ~1).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.peers import Workload, measured_cli, run_peers, summary_line  # noqa: E402
from planner.simulator import SimulatorConfig, running_simulator  # noqa: E402

PROMPT_TOKENS = 400  # 100 ms of the simulator's prefill
MAX_TOKENS = 2


def _serve(conn) -> None:
    cfg = SimulatorConfig(
        slots=1, prefill_tokens_per_s=4000, decode_tokens_per_s=1000, base_overhead_ms=0, prefix_cache_tokens=0, seed=0
    )
    with running_simulator(cfg) as url:
        conn.send(url)
        conn.recv()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--step-duration", type=float, default=5.0)
    ap.add_argument("--no-peers", action="store_true", help="do not run AIPerf and GuideLLM")
    args = ap.parse_args()
    parent, child = mp.Pipe()
    proc = mp.get_context("fork").Process(target=_serve, args=(child,), daemon=True)
    proc.start()
    url = parent.recv()
    load0 = os.getloadavg()[0]
    out, cpu_s, _ = measured_cli(
        "sweep",
        "--base-url",
        url,
        "--model",
        "m",
        "--rates",
        "2,5,8,15",
        "--step-duration-s",
        str(args.step_duration),
        "--prompt-tokens",
        str(PROMPT_TOKENS),
        "--max-tokens",
        str(MAX_TOKENS),
        "--target-p95-ms",
        "500",
        "--json",
        timeout_s=900,
    )
    lines = [json.loads(x) for x in out.stdout.splitlines() if x.startswith("{")]
    if not lines:
        parent.send("stop")
        sys.exit(out.stderr[-2000:])
    steps, summary = lines[:-1], lines[-1]
    sent = sum(s["n_sent"] for s in steps)
    same = Workload(base_url=url, model="m", requests=sent, prompt_tokens=PROMPT_TOKENS, output_tokens=MAX_TOKENS)
    peer_runs = {} if args.no_peers else run_peers(same)
    parent.send("stop")
    proc.join(5)
    print(
        f"sweep vs the simulator in another process (1 slot, ~10 requests/s), load average {load0:.1f} → "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    for s in steps:
        print(
            f"  {s['load']:>5g} req/s: n={s['n_ok']:<4} p50 {s['ttft_p50_ms']:>7.0f}  p95 {s['ttft_p95_ms']:>7.0f} ms  "
            f"achieved {s['achieved_rps']:5.2f} req/s  send lag p95 {s['send_lag_p95_ms']:5.1f} ms  "
            f"step CPU {s['client_cpu_ms_per_request']:.2f} ms/request"
        )
    print(f"knee {summary['knee_load']} req/s, first over {summary['over_load']} req/s (p95 target 500 ms)")
    print(
        f"client CPU, whole CLI process: {cpu_s:.2f} s for {sent} requests = {cpu_s * 1000 / sent:.1f} ms/request "
        f"(steps alone: {summary['client_cpu_ms_per_request']:.2f} ms/request)"
    )
    for name, run in peer_runs.items():
        print(summary_line(name, run))
        if not isinstance(run, str):
            print(f"  {' '.join(run.command)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
