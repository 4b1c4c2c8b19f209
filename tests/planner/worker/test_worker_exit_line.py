"""Issue 42 item 10: a worker's exit line counts the rows the store took from it — not rows it sent again after a
failed flush, nor slots the store already held (another worker of the vantage stored them first), which the store's
insert ignores. The two workers' exit lines added up once said 913 for 724 stored rows.

The fault: the SQLite store is write-locked by another connection (the other worker's write) while this worker's
rows wait in memory; inside that lock the other worker stores two of the same slots; the lock goes and this worker's
retry is stored with those two ignored. The worker runs in-process on a clock the test moves
(tests/support/worker_driver.py); every wait is for an event.
"""

from __future__ import annotations

import logging
import re
import threading

import pytest
import sqlalchemy as sa

from planner.endpoints.registry import add_endpoint
from planner.simulator import SimulatorConfig, running_simulator
from planner.store import database, open_store
from planner.store.database import table_of
from planner.store.probes import ProbeSampleRow
from tests.support.fake_clock import FakeClock
from tests.support.sql_rows import sql_rows
from tests.support.worker_driver import drive, step, until

FAST = SimulatorConfig(prefill_tokens_per_s=200_000, decode_tokens_per_s=5000, seed=7)


@pytest.fixture(scope="module")
def sim_url():
    with running_simulator(FAST) as url:
        yield url


class OtherWriter:
    """Another connection that write-locks the store (BEGIN EXCLUSIVE) on its own thread, stores the rows it is
    handed inside that lock, and commits."""

    def __init__(self, url: sa.URL) -> None:
        self._engine = sa.create_engine(url, connect_args={"timeout": 60})  # waits out a write under way
        self.locked, self.done = threading.Event(), threading.Event()
        self._rows: list[ProbeSampleRow] = []
        self._go = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def start(self) -> None:
        self._thread.start()

    def store_and_unlock(self, rows: list[ProbeSampleRow]) -> None:
        self._rows = rows
        self._go.set()

    def close(self) -> None:
        self._go.set()
        if self._thread.is_alive():
            self._thread.join()
        self._engine.dispose()

    def _run(self) -> None:
        table = table_of(ProbeSampleRow)
        cols = [c.name for c in table.columns if c.name != "id"]
        with self._engine.connect() as c:
            c.exec_driver_sql("BEGIN EXCLUSIVE")
            self.locked.set()
            self._go.wait(600)  # a guard: the test hands the rows over
            if self._rows:
                c.execute(table.insert(), [{col: getattr(r, col) for col in cols} for r in self._rows])
            c.exec_driver_sql("COMMIT")
        self.done.set()


def test_the_exit_line_counts_the_rows_the_store_took_after_a_retry(sqlite_store_url, sim_url, monkeypatch, caplog):
    monkeypatch.setattr(database, "SQLITE_BUSY_TIMEOUT_MS", 200)  # a locked write fails after 0.2 s, not 5 s
    caplog.set_level(logging.INFO, logger="planner.worker")
    engine = open_store(sqlite_store_url)
    ep = add_endpoint(
        engine,
        {"name": "sim", "base_url": sim_url, "model": "m", "interval_s": 10.0, "timeout_s": 9.0, "max_tokens": 4},
    )
    other = OtherWriter(engine.url)
    clock = FakeClock()

    async def body(w):
        for _ in range(2):
            await step(w, clock)
        await until(lambda: w.buffer.stored == 2, "first rows stored")
        other.start()
        await until(other.locked.is_set, "the store locked")
        for _ in range(3):
            await step(w, clock)
        refused = w.buffer.failed_flushes
        await until(lambda: w.buffer.failed_flushes > refused, "a refused flush with every row held")
        held = list(w.buffer.rows)
        other.store_and_unlock(held[:2])  # the other worker stored two of the same slots first
        await until(other.done.is_set, "the other writer's commit")
        await until(lambda: not w.buffer.rows, "the retry stored")
        return len(held)

    try:
        held = drive(engine, body, clock=clock)
    finally:
        other.close()
    assert held == 3
    exit_line = next(r.getMessage() for r in caplog.records if r.getMessage().startswith("worker stopped:"))
    said = int(re.search(r"(\d+) rows stored", exit_line).group(1))
    in_store = sql_rows(engine, "SELECT count(*) AS n FROM probe_sample WHERE endpoint_id = :e", e=ep.id)[0]["n"]
    assert in_store == 5  # 2 before the lock, 2 by the other writer, 1 by the retry
    assert said == in_store - 2, exit_line  # what this worker's writes added to the store
    engine.dispose()
