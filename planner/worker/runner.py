"""The worker process: one asyncio loop that probes every enabled endpoint of its vantage on schedule.

The Worker is a composition of small collaborators, each in its own module, sharing one loop:

- the *schedule loop* (here) wakes at the next firing time (planner.worker.scheduler decides run / skip), starts
  a probe task per due slot — at most one in flight per endpoint — and turns skipped slots into
  ``kind='skipped'`` rows; every probe ends as one ProbeSampleRow (planner.store.probes.sample_row);
- the *row buffer* (planner.worker.buffer) holds those rows; the flusher task stores them in batches (default
  every second) through ``planner.store.probes.insert_samples``, idempotent per slot, so a crash and restart
  never duplicates a row; a locked or full database keeps the rows in memory (bounded) and retries;
- *request handling* (planner.worker.requests) claims and runs "probe now" / cold-reading requests and the
  Regions page's RTT requests;
- *housekeeping* (planner.worker.housekeeping) renews the vantage lease (planner.store.leases), reloads the
  endpoint list, writes endpoint status (planner.worker.status), applies retention hourly and checkpoints the
  SQLite WAL.

Each collaborator gets the narrow things it uses in its constructor (the Worker passes itself only as the Protocol
a collaborator names: RequestHost, LeaseHolder), so none of them imports this module.

All SQL is in planner.store. Blocking database calls run in threads (`asyncio.to_thread`) so a slow write never
delays a probe. SIGTERM/SIGINT stop scheduling, let in-flight probes finish (up to a grace), flush, release the
lease and exit. RTT targets (planner.store.rtt / planner.probes.rtt) are scheduled by the same scheduler as jobs
``rtt:<id>``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import signal
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from planner.endpoints import endpoint_problem, list_endpoints
from planner.probes.errors import ErrorClass, MissingApiKey
from planner.probes.rtt import probe_rtt_target
from planner.probes.ttft import ProbeTarget, TtftSample, probe_once, resolve_api_key
from planner.probes.warmup import warm_up
from planner.regions import RTT_INTERVAL_BOUNDS_S
from planner.samples import SampleKind
from planner.store import leases
from planner.store.endpoints import EndpointRow
from planner.store.probes import ProbeSampleRow, sample_row
from planner.store.rtt import insert_rtt_samples, scheduled_rtt_targets
from planner.store.worker import EndpointState, check_writable, last_slots
from planner.worker.buffer import RowBuffer, first_line
from planner.worker.daemon_executor import DaemonThreadExecutor
from planner.worker.housekeeping import Housekeeping
from planner.worker.requests import RequestRunner
from planner.worker.scheduler import Scheduler, SkipCause, SteadyClock
from planner.worker.status import EndpointStatuses
from planner.worker.team import TeamHooks

__all__ = ["Worker", "WorkerConfig", "WorkerStats", "run_scheduled_rtt", "run_worker"]

log = logging.getLogger("planner.worker")

ProbeFn = Callable[..., Awaitable[Any]]


@dataclass
class WorkerConfig:
    """Worker settings (seconds unless named otherwise)."""

    vantage: str = ""
    lease_ttl_s: float = leases.DEFAULT_LEASE_TTL_S
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
    metrics_port: int | None = None  # serve Prometheus /metrics on this port (planner.worker.team)
    metrics_address: str = "127.0.0.1"
    alerts_every_s: float = 30.0  # how often the lease holder evaluates its vantage's alert rules
    holder: str = field(default_factory=leases.holder_id)


@dataclass
class WorkerStats:
    """Counters and schedule lateness (ms) for benchmarks and the log."""

    runs: int = 0
    skipped: int = 0
    stored: int = 0
    failed_flushes: int = 0
    spooled: int = 0
    lateness_ms: list[float] = field(default_factory=list)
    skip_causes: Counter[SkipCause] = field(default_factory=Counter)


def _target_for(ep: EndpointRow) -> ProbeTarget:
    timeout = min(ep.timeout_s, ep.interval_s * 0.9)
    return ProbeTarget(
        base_url=ep.base_url,
        model=ep.model,
        protocol=ep.protocol,
        api_key_env=ep.api_key_env,
        prompt_tokens=ep.prompt_tokens,
        max_tokens=ep.max_tokens,
        timeout_s=timeout,
        keep_alive=ep.connection_policy == "keep-alive",
    )


def _by_cause(causes: Counter[SkipCause]) -> str:
    """' (in_flight 3, late 1)' for the stop line, most frequent first; '' when nothing was skipped."""
    if not causes:
        return ""
    return " (" + ", ".join(f"{cause.name.lower()} {n}" for cause, n in causes.most_common()) + ")"


def _skip_row(endpoint_id: int, vantage: str, slot_ms: int, now_ms: int, reason: str) -> ProbeSampleRow:
    return ProbeSampleRow(
        endpoint_id=endpoint_id,
        vantage=vantage,
        kind=SampleKind.SKIPPED.value,
        scheduled_at_ms=slot_ms,
        started_at_ms=now_ms,
        ok=False,
        error_class=ErrorClass.SKIPPED.value,
        error_detail=reason[:500],
    )


class Worker:
    """Probes the endpoints of one vantage. `probe` defaults to planner.probes.ttft.probe_once.

    Seams: `clock` (SteadyClock over injectable monotonic/wall clocks), `probe`. Every decision reads `clock`: the
    slots, the periods of housekeeping and of the state file, the pause check and the stop's deadline. The loops'
    sleeps only say how often they look: a test that moves an injected clock sees the worker follow within
    `max_tick_s`. Real time is left to measurements and their bounds (a probe's timeout, a cold TTFT).
    Collaborators: `buffer` (RowBuffer), `statuses` (EndpointStatuses), `requests` (RequestRunner), `housekeeping`
    (Housekeeping).
    """

    def __init__(
        self,
        engine: Engine,
        config: WorkerConfig | None = None,
        *,
        clock: SteadyClock | None = None,
        probe: ProbeFn | None = None,
    ) -> None:
        self.engine = engine
        self.config = config or WorkerConfig()
        self.clock = clock or SteadyClock()
        self._probe = probe
        self.scheduler = Scheduler()
        self.stats = WorkerStats()
        self.holds_lease = False
        self.team = TeamHooks(
            engine,
            self.config.vantage,
            metrics_port=self.config.metrics_port,
            metrics_address=self.config.metrics_address,
            alerts_every_s=self.config.alerts_every_s,
        )
        self.buffer = RowBuffer(
            engine,
            now_ms=self.clock.now_ms,
            flush_max_rows=self.config.flush_max_rows,
            max_rows=self.config.max_buffer_rows,
            on_stored=self._stored,
        )
        self.statuses = EndpointStatuses(
            engine, self.config.vantage, now_ms=self.clock.now_ms, next_slot_ms=self._next_slot_ms
        )
        self.endpoints: dict[int, EndpointRow] = {}
        self.last_probe_end_ms: dict[int, int] = {}
        self.requests = RequestRunner(
            self,
            engine=engine,
            vantage=self.config.vantage,
            holder=self.config.holder,
            scheduler=self.scheduler,
            statuses=self.statuses,
            buffer=self.buffer,
            now_ms=self.clock.now_ms,
            cold_deadline_s=self.config.cold_deadline_s,
        )
        self.housekeeping = Housekeeping(
            self,
            self.config,
            engine=engine,
            requests=self.requests,
            statuses=self.statuses,
            team=self.team,
            buffer=self.buffer,
            now_ms=self.clock.now_ms,
            mono_s=self.clock.mono_s,
        )
        self.task_failures: list[dict] = []  # background tasks that died (and were restarted)
        self._stop = asyncio.Event()
        self._wake = asyncio.Event()
        self._tasks: set[asyncio.Task] = set()
        self._last_error: dict[int, str | None] = {}  # the last probe's error class: picks its probe lane
        self._pool: Any = None
        self._lease_checked_ms = 0
        self._bad_rtt: set[str] = set()
        self._crashed_until_ms: int | None = None
        self._woke_from_pause = False  # set when the loop sat still past a renewal period; cleared on renewal
        self._jumps_seen = 0
        self._after_probe: dict[str, list[ProbeSampleRow]] = {}  # job key → skips while its probe runs

    # ---------------------------------------------------------------- public

    @property
    def stopping(self) -> bool:
        """True once a stop was asked for."""
        return self._stop.is_set()

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
        await asyncio.to_thread(check_writable, self.engine)
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
        if self._probe is None and self._pool is None:  # probes in this loop: the first sample must not pay for
            await warm_up()  # lazy imports, the CA bundle and the resolver thread, nor stall the schedule (issue 14)
        self.team.start()
        background = [
            self._supervise("housekeeping", self.housekeeping.run),
            self._supervise("flusher", self._flush_loop),
        ]
        try:
            await self._schedule_loop()
        finally:
            await self._drain()
            for t in background:
                t.cancel()
            for t in background:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await t
            deadline = self.clock.mono_s() + self.config.stop_flush_s  # one bounded wait for the whole stop

            def left() -> float:
                return max(0.1, deadline - self.clock.mono_s())

            await self._stop_flush(left())
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.statuses.write(), timeout=left())
            if self.holds_lease:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(
                        asyncio.to_thread(leases.release, self.engine, self.config.vantage, self.config.holder),
                        timeout=left(),
                    )
                self.holds_lease = False
            if self._pool is not None:
                await self._pool.close()
            self.team.stop()
            self._publish_state(stopped=True)
            log.info(
                "worker stopped: %d probes, %d skipped slots%s, %d rows stored, %d spooled",
                self.stats.runs,
                self.stats.skipped,
                _by_cause(self.stats.skip_causes),
                self.stats.stored,
                self.stats.spooled,
            )

    def _stored(self, rows: list[ProbeSampleRow]) -> None:
        self.team.on_stored(rows, {i: ep.name for i, ep in self.endpoints.items()})
        self.team.on_buffer(len(self.buffer.rows))

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
                    self.task_failures.append(
                        {"task": name, "at_ms": self.clock.now_ms(), "error": f"{type(exc).__name__}: {exc}"[:300]}
                    )
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
            log.warning("could not replay the spool yet (kept for the next start): %s", first_line(exc))
            return
        if n:
            log.info("stored %d rows from the local spool", n)

    async def _stop_flush(self, timeout_s: float) -> None:
        """The last flush, bounded by timeout_s; whatever is still unsaved is written to the local spool."""
        try:
            await asyncio.wait_for(self.flush(final=True), timeout=timeout_s)
        except TimeoutError:
            log.warning("the database did not answer within %.1f s at stop", timeout_s)
        self.stats.spooled += self.buffer.spool_rest()

    def _publish_state(self, stopped: bool = False) -> None:
        """Write the state file the dashboard reads (planner.store.worker_state); never raises."""
        from planner.store import worker_state as state

        host, pid, _ = (self.config.holder.split(":") + ["", ""])[:3]
        data = {
            "holder": self.config.holder,
            "host": host,
            "pid": int(pid) if pid.isdigit() else os.getpid(),
            "vantage": self.config.vantage,
            "updated_at_ms": 0 if stopped else self.clock.now_ms(),
            "holds_lease": self.holds_lease,
            "unsaved_rows": len(self.buffer.rows),
            "unsaved_since_ms": self.buffer.unsaved_since_ms if self.buffer.rows else None,
            "last_error": self.buffer.last_error,
            "spooled_rows": self.stats.spooled,
            "task_failures": self.task_failures,
        }
        try:
            state.write_state(self.engine, self.config.vantage, data)
        except OSError as exc:
            log.debug("could not write the worker state file: %s", exc)

    # ---------------------------------------------------------- scheduling

    async def _schedule_loop(self) -> None:
        last_mono = self.clock.mono_s()
        while not self._stop.is_set():
            mono = self.clock.mono_s()
            if mono - last_mono > self.config.lease_ttl_s / 3 or self.clock.jumps != self._jumps_seen:
                # This loop did not run for longer than a renewal period (SIGSTOP, a laptop lid, a suspended VM):
                # another worker may have taken the vantage meanwhile. Re-check before running or skipping
                # anything. (A database outage does not count: the loop keeps running then, and keeps probing.)
                self._woke_from_pause = True
                self._jumps_seen = self.clock.jumps
                with contextlib.suppress(SQLAlchemyError, OSError):
                    await self.renew_lease()
            last_mono = mono
            now = self.clock.now_ms()
            if self.holds_lease:
                for action in self.scheduler.due(now):
                    self._dispatch(action, now)
            nxt = self.scheduler.next_fire_ms() if self.holds_lease else None
            tick_s = self.config.max_tick_s
            delay_s = tick_s if nxt is None else min(tick_s, max(0.0, (nxt - now) / 1000))
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=delay_s)

    def _dispatch(self, action: Any, now_ms: int) -> None:
        kind, _, ident = action.key.partition(":")
        if action.action == "skip":
            self.stats.skipped += 1
            if action.cause is not None:
                self.stats.skip_causes[action.cause] += 1
            if kind == "endpoint":
                row = _skip_row(int(ident), self.config.vantage, action.slot_ms, now_ms, action.reason)
                if action.cause is SkipCause.IN_FLIGHT:
                    # Stored after the running probe's own row, never before it: a restart resumes after the newest
                    # stored slot, so a skip stored first would leave the running slot unrecorded if the worker were
                    # killed in between.
                    self._after_probe.setdefault(action.key, []).append(row)
                else:
                    self.buffer.add([row])
            return
        self.stats.runs += 1
        self.stats.lateness_ms.append(float(action.lateness_ms))
        self.team.on_lateness(float(action.lateness_ms))
        job = self.scheduler.jobs[action.key]
        if kind == "endpoint":
            assert isinstance(job.payload, EndpointRow)  # reload schedules endpoint jobs with their row
            self.spawn(self.probe_endpoint(job.payload, action.slot_ms, SampleKind.SCHEDULED, action.key))
        else:
            self.spawn(self._run_rtt(job.payload, action.key))

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task:
        """Run `coro` as a task the stop waits for (up to the grace)."""
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _next_slot_ms(self, endpoint_id: int) -> int | None:
        job = self.scheduler.jobs.get(f"endpoint:{endpoint_id}")
        return job.next_slot_ms if job else None

    # --------------------------------------------------------------- probing

    async def probe_sample(
        self, ep: EndpointRow, *, attempts: int | None = None, timeout_s: float | None = None
    ) -> TtftSample | None:
        """One TtftSample for `ep`, or None (status set) when its API key is missing."""
        assert ep.id is not None  # a stored endpoint has its id
        target = _target_for(ep)
        if timeout_s is not None:
            target = dataclasses.replace(target, timeout_s=timeout_s)
        try:
            api_key = resolve_api_key(target)
        except MissingApiKey as exc:
            self.statuses.set(ep.id, EndpointState.KEY_MISSING, str(exc))
            return None
        n = self.config.probe_attempts if attempts is None else attempts
        wait_s = max(0.0, min(5.0, ep.interval_s * 0.2))
        if self._probe is None and self._pool is not None:
            lane = self._pool.lane_for(ep.id, self._last_error.get(ep.id))
            return await self._pool.probe(target, api_key=api_key, max_attempts=n, max_retry_wait_s=wait_s, lane=lane)
        probe = self._probe or probe_once
        return await probe(target, api_key=api_key, max_attempts=n, max_retry_wait_s=wait_s)

    async def probe_endpoint(
        self, ep: EndpointRow, slot_ms: int, kind: SampleKind, job_key: str | None
    ) -> ProbeSampleRow | None:
        """Probe `ep` for one slot and buffer its row; returns that row, or None when it was not probed
        (its API key is missing: the endpoint's status says so). Never raises."""
        assert ep.id is not None  # a stored endpoint has its id
        try:
            now = self.clock.now_ms()
            gap = None
            if ep.id in self.last_probe_end_ms:
                gap = float(now - self.last_probe_end_ms[ep.id])
            try:
                # Belt and braces: a probe never outlives its interval, whatever its retries do.
                sample = await asyncio.wait_for(self.probe_sample(ep), timeout=max(ep.interval_s * 0.95, ep.timeout_s))
            except TimeoutError:
                row = ProbeSampleRow(
                    endpoint_id=ep.id,
                    vantage=self.config.vantage,
                    kind=kind.value,
                    scheduled_at_ms=slot_ms,
                    started_at_ms=now,
                    ok=False,
                    error_class=ErrorClass.READ_TIMEOUT.value,
                    idle_gap_ms=gap,
                    error_detail=f"probe exceeded its slot deadline ({ep.interval_s:g} s)",
                )
            else:
                if sample is None:
                    return None
                row = sample_row(sample, ep.id, self.config.vantage, kind, slot_ms, idle_gap_ms=gap)
            self.buffer.add([row])
            self._last_error[ep.id] = None if row.ok else row.error_class
            self.statuses.after_probe(ep.id, row)
            return row
        except Exception as exc:  # a bug in a probe must not kill the worker or stop the other endpoints
            log.exception("probe of endpoint %s failed unexpectedly", ep.name)
            row = ProbeSampleRow(
                endpoint_id=ep.id,
                vantage=self.config.vantage,
                kind=kind.value,
                scheduled_at_ms=slot_ms,
                started_at_ms=self.clock.now_ms(),
                ok=False,
                error_class=ErrorClass.HTTP_ERROR.value,
                error_detail=f"internal error: {type(exc).__name__}: {exc}"[:500],
            )
            self.buffer.add([row])
            return row
        except asyncio.CancelledError:
            # Cut off at stop: this slot stays unstored, and so do the skips behind it, so the next start labels
            # them all (it resumes after the newest stored slot) instead of leaving this one out.
            if job_key is not None:
                self._after_probe.pop(job_key, None)
            raise
        finally:
            self.last_probe_end_ms[ep.id] = self.clock.now_ms()
            if job_key is not None:
                if skipped_meanwhile := self._after_probe.pop(job_key, []):
                    self.buffer.add(skipped_meanwhile)
                self.scheduler.done(job_key)

    async def _run_rtt(self, target_row: Any, job_key: str) -> None:
        try:
            await run_scheduled_rtt(self.engine, target_row, self.config.vantage)
        except Exception:
            log.exception("RTT probe of target %s failed unexpectedly", getattr(target_row, "id", "?"))
        finally:
            self.scheduler.done(job_key)

    # -------------------------------------------------------------- storing

    async def flush(self, final: bool = False) -> None:
        """Store the buffered rows (one flush at a time). After a pause, re-check the lease first: slots after
        the lease was last ours belong to the worker that took over, so their "skipped" rows are dropped."""
        async with self.buffer.lock:
            if self.buffer.rows and self.holds_lease and self._woke_from_pause:
                confirmed_ms = self._lease_checked_ms
                with contextlib.suppress(SQLAlchemyError, OSError):
                    await self.renew_lease()
                if not self.holds_lease:
                    # Measured samples are kept (a slot's probe wins over a skip).
                    before = len(self.buffer.rows)
                    self.buffer.rows = [
                        r
                        for r in self.buffer.rows
                        if not (r.kind == SampleKind.SKIPPED and r.scheduled_at_ms > confirmed_ms)
                    ]
                    if before != len(self.buffer.rows):
                        log.warning(
                            "lost the lease while paused: dropped %d skipped-slot rows of the new holder's slots",
                            before - len(self.buffer.rows),
                        )
            await self.buffer.flush_locked(final)
            self.stats.stored, self.stats.failed_flushes = self.buffer.stored, self.buffer.failed_flushes

    async def _flush_loop(self) -> None:
        next_state = float("-inf")
        while True:
            await asyncio.sleep(self.config.flush_interval_s)
            await self.flush()
            mono = self.clock.mono_s()
            if mono >= next_state:  # the dashboard's view of this worker (planner.store.worker_state)
                await asyncio.to_thread(self._publish_state)
                next_state = mono + 2.0

    # ---------------------------------------------------------------- lease and endpoints

    async def renew_lease(self) -> None:
        """Take or renew this vantage's lease; on taking it, load the schedule; on losing it, stand by."""
        prev = None
        if not self.holds_lease:
            prev = next(
                (
                    r
                    for r in await asyncio.to_thread(leases.current, self.engine)
                    if r["vantage"] == self.config.vantage
                ),
                None,
            )
        got = await asyncio.to_thread(
            leases.acquire,
            self.engine,
            self.config.vantage,
            self.config.holder,
            self.clock.now_ms(),
            self.config.lease_ttl_s,
        )
        if got and prev is not None and prev["holder"] != self.config.holder and prev["expires_at_ms"] != 0:
            # The previous holder never released its lease: it was killed. What it probed in its last moments
            # never reached the database; those slots are labelled as lost in a crash, not "not running".
            from planner.store import worker_state as state

            last = state.read_state(self.engine, self.config.vantage) or {}
            alive_ms = max(
                int(prev["renewed_at_ms"]),
                int(last.get("updated_at_ms") or 0) if last.get("holder") == prev["holder"] else 0,
            )
            self._crashed_until_ms = alive_ms + int(self.config.lease_ttl_s * 1000 / 3)
            log.warning(
                "the previous worker of vantage %r (%s) did not stop cleanly; its last slots are "
                "labelled lost in a crash",
                self.config.vantage,
                prev["holder"],
            )
        if got:
            self._lease_checked_ms = self.clock.now_ms()
            self._woke_from_pause = False
        if got and not self.holds_lease:
            log.info("holding the lease of vantage %r: probing", self.config.vantage)
            self.holds_lease = True
            await self.reload(initial=True)
            self._wake.set()
        elif not got and self.holds_lease:
            log.warning("lost the lease of vantage %r to another worker: standing by", self.config.vantage)
            self.holds_lease = False
            self.scheduler.jobs.clear()
        elif not got and not self.stats.runs:
            log.debug("vantage %r is held by another worker: standing by", self.config.vantage)

    def _load(self, initial: bool) -> tuple[list[EndpointRow], dict[int, int], list[Any]]:
        eps = list_endpoints(self.engine, enabled_only=True, vantage=self.config.vantage)
        last = last_slots(self.engine, self.config.vantage) if initial and eps else {}
        return eps, last, list(scheduled_rtt_targets(self.engine, self.config.vantage))

    async def reload(self, initial: bool = False) -> None:
        """Re-read the enabled endpoints and RTT targets of this vantage into the schedule (`initial`: resume each
        endpoint after its last stored slot)."""
        eps, last, rtt_targets = await asyncio.to_thread(self._load, initial)
        now = self.clock.now_ms()
        keep: set[str] = set()
        for ep in eps:
            assert ep.id is not None  # a stored endpoint has its id
            key = f"endpoint:{ep.id}"
            problem = endpoint_problem(ep)
            if problem is not None:  # e.g. a row an older version stored: report it, never schedule it
                if self.statuses.detail(ep.id) != f"not probed: {problem}":
                    log.error("endpoint %s is not probed: %s", ep.name, problem)
                    self.statuses.set(ep.id, EndpointState.ERROR, f"not probed: {problem}"[:500])
                continue
            keep.add(key)
            self.endpoints[ep.id] = ep
            job = self.scheduler.add(
                key,
                int(round(ep.interval_s * 1000)),
                now,
                payload=ep,
                last_slot_ms=last.get(ep.id) if initial else None,
                crashed_until_ms=self._crashed_until_ms if initial else None,
            )
            if ep.id in self.requests.cold_active:
                job.paused = True
            if ep.id not in self.statuses.by_endpoint:
                self.statuses.set(ep.id, EndpointState.OK, None)
        for t in rtt_targets:
            key = f"rtt:{t.id}"
            interval_s = float(t.interval_s)
            if not 0 < interval_s <= RTT_INTERVAL_BOUNDS_S[1]:  # inf / NaN / huge from an older row: never scheduled
                if key not in self._bad_rtt:
                    log.error(
                        "RTT target %s is not probed: its interval %r s is not a finite number of seconds up to %g",
                        t.region_id,
                        t.interval_s,
                        RTT_INTERVAL_BOUNDS_S[1],
                    )
                    self._bad_rtt.add(key)
                continue
            keep.add(key)
            self.scheduler.add(key, int(round(interval_s * 1000)), now, payload=t)
        for key in list(self.scheduler.jobs):
            if key not in keep:
                self.scheduler.remove(key)
        self._wake.set()

    # ------------------------------------------------------------------ stop

    async def _drain(self) -> None:
        if self._tasks:
            done, pending = await asyncio.wait(set(self._tasks), timeout=self.config.shutdown_grace_s)
            for t in pending:
                t.cancel()
            if pending:
                await asyncio.wait(pending, timeout=2.0)


async def run_scheduled_rtt(
    engine: Engine, target_row: Any, vantage: str, *, n: int = 10, timeout_s: float = 3.0
) -> None:
    """Measure one stored target (a planner.store.rtt.RttTargetRow) and store its samples with `vantage`.

    Called for each due row of scheduled_rtt_targets(). Network failures are stored as sample rows with an error
    class; only database errors propagate.
    """
    result = await asyncio.to_thread(
        probe_rtt_target, target_row.target, region_id=target_row.region_id, n=n, vantage=vantage, timeout_s=timeout_s
    )
    await asyncio.to_thread(insert_rtt_samples, engine, result.records())


async def run_worker(
    engine: Engine, config: WorkerConfig | None = None, *, install_signals: bool = True, worker: Worker | None = None
) -> Worker:
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
