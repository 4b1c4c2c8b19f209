"""The worker's source syncs: every pulled live source (planner.store.sources: the LiteLLM proxy's database,
Prometheus) read into the store on a period; an OpenTelemetry source is pushed to its receiver instead.

Only a lease holder syncs (one worker per vantage; where several vantages run, each holder syncs, and the store's one
row per request id keeps their reads from doubling anything), in a thread of its own: a long first sync (a million
requests take about a minute) never holds up a probe, a lease renewal or a flush. A source that fails (unreachable,
its variable unset, its table changed) is recorded on it (`last_error`, shown on the Sources page) and tried again
next period; the loop never stops for it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from planner.errors import PlannerError
from planner.sources.sync import sync_source
from planner.store.sources import list_sources

__all__ = ["SourceSyncs"]

log = logging.getLogger("planner.worker")


class SourceSyncs:
    """Syncs every source each `every_s` (wall seconds on the worker's clock), while `holds_lease()`."""

    def __init__(
        self,
        engine: Engine,
        *,
        every_s: float,
        now_ms: Callable[[], int],
        holds_lease: Callable[[], bool],
        poll_s: float = 1.0,
    ) -> None:
        self.engine = engine
        self.every_ms = int(every_s * 1000)
        self.now_ms = now_ms
        self.holds_lease = holds_lease
        self.poll_s = poll_s
        self._next_ms: int | None = None
        self.passes = 0  # completed passes over the sources (tests wait on it)

    def sync_all(self) -> None:
        """One pass: each source in turn; a failing one is recorded and the others still sync."""
        for source in list_sources(self.engine):
            if not source.kind.pulled:
                continue  # pushed to the receiver
            try:
                rep = sync_source(self.engine, source)
            except (PlannerError, ValueError, SQLAlchemyError, OSError) as exc:
                log.warning("source %s: sync failed (tried again next period): %s", source.name, exc)
                continue
            if rep.new or rep.left_out:
                log.info("source %s: %d new, %d left out", source.name, rep.new, len(rep.left_out))
        self.passes += 1

    async def run(self) -> None:
        """Until cancelled: a pass when due and this worker holds the lease."""
        while True:
            now = self.now_ms()
            if self.every_ms > 0 and self.holds_lease() and (self._next_ms is None or now >= self._next_ms):
                self._next_ms = now + self.every_ms
                await asyncio.to_thread(self.sync_all)
            await asyncio.sleep(self.poll_s)
