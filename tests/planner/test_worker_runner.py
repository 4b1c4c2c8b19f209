"""The worker loop in-process against the simulated endpoint, on SQLite and PostgreSQL:
failing endpoints, missing keys, probe-now and cold-reading requests, a locked database, RTT jobs."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
import sqlalchemy as sa

from planner.endpoints import add_endpoint
from planner.simulator import SimulatorConfig, running_simulator
from planner.store.requests import create_request, get_request
from planner.worker.runner import Worker, WorkerConfig
from planner.worker.scheduler import SkipCause
from tests.support.skips import overload_skip

FAST = SimulatorConfig(prefill_tokens_per_s=200_000, decode_tokens_per_s=5000, seed=2)


@pytest.fixture(autouse=True)
def _short_intervals(monkeypatch):
    monkeypatch.setenv("TTFT_PLANNER_MIN_INTERVAL_S", "0.2")


@pytest.fixture(scope="module")
def sim_url():
    with running_simulator(FAST) as url:
        yield url


def run_for(engine, seconds: float, *, until=None, **cfg) -> Worker:
    """Run a worker for `seconds` (or until `until()` is true, checked every 0.1 s), then stop it.

    Probes run in the worker's own loop here (probe_processes=0): these tests are about scheduling and
    storage; the probe processes are tested in test_worker_isolation.py."""
    w = Worker(engine, WorkerConfig(lease_ttl_s=5, request_poll_s=0.2, **({"probe_processes": 0} | cfg)))

    async def main():
        task = asyncio.create_task(w.run())
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not (until and await asyncio.to_thread(until)):
            await asyncio.sleep(0.1)
        w.request_stop()
        await task

    asyncio.run(main())
    return w


def q(engine, sql: str, **params):
    with engine.connect() as c:
        return [dict(r) for r in c.execute(sa.text(sql), params).mappings()]


def ep(engine, name, url, **kw):
    fields = {
        "name": name,
        "base_url": url,
        "model": "m",
        "interval_s": 0.3,
        "timeout_s": 0.25,
        "prompt_tokens": 50,
        "max_tokens": 4,
    } | kw
    return add_endpoint(engine, fields)


def test_a_down_and_a_hanging_endpoint_do_not_disturb_the_healthy_one(engine, sim_url):
    # The healthy endpoint's slot (1.5 s) leaves room for a loaded machine's slow loop while its neighbours hang or
    # are refused every 0.3 s. Run until each has its samples (at most 40 s): a slow machine waits, it does not fail.
    good = ep(engine, "good", sim_url, interval_s=1.5, timeout_s=1.4)
    down = ep(engine, "down", "http://127.0.0.1:9/v1")  # nothing listens on the discard port
    with running_simulator(
        SimulatorConfig(start_cold=True, cold_start_s=60, seed=3)
    ) as hang_url:  # never answers in time
        hang = ep(engine, "hang", hang_url)

        def rows():
            return {
                e.id: q(engine, "SELECT * FROM probe_sample WHERE endpoint_id = :e ORDER BY scheduled_at_ms", e=e.id)
                for e in (good, down, hang)
            }

        def probed(rows_of: list[dict]) -> list[dict]:
            return [r for r in rows_of if r["kind"] == "scheduled"]

        def enough() -> bool:
            by = rows()
            return len(by[good.id]) >= 5 and len(probed(by[down.id])) >= 7 and len(by[hang.id]) >= 5

        run_for(engine, 40.0, until=enough)
    by = rows()
    assert len(by[good.id]) >= 5
    assert all(r["kind"] == "scheduled" and r["ok"] for r in by[good.id]), [
        r for r in by[good.id] if not r["ok"]
    ]  # no skipped slot, no failure
    assert len(probed(by[down.id])) >= 7 and {r["error_class"] for r in probed(by[down.id])} == {"refused"}
    # Its 0.3 s slots may be skipped on a loaded machine (labelled so), never failed for another reason.
    assert all(overload_skip(r) for r in by[down.id] if r["kind"] != "scheduled"), by[down.id]
    assert len(by[hang.id]) >= 5
    assert {r["error_class"] for r in by[hang.id] if r["kind"] == "scheduled"} <= {"read_timeout", "connect_timeout"}
    status = {r["endpoint_id"]: r for r in q(engine, "SELECT * FROM endpoint_status")}
    assert status[good.id]["state"] == "ok"
    assert status[down.id]["state"] == "failing" and status[down.id]["consecutive_failures"] >= 7
    assert "refused" in status[down.id]["detail"]


def test_missing_key_is_reported_instead_of_probing_until_it_is_set(engine, sim_url, monkeypatch):
    monkeypatch.delenv("SIM_TEST_KEY", raising=False)
    e = ep(engine, "keyed", sim_url, api_key_env="SIM_TEST_KEY")
    run_for(engine, 1.5)
    assert q(engine, "SELECT * FROM probe_sample WHERE endpoint_id = :e", e=e.id) == []
    [st] = q(engine, "SELECT * FROM endpoint_status WHERE endpoint_id = :e", e=e.id)
    assert st["state"] == "key missing" and "SIM_TEST_KEY" in st["detail"]
    monkeypatch.setenv("SIM_TEST_KEY", "sk-test-secret-value")
    run_for(engine, 1.5)
    assert len(q(engine, "SELECT * FROM probe_sample WHERE endpoint_id = :e AND ok", e=e.id)) >= 2
    # The key itself is never stored anywhere.
    with engine.connect() as c:
        for table in ("probe_sample", "endpoint", "endpoint_status", "probe_request"):
            assert "sk-test-secret-value" not in str(c.execute(sa.text(f"SELECT * FROM {table}")).all())


def test_probe_now_request_runs_one_manual_probe(engine, sim_url):
    e = ep(engine, "now", sim_url, interval_s=30, timeout_s=5)  # no scheduled slot during the test
    rid = create_request(engine, e.id, "probe_now")
    run_for(engine, 10.0, until=lambda: get_request(engine, rid)["status"] in ("done", "failed"))
    req = get_request(engine, rid)
    assert req["status"] == "done" and req["detail"].startswith("TTFT ")
    manual = q(engine, "SELECT * FROM probe_sample WHERE endpoint_id = :e AND kind = 'manual'", e=e.id)
    assert len(manual) == 1 and manual[0]["ok"]


def test_cold_reading_pauses_the_schedule_then_times_a_cold_and_a_warm_probe(engine):
    cfg = SimulatorConfig(
        prefill_tokens_per_s=200_000,
        decode_tokens_per_s=5000,
        scale_down_window_s=0.6,
        cold_start_s=1.5,
        cold_503=True,
        retry_after_s=1,
        seed=4,
    )
    with running_simulator(cfg) as url:
        e = ep(engine, "coldish", url, scale_down_window_s=0.6)
        rid = create_request(engine, e.id, "cold_reading", idle_s=1.0)
        run_for(engine, 20.0, until=lambda: get_request(engine, rid)["status"] in ("done", "failed"))
    req = get_request(engine, rid)
    assert req["status"] == "done", req
    [reading] = q(engine, "SELECT * FROM cold_reading WHERE endpoint_id = :e", e=e.id)
    assert reading["state"] == "done"
    assert reading["cold_status_503"] >= 1 and reading["cold_attempts"] >= 2  # the 503s while loading are counted
    assert reading["cold_ttft_ms"] >= 1000  # time to first success includes the 1.5 s load behind 503s
    assert reading["warm_ttft_ms"] < 500
    assert reading["cold_minus_warm_ms"] == pytest.approx(reading["cold_ttft_ms"] - reading["warm_ttft_ms"])
    kinds = {r["kind"] for r in q(engine, "SELECT kind FROM probe_sample WHERE endpoint_id = :e", e=e.id)}
    assert {"cold", "warm"} <= kinds
    # The slots of the pause are skipped as such (a loaded machine may also skip one while a probe still runs).
    skipped = q(engine, "SELECT * FROM probe_sample WHERE endpoint_id = :e AND kind = 'skipped'", e=e.id)
    paused = [r for r in skipped if r["error_detail"] == SkipCause.PAUSED.value]
    assert paused and all(r in paused or overload_skip(r) for r in skipped), skipped
    # No scheduled probe ran between the request and the cold probe: the idle gap was real.
    inside = q(
        engine,
        "SELECT * FROM probe_sample WHERE endpoint_id = :e AND kind = 'scheduled' "
        "AND started_at_ms > :a AND started_at_ms < :b",
        e=e.id,
        a=reading["idle_until_ms"] - 1000,
        b=reading["cold_started_at_ms"],
    )
    assert inside == []


def test_locked_database_keeps_rows_in_memory_and_loses_none(sqlite_engine, sim_url):
    engine = sqlite_engine
    e = ep(engine, "locked", sim_url)
    raw = sa.create_engine(engine.url, connect_args={"timeout": 0.1})
    release = threading.Event()

    def hold_lock():
        with raw.connect() as c:
            c.exec_driver_sql("BEGIN EXCLUSIVE")
            release.wait(30)
            c.exec_driver_sql("COMMIT")

    holder = threading.Thread(target=hold_lock)
    w = Worker(engine, WorkerConfig(lease_ttl_s=30, request_poll_s=0.2, probe_processes=0))

    async def main():
        task = asyncio.create_task(w.run())
        await asyncio.sleep(1.2)
        holder.start()
        await asyncio.sleep(6.5)  # longer than SQLite's 5 s busy timeout: flushes fail
        failed = w.stats.failed_flushes
        release.set()
        await asyncio.sleep(2.0)
        w.request_stop()
        await task
        return failed

    failed = asyncio.run(main())
    holder.join()
    assert failed >= 1
    slots = [
        r["scheduled_at_ms"]
        for r in q(
            engine,
            "SELECT scheduled_at_ms FROM probe_sample WHERE endpoint_id = :e "
            "AND kind IN ('scheduled','skipped') ORDER BY 1",
            e=e.id,
        )
    ]
    assert len(slots) >= 25
    assert {b - a for a, b in zip(slots, slots[1:], strict=False)} == {
        300
    }  # every slot stored once, none lost while locked


def test_rtt_targets_run_on_the_same_schedule(engine, sim_url):
    from planner.store.rtt import add_target

    host_port = sim_url.split("//")[1].split("/")[0]
    t = add_target(engine, "local-sim", host_port, interval_s=10, enabled=True, vantage="")
    with engine.begin() as c:  # the product minimum is 10 s; compress it for the test
        c.execute(sa.text("UPDATE rtt_target SET interval_s = 0.5 WHERE id = :i"), {"i": t.id})
    run_for(
        engine,
        10.0,
        until=lambda: q(engine, "SELECT COUNT(*) AS n FROM rtt_sample WHERE region_id = 'local-sim'")[0]["n"] >= 10,
    )
    rtts = q(engine, "SELECT * FROM rtt_sample WHERE region_id = 'local-sim'")
    assert len(rtts) >= 10
    assert any(r["rtt_ms"] is not None and r["rtt_ms"] >= 0 for r in rtts)


def test_removing_an_endpoint_while_probing_keeps_the_others_stored(engine, sim_url):
    from planner.endpoints import remove_endpoint

    keep = ep(engine, "keep", sim_url)
    ep(engine, "gone", sim_url)
    w = Worker(engine, WorkerConfig(lease_ttl_s=5, request_poll_s=0.2, flush_interval_s=0.5, probe_processes=0))

    async def main():
        task = asyncio.create_task(w.run())
        await asyncio.sleep(1.5)
        await asyncio.to_thread(remove_endpoint, engine, "gone")
        await asyncio.sleep(2.5)
        w.request_stop()
        await task

    asyncio.run(main())
    slots = [
        r["scheduled_at_ms"]
        for r in q(engine, "SELECT scheduled_at_ms FROM probe_sample WHERE endpoint_id = :e ORDER BY 1", e=keep.id)
    ]
    assert len(slots) >= 10 and {b - a for a, b in zip(slots, slots[1:], strict=False)} == {300}
    assert q(engine, "SELECT COUNT(*) AS n FROM probe_sample WHERE endpoint_id <> :e", e=keep.id)[0]["n"] == 0
