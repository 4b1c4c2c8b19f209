"""State files (planner.store.worker_state) as a live worker of this test process writes them, for the tests of
what the report and the Probes page say about a worker without running one."""

from __future__ import annotations

import os
import socket

from sqlalchemy.engine import Engine

from planner.store.worker_state import write_state

__all__ = ["write_disk_full_state"]


def write_disk_full_state(
    engine: Engine,
    *,
    now_ms: int,
    holds_lease: bool,
    unsaved_rows: int,
    unsaved_since_ms: int,
    dropped_rows: int = 0,
    max_held_rows: int = 50_000,
) -> None:
    """The state file of a live worker (this process, vantage "") that cannot store its rows because the database
    is full: `unsaved_rows` held in memory since `unsaved_since_ms` (at most `max_held_rows`; `dropped_rows` lost
    past that bound), nothing spooled, no task failures."""
    write_state(
        engine,
        "",
        {
            "holder": f"{socket.gethostname()}:{os.getpid()}:x",
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "vantage": "",
            "updated_at_ms": now_ms,
            "holds_lease": holds_lease,
            "unsaved_rows": unsaved_rows,
            "unsaved_since_ms": unsaved_since_ms,
            "max_held_rows": max_held_rows,
            "dropped_rows": dropped_rows,
            "last_error": "database or disk is full",
            "spooled_rows": 0,
            "task_failures": [],
        },
    )
