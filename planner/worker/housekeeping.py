"""The worker's housekeeping loop: renew the lease, reload the endpoints, claim requests, write endpoint statuses,
apply retention (hourly), evaluate this vantage's alert rules (planner.worker.team) and checkpoint the SQLite WAL —
each on its own period, none blocking a probe.

A database problem is logged and recorded for the dashboard; the loop keeps going (the worker keeps probing).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from sqlalchemy.exc import SQLAlchemyError

from planner.store.rollups import apply_retention
from planner.store.worker import wal_checkpoint
from planner.worker.buffer import first_line

if TYPE_CHECKING:
    from planner.worker.runner import Worker

__all__ = ["Housekeeping"]

log = logging.getLogger("planner.worker")

_FIRST_RETENTION_AFTER_S = 60.0


class Housekeeping:
    """Runs `worker`'s periodic chores (periods from its WorkerConfig) until cancelled."""

    def __init__(self, worker: Worker) -> None:
        self.w = worker

    async def run(self) -> None:
        w, cfg = self.w, self.w.config
        next_lease = next_reload = next_req = 0.0
        next_retention = time.monotonic() + _FIRST_RETENTION_AFTER_S
        next_ckpt = time.monotonic() + cfg.checkpoint_every_s
        while True:
            mono = time.monotonic()
            try:
                if mono >= next_lease:
                    await w.renew_lease()
                    next_lease = mono + cfg.lease_ttl_s / 3
                if w.holds_lease and mono >= next_reload:
                    await w._reload()
                    next_reload = mono + cfg.reload_interval_s
                if w.holds_lease and mono >= next_req:
                    await w.requests.claim_and_start()
                    next_req = mono + cfg.request_poll_s
                await w.statuses.write()
                if w.holds_lease and mono >= next_retention:
                    res = await asyncio.to_thread(
                        apply_retention, w.engine, w.clock.now_ms(), cfg.retention_days, vantage=cfg.vantage
                    )
                    if res.deleted_samples:
                        log.info(
                            "retention: rolled %d samples into %d hourly rollups", res.deleted_samples, res.rollup_hours
                        )
                    next_retention = mono + cfg.retention_every_s
                if w.holds_lease:
                    await asyncio.to_thread(w.team.tick, w.clock.now_ms(), holds_lease=True)
                w.team.on_buffer(len(w.buffer.rows))
                if mono >= next_ckpt:
                    await asyncio.to_thread(wal_checkpoint, w.engine)
                    next_ckpt = mono + cfg.checkpoint_every_s
            except (SQLAlchemyError, OSError) as exc:
                w.buffer.last_error = first_line(exc)[:300]
                log.warning("database problem (worker keeps running): %s", w.buffer.last_error)
            await asyncio.sleep(min(0.2, cfg.request_poll_s))
