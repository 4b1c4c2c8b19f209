"""A SQLite store write-locked by another connection (BEGIN IMMEDIATE, as another program writing would hold it):
every write of ours waits its busy timeout, then fails "database is locked"; reads go on (WAL)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa

__all__ = ["sqlite_write_lock"]

LOCK_GUARD_S = 600.0  # the longest the lock is held if the test never releases it: a guard, not a figure


@contextmanager
def sqlite_write_lock(url: str) -> Iterator[threading.Event]:
    """Hold the write lock of the SQLite store at `url` from a thread; yields, once it is held, the event that
    releases it (set by the test; the block's end releases it too)."""
    raw = sa.create_engine(url, connect_args={"timeout": 60})  # waits out a write of ours before it takes the lock
    locked, release = threading.Event(), threading.Event()
    failed: list[BaseException] = []

    def hold() -> None:
        try:
            with raw.connect() as conn:
                conn.exec_driver_sql("BEGIN IMMEDIATE")
                locked.set()
                release.wait(LOCK_GUARD_S)
                conn.exec_driver_sql("COMMIT")
        except BaseException as exc:  # noqa: BLE001 - raised in the test's thread below
            failed.append(exc)
            locked.set()

    holder = threading.Thread(target=hold, name="sqlite-write-lock", daemon=True)
    holder.start()
    locked.wait(LOCK_GUARD_S)
    if failed:
        raise failed[0]
    try:
        yield release
    finally:
        release.set()
        holder.join(LOCK_GUARD_S)
        raw.dispose()
