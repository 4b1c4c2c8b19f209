"""The worker's row buffer: probe rows wait here until a flush stores them through planner.store.probes.

A flush writes batches of at most `flush_max_rows` with `insert_samples`, which is idempotent per slot, so a retry
never duplicates a row. A locked, full or unreachable database keeps the rows in memory (at most `max_rows`, the
oldest dropped first) and the next flush retries; at stop, what is still unsaved goes to the local spool
(planner.worker.spool) and the next start stores it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from planner.store.probes import ProbeSampleRow, insert_samples
from planner.store.worker import missing_endpoints

__all__ = ["RowBuffer", "first_line"]

log = logging.getLogger("planner.worker")


def first_line(exc: BaseException) -> str:
    """The first line of a database error's message (the driver's, when there is one)."""
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class RowBuffer:
    """Unsaved probe rows of one worker and the flush that stores them (one flush at a time)."""

    def __init__(
        self,
        engine: Engine,
        *,
        now_ms: Callable[[], int],
        flush_max_rows: int,
        max_rows: int,
        on_stored: Callable[[list[ProbeSampleRow]], None] | None = None,
    ) -> None:
        self.engine = engine
        self._on_stored = on_stored  # told each batch once it is in the store (the worker's /metrics)
        self.rows: list[ProbeSampleRow] = []
        self.unsaved_since_ms: int | None = None  # when the oldest unsaved row arrived
        self.last_error: str | None = None  # the last database error's first line; None after a good flush
        self.stored = 0
        self.failed_flushes = 0
        self._now_ms = now_ms
        self._flush_max_rows = flush_max_rows
        self._max_rows = max_rows
        self.lock = asyncio.Lock()  # two flushes at once would delete each other's batch from `rows`

    def add(self, rows: list[ProbeSampleRow]) -> None:
        """Queue rows for the next flush; past `max_rows` the oldest are dropped (logged)."""
        if not self.rows:
            self.unsaved_since_ms = self._now_ms()
        self.rows.extend(rows)
        overflow = len(self.rows) - self._max_rows
        if overflow > 0:  # the database has been unwritable for a long time: keep the newest rows
            log.error("database unwritable: dropping the %d oldest unsaved rows", overflow)
            del self.rows[:overflow]

    async def flush_locked(self, final: bool) -> None:
        """Store queued rows (caller holds `lock`): one batch, or all of them when `final` or far behind.

        A database error keeps the rows and is recorded in `last_error`; rows of endpoints removed meanwhile are
        dropped (they have nowhere to go)."""
        while self.rows:
            batch = self.rows[: self._flush_max_rows]
            try:
                try:
                    await asyncio.to_thread(insert_samples, self.engine, batch)
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
            self.stored += len(batch)
            if self._on_stored is not None:
                self._on_stored(batch)
            self.last_error = None
            if self.rows:
                self.unsaved_since_ms = self._now_ms()
            if not final and len(self.rows) < self._flush_max_rows:
                return

    def spool_rest(self) -> int:
        """Write every unsaved row to the local spool (fsynced) and forget it; returns how many. Logs, never raises."""
        if not self.rows:
            return 0
        from planner.worker import spool

        try:
            path = spool.write(self.engine, self.rows)
        except OSError as exc:
            log.error("could not spool %d unsaved probe rows: %s (they are lost)", len(self.rows), exc)
            return 0
        n = len(self.rows)
        self.rows.clear()
        log.warning("spooled %d unsaved probe rows to %s; the next start stores them", n, path)
        return n
