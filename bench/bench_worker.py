"""Benchmark: the worker with 200 endpoints at a 60 s interval against the simulated endpoint, on one core.

Targets: schedule lateness p99 < 250 ms and no skipped slots.

The worker runs in this process pinned to one CPU core (os.sched_setaffinity); the simulated endpoint runs in
a separate process pinned to another core when there is one, so it does not steal the worker's core. Lateness
is measured two ways: at the scheduler (wake-up time − the slot's firing time) and end to end (the sample's
recorded send time − the firing time, read back from the database), which includes event-loop congestion.

Real time by default (200 endpoints × 60 s for 180 s = ~600 probes); `--interval-s 6 --duration-s 60` runs
it 10× time-compressed (33 probes/s, ten times the real load).

Usage: python bench/bench_worker.py [--endpoints 200] [--interval-s 60] [--duration-s 180]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sqlalchemy as sa  # noqa: E402

from planner.percentiles import percentile  # noqa: E402
from planner.store import open_store  # noqa: E402
from planner.store.endpoints import EndpointRow  # noqa: E402
from planner.worker.runner import Worker, WorkerConfig  # noqa: E402
from planner.worker.scheduler import jitter_ms, max_jitter_ms_for  # noqa: E402

TARGET_P99_MS = 250.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_simulator(port: int) -> subprocess.Popen:
    code = (
        "from planner.simulator import SimulatorConfig, serve_forever; "
        f"serve_forever(SimulatorConfig(prefill_tokens_per_s=50000, decode_tokens_per_s=2000, "
        f"slots=256, seed=1), port={port})"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if len(os.sched_getaffinity(0)) > 1:
        os.sched_setaffinity(proc.pid, {sorted(os.sched_getaffinity(0))[-1]})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=1)
            return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("simulator did not start")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoints", type=int, default=200)
    ap.add_argument("--interval-s", type=float, default=60.0)
    ap.add_argument("--duration-s", type=float, default=180.0)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    os.environ["TTFT_PLANNER_MIN_INTERVAL_S"] = str(min(args.interval_s, 10.0))
    core = sorted(os.sched_getaffinity(0))[0]
    port = free_port()
    sim = start_simulator(port)
    os.sched_setaffinity(0, {core})  # the worker gets one core
    tmp = Path(tempfile.mkdtemp(prefix="bench-worker-"))
    engine = open_store(f"sqlite:///{tmp / 'planner.db'}")
    now = int(time.time() * 1000)
    with engine.begin() as c:
        c.execute(
            sa.insert(EndpointRow.__table__),
            [
                dict(
                    name=f"ep-{i:03d}",
                    provider="bench",
                    region="local",
                    protocol="openai-chat",
                    base_url=f"http://127.0.0.1:{port}/v1",
                    model="sim",
                    api_key_env="",
                    interval_s=args.interval_s,
                    timeout_s=min(30.0, args.interval_s * 0.8),
                    prompt_tokens=200,
                    max_tokens=8,
                    connection_policy="fresh",
                    scale_down_window_s=None,
                    enabled=True,
                    vantage="",
                    simulated=True,
                    created_at_ms=now,
                    updated_at_ms=now,
                )
                for i in range(args.endpoints)
            ],
        )
    w = Worker(engine, WorkerConfig(lease_ttl_s=30))

    async def run() -> None:
        task = asyncio.create_task(w.run())
        await asyncio.sleep(args.duration_s)
        w.request_stop()
        await task

    def children_cpu_s() -> float:  # the probe processes, once the worker has stopped (and waited for) them
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        return ru.ru_utime + ru.ru_stime

    cpu0, kids0 = time.process_time(), children_cpu_s()
    t0 = time.perf_counter()
    try:
        asyncio.run(run())
        kids = children_cpu_s() - kids0  # before the simulator (also a child) is waited for
    finally:
        sim.terminate()
        sim.wait(10)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    with engine.connect() as c:
        rows = c.execute(
            sa.text("SELECT endpoint_id, kind, ok, scheduled_at_ms, started_at_ms, ttft_ms FROM probe_sample")
        ).all()
    iv = int(args.interval_s * 1000)
    e2e = [
        r.started_at_ms
        - (r.scheduled_at_ms + jitter_ms(f"endpoint:{r.endpoint_id}", r.scheduled_at_ms, max_jitter_ms_for(iv)))
        for r in rows
        if r.kind == "scheduled"
    ]
    sched = w.stats.lateness_ms
    skipped = sum(1 for r in rows if r.kind == "skipped")
    failed = sum(1 for r in rows if r.kind == "scheduled" and not r.ok)
    print(
        f"{args.endpoints} endpoints every {args.interval_s:g} s for {args.duration_s:g} s "
        f"({'real time' if args.interval_s >= 60 else f'{60 / args.interval_s:g}x time-compressed'}), "
        "worker on 1 core; "
        f"load {os.getloadavg()[0]:.1f} (1-min avg)"
    )
    print(
        f"probes run {w.stats.runs}, stored {sum(1 for r in rows if r.kind == 'scheduled')}, failed {failed}, "
        f"skipped slots {skipped} (target 0)"
    )
    for name, vals in (("scheduler wake-up", sched), ("end to end (send time)", e2e)):
        p50, p99 = percentile(vals, 0.5), percentile(vals, 0.99)
        mx = max(vals) if vals else float("nan")
        print(f"lateness {name:<24} p50 {p50.value:7.1f} ms  p99 {p99.value:7.1f} ms  max {mx:7.1f} ms  (n={p99.n})")
    worst = percentile(e2e, 0.99).value
    print(
        f"worker CPU {cpu:.1f} s over {wall:.0f} s wall = {100 * cpu / wall:.1f} % of one core, "
        f"plus its probe processes {kids:.1f} s = {100 * kids / wall:.1f} %"
    )
    ok = worst is not None and worst < TARGET_P99_MS and skipped == 0
    print(
        f"{'OK' if ok else 'OVER'}: lateness p99 {worst:.1f} ms (target < {TARGET_P99_MS:.0f} ms), "
        f"skipped {skipped} (target 0)"
    )


if __name__ == "__main__":
    main()
