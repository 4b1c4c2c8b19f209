"""Issue 42 item 18: a full disk under the store, its spool and the worker's state file (one 30 MB tmpfs, filled to
the last byte by a filler file).

The worker holds the probes it completes during the fault in memory, up to its bound (`--max-held-rows`), retries
them every flush and stores every one once the disk has room; past the bound the oldest are dropped and counted, and
the count reaches /metrics and what the Probes page says (planner.store.worker_state.worker_report). A stop during
the fault, when the spool is refused too, counts what it loses and says so on the page.

The worker runs in-process on a clock the test moves (tests/support/worker_driver.py) against the simulated
endpoint, so the probes during the fault are exactly the slots the test fires; every wait is for an event.
"""

from __future__ import annotations

import logging
import re

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from planner.endpoints.registry import add_endpoint
from planner.simulator import SimulatorConfig, running_simulator
from planner.store import leases, open_store
from planner.store.worker_state import worker_report
from planner.worker import spool
from planner.worker.runner import Worker
from tests.support.fake_clock import FakeClock
from tests.support.rtt_target import free_port
from tests.support.small_volume import fill, mounted_tmpfs
from tests.support.sql_rows import sql_rows
from tests.support.store_template import migrated_sqlite
from tests.support.worker_driver import drive, step, until

FAST = SimulatorConfig(prefill_tokens_per_s=200_000, decode_tokens_per_s=5000, seed=6)
DURING_FAULT = 6  # probes completed while the disk is full


@pytest.fixture(scope="module")
def sim_url():
    with running_simulator(FAST) as url:
        yield url


@pytest.fixture
def volume(tmp_path):
    """(engine, folder): a migrated SQLite store alone on a 30 MB tmpfs; its spool and state file go beside it."""
    with mounted_tmpfs(tmp_path / "vol", size_mb=30) as folder:
        engine = open_store(migrated_sqlite(folder / "planner.db"))
        try:
            yield engine, folder
        finally:
            engine.dispose()


def endpoint_id(engine, url: str) -> int:
    """An endpoint probed every 10 s of the test's clock (which costs nothing); its timeout is real seconds."""
    ep = add_endpoint(
        engine,
        {"name": "sim", "base_url": url, "model": "m", "interval_s": 10.0, "timeout_s": 9.0, "max_tokens": 4},
    )
    assert ep.id is not None
    return ep.id


def stored_slots(engine, e: int) -> list[int]:
    rows = sql_rows(engine, "SELECT scheduled_at_ms FROM probe_sample WHERE endpoint_id = :e ORDER BY 1", e=e)
    return [r["scheduled_at_ms"] for r in rows]


def scrape(port: int) -> dict[str, float]:
    """The worker's /metrics, parsed by prometheus_client's own parser: sample name → value (one vantage)."""
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=30).text
    return {s.name: s.value for family in text_string_to_metric_families(text) for s in family.samples}


def report(engine, clock: FakeClock) -> str:
    """What the Probes page says about the worker of the default vantage now."""
    return worker_report(engine, "", leases.current(engine), clock.ms).text


async def fired(worker: Worker, clock: FakeClock, n: int) -> list[int]:
    """Fire the next `n` slots, each probe ended: their slot ms."""
    return [slot for _ in range(n) for _, slot in await step(worker, clock)]


async def fill_until_refused(worker: Worker, clock: FakeClock, folder) -> tuple[object, list[int]]:
    """Fill the disk, then fire slots until a flush is refused (SQLite may first find room in pages it already
    holds). Returns the filler and the slots fired meanwhile."""
    filler = fill(folder)
    slots: list[int] = []
    refused = worker.buffer.failed_flushes
    while worker.buffer.failed_flushes == refused:
        assert len(slots) < 50, "the store still takes rows on a full disk"
        slots += await fired(worker, clock, 1)
        await until(lambda: worker.buffer.failed_flushes > refused or not worker.buffer.rows, "the row's flush")
    return filler, slots


async def held_after_a_refusal(worker: Worker) -> int:
    """Wait for one more refused flush (it saw every row of the probes ended so far) and return the rows held."""
    refused = worker.buffer.failed_flushes
    await until(lambda: worker.buffer.failed_flushes > refused, "a refused flush")
    return len(worker.buffer.rows)


async def published(worker: Worker, clock: FakeClock) -> None:
    """Move the clock past the state file's period (no slot falls due) and wait until the worker has rewritten it."""
    wrote = worker.state.publish
    calls = 0

    def counting(stopped: bool = False) -> None:
        nonlocal calls
        wrote(stopped)
        calls += 1

    worker.state.publish = counting  # type: ignore[method-assign]
    try:
        clock.advance(2_000)
        await until(lambda: calls >= 1, "the state file rewritten")
    finally:
        del worker.state.publish  # the class's method again


