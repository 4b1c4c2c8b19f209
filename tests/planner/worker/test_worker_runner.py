"""The worker loop in-process against the simulated endpoint: failing endpoints, missing keys, probe-now and
cold-reading requests, a locked database, RTT jobs, an endpoint removed while its rows wait to be stored.

Every test runs the worker on a clock it moves itself (tests/support/worker_driver.py): it moves the clock slot by
slot and waits for what the worker does, so the slots that run are the same on any machine and the assertions are
about what was stored — every slot once, with its label — never about how many fit into some seconds. How late a
worker fires on a real clock is bench/bench_worker.py's figure; healthy TTFTs beside hostile endpoints are
bench/bench_worker_hostile.py's. PostgreSQL runs the tests whose worker writes differ between back ends (requests,
cold readings, a removed endpoint's foreign key); the rest run on SQLite.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import urllib.request
from collections import Counter

import pytest
import sqlalchemy as sa

from planner.endpoints.registry import add_endpoint, remove_endpoint
from planner.endpoints.samples import SkipCause
from planner.probes.ttft import TtftSample
from planner.simulator import SimulatorConfig, running_simulator
from planner.store import database, open_store
from planner.store.requests import create_request, get_request
from tests.support.fake_clock import FakeClock
from tests.support.sql_rows import sql_rows
from tests.support.worker_driver import drive, step, until

FAST = SimulatorConfig(prefill_tokens_per_s=200_000, decode_tokens_per_s=5000, seed=2)


@pytest.fixture(scope="module")
def sim_url():
    with running_simulator(FAST) as url:
        yield url


def samples(engine, endpoint_id: int) -> list[dict]:
    return sql_rows(engine, "SELECT * FROM probe_sample WHERE endpoint_id = :e ORDER BY scheduled_at_ms", e=endpoint_id)


def ep(engine, name, url, **kw):
    """An endpoint at the product's minimum interval (10 s of the test's clock, which costs nothing); its timeout
    (real seconds) leaves a loaded machine's probe time to finish."""
    fields = {
        "name": name,
        "base_url": url,
        "model": "m",
        "interval_s": 10.0,
        "timeout_s": 9.0,
        "prompt_tokens": 50,
        "max_tokens": 4,
    } | kw
    return add_endpoint(engine, fields)


def slots_of(decided: list[tuple[str, int]], endpoint_id: int) -> list[int]:
    return [slot for key, slot in decided if key == f"endpoint:{endpoint_id}"]


def ended(engine, request_id: int) -> bool:
    return get_request(engine, request_id)["status"] in ("done", "failed")


def health(sim_url: str) -> dict:
    """The simulated endpoint's /health (its warm state and how many cold starts it made)."""
    with urllib.request.urlopen(sim_url.removesuffix("/v1") + "/health", timeout=30) as r:
        return json.load(r)


def test_a_down_and_a_hanging_endpoint_do_not_disturb_the_healthy_one(sqlite_engine, sim_url):
    clock = FakeClock()
    engine = sqlite_engine
    good = ep(engine, "good", sim_url)
    down = ep(engine, "down", "http://127.0.0.1:9/v1")  # nothing listens on the discard port
    with running_simulator(SimulatorConfig(start_cold=True, cold_start_s=60, seed=3)) as hang_url:
        hang = ep(engine, "hang", hang_url, timeout_s=0.25)  # never answers within its (real) 0.25 s

        async def body(w):
            # Each step waits for the healthy and the refused probe; the hanging one runs on beside the next steps.
            decided: list[tuple[str, int]] = []
            waited = {f"endpoint:{good.id}", f"endpoint:{down.id}"}
            while min(len(slots_of(decided, e.id)) for e in (good, down, hang)) < 5:
                decided += await step(w, clock, wait=waited)
            return decided

        decided = drive(engine, body, clock=clock)
    by = {e.id: samples(engine, e.id) for e in (good, down, hang)}
    for e in (good, down, hang):  # every slot the worker decided is stored, once
        assert [r["scheduled_at_ms"] for r in by[e.id]] == slots_of(decided, e.id), e.name
    assert all(r["kind"] == "scheduled" and r["ok"] for r in by[good.id]), by[good.id]  # no skip, no failure
    assert {(r["kind"], r["error_class"]) for r in by[down.id]} == {("scheduled", "refused")}
    hung = [r for r in by[hang.id] if r["kind"] == "scheduled"]
    assert hung and {r["error_class"] for r in hung} <= {"read_timeout", "connect_timeout"}
    # A hanging probe may still run when its next slot comes: that slot is skipped, saying so.
    assert all(
        (r["skip_cause"], r["error_detail"]) == (SkipCause.IN_FLIGHT, SkipCause.IN_FLIGHT.text)
        for r in by[hang.id]
        if r["kind"] == "skipped"
    )
    status = {r["endpoint_id"]: r for r in sql_rows(engine, "SELECT * FROM endpoint_status")}
    assert status[good.id]["state"] == "ok"
    assert status[down.id]["state"] == "failing" and status[down.id]["consecutive_failures"] == len(by[down.id])
    assert "refused" in status[down.id]["detail"]


