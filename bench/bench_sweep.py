"""`ttft-planner sweep` against the simulator in another process: the knee, and the client's CPU per request.

The simulated endpoint (1 slot, 100 ms of prefill per request: ~10 requests/s) runs in its own process,
so the CPU time reported is the sweeping client's alone (the CLI, as users run it). AIPerf and GuideLLM
are reported beside it when installed (each in its own virtual environment), "skipped" otherwise.

    python bench/bench_sweep.py [--step-duration 5]

Target: the knee between 5 and 15 requests/s (the endpoint's capacity is ~10), send lag p95 ≤ 5 ms,
client CPU per request well under the peers' (the issue measured 17–18 CPU-s per AIPerf/GuideLLM run
where `probe` used ~1).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planner.simulator import SimulatorConfig, running_simulator  # noqa: E402


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
    args = ap.parse_args()
    parent, child = mp.Pipe()
    proc = mp.get_context("fork").Process(target=_serve, args=(child,), daemon=True)
    proc.start()
    url = parent.recv()
    load0 = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "from planner.cli import main; main()",
            "sweep",
            "--base-url",
            url,
            "--model",
            "m",
            "--rates",
            "2,5,8,15",
            "--step-duration",
            str(args.step_duration),
            "--prompt-tokens",
            "400",
            "--max-tokens",
            "2",
            "--target-p95-ms",
            "500",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    parent.send("stop")
    proc.join(5)
    lines = [json.loads(x) for x in out.stdout.splitlines() if x.startswith("{")]
    if not lines:
        sys.exit(out.stderr[-2000:])
    steps, summary = lines[:-1], lines[-1]
    sent = sum(s["n_sent"] for s in steps)
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
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
    for name, cmd in (("AIPerf", "aiperf"), ("GuideLLM", "guidellm")):
        print(
            f"{name}: {'installed, not driven by this script yet' if shutil.which(cmd) else 'skipped (not installed)'}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
