"""The worker's own account of its state, readable when the database is not writable.

The dashboard used to infer "is a worker running?" from the lease row alone, so
during a disk-full outage (the lease cannot be renewed) it said "No worker is
running" while the worker was running and buffering. The worker therefore
also writes a small JSON file next to the database every couple of seconds
(``<file>.db.workers/<vantage digest>.json`` for SQLite; under the data
directory for PostgreSQL): whether it holds the lease, how many probe rows it
holds unsaved and since when, how many it dropped unsaved (past its bound of
held rows, or refused by the spool at stop), the last database error, spooled
rows, and the background tasks that died and were restarted. On a full disk
the file is written over its own blocks, so the page still hears of it.

`worker_report()` turns that file and the lease row into one sentence for the
page (a report; `level` is "ok", "warning" or "error").
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine

from planner.pids import pid_alive
from planner.settings import DEFAULT_VANTAGE_NAME
from planner.store.database import data_dir, redacted, sqlite_file
from planner.store.leases import live_leases

__all__ = ["STALE_AFTER_MS", "WorkerReport", "read_state", "state_path", "worker_report", "write_state"]

#: A state file not rewritten for this long belongs to a worker that stopped or hangs.
STALE_AFTER_MS = 15_000
#: State files are padded to whole blocks of this size (bytes), so a full disk can still take the next state in place.
_BLOCK_BYTES = 4096


def _folder(engine: Engine) -> Path:
    path = sqlite_file(engine.url)
    if path is not None:
        return path.with_name(path.name + ".workers")
    return data_dir() / "workers" / hashlib.sha1(redacted(str(engine.url)).encode()).hexdigest()[:12]


def state_path(engine: Engine, vantage: str) -> Path:
    """The state file of `vantage`'s worker for this database."""
    return _folder(engine) / f"{hashlib.sha1(vantage.encode()).hexdigest()[:12]}.json"


def write_state(engine: Engine, vantage: str, state: dict[str, Any]) -> None:
    """Atomically replace the state file (write + rename). On a full disk, where no new file fits, the state is
    written over the old file's own bytes instead (every state is padded to whole _BLOCK_BYTES, so the next one
    fits): the page still learns of the outage. Raises OSError (the caller logs)."""
    path = state_path(engine, vantage)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(state)  # ASCII only: one byte a character
    text += " " * (-len(text) % _BLOCK_BYTES)  # JSON allows trailing white space
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if exc.errno != errno.ENOSPC:
            raise
        _write_in_place(path, text.encode("ascii"))


def _write_in_place(path: Path, data: bytes) -> None:
    """Overwrite `path` with `data`, padded to its size: no new block is needed (not atomic: a reader may see a torn
    file once, which read_state takes as unreadable). Raises OSError (ENOSPC when `data` is larger than the file)."""
    with open(path, "r+b") as fh:
        size = os.fstat(fh.fileno()).st_size
        if len(data) > size:
            raise OSError(errno.ENOSPC, "the disk is full and the state grew past the file's blocks", str(path))
        fh.write(data + b" " * (size - len(data)))


def read_state(engine: Engine, vantage: str) -> dict[str, Any] | None:
    """The last state the worker of `vantage` wrote, or None (never ran here, or unreadable)."""
    try:
        state = json.loads(state_path(engine, vantage).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None  # the worker writes an object: anything else is unreadable


@dataclass(frozen=True)
class WorkerReport:
    """One sentence about the worker of a vantage; level is "ok", "warning" or "error"."""

    level: str
    text: str
    running: bool


def _clock(ms: int, fmt_ms: Callable[[int], str] | None) -> str:
    return fmt_ms(ms) if fmt_ms else f"{ms} ms"


def worker_report(
    engine: Engine,
    vantage: str,
    leases: list[dict[str, Any]],
    now_ms: int,
    *,
    fmt_ms: Callable[[int], str] | None = None,
) -> WorkerReport:
    """What the worker of `vantage` is doing, from its state file and the lease rows (lease.current()).

    `fmt_ms` formats epoch ms for the reader (ttft_planner_app.viewer.fmt_ms on the page)."""
    name = repr(vantage) if vantage else DEFAULT_VANTAGE_NAME
    live = live_leases(leases, now_ms, vantage)
    st = read_state(engine, vantage)
    fresh = st is not None and now_ms - int(st.get("updated_at_ms", 0)) <= STALE_AFTER_MS
    if st is not None and fresh and st.get("host") == socket.gethostname() and not pid_alive(int(st.get("pid", 0))):
        fresh = False  # its process is gone (kill -9): the file is a last word, not a heartbeat
    state = st if fresh else None  # the state file when it is a live heartbeat
    if st is not None and st.get("updated_at_ms") == 0:  # it stopped: a lease it could not give back is no heartbeat
        live = [r for r in live if r["holder"] != st.get("holder")]
    notes = []
    if state is not None:
        for f in state.get("task_failures", [])[-3:]:
            notes.append(
                f"its {f['task']} task died at {_clock(int(f['at_ms']), fmt_ms)} ({f['error']}) and was restarted"
            )
        if state.get("spooled_rows"):
            notes.append(f"{state['spooled_rows']} rows wait in its local spool for the database")
        if state.get("dropped_rows"):
            notes.append("it " + _dropped(state))
    tail = ("; " + "; ".join(notes)) if notes else ""
    if state is not None and state.get("unsaved_rows") and state.get("unsaved_since_ms"):
        why = state.get("last_error") or "the database refused the write"
        return WorkerReport(
            "warning",
            f"The worker for vantage {name} is running but cannot write to the database: "
            f"buffering {state['unsaved_rows']} rows since {_clock(int(state['unsaved_since_ms']), fmt_ms)} "
            f"({why}); they are stored when the database recovers{tail}.",
            True,
        )
    if live:
        level = "warning" if notes else "ok"
        return WorkerReport(level, f"A worker is probing for vantage {name}{tail}.", True)
    if state is not None and not state.get("holds_lease"):
        why = state.get("last_error")
        return WorkerReport(
            "warning",
            f"A worker for vantage {name} is running but does not hold the lease"
            + (f" ({why})" if why else " (another worker holds it, or it is starting)")
            + f"{tail}.",
            True,
        )
    if state is not None:
        return WorkerReport("warning", f"The worker for vantage {name} is running but its lease lapsed{tail}.", True)
    last_words = f" Its last worker {_dropped(st)}." if st is not None and st.get("dropped_rows") else ""
    return WorkerReport(
        "warning",
        f"No worker is probing for vantage {name} right now: run `ttft-planner serve` "
        f"or `ttft-planner worker{' --vantage ' + vantage if vantage else ''}`.{last_words}",
        False,
    )


def _dropped(state: dict[str, Any]) -> str:
    """'lost 57 probe rows unsaved (…; it holds at most 10 in memory)' from a state file with dropped rows."""
    why = state.get("last_error") or "the database refused them"
    bound = state.get("max_held_rows")
    held = f"; it holds at most {int(bound):,} in memory" if bound else ""
    return f"lost {int(state['dropped_rows']):,} probe rows unsaved ({why}{held})"
