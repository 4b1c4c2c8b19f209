"""Issue 15 item 1: one endpoint cannot stall or starve the others.

- every one of bench/hostile_server.py's 11 hostile kinds ends as a failed sample (never a crash, never a
  100 MB read): the reading caps stop it;
- the worker probes in probe processes: hostile endpoints end up in the quarantine lane, healthy ones stay in
  clean lanes and are all measured, with no skipped slot and no false failure;
- a probe process that dies is restarted and the probe in flight is stored as a failure.

Timing figures (healthy p95 against a clean run) are bench/bench_worker_hostile.py's job, not a test's.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from bench.hostile_server import KINDS
from planner.endpoints import add_endpoint
from planner.probes.ttft import MAX_BYTES_BEFORE_TOKEN, ProbeTarget, probe_once
from planner.worker.probe_pool import QUARANTINE_CLASSES, ProbePool
from planner.worker.runner import Worker, WorkerConfig

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def hostile_url():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "hostile_server.py"), str(port)])
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert time.monotonic() < deadline, "hostile server did not start"
            time.sleep(0.1)
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(10)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_hostile_kind_is_a_failed_sample_after_bounded_reading(hostile_url, kind):
    target = ProbeTarget(base_url=f"{hostile_url}/{kind}/v1", model="m", prompt_tokens=10, max_tokens=8, timeout_s=3.0)
    sample = asyncio.run(probe_once(target, max_attempts=1))
    if kind == "token-then-junk":  # the token decides the sample; the junk after it is not read to the end
        assert sample.ok and sample.ttft_ms is not None
        return
    assert not sample.ok, sample
    assert sample.error_class in QUARANTINE_CLASSES | {"server_error"}, (sample.error_class, sample.error_detail)
    if kind in (
        "flood-empty",
        "flood-comments",
        "long-line",
        "invalid-utf8",
        "huge-event",
        "crlf-flood",
        "nested-json",
    ):
        # stopped at a cap, or at the first event that is not JSON: either way not read to the end
        assert sample.error_class == "bad_json" or "stopped reading" in sample.error_detail, sample.error_detail


def test_reading_stops_at_the_cap_not_at_the_end_of_the_stream(hostile_url):
    """100 MB without a token: the probe gives up after about MAX_BYTES_BEFORE_TOKEN, as its detail says."""
    target = ProbeTarget(base_url=f"{hostile_url}/flood-comments/v1", model="m", prompt_tokens=10, timeout_s=20.0)
    sample = asyncio.run(probe_once(target, max_attempts=1))
    assert sample.error_class == "no_content"
    read = int(sample.error_detail.split("first ")[1].split(" bytes")[0])
    assert MAX_BYTES_BEFORE_TOKEN < read < MAX_BYTES_BEFORE_TOKEN + 1024 * 1024


def _run(engine, seconds: float, **cfg) -> Worker:
    w = Worker(engine, WorkerConfig(lease_ttl_s=10, **cfg))

    async def main():
        task = asyncio.create_task(w.run())
        while not w.holds_lease:
            await asyncio.sleep(0.05)
        await asyncio.sleep(seconds)
        lanes = {eid: w._pool.lane_for(eid, err) for eid, err in w._last_error.items()} if w._pool else {}
        w.request_stop()
        await task
        return lanes

    w.lanes = asyncio.run(main())
    return w


def test_hostile_endpoints_are_quarantined_and_healthy_ones_all_measured(engine, hostile_url, monkeypatch):
    monkeypatch.setenv("TTFT_PLANNER_MIN_INTERVAL_S", "0.2")
    common = {"model": "m", "interval_s": 1.0, "timeout_s": 0.8, "prompt_tokens": 10, "max_tokens": 8}
    healthy = [
        add_endpoint(engine, {"name": f"h{i}", "base_url": f"{hostile_url}/healthy/v1"} | common).id for i in range(2)
    ]
    hostile = [
        add_endpoint(engine, {"name": k, "base_url": f"{hostile_url}/{k}/v1"} | common).id
        for k in ("flood-empty", "long-line", "invalid-utf8", "trickle")
    ]
    w = _run(engine, 6.0, probe_processes=1)
    assert all(w.lanes[e] == 0 for e in hostile), w.lanes  # quarantine
    assert all(w.lanes[e] != 0 for e in healthy), w.lanes  # a clean lane
    with engine.connect() as c:
        rows = c.execute(sa.text("SELECT endpoint_id, kind, ok FROM probe_sample")).all()
    mine = [r for r in rows if r.endpoint_id in healthy]
    assert len(mine) >= 6
    assert all(r.kind == "scheduled" and r.ok for r in mine), mine  # no skipped slot, no false failure
    assert all(not r.ok for r in rows if r.endpoint_id in hostile)


def test_a_probe_process_that_dies_is_restarted_and_its_probe_fails_cleanly(hostile_url):
    async def main():
        pool = ProbePool(1)
        await pool.start()
        try:
            target = ProbeTarget(base_url=f"{hostile_url}/trickle/v1", model="m", prompt_tokens=10, timeout_s=20.0)
            probe = asyncio.create_task(pool.probe(target, api_key=None, max_attempts=1, max_retry_wait_s=0, lane=1))
            await asyncio.sleep(0.5)
            os.kill(pool._lanes[1].proc.pid, signal.SIGKILL)
            with pytest.raises(Exception) as info:
                await probe
            healthy = ProbeTarget(base_url=f"{hostile_url}/healthy/v1", model="m", prompt_tokens=10, timeout_s=5.0)
            sample = await pool.probe(healthy, api_key=None, max_attempts=1, max_retry_wait_s=0, lane=1)
            return info.value, sample, pool.restarts
        finally:
            await pool.close()

    err, sample, restarts = asyncio.run(main())
    assert "exited" in str(err)
    assert sample.ok and restarts == 1
