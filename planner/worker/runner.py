"""The worker process: one asyncio loop that probes every enabled endpoint of its vantage on schedule.

The Worker is a composition of collaborators with one job each, one module each, sharing one loop and one clock:

- the *schedule loop* (planner.worker.schedule_loop) wakes at the next firing time (planner.worker.scheduler decides
  run / skip), starts a probe task per due slot — at most one in flight per endpoint — and turns skipped slots into
  ``kind='skipped'`` rows; RTT targets (planner.store.rtt / planner.probes.rtt) are jobs ``rtt:<id>`` of the same
  schedule;
- the *prober* (planner.worker.prober) probes one endpoint for one slot (in a probe process, planner.worker.probe_pool,
  or in this loop) and ends every probe as one ProbeSampleRow (planner.store.probes.sample_row);
- the *row buffer* (planner.worker.buffer) holds those rows and the *flusher* (planner.worker.flusher) stores them in
  batches (default every second) through ``planner.store.probes.insert_samples``, idempotent per slot, so a crash
  and restart never duplicates a row; a locked or full database keeps the rows in memory (at most `max_held_rows`;
  past it the oldest are dropped and counted) and retries; what a stop cannot store goes to the spool
  (planner.worker.spool), replayed at the next start;
- the *lease keeper* (planner.worker.lease_keeper) takes and renews the vantage lease (planner.store.leases) and
  labels a killed predecessor's last slots; the *schedule loader* (planner.worker.loader) reads the endpoints and RTT
  targets into the schedule;
- *request handling* (planner.worker.requests) claims and runs "probe now" / cold-reading requests and the
  Regions page's RTT requests;
- *housekeeping* (planner.worker.housekeeping) renews the lease, reloads, writes endpoint status
  (planner.worker.status), applies retention hourly and checkpoints the SQLite WAL;
- the *task supervisor* (planner.worker.supervisor) restarts a background task that dies and lets a stop wait for
  the running probes; the *state publisher* (planner.worker.state_file) writes what the dashboard shows of this worker.

Each collaborator gets one WorkerContext (planner.worker.context: the store, the vantage, the lease holder id and the
one clock) and, beside it, only the collaborators it uses (the Worker passes itself only as the Protocol a
collaborator names: RequestHost, LeaseHolder), so none of them imports this module.

All SQL is in planner.store. Blocking database calls run in threads (`asyncio.to_thread`) so a slow write never
delays a probe. SIGTERM/SIGINT stop scheduling, let in-flight probes finish (up to a grace), flush, release the
lease and exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Engine

from planner.endpoints.samples import SampleKind
from planner.probes.ttft import TtftSample
from planner.store import leases
from planner.store.endpoints import EndpointRow
from planner.store.probes import ProbeSampleRow
from planner.store.worker import check_writable
from planner.worker.buffer import DEFAULT_MAX_HELD_ROWS, RowBuffer
from planner.worker.context import WorkerContext
from planner.worker.counters import WorkerStats, by_cause
from planner.worker.daemon_executor import DaemonThreadExecutor
from planner.worker.flusher import Flusher
from planner.worker.housekeeping import Housekeeping
from planner.worker.lease_keeper import LeaseKeeper
from planner.worker.loader import ScheduleLoader, endpoint_key
from planner.worker.otlp_receiver import OtlpReceiver
from planner.worker.prober import ProbeFn, Prober
from planner.worker.requests import RequestRunner
from planner.worker.schedule_loop import ScheduleLoop, run_scheduled_rtt
from planner.worker.scheduler import Scheduler, SteadyClock
from planner.worker.source_syncs import SourceSyncs
from planner.worker.state_file import StatePublisher
from planner.worker.status import EndpointStatuses
from planner.worker.supervisor import TaskFailure, TaskSupervisor
from planner.worker.team import TeamHooks

__all__ = ["ProbeFn", "Worker", "WorkerConfig", "WorkerStats", "run_scheduled_rtt", "run_worker"]

log = logging.getLogger("planner.worker")


@dataclass
class WorkerConfig:
    """Worker settings (seconds unless named otherwise)."""

    vantage: str = ""
    lease_ttl_s: float = leases.DEFAULT_LEASE_TTL_S
    flush_interval_s: float = 1.0
    flush_max_rows: int = 500
    max_held_rows: int = DEFAULT_MAX_HELD_ROWS  # rows held while the store refuses them; past it the oldest go
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
    source_sync_s: float = 300.0  # how often the lease holder syncs the live sources (0: never)
    otlp_port: int | None = None  # receive OpenTelemetry sources' OTLP/HTTP on this port (planner.worker.otlp_receiver)
    otlp_address: str = "127.0.0.1"
    holder: str = field(default_factory=leases.holder_id)


class Worker:
    """Probes the endpoints of one vantage. `probe` defaults to planner.probes.ttft.probe_once.

    Seams: `clock` (SteadyClock over injectable monotonic/wall clocks), `probe`. Every decision reads `clock`, which
    every collaborator is given: the slots, the periods of housekeeping and of the state file, the pause check and
    the stop's deadline. The loops' sleeps only say how often they look: a test that moves an injected clock sees the
    worker follow within `max_tick_s`. Real time is left to measurements and their bounds (a probe's timeout, a cold
    TTFT). Collaborators: `schedule` (ScheduleLoop), `prober` (Prober), `buffer` (RowBuffer), `flusher` (Flusher),
    `lease` (LeaseKeeper), `loader` (ScheduleLoader), `statuses` (EndpointStatuses), `requests` (RequestRunner),
    `housekeeping` (Housekeeping), `otlp` (OtlpReceiver, opt-in), `supervisor` (TaskSupervisor), `state`
    (StatePublisher), `team` (TeamHooks).
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
        self.config = cfg = config or WorkerConfig()
        self.clock = clock = clock or SteadyClock()
        self.ctx = ctx = WorkerContext(engine, cfg.vantage, cfg.holder, clock)
        self.scheduler = Scheduler()
        self.stats = WorkerStats()
        self.team = TeamHooks(
            engine,
            cfg.vantage,
            metrics_port=cfg.metrics_port,
            metrics_address=cfg.metrics_address,
            alerts_every_s=cfg.alerts_every_s,
        )
        self.buffer = RowBuffer(
            ctx,
            flush_max_rows=cfg.flush_max_rows,
            max_rows=cfg.max_held_rows,
            on_stored=self._stored,
        )
        if self.team.metrics is not None:  # /metrics reads the held / dropped rows at each scrape
            self.team.metrics.watch_buffer(cfg.vantage, self.buffer)
        self.statuses = EndpointStatuses(ctx, next_slot_ms=self._next_slot_ms)
        self.supervisor = TaskSupervisor(now_ms=clock.now_ms, on_failure=self._publish_state)
        self.lease = LeaseKeeper(
            ctx,
            ttl_s=cfg.lease_ttl_s,
            on_gained=self._on_lease_gained,
            on_lost=self._on_lease_lost,
            probes_run=lambda: self.stats.runs,
        )
        self.prober = Prober(
            ctx,
            probe=probe,
            probe_processes=cfg.probe_processes,
            probe_attempts=cfg.probe_attempts,
            buffer=self.buffer,
            statuses=self.statuses,
            scheduler=self.scheduler,
        )
        self.schedule = ScheduleLoop(
            ctx,
            scheduler=self.scheduler,
            lease=self.lease,
            prober=self.prober,
            buffer=self.buffer,
            stats=self.stats,
            tasks=self.supervisor,
            team=self.team,
            lease_ttl_s=cfg.lease_ttl_s,
            max_tick_s=cfg.max_tick_s,
        )
        self.requests = RequestRunner(
            ctx,
            self,
            scheduler=self.scheduler,
            statuses=self.statuses,
            buffer=self.buffer,
            cold_deadline_s=cfg.cold_deadline_s,
        )
        self.loader = ScheduleLoader(
            ctx,
            scheduler=self.scheduler,
            statuses=self.statuses,
            is_paused=self.requests.cold_active.__contains__,
            wake=self.schedule.wake,
        )
        self.source_syncs = SourceSyncs(
            engine,
            every_s=cfg.source_sync_s,
            now_ms=clock.now_ms,
            holds_lease=lambda: self.holds_lease,
            poll_s=cfg.max_tick_s,
        )
        self.otlp = (
            OtlpReceiver(engine, port=cfg.otlp_port, address=cfg.otlp_address, now_ms=clock.now_ms)
            if cfg.otlp_port
            else None
        )
        self.housekeeping = Housekeeping(
            ctx,
            self,
            cfg,
            requests=self.requests,
            statuses=self.statuses,
            team=self.team,
            buffer=self.buffer,
        )
        self.state = StatePublisher(
            ctx,
            lease=self.lease,
            buffer=self.buffer,
            stats=self.stats,
            supervisor=self.supervisor,
        )
        self.flusher = Flusher(
            ctx,
            self.buffer,
            self.lease,
            self.stats,
            interval_s=cfg.flush_interval_s,
            publish=self._publish_state,
        )

    # ---------------------------------------------------------------- public

    @property
    def stopping(self) -> bool:
        """True once a stop was asked for."""
        return self.schedule.stopping

    def request_stop(self) -> None:
        """Ask the worker to stop (what SIGTERM/SIGINT do)."""
        self.schedule.request_stop()

    @property
    def holds_lease(self) -> bool:
        """True while this worker holds its vantage's lease (and probes)."""
        return self.lease.holds

    @holds_lease.setter
    def holds_lease(self, value: bool) -> None:
        self.lease.holds = value

    @property
    def endpoints(self) -> Mapping[int, EndpointRow]:
        """The endpoints this worker schedules, by id."""
        return self.loader.endpoints

    @property
    def last_probe_end_ms(self) -> Mapping[int, int]:
        """Endpoint id → when its last probe ended (clock ms)."""
        return self.prober.last_probe_end_ms

    @property
    def task_failures(self) -> list[TaskFailure]:
        """Background tasks that died (and were restarted), the latest ten."""
        return self.supervisor.failures

    async def run(self) -> None:
        """Run until request_stop(); then finish in-flight probes (up to the grace), flush (bounded by
        stop_flush_s; the rest goes to the local spool) and release the lease.

        Raises StoreError at once when the database is read-only (nothing would ever be stored)."""
        cfg = self.config
        log.info("worker starting: vantage=%r holder=%s", cfg.vantage, cfg.holder)
        loop = asyncio.get_running_loop()
        loop.set_default_executor(DaemonThreadExecutor())  # a stuck database call never blocks the stop
        await asyncio.to_thread(check_writable, self.engine)
        await self.flusher.replay_spool()
        await self.prober.start()
        self.team.start()
        self.supervisor.supervise("housekeeping", self.housekeeping.run)
        self.supervisor.supervise("flusher", self.flusher.run)
        self.supervisor.supervise("sources", self.source_syncs.run)
        if self.otlp is not None:
            self.supervisor.supervise("otlp receiver", self.otlp.run)
        try:
            await self.schedule.run()
        finally:
            await self.supervisor.drain(cfg.shutdown_grace_s)
            await self.supervisor.stop_supervised()
            deadline = self.clock.mono_s() + cfg.stop_flush_s  # one bounded wait for the whole stop

            def left() -> float:
                return max(0.1, deadline - self.clock.mono_s())

            await self.flusher.stop_flush(left())
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.statuses.write(), timeout=left())
            await self.lease.release(left())
            await self.prober.close()
            self.team.stop()
            self._publish_state(stopped=True)
            log.info(
                "worker stopped: %d probes, %d skipped slots%s, %d rows stored, %d spooled, %d dropped",
                self.stats.runs,
                self.stats.skipped,
                by_cause(self.stats.skip_causes),
                self.stats.stored,  # rows the store took: not rows re-sent after a fault, nor slots it held already
                self.stats.spooled,
                self.stats.dropped,
            )

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run `coro` as a task the stop waits for (up to the grace)."""
        return self.supervisor.spawn(coro)

    async def probe_sample(
        self, ep: EndpointRow, *, attempts: int | None = None, timeout_s: float | None = None
    ) -> TtftSample | None:
        """One TtftSample for `ep`, or None (status set) when its API key is missing."""
        return await self.prober.probe_sample(ep, attempts=attempts, timeout_s=timeout_s)

    async def probe_endpoint(
        self, ep: EndpointRow, slot_ms: int, kind: SampleKind, job_key: str | None
    ) -> ProbeSampleRow | None:
        """Probe `ep` for one slot and buffer its row; returns that row, or None when it was not probed
        (its API key is missing: the endpoint's status says so). Never raises."""
        return await self.prober.probe_endpoint(ep, slot_ms, kind, job_key)

    async def flush(self, final: bool = False) -> None:
        """Store the buffered rows (one flush at a time; after a pause the lease is re-checked first)."""
        await self.flusher.flush(final)

    async def renew_lease(self) -> None:
        """Take or renew this vantage's lease; on taking it, load the schedule; on losing it, stand by."""
        await self.lease.renew()

    async def reload(self, initial: bool = False) -> None:
        """Re-read the enabled endpoints and RTT targets of this vantage into the schedule (`initial`: resume each
        endpoint after its last stored slot)."""
        await self.loader.reload(initial, crashed_until_ms=self.lease.crashed_until_ms)

    # ---------------------------------------------------------------- wiring

    async def _on_lease_gained(self) -> None:
        await self.reload(initial=True)
        self.schedule.wake()

    def _on_lease_lost(self) -> None:
        self.scheduler.jobs.clear()

    def _stored(self, rows: list[ProbeSampleRow]) -> None:
        self.team.on_stored(rows, {i: ep.name for i, ep in self.endpoints.items()})
        self.team.on_buffer(len(self.buffer.rows))

    def _next_slot_ms(self, endpoint_id: int) -> int | None:
        job = self.scheduler.jobs.get(endpoint_key(endpoint_id))
        return job.next_slot_ms if job else None

    def _publish_state(self, stopped: bool = False) -> None:
        """Write the state file the dashboard reads (planner.store.worker_state); never raises."""
        self.state.publish(stopped)


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
