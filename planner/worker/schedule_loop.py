"""The worker's schedule loop: wakes at the next firing time and turns each due slot into work.

planner.worker.scheduler decides run or skip. A run starts a task: an endpoint's probe (planner.worker.prober; at
most one in flight per endpoint) or an RTT target's measurement (run_scheduled_rtt). A skip becomes a
``kind='skipped'`` row (held back behind the running probe when that probe is why). A loop that sat still for longer
than a renewal period (SIGSTOP, a laptop lid, a suspended VM), or whose clock jumped, re-checks the lease before it
runs or skips anything: another worker may have taken the vantage meanwhile.

Every decision reads the injected clock (a SteadyClock); the wait between looks is at most `max_tick_s`, so a test
that moves the clock sees the loop follow within it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from typing import Any, Protocol

from sqlalchemy.engine import Engine

from planner.endpoints.samples import SampleKind, SkipCause
from planner.probes.rtt import probe_rtt_target
from planner.store.endpoints import EndpointRow
from planner.store.rtt import RttTargetRow, insert_rtt_samples
from planner.worker.buffer import RowBuffer
from planner.worker.context import WorkerContext
from planner.worker.counters import WorkerStats
from planner.worker.lease_keeper import LeaseKeeper
from planner.worker.prober import Prober, skip_row
from planner.worker.scheduler import Action, Scheduler

__all__ = ["ScheduleLoop", "run_scheduled_rtt"]

log = logging.getLogger("planner.worker")


class _Lateness(Protocol):
    def on_lateness(self, lateness_ms: float) -> None: ...  # planner.worker.team.TeamHooks is one


class _Spawner(Protocol):
    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]: ...  # planner.worker.supervisor's


async def run_scheduled_rtt(
    engine: Engine, target_row: RttTargetRow, vantage: str, *, n: int = 10, timeout_s: float = 3.0
) -> None:
    """Measure one stored target (a planner.store.rtt.RttTargetRow) and store its samples with `vantage`.

    Called for each due row of scheduled_rtt_targets(). Network failures are stored as sample rows with an error
    class; only database errors propagate.
    """
    result = await asyncio.to_thread(
        probe_rtt_target, target_row.target, region_id=target_row.region_id, n=n, vantage=vantage, timeout_s=timeout_s
    )
    await asyncio.to_thread(insert_rtt_samples, engine, result.records())


class ScheduleLoop:
    """Runs the schedule of one worker until `request_stop()`."""

    def __init__(
        self,
        ctx: WorkerContext,
        *,
        scheduler: Scheduler,
        lease: LeaseKeeper,
        prober: Prober,
        buffer: RowBuffer,
        stats: WorkerStats,
        tasks: _Spawner,
        team: _Lateness,
        lease_ttl_s: float,
        max_tick_s: float,
    ) -> None:
        engine, vantage, clock = ctx.engine, ctx.vantage, ctx.clock
        self.engine = engine
        self.vantage = vantage
        self.clock = clock
        self.scheduler = scheduler
        self.lease = lease
        self.prober = prober
        self.buffer = buffer
        self.stats = stats
        self.tasks = tasks
        self.team = team
        self.lease_ttl_s = lease_ttl_s
        self.max_tick_s = max_tick_s
        self._stop = asyncio.Event()
        self._wake = asyncio.Event()
        self._jumps_seen = 0

    @property
    def stopping(self) -> bool:
        """True once a stop was asked for."""
        return self._stop.is_set()

    def request_stop(self) -> None:
        """Stop looping (the loop returns within a tick)."""
        self._stop.set()
        self._wake.set()

    def wake(self) -> None:
        """Look at the schedule again now (it changed)."""
        self._wake.set()

    async def run(self) -> None:
        """Run and skip due slots until request_stop()."""
        clock = self.clock
        last_mono = clock.mono_s()
        while not self._stop.is_set():
            mono = clock.mono_s()
            if mono - last_mono > self.lease_ttl_s / 3 or clock.jumps != self._jumps_seen:
                # This loop did not run for longer than a renewal period (SIGSTOP, a laptop lid, a suspended VM):
                # another worker may have taken the vantage meanwhile. Re-check before running or skipping
                # anything. (A database outage does not count: the loop keeps running then, and keeps probing.)
                self._jumps_seen = clock.jumps
                await self.lease.recheck_after_pause()
            last_mono = mono
            now = clock.now_ms()
            if self.lease.holds:
                for action in self.scheduler.due(now):
                    self._dispatch(action, now)
            nxt = self.scheduler.next_fire_ms() if self.lease.holds else None
            tick_s = self.max_tick_s
            delay_s = tick_s if nxt is None else min(tick_s, max(0.0, (nxt - now) / 1000))
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=delay_s)

    def _dispatch(self, action: Action, now_ms: int) -> None:
        kind, _, ident = action.key.partition(":")
        if action.action == "skip":
            self.stats.skipped += 1
            if action.cause is not None:
                self.stats.skip_causes[action.cause] += 1
            if kind == "endpoint":
                row = skip_row(int(ident), self.vantage, action.slot_ms, now_ms, action.reason, action.cause)
                if action.cause is SkipCause.IN_FLIGHT:
                    # Stored after the running probe's own row, never before it: a restart resumes after the newest
                    # stored slot, so a skip stored first would leave the running slot unrecorded if the worker were
                    # killed in between.
                    self.prober.hold_skip(action.key, row)
                else:
                    self.buffer.add([row])
            return
        self.stats.runs += 1
        self.stats.lateness_ms.append(float(action.lateness_ms))
        self.team.on_lateness(float(action.lateness_ms))
        job = self.scheduler.jobs[action.key]
        if kind == "endpoint":
            assert isinstance(job.payload, EndpointRow)  # the loader schedules endpoint jobs with their row
            self.tasks.spawn(self.prober.probe_endpoint(job.payload, action.slot_ms, SampleKind.SCHEDULED, action.key))
        else:
            assert isinstance(job.payload, RttTargetRow)  # and RTT jobs with their target's row
            self.tasks.spawn(self._run_rtt(job.payload, action.key))

    async def _run_rtt(self, target_row: RttTargetRow, job_key: str) -> None:
        try:
            await run_scheduled_rtt(self.engine, target_row, self.vantage)
        except Exception:
            log.exception("RTT probe of target %s failed unexpectedly", getattr(target_row, "id", "?"))
        finally:
            self.scheduler.done(job_key)