def test_a_probe_that_never_returns_is_cut_at_its_slots_deadline(sqlite_engine, monkeypatch):
    """Whatever a probe's retries do, it never outlives its slot: cut at 95 % of the interval (real time), it is
    stored as a timeout that says so, and the next slot runs."""
    monkeypatch.setenv("TTFT_PLANNER_MIN_INTERVAL_S", "0.2")  # a 0.19 s deadline
    engine, clock = sqlite_engine, FakeClock()
    e = ep(engine, "stuck", "http://127.0.0.1:9/v1", interval_s=0.2, timeout_s=0.1)

    async def never_returns(*args, **kwargs):
        await asyncio.Event().wait()

    async def body(w):
        return await step(w, clock) + await step(w, clock)

    decided = drive(engine, body, clock=clock, probe=never_returns)
    rows = samples(engine, e.id)
    assert [r["scheduled_at_ms"] for r in rows] == slots_of(decided, e.id)
    assert {(r["kind"], r["error_class"], r["error_detail"]) for r in rows} == {
        ("scheduled", "read_timeout", "probe exceeded its slot deadline (0.2 s)")
    }


def test_a_slot_skipped_behind_a_running_probe_is_stored_after_that_probes_own_row(sqlite_engine):
    """A restart resumes after the newest stored slot. Were the skip of slot 2 ("previous probe still running")
    stored while slot 1's probe still ran, a kill -9 then would leave slot 1 with no outcome at all; so the store
    never holds a slot after one whose probe is still running."""
    engine, clock = sqlite_engine, FakeClock()
    e = ep(engine, "slow", "http://127.0.0.1:9/v1", interval_s=60.0, timeout_s=50.0)
    key = f"endpoint:{e.id}"
    release = asyncio.Event()

    async def held_probe(target, **kwargs):
        await release.wait()
        return TtftSample(started_at_ms=clock.ms, ok=True, ttft_ms=12.0, total_ms=20.0)

    async def body(w):
        decided = await step(w, clock, wait=())  # slot 1: its probe runs on
        decided += await step(w, clock, wait=())  # slot 2: skipped, slot 1's probe still running
        await until(lambda: w.stats.skip_causes[SkipCause.IN_FLIGHT] == 1, "slot 2 skipped behind slot 1")
        await w.flush()  # what the flusher does at any moment
        stored_meanwhile = await asyncio.to_thread(samples, engine, e.id)
        release.set()
        await until(lambda: not w.scheduler.jobs[key].in_flight, "slot 1's probe ended")
        return decided, stored_meanwhile

    decided, stored_meanwhile = drive(engine, body, clock=clock, probe=held_probe)
    assert stored_meanwhile == []  # nothing of this endpoint before slot 1's outcome
    rows = samples(engine, e.id)
    assert [r["scheduled_at_ms"] for r in rows] == slots_of(decided, e.id)
    assert [(r["kind"], r["skip_cause"], r["error_detail"]) for r in rows] == [
        ("scheduled", None, None),
        ("skipped", "in_flight", "previous probe still running"),  # the cause as data, and in words
    ]


