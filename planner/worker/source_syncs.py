"""The worker's source syncs: every pulled live source (planner.store.sources: the LiteLLM proxy's database,
Prometheus) read into the store on a period; an OpenTelemetry source is pushed to its receiver instead.

Only a lease holder syncs (one worker per vantage; where several vantages run, each holder syncs, and the store's one
row per request id keeps their reads from doubling anything), off the worker's loop: a long first sync (a million
requests take about a minute) never holds up a probe, a lease renewal or a flush.

Each source syncs in a daemon thread of its own, all of a pass at once, so one source cannot stop or slow the others:
- a sync that fails, however (unreachable, its variable unset, its table changed, an answer no reader expected), is
  recorded on its source (`last_error`, shown on the Sources page) and logged as one line (the traceback of an
  unexpected one at debug level); the pass goes on;
- a pass waits for its syncs up to `deadline_s`, then ends: a sync still running (a black-holed database, a dripping
  Prometheus) is left to finish or fail on its own, and while it runs the passes after skip its source and record
  that on it. Each source therefore holds at most one thread; the readers' own deadlines end the threads.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Callable

from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from planner.errors import PlannerError
from planner.inputs.env_names import mask_env_value
from planner.inputs.urls import mask_url_password
from planner.sources.litellm import LiteLLMError
from planner.sources.prometheus import PrometheusError
from planner.sources.sync import SyncReport, sync_source
from planner.store.sources import SourceInfo, list_sources, record_sync_error
from planner.worker.daemon_executor import DaemonThreadExecutor

__all__ = ["DEFAULT_DEADLINE_S", "SourceSyncs"]

log = logging.getLogger("planner.worker")

DEFAULT_DEADLINE_S = 120.0  # how long a pass waits for its slowest source before it ends (the sync goes on alone)
_RECORDED_BY_SYNC = (LiteLLMError, PrometheusError)  # sync_source records these on the source itself


class SourceSyncs:
    """Syncs every source each `every_s` (wall seconds on the worker's clock), while `holds_lease()`; a pass waits
    for its syncs up to `deadline_s` real seconds. `sync` reads one source (planner.sources.sync.sync_source)."""

    def __init__(
        self,
        engine: Engine,
        *,
        every_s: float,
        now_ms: Callable[[], int],
        holds_lease: Callable[[], bool],
        poll_s: float = 1.0,
        deadline_s: float = DEFAULT_DEADLINE_S,
        sync: Callable[[Engine, SourceInfo], SyncReport] = sync_source,
    ) -> None:
        self.engine = engine
        self.every_ms = int(every_s * 1000)
        self.now_ms = now_ms
        self.holds_lease = holds_lease
        self.poll_s = poll_s
        self.deadline_s = deadline_s
        self._sync = sync
        self._next_ms: int | None = None
        self._threads = DaemonThreadExecutor()  # one thread per sync: a hung read never blocks the worker's exit
        self._running: dict[int, tuple[concurrent.futures.Future[None], int]] = {}  # source id → (its sync, since ms)
        self._lock = threading.Lock()
        self.passes = 0  # completed passes over the sources (tests wait on it)

    def sync_all(self) -> None:
        """One pass: every pulled source at once, each in its own thread; waits for them up to `deadline_s`. A source
        whose previous sync still runs is skipped (and that recorded on it). Never raises for a source."""
        try:
            sources = [s for s in list_sources(self.engine) if s.kind.pulled]  # OTLP: pushed to the receiver
        except (PlannerError, SQLAlchemyError, OSError) as exc:
            log.warning("sources: cannot list them (tried again next period): %s", " ".join(str(exc).split())[:300])
            self.passes += 1
            return
        started: dict[concurrent.futures.Future[None], SourceInfo] = {}
        for source in sources:
            with self._lock:
                previous = self._running.get(source.id)
                if previous is not None and not previous[0].done():
                    self._skip(source, previous[1])
                    continue
                future = self._threads.submit(self._sync_one, source)
                self._running[source.id] = (future, self.now_ms())
            started[future] = source
        with self._lock:  # a deleted source's finished sync is forgotten
            kept = {s.id for s in sources}
            for gone in [i for i, (f, _) in self._running.items() if i not in kept and f.done()]:
                del self._running[gone]
        _, late = concurrent.futures.wait(started, timeout=self.deadline_s)
        for future in late:
            log.warning(
                "source %s: still syncing after %g s; the pass goes on without it (skipped until it ends)",
                started[future].name,
                self.deadline_s,
            )
        self.passes += 1

    def _skip(self, source: SourceInfo, since_ms: int) -> None:
        """Record that `source`'s previous sync, started at `since_ms`, still runs: this pass leaves it out."""
        running_s = max(0, self.now_ms() - since_ms) / 1000
        said = f"sync skipped: the previous one is still running ({running_s:.0f} s); the server may be hanging"
        log.warning("source %s: %s", source.name, said)
        self._record(source, said)

    def _sync_one(self, source: SourceInfo) -> None:
        """Sync `source`; any failure is logged as one line and recorded on it, never raised."""
        try:
            rep = self._sync(self.engine, source)
        except _RECORDED_BY_SYNC as exc:
            log.warning("source %s: sync failed (tried again next period): %s", source.name, _masked(str(exc), source))
            return
        except Exception as exc:  # noqa: BLE001 - one source's failure, whatever it is, must not stop the others
            said = _masked(f"sync failed unexpectedly: {type(exc).__name__}: {exc}", source)
            log.warning("source %s: %s (tried again next period)", source.name, said)
            log.debug("source %s: the unexpected failure's traceback", source.name, exc_info=True)
            self._record(source, said)
            return
        if rep.new or rep.left_out:
            log.info("source %s: %d new, %d left out", source.name, rep.new, len(rep.left_out))

    def _record(self, source: SourceInfo, said: str) -> None:
        """`said` as the source's last error; a store that cannot take it is logged, not raised."""
        try:
            record_sync_error(self.engine, source.id, said)
        except (SQLAlchemyError, OSError, PlannerError) as exc:
            log.warning("source %s: its error could not be recorded: %s", source.name, " ".join(str(exc).split())[:300])

    async def run(self) -> None:
        """Until cancelled: a pass when due and this worker holds the lease."""
        while True:
            now = self.now_ms()
            if self.every_ms > 0 and self.holds_lease() and (self._next_ms is None or now >= self._next_ms):
                self._next_ms = now + self.every_ms
                await asyncio.to_thread(self.sync_all)
            await asyncio.sleep(self.poll_s)


def _masked(text: str, source: SourceInfo) -> str:
    """`text` on one line, at most 500 characters, with the source's secrets masked: its URL's credentials and the
    value of the variable it names (planner.inputs.env_names.mask_env_value), in every form a message can carry them."""
    text = mask_url_password(mask_env_value(text, source.secret_ref), source.url or "")
    text = " ".join(text.split())
    return text if len(text) <= 500 else text[:499] + "…"
