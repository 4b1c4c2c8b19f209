"""The worker's housekeeping loop: renew the lease, reload the endpoints, claim requests, write endpoint statuses,
apply retention (hourly), evaluate this vantage's alert rules (planner.worker.team) and checkpoint the SQLite WAL —
each on its own period, none blocking a probe.

A database problem is logged and recorded for the dashboard; the loop keeps going (the worker keeps probing).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Protocol

from sqlalchemy.exc import SQLAlchemyError

from planner.store.rollups import apply_retention
from planner.store.worker import wal_checkpoint
from planner.worker.buffer import first_line
from planner.worker.context import WorkerContext

if TYPE_CHECKING:
    from planner.worker.buffer import RowBuffer
    from planner.worker.requests import RequestRunner
    from planner.worker.status import EndpointStatuses
    from planner.worker.team import TeamHooks

__all__ = ["Housekeeping", "HousekeepingConfig", "LeaseHolder"]

log = logging.getLogger("planner.worker")

_FIRST_RETENTION_AFTER_S = 60.0


class HousekeepingConfig(Protocol):
    """The settings housekeeping reads (planner.worker.runner.WorkerConfig is one); seconds unless named otherwise."""

    @property
    def vantage(self) -> str: ...

    @property
    def lease_ttl_s(self) -> float: ...  # renewed every third of it

    @property
    def reload_interval_s(self) -> float: ...

    @property
    def request_poll_s(self) -> float: ...

    @property
    def retention_days(self) -> float | None: ...

    @property
    def retention_every_s(self) -> float: ...

    @property
    def checkpoint_every_s(self) -> float: ...


class LeaseHolder(Protocol):
    """The vantage lease and the schedule it guards (planner.worker.runner.Worker is one)."""

    @property
    def holds_lease(self) -> bool: ...

    async def renew_lease(self) -> None: ...  # take or renew the lease; on taking it, load the schedule

    async def reload(self) -> None: ...  # re-read the endpoints and RTT targets into the schedule


class Housekeeping:
    """Runs the periodic chores of one worker (periods from `config`, counted on `mono_s`, the worker's monotonic
    clock in seconds) until cancelled."""

    def __init__(
        self,
        ctx: WorkerContext,
        lease: LeaseHolder,
        config: HousekeepingConfig,
        *,
        requests: RequestRunner,
        statuses: EndpointStatuses,
        team: TeamHooks,
        buffer: RowBuffer,
    ) -> None:
        engine, now_ms, mono_s = ctx.engine, ctx.now_ms, ctx.mono_s
        self.lease = lease
        self.config = config
        self.engine = engine
        self.requests = requests
        self.statuses = statuses
        self.team = team
        self.buffer = buffer
        self.now_ms = now_ms
        self.mono_s = mono_s

    async def run(self) -> None:
        lease, cfg = self.lease, self.config
        next_lease = next_reload = next_req = float("-inf")  # each chore runs on the first pass
        start = self.mono_s()
        next_retention = start + _FIRST_RETENTION_AFTER_S
        next_ckpt = start + cfg.checkpoint_every_s
        while True:
            mono = self.mono_s()
            try:
                if mono >= next_lease:
                    await lease.renew_lease()
                    next_lease = mono + cfg.lease_ttl_s / 3
                if lease.holds_lease and mono >= next_reload:
                    await lease.reload()
                    await self.requests.fail_orphans()
                    next_reload = mono + cfg.reload_interval_s
                if lease.holds_lease and mono >= next_req:
                    await self.requests.claim_and_start()
                    next_req = mono + cfg.request_poll_s
                await self.statuses.write()
                if lease.holds_lease and mono >= next_retention:
                    res = await asyncio.to_thread(
                        apply_retention, self.engine, self.now_ms(), cfg.retention_days, vantage=cfg.vantage
                    )
                    if res.deleted_samples:
                        log.info(
                            "retention: rolled %d samples into %d hourly rollups", res.deleted_samples, res.rollup_hours
                        )
                    next_retention = mono + cfg.retention_every_s
                now_ms = self.now_ms()
                if lease.holds_lease and self.team.due(now_ms):  # a thread only when an alert pass is due
                    await asyncio.to_thread(self.team.tick, now_ms, holds_lease=True)
                self.team.on_buffer(len(self.buffer.rows))
                if mono >= next_ckpt:
                    await asyncio.to_thread(wal_checkpoint, self.engine)
                    next_ckpt = mono + cfg.checkpoint_every_s
            except (SQLAlchemyError, OSError) as exc:
                self.buffer.last_error = first_line(exc)[:300]
                log.warning("database problem (worker keeps running): %s", self.buffer.last_error)
            await asyncio.sleep(min(0.2, cfg.request_poll_s))
