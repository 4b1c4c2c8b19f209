"""The worker's flusher: stores the row buffer on a period, replays the spool at start and spools what a stop
cannot store.

Every `interval_s` it flushes the RowBuffer (planner.worker.buffer) and, every two seconds, publishes the worker's
state file. After the worker sat still past a renewal period it re-checks the lease before storing: slots after
the lease was last confirmed ours belong to the worker that took over, so their "skipped" rows are dropped
(measured samples are kept: a slot's probe wins over a skip). At stop one bounded flush runs and what is still
unsaved goes to the local spool (planner.worker.spool); the next start replays the spool before probing.

Periods are counted on the worker's injected monotonic clock (`mono_s`), never the system's; the sleep between
looks only says how often it looks.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from sqlalchemy.exc import SQLAlchemyError

from planner.endpoints.samples import SampleKind
from planner.worker.buffer import RowBuffer, first_line
from planner.worker.context import WorkerContext
from planner.worker.counters import WorkerStats
from planner.worker.lease_keeper import LeaseKeeper

__all__ = ["Flusher"]

log = logging.getLogger("planner.worker")

_STATE_EVERY_S = 2.0


class Flusher:
    """Stores `buffer` every `interval_s` (counted on `mono_s`) and calls `publish()` (the state file, on a thread)
    every two seconds; keeps `stats`' stored / failed / spooled / dropped counts."""

    def __init__(
        self,
        ctx: WorkerContext,
        buffer: RowBuffer,
        lease: LeaseKeeper,
        stats: WorkerStats,
        *,
        interval_s: float,
        publish: Callable[[], None],
    ) -> None:
        engine, mono_s = ctx.engine, ctx.mono_s
        self.engine = engine
        self.buffer = buffer
        self.lease = lease
        self.stats = stats
        self.interval_s = interval_s
        self.mono_s = mono_s
        self._publish = publish

    async def flush(self, final: bool = False) -> None:
        """Store the buffered rows (one flush at a time). After a pause, re-check the lease first: slots after
        the lease was last ours belong to the worker that took over, so their "skipped" rows are dropped."""
        buffer = self.buffer
        async with buffer.lock:
            if buffer.rows:
                confirmed_ms = await self.lease.lost_while_paused()
                if confirmed_ms is not None:
                    # Measured samples are kept (a slot's probe wins over a skip).
                    before = len(buffer.rows)
                    buffer.rows = [
                        r
                        for r in buffer.rows
                        if not (r.kind == SampleKind.SKIPPED and r.scheduled_at_ms > confirmed_ms)
                    ]
                    if before != len(buffer.rows):
                        log.warning(
                            "lost the lease while paused: dropped %d skipped-slot rows of the new holder's slots",
                            before - len(buffer.rows),
                        )
            await buffer.flush_locked(final)
            self._count()

    def _count(self) -> None:
        """Copy the buffer's counts into `stats` (what the exit line says)."""
        b = self.buffer
        self.stats.stored, self.stats.failed_flushes, self.stats.dropped = b.stored, b.failed_flushes, b.dropped

    async def run(self) -> None:
        """Flush every interval and publish the state file every two seconds, until cancelled."""
        next_state = float("-inf")
        while True:
            await asyncio.sleep(self.interval_s)
            await self.flush()
            mono = self.mono_s()
            if mono >= next_state:  # the dashboard's view of this worker (planner.store.worker_state)
                await asyncio.to_thread(self._publish)
                next_state = mono + _STATE_EVERY_S

    async def replay_spool(self) -> None:
        """Store what an earlier stop spooled (planner.worker.spool); a database error keeps it for the next start."""
        from planner.worker import spool

        try:
            n = await asyncio.to_thread(spool.replay, self.engine)
        except (SQLAlchemyError, OSError) as exc:
            log.warning("could not replay the spool yet (kept for the next start): %s", first_line(exc))
            return
        if n:
            log.info("stored %d rows from the local spool", n)

    async def stop_flush(self, timeout_s: float) -> None:
        """The last flush, bounded by timeout_s; whatever is still unsaved is written to the local spool (what the
        spool refuses too, a full disk, is counted as dropped)."""
        try:
            await asyncio.wait_for(self.flush(final=True), timeout=timeout_s)
        except TimeoutError:
            log.warning("the database did not answer within %.1f s at stop", timeout_s)
        self.stats.spooled += self.buffer.spool_rest()
        self._count()
