"""What the pages say of the workers: which are running, each endpoint's status as the workers reported it, and the
worker's own account of a vantage (running and buffering, lease lapsed, or not running).

One place for the lease rule the Endpoints, Probes and Regions pages all apply (a worker runs for a vantage while
its lease has not expired); the tables and the state file are planner.store.worker, planner.store.leases and
planner.store.worker_state's. Times are UTC epoch ms. Raises the store's errors only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy.engine import Engine

from planner.store.leases import current, live_leases
from planner.store.worker import EndpointState, endpoint_statuses
from planner.store.worker_state import WorkerReport, worker_report

__all__ = ["EndpointState", "WorkerReport", "endpoint_statuses", "running_workers", "worker_account", "worker_running"]


def running_workers(engine: Engine, now_ms: int) -> list[dict[str, Any]]:
    """The live lease of every vantage a worker runs for at `now_ms` (vantage, holder, expires_at_ms, …), by
    vantage."""
    return live_leases(current(engine), now_ms)


def worker_running(engine: Engine, vantage: str | None, now_ms: int) -> bool:
    """True when a worker holds `vantage`'s lease at `now_ms` (None: any vantage's)."""
    return bool(live_leases(current(engine), now_ms, vantage))


def worker_account(
    engine: Engine, vantage: str, now_ms: int, *, fmt_ms: Callable[[int], str] | None = None
) -> WorkerReport:
    """The worker of `vantage` in one sentence, from its state file and the lease rows (`fmt_ms` formats epoch ms
    for the reader)."""
    return worker_report(engine, vantage, current(engine), now_ms, fmt_ms=fmt_ms)