def test_missing_key_is_reported_instead_of_probing_until_it_is_set(sqlite_engine, sim_url, monkeypatch):
    clock = FakeClock()
    engine = sqlite_engine
    monkeypatch.delenv("SIM_TEST_KEY", raising=False)
    e = ep(engine, "keyed", sim_url, api_key_env="SIM_TEST_KEY")

    def status() -> dict | None:
        rows = sql_rows(engine, "SELECT * FROM endpoint_status WHERE endpoint_id = :e", e=e.id)
        return rows[0] if rows and rows[0]["state"] == "key missing" else None

    async def body(w):
        await step(w, clock)  # its first slot: not probed without the key
        missing = await until(status, "'key missing' status", in_thread=True)
        monkeypatch.setenv("SIM_TEST_KEY", "sk-test-secret-value")
        probed = await step(w, clock) + await step(w, clock)
        return missing, probed

    missing, probed = drive(engine, body, clock=clock)
    assert "SIM_TEST_KEY" in missing["detail"]
    rows = samples(engine, e.id)  # nothing for the slot without its key; each slot after it probed
    assert [r["scheduled_at_ms"] for r in rows] == slots_of(probed, e.id) and all(r["ok"] for r in rows)
    assert sql_rows(engine, "SELECT state FROM endpoint_status WHERE endpoint_id = :e", e=e.id) == [{"state": "ok"}]
    # The key itself is never stored anywhere.
    with engine.connect() as c:
        for table in ("probe_sample", "endpoint", "endpoint_status", "probe_request"):
            assert "sk-test-secret-value" not in str(c.execute(sa.text(f"SELECT * FROM {table}")).all())


def test_probe_now_request_runs_one_manual_probe(engine, sim_url):
    clock = FakeClock()
    e = ep(engine, "now", sim_url)
    rid = create_request(engine, e.id, "probe_now")

    async def body(w):  # the clock stands still: no scheduled slot comes
        await until(lambda: ended(engine, rid), "end of the request", in_thread=True)

    drive(engine, body, clock=clock)
    req = get_request(engine, rid)
    assert req["status"] == "done" and req["detail"].startswith("TTFT ")
    [manual] = samples(engine, e.id)
    assert manual["kind"] == "manual" and manual["ok"]


def test_cold_reading_pauses_the_schedule_then_times_a_cold_and_a_warm_probe(engine):
    clock = FakeClock()
    # The model starts unloaded and, once loaded, stays so: the cold probe pays one load (1.5 s of real time behind
    # 503s), the warm probe none, however long either takes on a loaded machine.
    cfg = SimulatorConfig(
        prefill_tokens_per_s=200_000,
        decode_tokens_per_s=5000,
        start_cold=True,
        cold_start_s=1.5,
        cold_503=True,
        retry_after_s=1,
        seed=4,
    )
    with running_simulator(cfg) as url:
        e = ep(engine, "coldish", url, scale_down_window_s=0.6)
        requested_ms = clock.ms
        rid = create_request(engine, e.id, "cold_reading", idle_s=25.0)

        async def body(w):
            [reading] = await until(
                lambda: sql_rows(engine, "SELECT * FROM cold_reading WHERE endpoint_id = :e", e=e.id),
                "cold reading started",
                in_thread=True,
            )
            paused: list[tuple[str, int]] = []
            while w.scheduler.next_fire_ms() <= reading["idle_until_ms"]:  # the slots of the idle time
                paused += await step(w, clock)
            clock.advance_to(reading["idle_until_ms"])  # idle long enough: the cold probe goes now
            await until(lambda: ended(engine, rid), "end of the reading", in_thread=True)
            return paused

        paused = drive(engine, body, clock=clock)
        sim = health(url)
    req = get_request(engine, rid)
    assert req["status"] == "done", req
    [reading] = sql_rows(engine, "SELECT * FROM cold_reading WHERE endpoint_id = :e", e=e.id)
    assert reading["state"] == "done"
    # Idle for 25 s from the claim (no probe had run), then the cold probe at once.
    assert reading["idle_until_ms"] == requested_ms + 25_000 == reading["cold_started_at_ms"]
    assert reading["cold_status_503"] >= 1 and reading["cold_attempts"] >= 2  # the 503s while loading are counted
    assert reading["cold_ttft_ms"] >= 1000  # time to first success includes the 1.5 s load behind 503s
    assert reading["cold_minus_warm_ms"] == pytest.approx(reading["cold_ttft_ms"] - reading["warm_ttft_ms"])
    assert sim["cold_starts"] == 1 and sim["warm"]  # the warm probe found the model loaded
    rows = samples(engine, e.id)
    [cold] = [r for r in rows if r["kind"] == "cold"]
    [warm] = [r for r in rows if r["kind"] == "warm"]
    assert cold["idle_gap_ms"] == 25_000 and warm["ok"] and warm["ttft_ms"] == pytest.approx(reading["warm_ttft_ms"])
    # Each slot of the pause is stored as skipped for the cold reading; no scheduled probe broke the idle time.
    skipped = [r for r in rows if r["kind"] == "skipped"]
    assert [r["scheduled_at_ms"] for r in skipped] == slots_of(paused, e.id) != []
    assert {(r["skip_cause"], r["error_detail"]) for r in skipped} == {("paused", "paused for a cold reading")}
    assert len(rows) == len(skipped) + 2