def test_probes_completed_on_a_full_disk_are_held_and_all_stored_once_it_has_room(volume, sim_url):
    engine, folder = volume
    e = endpoint_id(engine, sim_url)
    clock, port = FakeClock(), free_port()

    async def body(w: Worker):
        slots = await fired(w, clock, 2)
        await until(lambda: w.buffer.stored == 2, "first rows stored")
        filler, more = await fill_until_refused(w, clock, folder)
        during = await fired(w, clock, DURING_FAULT)
        held = await held_after_a_refusal(w)
        await published(w, clock)
        on_page = report(engine, clock)
        in_metrics = scrape(port)
        filler.unlink()  # the disk has room again
        await until(lambda: not w.buffer.rows, "held rows stored")
        return slots + more + during, held, on_page, in_metrics, scrape(port), w.buffer.dropped

    decided, held, on_page, during, after, dropped = drive(engine, body, clock=clock, metrics_port=port)
    assert stored_slots(engine, e) == decided  # every probe completed during the fault stored, each once
    assert dropped == 0 and held >= DURING_FAULT
    assert f"buffering {held} rows since" in on_page and "disk is full" in on_page, on_page
    assert during["ttft_planner_buffer_rows"] == held and during["ttft_planner_store_write_failing"] == 1
    assert during["ttft_planner_buffer_rows_dropped_total"] == 0
    assert after["ttft_planner_buffer_rows"] == 0 and after["ttft_planner_store_write_failing"] == 0


def test_past_the_bound_the_oldest_are_dropped_and_the_count_is_on_metrics_and_the_page(volume, sim_url):
    engine, folder = volume
    e = endpoint_id(engine, sim_url)
    clock, port = FakeClock(), free_port()
    bound = 3

    async def body(w: Worker):
        slots = await fired(w, clock, 1)
        await until(lambda: w.buffer.stored == 1, "first row stored")
        filler, more = await fill_until_refused(w, clock, folder)
        during = await fired(w, clock, DURING_FAULT)
        held = await held_after_a_refusal(w)
        await published(w, clock)
        on_page, in_metrics = report(engine, clock), scrape(port)
        filler.unlink()
        await until(lambda: not w.buffer.rows, "held rows stored")
        return slots + more + during, held, on_page, in_metrics, w.buffer.dropped

    decided, held, on_page, metrics, dropped = drive(engine, body, clock=clock, metrics_port=port, max_held_rows=bound)
    assert held == bound and dropped >= DURING_FAULT - bound
    assert metrics["ttft_planner_buffer_rows_dropped_total"] == dropped
    assert metrics["ttft_planner_buffer_rows"] == bound and metrics["ttft_planner_buffer_rows_max"] == bound
    assert metrics["ttft_planner_store_write_failing"] == 1
    assert f"buffering {bound} rows since" in on_page, on_page
    assert f"it lost {dropped} probe rows unsaved (database or disk is full; it holds at most {bound} in memory)" in (
        on_page
    )
    # The oldest unsaved rows went; the newest `bound` were stored once the disk had room.
    stored = stored_slots(engine, e)
    lost = [slot for slot in decided if slot not in stored]
    assert len(lost) == dropped and stored[-bound:] == decided[-bound:] and max(lost) < min(decided[-bound:])


def test_a_stop_on_a_full_disk_counts_what_neither_the_store_nor_the_spool_took(volume, sim_url, caplog):
    engine, folder = volume
    endpoint_id(engine, sim_url)
    clock = FakeClock()
    caplog.set_level(logging.INFO, logger="planner.worker")

    async def body(w: Worker):
        await fired(w, clock, 1)
        await until(lambda: w.buffer.stored == 1, "first row stored")
        filler, _ = await fill_until_refused(w, clock, folder)
        await fired(w, clock, DURING_FAULT)
        return filler, await held_after_a_refusal(w)  # the driver stops the worker now: the disk is still full

    filler, held = drive(engine, body, clock=clock, stop_flush_s=1.0)
    exit_line = next(r.getMessage() for r in caplog.records if r.getMessage().startswith("worker stopped:"))
    assert re.search(rf", 0 spooled, {held} dropped$", exit_line), exit_line
    on_page = report(engine, clock)  # the stopped state file was written over its own blocks
    assert on_page.startswith("No worker is probing"), on_page
    assert f"Its last worker lost {held} probe rows unsaved (" in on_page and "No space left" in on_page, on_page
    left = spool.spool_dir(engine)
    assert not (left.is_dir() and list(left.iterdir())), "a half-written spool file takes the disk"
    filler.unlink()
