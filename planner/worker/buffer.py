"""The worker's row buffer: probe rows wait here until a flush stores them through planner.store.probes.

A flush writes batches of at most `flush_max_rows` with `insert_samples`, which is idempotent per slot, so a retry
never duplicates a row; `stored` counts the rows the store actually took (a slot it already held is not counted).
A locked, full or unreachable database keeps the rows *held* in memory and each flush retries them. At most
`max_rows` are held (`worker --max-held-rows`, $TTFT_PLANNER_MAX_HELD_ROWS, DEFAULT_MAX_HELD_ROWS): past that the
oldest are dropped and counted in `dropped`, which the state file (the Probes page) and /metrics show. At stop,
what is still unsaved goes to the local spool (planner.worker.spool) and the next start stores it; rows that the
spool refuses too (the disk is full) are counted in `dropped` as well.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from planner.inputs.validate import HELD_ROWS
from planner.store.probes import ProbeSampleRow, insert_samples
from planner.store.worker import missing_endpoints
from planner.worker.context import WorkerContext

__all__ = ["DEFAULT_MAX_HELD_ROWS", "MAX_HELD_ROWS", "RowBuffer", "first_line"]

log = logging.getLogger("planner.worker")

#: Rows a worker holds in memory while the store refuses them: about five days of 7 endpoints probed every 60 s,
#: 85 MB at the 1.7 KB a row takes in memory (3 KB with a 500-character error detail).
DEFAULT_MAX_HELD_ROWS = 50_000
#: The range of `worker --max-held-rows` / $TTFT_PLANNER_MAX_HELD_ROWS (planner.inputs.validate.HELD_ROWS).
MAX_HELD_ROWS = HELD_ROWS


def first_line(exc: BaseException) -> str:
    """The first line of a database error's message (the driver's, when there is one)."""
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class RowBuffer:
    """Unsaved probe rows of one worker and the flush that stores them (one flush at a time)."""

    def __init__(
        self,
        ctx: WorkerContext,
        *,
        flush_max_rows: int,
        max_rows: int,
        on_stored: Callable[[list[ProbeSampleRow]], None] | None = None,
    ) -> None:
        engine, now_ms = ctx.engine, ctx.now_ms
        self.engine = engine
        self._on_stored = on_stored  # told each batch once it is in the store (the worker's /metrics)
        self.rows: list[ProbeSampleRow] = []
        self.unsaved_since_ms: int | None = None  # when the oldest unsaved row arrived
        self.last_error: str | None = None  # the last database error's first line; None after a good flush
        self.stored = 0  # rows the store took (not rows sent: a slot it already held is not counted)
        self.failed_flushes = 0
        self.dropped = 0  # rows lost unsaved: past `max_rows`, or refused by the spool at stop
        self.max_rows = max_rows
        self._now_ms = now_ms
        self._flush_max_rows = flush_max_rows
        self._dropping = False  # rows were dropped since the last good flush (logged once per outage)
        self.lock = asyncio.Lock()  # two flushes at once would delete each other's batch from `rows`

    def add(self, rows: list[ProbeSampleRow]) -> None:
        """Queue rows for the next flush; past `max_rows` the oldest are dropped and counted in `dropped`."""
        if not self.rows:
            self.unsaved_since_ms = self._now_ms()
        self.rows.extend(rows)
        overflow = len(self.rows) - self.max_rows
        if overflow > 0:  # the database has been unwritable for a long time: keep the newest rows
            if not self._dropping:
                log.error(
                    "database unwritable (%s): %d rows held, the bound; dropping the oldest from now on",
                    self.last_error,
                    self.max_rows,
                )
                self._dropping = True
            del self.rows[:overflow]
            self.dropped += overflow

    async def flush_locked(self, final: bool) -> None:
        """Store queued rows (caller holds `lock`): one batch, or all of them when `final` or far behind.

        A database error keeps the rows and is recorded in `last_error`; rows of endpoints removed meanwhile are
        dropped (they have nowhere to go)."""
        while self.rows:
            batch = self.rows[: self._flush_max_rows]
            try:
                try:
                    inserted = await asyncio.to_thread(insert_samples, self.engine, batch)
                except IntegrityError:
                    # An endpoint was removed while its probe was in flight: its rows have nowhere to go.
                    gone = await asyncio.to_thread(missing_endpoints, self.engine, {r.endpoint_id for r in batch})
                    if not gone:
                        raise
                    log.info("dropping the rows of removed endpoint(s) %s", sorted(gone))
                    self.rows = [r for r in self.rows if r.endpoint_id not in gone]
                    continue
            except (SQLAlchemyError, OSError) as exc:
                self.failed_flushes += 1
                self.last_error = first_line(exc)[:300]
                log.warning(
                    "could not store %d probe rows (kept in memory, will retry): %s", len(batch), self.last_error
                )
                return
            del self.rows[: len(batch)]
            self.stored += inserted
            if self._on_stored is not None:
                self._on_stored(batch)
            if self._dropping:
                log.warning("the database takes rows again; %d rows were dropped unsaved so far", self.dropped)
                self._dropping = False
            self.last_error = None
            if self.rows:
                self.unsaved_since_ms = self._now_ms()
            if not final and len(self.rows) < self._flush_max_rows:
                return

    def spool_rest(self) -> int:
        """Write every unsaved row to the local spool (fsynced) and forget it; returns how many. Rows the spool
        refuses are counted in `dropped` (and forgotten). Logs, never raises."""
        if not self.rows:
            return 0
        from planner.worker import spool

        try:
            path = spool.write(self.engine, self.rows)
        except OSError as exc:  # the disk is full (or gone) too: nothing of this process outlives it
            self.last_error = first_line(exc)[:300]
            self.dropped += len(self.rows)
            log.error("could neither store nor spool %d unsaved probe rows (%s): they are lost", len(self.rows), exc)
            self.rows.clear()
            return 0
        n = len(self.rows)
        self.rows.clear()
        log.warning("spooled %d unsaved probe rows to %s; the next start stores them", n, path)
        return n
