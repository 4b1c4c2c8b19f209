"""Issue 15 item 1: one endpoint cannot stall or starve the others.

- every one of bench/hostile_server.py's 11 hostile kinds ends as a failed sample (never a crash, never a
  100 MB read): the reading caps stop it;
- the worker probes in probe processes: hostile endpoints end up in the quarantine lane, healthy ones stay in
  clean lanes and are all measured, with no skipped slot and no false failure (on a clock the test moves slot by
  slot, tests/support/worker_driver.py, so the slots are the same on any machine);
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
from pathlib import Path

import pytest
import sqlalchemy as sa

from bench.hostile_server import KINDS
from planner.endpoints.registry import add_endpoint
from planner.probes.ttft import MAX_BYTES_BEFORE_TOKEN, ProbeTarget, probe_once
from planner.worker.probe_pool import QUARANTINE_CLASSES, ProbePool
from tests.support.fake_clock import FakeClock
from tests.support.waiting import wait_for
from tests.support.worker_driver import drive, step, until

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def hostile_url():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "hostile_server.py"), str(port)])

    def listening() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return False
        return True

    wait_for(listening, 120, "the hostile server to listen")
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


def test_hostile_endpoints_are_quarantined_and_healthy_ones_all_measured(sqlite_engine, hostile_url):
    engine, clock = sqlite_engine, FakeClock()
    common = {"model": "m", "interval_s": 10.0, "prompt_tokens": 10, "max_tokens": 8}
    healthy = [
        add_endpoint(engine, {"name": f"h{i}", "base_url": f"{hostile_url}/healthy/v1", "timeout_s": 5.0} | common).id
        for i in range(2)
    ]
    hostile = [
        add_endpoint(engine, {"name": k, "base_url": f"{hostile_url}/{k}/v1", "timeout_s": 0.8} | common).id
        for k in ("flood-empty", "long-line", "invalid-utf8", "trickle")
    ]

    async def body(w):
        # Three rounds of slots. Each step waits for the healthy probes only: the hostile ones run on (a trickle
        # takes its whole 0.8 s) beside the next healthy probes, as they would on a real clock.
        decided: list[tuple[str, int]] = []
        waited = {f"endpoint:{e}" for e in healthy}
        while min(sum(key == f"endpoint:{e}" for key, _ in decided) for e in healthy + hostile) < 3:
            decided += await step(w, clock, wait=waited)
        await until(lambda: not any(j.in_flight for j in w.scheduler.jobs.values()), "the hostile probes to end")
        return {eid: w.prober.pool.lane_for(eid, err) for eid, err in w.prober.last_error.items()}, decided

    lanes, decided = drive(engine, body, clock=clock, probe_processes=1)
    assert all(lanes[e] == 0 for e in hostile), lanes  # quarantine
    assert all(lanes[e] != 0 for e in healthy), lanes  # a clean lane
    with engine.connect() as c:
        rows = c.execute(sa.text("SELECT endpoint_id, scheduled_at_ms, kind, ok FROM probe_sample ORDER BY 2")).all()
    for e in healthy:  # every slot measured, none skipped, no false failure
        mine = [r for r in rows if r.endpoint_id == e]
        assert [r.scheduled_at_ms for r in mine] == [slot for key, slot in decided if key == f"endpoint:{e}"]
        assert all(r.kind == "scheduled" and r.ok for r in mine), mine
    assert all(not r.ok for r in rows if r.endpoint_id in hostile)


def test_a_probe_process_that_dies_is_restarted_and_its_probe_fails_cleanly(hostile_url):
    """Also: a probe cancelled in the worker (its slot's deadline, the stop's grace) is cancelled in its process,
    which goes on serving the lane."""
    trickle = ProbeTarget(base_url=f"{hostile_url}/trickle/v1", model="m", prompt_tokens=10, timeout_s=20.0)
    healthy = ProbeTarget(base_url=f"{hostile_url}/healthy/v1", model="m", prompt_tokens=10, timeout_s=5.0)

    async def main():
        pool = ProbePool(1)
        await pool.start()
        lane = pool._lanes[1]

        def probe(target):
            return asyncio.create_task(pool.probe(target, api_key=None, max_attempts=1, max_retry_wait_s=0, lane=1))

        try:
            cancelled = probe(trickle)
            await until(lambda: lane.pending, "the probe sent to its process")
            cancelled.cancel()
            with pytest.raises(asyncio.CancelledError):
                await cancelled
            after_cancel = await probe(healthy)
            pid = lane.proc.pid
            doomed = probe(trickle)
            await until(lambda: lane.pending, "the probe sent to its process")
            os.kill(pid, signal.SIGKILL)
            with pytest.raises(Exception) as info:
                await doomed
            sample = await probe(healthy)
            return after_cancel, info.value, sample, pool.restarts
        finally:
            await pool.close()

    after_cancel, err, sample, restarts = asyncio.run(main())
    assert after_cancel.ok  # the same process, before the kill: restarts counts only the one below
    assert "exited" in str(err)
    assert sample.ok and restarts == 1
