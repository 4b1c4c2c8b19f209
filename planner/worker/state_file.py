"""The worker's state file: what the dashboard knows of a running worker (planner.store.worker_state reads it).

Written every couple of seconds by the flusher, after a background task died and at stop (then with
`updated_at_ms` 0: stopped). It does not need the database: a worker whose database is down still says so, and a
full disk still takes it (planner.store.worker_state.write_state writes it over its own blocks then). It says how
many rows the worker holds unsaved and since when, its bound (`max_held_rows`), and how many it dropped unsaved
(`dropped_rows`: past that bound, or refused by the spool at stop).
Stamped with the worker's injected clock (`now_ms`), never the system's.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from planner.worker.buffer import RowBuffer
from planner.worker.context import WorkerContext
from planner.worker.counters import WorkerStats
from planner.worker.lease_keeper import LeaseKeeper
from planner.worker.supervisor import TaskSupervisor

__all__ = ["StatePublisher"]

log = logging.getLogger("planner.worker")


class StatePublisher:
    """Writes the state file of `holder` for `vantage` from the worker's lease, buffer, counters and task deaths."""

    def __init__(
        self,
        ctx: WorkerContext,
        *,
        lease: LeaseKeeper,
        buffer: RowBuffer,
        stats: WorkerStats,
        supervisor: TaskSupervisor,
    ) -> None:
        engine, vantage, holder, now_ms = ctx.engine, ctx.vantage, ctx.holder, ctx.now_ms
        self.engine = engine
        self.vantage = vantage
        self.holder = holder
        self.now_ms = now_ms
        self.lease = lease
        self.buffer = buffer
        self.stats = stats
        self.supervisor = supervisor

    def snapshot(self, stopped: bool = False) -> dict[str, Any]:
        """The state file's content now (`stopped`: the worker has stopped)."""
        host, pid, _ = (self.holder.split(":") + ["", ""])[:3]
        return {
            "holder": self.holder,
            "host": host,
            "pid": int(pid) if pid.isdigit() else os.getpid(),
            "vantage": self.vantage,
            "updated_at_ms": 0 if stopped else self.now_ms(),
            "holds_lease": self.lease.holds,
            "unsaved_rows": len(self.buffer.rows),
            "unsaved_since_ms": self.buffer.unsaved_since_ms if self.buffer.rows else None,
            "max_held_rows": self.buffer.max_rows,
            "dropped_rows": self.buffer.dropped,
            "last_error": self.buffer.last_error,
            "spooled_rows": self.stats.spooled,
            "task_failures": self.supervisor.failures,
        }

    def publish(self, stopped: bool = False) -> None:
        """Write the state file the dashboard reads (planner.store.worker_state); never raises."""
        from planner.store import worker_state as state

        data = self.snapshot(stopped)
        try:
            state.write_state(self.engine, self.vantage, data)
        except OSError as exc:
            log.debug("could not write the worker state file: %s", exc)