def test_locked_database_keeps_rows_in_memory_and_loses_none(sqlite_store_url, sim_url, monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(database, "SQLITE_BUSY_TIMEOUT_MS", 200)  # a locked write fails after 0.2 s, not 5 s
    engine = open_store(sqlite_store_url)
    e = ep(engine, "locked", sim_url)
    raw = sa.create_engine(engine.url, connect_args={"timeout": 60})  # waits out a housekeeping write
    locked, release = threading.Event(), threading.Event()

    def hold_lock():
        with raw.connect() as c:
            c.exec_driver_sql("BEGIN EXCLUSIVE")
            locked.set()
            release.wait(600)  # a guard: the test sets it
            c.exec_driver_sql("COMMIT")

    holder = threading.Thread(target=hold_lock)

    async def body(w):
        decided = [d for _ in range(3) for d in await step(w, clock)]
        await until(lambda: w.stats.stored == 3, "first rows stored")
        holder.start()
        await until(locked.is_set, "lock held")
        decided += [d for _ in range(3) for d in await step(w, clock)]  # probing goes on while the store is locked
        await until(lambda: w.stats.failed_flushes >= 1, "failed flush")
        kept = len(w.buffer.rows)
        release.set()
        await until(lambda: w.stats.stored == 6, "kept rows stored")
        decided += [d for _ in range(2) for d in await step(w, clock)]
        return decided, kept

    try:
        decided, kept = drive(engine, body, clock=clock)
    finally:
        release.set()
        if holder.is_alive():
            holder.join()
    assert kept == 3  # in memory while the database was locked
    rows = samples(engine, e.id)  # every slot stored once, none lost while locked
    assert [r["scheduled_at_ms"] for r in rows] == slots_of(decided, e.id)
    assert all(r["kind"] == "scheduled" and r["ok"] for r in rows)
    engine.dispose()


def test_rtt_targets_run_on_the_same_schedule(sqlite_engine, sim_url):
    clock = FakeClock()
    from planner.store.rtt import add_target

    engine = sqlite_engine
    host_port = sim_url.split("//")[1].split("/")[0]
    t = add_target(engine, "local-sim", host_port, interval_s=10, enabled=True, vantage="")

    async def body(w):
        return await step(w, clock) + await step(w, clock)

    decided = drive(engine, body, clock=clock)
    assert [key for key, _ in decided] == [f"rtt:{t.id}"] * 2
    rtts = sql_rows(engine, "SELECT * FROM rtt_sample WHERE region_id = 'local-sim'")
    connects = Counter(r["run_id"] for r in rtts if r["method"] == "tcp-connect")
    assert sorted(connects.values()) == [10, 10]  # one measurement (10 kept connects) per slot
    assert any(r["rtt_ms"] is not None and r["rtt_ms"] >= 0 for r in rtts)


def test_removing_an_endpoint_while_probing_keeps_the_others_stored(engine, sim_url, caplog):
    clock = FakeClock()
    keep = ep(engine, "keep", sim_url)
    gone = ep(engine, "gone", sim_url)

    async def body(w):
        decided: list[tuple[str, int]] = []
        while min(len(slots_of(decided, e.id)) for e in (keep, gone)) < 2:
            decided += await step(w, clock)
        # Removed while its rows wait in memory (the flusher sleeps for the whole test): the stop's flush meets them.
        await asyncio.to_thread(remove_endpoint, engine, "gone")
        while len(slots_of(decided, keep.id)) < 4:
            decided += await step(w, clock)
        return decided

    with caplog.at_level(logging.INFO, logger="planner.worker"):
        decided = drive(engine, body, clock=clock, flush_interval_s=3600)
    assert f"dropping the rows of removed endpoint(s) [{gone.id}]" in caplog.text
    rows = samples(engine, keep.id)  # each of its slots stored once
    assert [r["scheduled_at_ms"] for r in rows] == slots_of(decided, keep.id)
    assert all(r["kind"] == "scheduled" and r["ok"] for r in rows)
    assert sql_rows(engine, "SELECT COUNT(*) AS n FROM probe_sample WHERE endpoint_id <> :e", e=keep.id)[0]["n"] == 0
