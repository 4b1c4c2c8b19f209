"""The worker process: one asyncio loop that probes every enabled endpoint of its vantage on schedule.

Three tasks share the loop:

- the *scheduler loop* wakes at the next firing time (planner.worker.scheduler
  decides run / skip), starts a probe task per due slot — at most one in flight
  per endpoint — and turns skipped slots into ``kind='skipped'`` rows;
- the *flusher* writes buffered rows in batches (default every second) through
  ``planner.store.probes.insert_samples``, which is idempotent per slot, so a
  crash and restart never duplicates a row; a locked or full database keeps the
  rows in memory (bounded) and retries, and the worker keeps probing;
- *housekeeping* renews the vantage lease (planner.worker.lease), reloads the
  endpoint list, claims "probe now" / cold-reading requests, writes endpoint
  status, applies retention hourly and checkpoints the SQLite WAL.

Blocking database calls run in threads (`asyncio.to_thread`) so a slow write
never delays a probe. SIGTERM/SIGINT stop scheduling, let in-flight probes
finish (up to a grace), flush, release the lease and exit.

RTT targets (planner.store.rtt / planner.probes.rtt, when installed) are
scheduled by the same scheduler as jobs ``rtt:<id>``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from planner.endpoints import endpoint_problem, list_endpoints
from planner.regions import RTT_INTERVAL_BOUNDS_S
from planner.store.probes import EndpointRow, ProbeSampleRow
from planner.store.worker import EndpointStatusRow, WorkerLeaseRow
from planner.worker import lease, retention
from planner.worker.daemon_executor import DaemonThreadExecutor
from planner.worker.requests import RequestHandling
from planner.worker.scheduler import Scheduler, SteadyClock

__all__ = ["Worker", "WorkerConfig", "WorkerStats", "run_worker"]

log = logging.getLogger("planner.worker")

_S = ProbeSampleRow.__table__
_STATUS = EndpointStatusRow.__table__
_LEASE = WorkerLeaseRow.__table__


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__

ProbeFn = Callable[..., Awaitable[Any]]


@dataclass
class WorkerConfig:
    """Worker settings (seconds unless named otherwise)."""

    vantage: str = ""
    lease_ttl_s: float = lease.DEFAULT_LEASE_TTL_S
    flush_interval_s: float = 1.0
    flush_max_rows: int = 500
    max_buffer_rows: int = 200_000
    reload_interval_s: float = 2.0
    request_poll_s: float = 1.0
    retention_days: float | None = None  # None: $TTFT_PLANNER_RETENTION_DAYS or 90
    retention_every_s: float = 3600.0
    checkpoint_every_s: float = 300.0
    shutdown_grace_s: float = 10.0
    stop_flush_s: float = 5.0  # at stop, wait this long for the database; unsaved rows then go to the spool
    max_tick_s: float = 0.25
    probe_attempts: int = 2
    cold_deadline_s: float = 600.0
    probe_processes: int = 1  # clean probe processes (plus one quarantine); 0 = probe in the worker's own loop
    holder: str = field(default_factory=lease.holder_id)


@dataclass
class WorkerStats:
    """Counters and schedule lateness (ms) for benchmarks and the log."""

    runs: int = 0
    skipped: int = 0
    stored: int = 0
    failed_flushes: int = 0
    spooled: int = 0
    lateness_ms: list[float] = field(default_factory=list)
    skip_reasons: dict[str, int] = field(default_factory=dict)


def _target_for(ep: EndpointRow):
    from planner.probes.ttft import ProbeTarget

    timeout = min(ep.timeout_s, ep.interval_s * 0.9)
    return ProbeTarget(base_url=ep.base_url, model=ep.model, protocol=ep.protocol, api_key_env=ep.api_key_env,
                       prompt_tokens=ep.prompt_tokens, max_tokens=ep.max_tokens, timeout_s=timeout,
                       keep_alive=ep.connection_policy == "keep-alive")


def _skip_row(endpoint_id: int, vantage: str, slot_ms: int, now_ms: int, reason: str) -> ProbeSampleRow:
    return ProbeSampleRow(endpoint_id=endpoint_id, vantage=vantage, kind="skipped", scheduled_at_ms=slot_ms,
                          started_at_ms=now_ms, ok=False, error_class="skipped", error_detail=reason[:500])


class Worker(RequestHandling):
    """Probes the endpoints of one vantage. `probe` defaults to planner.probes.ttft.probe_once.

    Seams: `clock` (SteadyClock over injectable monotonic/wall clocks), `probe`.
    """

    def __init__(self, engine: Engine, config: WorkerConfig | None = None, *, clock: SteadyClock | None = None,
                 probe: ProbeFn | None = None) -> None:
        self.engine = engine
        self.config = config or WorkerConfig()
        self.clock = clock or SteadyClock()
        self._probe = probe
        self.scheduler = Scheduler()
        self.stats = WorkerStats()
        self.holds_lease = False
        self._stop = asyncio.Event()
        self._wake = asyncio.Event()
        self._buffer: list[ProbeSampleRow] = []
        self._flush_lock = asyncio.Lock()
        self._tasks: set[asyncio.Task] = set()
        self._endpoints: dict[int, EndpointRow] = {}
        self._status: dict[int, dict] = {}
        self._status_dirty: set[int] = set()
        self._last_probe_end_ms: dict[int, int] = {}
        self._rtt_run: Callable[..., Awaitable[None]] | None = None
        self._cold_active: set[int] = set()
        self._last_error: dict[int, str | None] = {}  # the last probe's error class: picks its probe lane
        self._pool = None
        self.task_failures: list[dict] = []  # background tasks that died (and were restarted)
        self._unsaved_since_ms: int | None = None
        self._last_db_error: str | None = None
        self._lease_checked_ms = 0
        self._bad_rtt: set[str] = set()
        self._crashed_until_ms: int | None = None
        self._woke_from_pause = False  # set when the loop sat still past a renewal period; cleared on renewal
        self._jumps_seen = 0

    # ---------------------------------------------------------------- public

    def request_stop(self) -> None:
        """Ask the worker to stop (what SIGTERM/SIGINT do)."""
        self._stop.set()
        self._wake.set()

    async def run(self) -> None:
        """Run until request_stop(); then finish in-flight probes (up to the grace), flush (bounded by
        stop_flush_s; the rest goes to the local spool) and release the lease.

        Raises StoreError at once when the database is read-only (nothing would ever be stored)."""
        log.info("worker starting: vantage=%r holder=%s", self.config.vantage, self.config.holder)
        loop = asyncio.get_running_loop()
        loop.set_default_executor(DaemonThreadExecutor())  # a stuck database call never blocks the stop
        await asyncio.to_thread(self._check_writable)
        await self._replay_spool()
        if self._probe is None and self.config.probe_processes > 0:
            from planner.worker.probe_pool import ProbePool

            self._pool = ProbePool(self.config.probe_processes)
            try:
                await self._pool.start()
            except Exception as exc:  # noqa: BLE001 - probing in-process is worse isolation, not no probing
                log.error("cannot start probe processes (%s): probing in the worker's own loop", exc)
                await self._pool.close()
                self._pool = None
        background = [self._supervise("housekeeping", self._housekeeping_loop),
                      self._supervise("flusher", self._flush_loop)]
        try:
            await self._schedule_loop()
        finally:
            await self._drain()
            for t in background:
                t.cancel()
            for t in background:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await t
            deadline = time.monotonic() + self.config.stop_flush_s  # one bounded wait for the whole stop

            def left() -> float:
                return max(0.1, deadline - time.monotonic())

            await self._stop_flush(left())
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._write_statuses(), timeout=left())
            if self.holds_lease:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(asyncio.to_thread(lease.release, self.engine, self.config.vantage,
                                                             self.config.holder), timeout=left())
                self.holds_lease = False
            if self._pool is not None:
                await self._pool.close()
            self._publish_state(stopped=True)
            log.info("worker stopped: %d probes, %d skipped slots, %d rows stored, %d spooled", self.stats.runs,
                     self.stats.skipped, self.stats.stored, self.stats.spooled)

    def _check_writable(self) -> None:
        """Fail fast on a read-only database (one clear StoreError) instead of warning forever."""
        from planner.store.engine import StoreError, redacted

        try:
            with self.engine.begin() as conn:
                # A write that matches no row: refused all the same by a read-only file, database or role.
                conn.execute(_LEASE.update().where(_LEASE.c.vantage == "\n(write check)\n").values(holder=""))
        except SQLAlchemyError as exc:
            text = str(getattr(exc, "orig", exc)).strip().splitlines()[0] if str(exc) else type(exc).__name__
            low = text.lower().replace("-", "")
            if "readonly" in low or "read only" in low or "permission denied" in low:
                raise StoreError(f"database {redacted(str(self.engine.url))} is read-only ({text}): the worker must "
                                 "write its samples; fix the file's permissions or the role's privileges") from None
            # anything else (locked, down) is an outage the worker rides out

    def _supervise(self, name: str, body: Callable[[], Awaitable[None]]) -> asyncio.Task:
        """Run `body` forever: if it dies it is logged, recorded for the dashboard and restarted (backoff ≤ 30 s)."""

        async def keep_running() -> None:
            backoff_s = 1.0
            while True:
                try:
                    await body()
                    return
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - any bug: log, show, restart
                    log.exception("background task %s died: restarting it in %g s", name, backoff_s)
                    self.task_failures.append({"task": name, "at_ms": self.clock.now_ms(),
                                               "error": f"{type(exc).__name__}: {exc}"[:300]})
                    del self.task_failures[:-10]
                    self._publish_state()
                    await asyncio.sleep(backoff_s)
                    backoff_s = min(30.0, backoff_s * 2)

        return asyncio.create_task(keep_running(), name=name)

    async def _replay_spool(self) -> None:
        from planner.worker import spool

        try:
            n = await asyncio.to_thread(spool.replay, self.engine)
        except (SQLAlchemyError, OSError) as exc:
            log.warning("could not replay the spool yet (kept for the next start): %s", _first_line(exc))
            return
        if n:
            log.info("stored %d rows from the local spool", n)

    async def _stop_flush(self, timeout_s: float) -> None:
        """The last flush, bounded by timeout_s; whatever is still unsaved is written to the local spool."""
        try:
            await asyncio.wait_for(self._flush(final=True), timeout=timeout_s)
        except TimeoutError:
            log.warning("the database did not answer within %.1f s at stop", timeout_s)
        rows = list(self._buffer)
        if not rows:
            return
        from planner.worker import spool

        try:
            path = spool.write(self.engine, rows)
        except OSError as exc:
            log.error("could not spool %d unsaved probe rows: %s (they are lost)", len(rows), exc)
            return
        self._buffer.clear()
        self.stats.spooled += len(rows)
        log.warning("spooled %d unsaved probe rows to %s; the next start stores them", len(rows), path)

    def _publish_state(self, stopped: bool = False) -> None:
        """Write the state file the dashboard reads (planner.worker.state); never raises."""
        from planner.worker import state

        host, pid, _ = (self.config.holder.split(":") + ["", ""])[:3]
        data = {"holder": self.config.holder, "host": host, "pid": int(pid) if pid.isdigit() else os.getpid(),
                "vantage": self.config.vantage, "updated_at_ms": 0 if stopped else self.clock.now_ms(),
                "holds_lease": self.holds_lease, "unsaved_rows": len(self._buffer),
                "unsaved_since_ms": self._unsaved_since_ms if self._buffer else None,
                "last_error": self._last_db_error, "spooled_rows": self.stats.spooled,
                "task_failures": self.task_failures}
        try:
            state.write_state(self.engine, self.config.vantage, data)
        except OSError as exc:
            log.debug("could not write the worker state file: %s", exc)

    # ---------------------------------------------------------- scheduling

    async def _schedule_loop(self) -> None:
        last_mono = time.monotonic()
        while not self._stop.is_set():
            mono = time.monotonic()
            if mono - last_mono > self.config.lease_ttl_s / 3 or self.clock.jumps != self._jumps_seen:
                # This loop did not run for longer than a renewal period (SIGSTOP, a laptop lid, a suspended VM):
                # another worker may have taken the vantage meanwhile. Re-check before running or skipping
                # anything. (A database outage does not count: the loop keeps running then, and keeps probing.)
                self._woke_from_pause = True
                self._jumps_seen = self.clock.jumps
                with contextlib.suppress(SQLAlchemyError, OSError):
                    await self._renew_lease()
            last_mono = mono
            now = self.clock.now_ms()
            if self.holds_lease:
                for action in self.scheduler.due(now):
                    self._dispatch(action, now)
            nxt = self.scheduler.next_fire_ms() if self.holds_lease else None
            delay_s = self.config.max_tick_s if nxt is None else min(self.config.max_tick_s, max(0.0, (nxt - now) / 1000))
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=delay_s)

    def _dispatch(self, action, now_ms: int) -> None:
        kind, _, ident = action.key.partition(":")
        if action.action == "skip":
            self.stats.skipped += 1
            self.stats.skip_reasons[action.reason.split(" (")[0]] = self.stats.skip_reasons.get(action.reason.split(" (")[0], 0) + 1
            if kind == "endpoint":
                self._buffer_rows([_skip_row(int(ident), self.config.vantage, action.slot_ms, now_ms, action.reason)])
            return
        self.stats.runs += 1
        self.stats.lateness_ms.append(float(action.lateness_ms))
        job = self.scheduler.jobs[action.key]
        if kind == "endpoint":
            coro = self._probe_endpoint(job.payload, action.slot_ms, "scheduled", action.key)
        else:
            coro = self._run_rtt(job.payload, action.key)
        self._spawn(coro)

    def _spawn(self, coro) -> asyncio.Task:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # --------------------------------------------------------------- probing

    async def _probe_sample(self, ep: EndpointRow, *, attempts: int | None = None, timeout_s: float | None = None):
        """One TtftSample for `ep`, or None (status set) when its API key is missing."""
        from planner.probes.errors import MissingApiKey
        from planner.probes.ttft import probe_once, resolve_api_key

        target = _target_for(ep)
        if timeout_s is not None:
            target = dataclasses.replace(target, timeout_s=timeout_s)
        try:
            api_key = resolve_api_key(target)
        except MissingApiKey as exc:
            self._set_status(ep.id, "key missing", str(exc))
            return None
        n = self.config.probe_attempts if attempts is None else attempts
        wait_s = max(0.0, min(5.0, ep.interval_s * 0.2))
        if self._probe is None and self._pool is not None:
            lane = self._pool.lane_for(ep.id, self._last_error.get(ep.id))
            return await self._pool.probe(target, api_key=api_key, max_attempts=n, max_retry_wait_s=wait_s, lane=lane)
        probe = self._probe or probe_once
        return await probe(target, api_key=api_key, max_attempts=n, max_retry_wait_s=wait_s)

    async def _probe_endpoint(self, ep: EndpointRow, slot_ms: int, kind: str, job_key: str | None) -> Any:
        try:
            now = self.clock.now_ms()
            gap = None
            if ep.id in self._last_probe_end_ms:
                gap = float(now - self._last_probe_end_ms[ep.id])
            try:
                # Belt and braces: a probe never outlives its interval, whatever its retries do.
                sample = await asyncio.wait_for(self._probe_sample(ep), timeout=max(ep.interval_s * 0.95, ep.timeout_s))
            except TimeoutError:
                sample = None
                row = ProbeSampleRow(endpoint_id=ep.id, vantage=self.config.vantage, kind=kind, scheduled_at_ms=slot_ms,
                                     started_at_ms=now, ok=False, error_class="read_timeout",
                                     error_detail=f"probe exceeded its slot deadline ({ep.interval_s:g} s)", idle_gap_ms=gap)
                self._after_probe(ep, row)
                return row
            if sample is None:
                return None
            row = sample.to_row(ep.id, self.config.vantage, kind, slot_ms, idle_gap_ms=gap)
            self._after_probe(ep, row)
            return sample
        except Exception as exc:  # a bug in a probe must not kill the worker or stop the other endpoints
            log.exception("probe of endpoint %s failed unexpectedly", ep.name)
            row = ProbeSampleRow(endpoint_id=ep.id, vantage=self.config.vantage, kind=kind, scheduled_at_ms=slot_ms,
                                 started_at_ms=self.clock.now_ms(), ok=False, error_class="http_error",
                                 error_detail=f"internal error: {type(exc).__name__}: {exc}"[:500])
            self._buffer_rows([row])
            return None
        finally:
            self._last_probe_end_ms[ep.id] = self.clock.now_ms()
            if job_key is not None:
                self.scheduler.done(job_key)

    def _after_probe(self, ep: EndpointRow, row: ProbeSampleRow) -> None:
        self._buffer_rows([row])
        self._last_error[ep.id] = None if row.ok else row.error_class
        st = self._status.get(ep.id, {})
        fails = 0 if row.ok else st.get("consecutive_failures", 0) + 1
        state = "ok" if row.ok else "failing"
        detail = None if row.ok else f"{row.error_class}: {row.error_detail or ''}"[:500]
        self._set_status(ep.id, state, detail, consecutive_failures=fails, last_probe_at_ms=row.started_at_ms)

    async def _run_rtt(self, target_row: Any, job_key: str) -> None:
        try:
            await self._rtt_run(self.engine, target_row, self.config.vantage)  # type: ignore[misc]
        except Exception:
            log.exception("RTT probe of target %s failed unexpectedly", getattr(target_row, "id", "?"))
        finally:
            self.scheduler.done(job_key)

    # -------------------------------------------------------------- buffering

    def _buffer_rows(self, rows: list[ProbeSampleRow]) -> None:
        if not self._buffer:
            self._unsaved_since_ms = self.clock.now_ms()
        self._buffer.extend(rows)
        overflow = len(self._buffer) - self.config.max_buffer_rows
        if overflow > 0:  # the database has been unwritable for a long time: keep the newest rows
            log.error("database unwritable: dropping the %d oldest unsaved rows", overflow)
            del self._buffer[:overflow]

    async def _flush(self, final: bool = False) -> None:
        async with self._flush_lock:  # one flush at a time: two would delete each other's batch from the buffer
            await self._flush_locked(final)

    async def _flush_locked(self, final: bool) -> None:
        from planner.store.probes import insert_samples

        if self._buffer and self.holds_lease and self._woke_from_pause:
            confirmed_ms = self._lease_checked_ms
            with contextlib.suppress(SQLAlchemyError, OSError):
                await self._renew_lease()
            if not self.holds_lease:
                # Slots after the lease was last ours belong to the worker that took over: their "skipped" rows
                # would contradict its probes. Measured samples are kept (a slot's probe wins over a skip).
                before = len(self._buffer)
                self._buffer = [r for r in self._buffer if not (r.kind == "skipped" and r.scheduled_at_ms > confirmed_ms)]
                if before != len(self._buffer):
                    log.warning("lost the lease while paused: dropped %d skipped-slot rows of the new holder's slots",
                                before - len(self._buffer))
        while self._buffer:
            batch = self._buffer[: self.config.flush_max_rows]
            try:
                try:
                    await asyncio.to_thread(insert_samples, self.engine, batch)
                except IntegrityError:
                    # An endpoint was removed while its probe was in flight: its rows have nowhere to go.
                    gone = await asyncio.to_thread(self._missing_endpoints, {r.endpoint_id for r in batch})
                    if not gone:
                        raise
                    log.info("dropping the rows of removed endpoint(s) %s", sorted(gone))
                    self._buffer = [r for r in self._buffer if r.endpoint_id not in gone]
                    continue
            except (SQLAlchemyError, OSError) as exc:
                self.stats.failed_flushes += 1
                self._last_db_error = _first_line(exc)[:300]
                log.warning("could not store %d probe rows (kept in memory, will retry): %s", len(batch),
                            self._last_db_error)
                return
            del self._buffer[: len(batch)]
            self.stats.stored += len(batch)
            self._last_db_error = None
            if self._buffer:
                self._unsaved_since_ms = self.clock.now_ms()
            if not final and len(self._buffer) < self.config.flush_max_rows:
                return

    def _missing_endpoints(self, ids: set[int]) -> set[int]:
        t = EndpointRow.__table__
        with self.engine.connect() as conn:
            present = {r[0] for r in conn.execute(sa.select(t.c.id).where(t.c.id.in_(ids)))}
        return ids - present

    async def _flush_loop(self) -> None:
        next_state = 0.0
        while True:
            await asyncio.sleep(self.config.flush_interval_s)
            await self._flush()
            if time.monotonic() >= next_state:  # the dashboard's view of this worker (planner.worker.state)
                await asyncio.to_thread(self._publish_state)
                next_state = time.monotonic() + 2.0

    # ------------------------------------------------------------ housekeeping

    async def _housekeeping_loop(self) -> None:
        next_lease = next_reload = next_req = 0.0
        next_retention = time.monotonic() + 60.0
        next_ckpt = time.monotonic() + self.config.checkpoint_every_s
        while True:
            mono = time.monotonic()
            try:
                if mono >= next_lease:
                    await self._renew_lease()
                    next_lease = mono + self.config.lease_ttl_s / 3
                if self.holds_lease and mono >= next_reload:
                    await self._reload()
                    next_reload = mono + self.config.reload_interval_s
                if self.holds_lease and mono >= next_req:
                    await self._claim_requests()
                    next_req = mono + self.config.request_poll_s
                await self._write_statuses()
                if self.holds_lease and mono >= next_retention:
                    res = await asyncio.to_thread(retention.apply_retention, self.engine, self.clock.now_ms(),
                                                  self.config.retention_days, vantage=self.config.vantage)
                    if res.deleted_samples:
                        log.info("retention: rolled %d samples into %d hourly rollups", res.deleted_samples, res.rollup_hours)
                    next_retention = mono + self.config.retention_every_s
                if mono >= next_ckpt and self.engine.dialect.name == "sqlite":
                    await asyncio.to_thread(self._checkpoint)
                    next_ckpt = mono + self.config.checkpoint_every_s
            except (SQLAlchemyError, OSError) as exc:
                self._last_db_error = _first_line(exc)[:300]
                log.warning("database problem (worker keeps running): %s", self._last_db_error)
            await asyncio.sleep(min(0.2, self.config.request_poll_s))

    def _checkpoint(self) -> None:
        with self.engine.connect() as conn:
            conn.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)")

    async def _renew_lease(self) -> None:
        prev = None
        if not self.holds_lease:
            prev = next((r for r in await asyncio.to_thread(lease.current, self.engine)
                         if r["vantage"] == self.config.vantage), None)
        got = await asyncio.to_thread(lease.acquire, self.engine, self.config.vantage, self.config.holder,
                                      self.clock.now_ms(), self.config.lease_ttl_s)
        if got and prev is not None and prev["holder"] != self.config.holder and prev["expires_at_ms"] != 0:
            # The previous holder never released its lease: it was killed. What it probed in its last moments
            # never reached the database; those slots are labelled as lost in a crash, not "not running".
            from planner.worker import state

            last = state.read_state(self.engine, self.config.vantage) or {}
            alive_ms = max(int(prev["renewed_at_ms"]),
                           int(last.get("updated_at_ms") or 0) if last.get("holder") == prev["holder"] else 0)
            self._crashed_until_ms = alive_ms + int(self.config.lease_ttl_s * 1000 / 3)
            log.warning("the previous worker of vantage %r (%s) did not stop cleanly; its last slots are "
                        "labelled lost in a crash", self.config.vantage, prev["holder"])
        if got:
            self._lease_checked_ms = self.clock.now_ms()
            self._woke_from_pause = False
        if got and not self.holds_lease:
            log.info("holding the lease of vantage %r: probing", self.config.vantage)
            self.holds_lease = True
            await self._reload(initial=True)
            self._wake.set()
        elif not got and self.holds_lease:
            log.warning("lost the lease of vantage %r to another worker: standing by", self.config.vantage)
            self.holds_lease = False
            self.scheduler.jobs.clear()
        elif not got and not self.stats.runs:
            log.debug("vantage %r is held by another worker: standing by", self.config.vantage)

    def _load(self, initial: bool) -> tuple[list[EndpointRow], dict[int, int], list[Any]]:
        eps = list_endpoints(self.engine, enabled_only=True, vantage=self.config.vantage)
        last: dict[int, int] = {}
        if initial and eps:
            with self.engine.connect() as conn:
                rows = conn.execute(
                    sa.select(_S.c.endpoint_id, sa.func.max(_S.c.scheduled_at_ms))
                    .where(_S.c.vantage == self.config.vantage, _S.c.kind.in_(("scheduled", "skipped")))
                    .group_by(_S.c.endpoint_id)
                ).all()
            last = {int(e): int(m) for e, m in rows}
        rtt_targets: list[Any] = []
        if self._rtt_run is None:
            self._rtt_run = _rtt_runner()
        if self._rtt_run is not None:
            from planner.store.rtt import scheduled_rtt_targets

            rtt_targets = list(scheduled_rtt_targets(self.engine, self.config.vantage))
        return eps, last, rtt_targets

    async def _reload(self, initial: bool = False) -> None:
        eps, last, rtt_targets = await asyncio.to_thread(self._load, initial)
        now = self.clock.now_ms()
        keep: set[str] = set()
        for ep in eps:
            key = f"endpoint:{ep.id}"
            problem = endpoint_problem(ep)
            if problem is not None:  # e.g. a row an older version stored: report it, never schedule it
                if self._status.get(ep.id, {}).get("detail") != f"not probed: {problem}":
                    log.error("endpoint %s is not probed: %s", ep.name, problem)
                    self._set_status(ep.id, "error", f"not probed: {problem}"[:500])
                continue
            keep.add(key)
            self._endpoints[ep.id] = ep
            job = self.scheduler.add(key, int(round(ep.interval_s * 1000)), now, payload=ep,
                                     last_slot_ms=last.get(ep.id) if initial else None,
                                     crashed_until_ms=self._crashed_until_ms if initial else None)
            if ep.id in self._cold_active:
                job.paused = True
            if ep.id not in self._status:
                self._set_status(ep.id, "ok", None)
            self._status[ep.id]["next_slot_at_ms"] = job.next_slot_ms
        for t in rtt_targets:
            key = f"rtt:{t.id}"
            interval_s = float(t.interval_s)
            if not 0 < interval_s <= RTT_INTERVAL_BOUNDS_S[1]:  # inf / NaN / huge from an older row: never scheduled
                if key not in self._bad_rtt:
                    log.error("RTT target %s is not probed: its interval %r s is not a finite number of seconds "
                              "up to %g", t.region_id, t.interval_s, RTT_INTERVAL_BOUNDS_S[1])
                    self._bad_rtt.add(key)
                continue
            keep.add(key)
            self.scheduler.add(key, int(round(interval_s * 1000)), now, payload=t)
        for key in list(self.scheduler.jobs):
            if key not in keep:
                self.scheduler.remove(key)
        self._wake.set()

    def _set_status(self, endpoint_id: int, state: str, detail: str | None, **extra: Any) -> None:
        st = self._status.setdefault(endpoint_id, {"consecutive_failures": 0})
        st.update(state=state, detail=detail, **extra)
        self._status_dirty.add(endpoint_id)

    async def _write_statuses(self) -> None:
        if not self._status_dirty:
            return
        dirty, self._status_dirty = self._status_dirty, set()
        payload = {i: dict(self._status[i]) for i in dirty}
        try:
            await asyncio.to_thread(self._upsert_statuses, payload)
        except (SQLAlchemyError, OSError):
            self._status_dirty |= dirty
            raise

    def _upsert_statuses(self, payload: dict[int, dict]) -> None:
        now = self.clock.now_ms()
        with self.engine.begin() as conn:
            for eid, st in payload.items():
                job = self.scheduler.jobs.get(f"endpoint:{eid}")
                values = dict(state=st["state"], detail=st.get("detail"), consecutive_failures=st.get("consecutive_failures", 0),
                              last_probe_at_ms=st.get("last_probe_at_ms"),
                              next_slot_at_ms=job.next_slot_ms if job else None, updated_at_ms=now)
                key = sa.and_(_STATUS.c.endpoint_id == eid, _STATUS.c.vantage == self.config.vantage)
                if conn.execute(_STATUS.update().where(key).values(**values)).rowcount == 0:
                    if conn.execute(sa.select(EndpointRow.__table__.c.id).where(EndpointRow.__table__.c.id == eid)).first():
                        conn.execute(_STATUS.insert().values(endpoint_id=eid, vantage=self.config.vantage, **values))

    # ------------------------------------------------------------------ stop

    async def _drain(self) -> None:
        if self._tasks:
            done, pending = await asyncio.wait(set(self._tasks), timeout=self.config.shutdown_grace_s)
            for t in pending:
                t.cancel()
            if pending:
                await asyncio.wait(pending, timeout=2.0)


def _rtt_runner() -> Callable[..., Awaitable[None]] | None:
    """planner.probes.rtt.run_scheduled_rtt when the RTT module is installed, else None (the seam)."""
    try:
        from planner.probes.rtt import run_scheduled_rtt
        from planner.store.rtt import scheduled_rtt_targets  # noqa: F401
    except ImportError:
        return None
    return run_scheduled_rtt


async def run_worker(engine: Engine, config: WorkerConfig | None = None, *, install_signals: bool = True,
                     worker: Worker | None = None) -> Worker:
    """Run a Worker until SIGTERM/SIGINT (or worker.request_stop()); returns it (with its stats)."""
    worker = worker or Worker(engine, config)
    loop = asyncio.get_running_loop()
    if install_signals:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, worker.request_stop)
    try:
        await worker.run()
    finally:
        if install_signals:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
    return worker
