"""Kill a schema upgrade part-way (SIGKILL, as `kill -9` does) and check what is left on disk.

Shared by tests/planner/store/test_store_migration_crash.py (a few kills) and
bench/bench_migration_kill.py (20). The upgrade runs in a child process that
kills itself just before its Nth SQL statement reaches the database, so "a
random point" is reproducible and always lands inside the upgrade.

The children are forked by multiprocessing's fork server, which imports the
store, SQLAlchemy and Alembic once: each kill point then costs a fork, not a
new interpreter's ~2 s of imports. Each child is still a process of its own
that dies by SIGKILL with its connections open, as a killed dashboard would.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from multiprocessing.connection import Connection

import sqlalchemy as sa

__all__ = ["run_upgrade", "seed", "state_after", "statement_count"]

_PRELOAD = ["sqlalchemy", "alembic", "alembic.command", "planner.store", "planner.store.migrate", __name__]
_context = None


def _forks():
    global _context
    if _context is None:
        _context = multiprocessing.get_context("forkserver")
        _context.set_forkserver_preload(_PRELOAD)
    return _context


def _child(url: str, kill_at_statement: int, legacy: bool, report: Connection) -> None:
    from sqlalchemy import event

    seen = [0]

    def count(conn, cursor, statement, *args) -> None:
        seen[0] += 1
        if seen[0] == kill_at_statement:
            os.kill(os.getpid(), signal.SIGKILL)

    event.listen(sa.engine.Engine, "before_cursor_execute", count)
    if legacy:  # the baseline: DDL autocommitted by the sqlite3 driver, as versions before issue 15 did
        from alembic import command

        import planner.store.migrate as m

        def legacy_upgrade(engine, revision="head"):
            with engine.begin() as conn:
                command.upgrade(m._config(engine, conn), revision)

        m.upgrade = legacy_upgrade
    from planner.store import open_store

    try:
        open_store(url).dispose()
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which shows it
        report.send(f"error {type(exc).__name__}: {exc}")
        raise
    report.send(f"statements {seen[0]}")


def run_upgrade(url: str, kill_at_statement: int = 0, *, legacy: bool = False) -> tuple[int, str]:
    """Open (and upgrade) the store in a child; kill it before statement N (0: never). Returns (exit status, what the
    child reported): -9 when it was killed.

    legacy=True runs the upgrade as versions before issue 15 did (the baseline of the benchmark)."""
    ctx = _forks()
    receive, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(url, kill_at_statement, legacy, send))
    proc.start()
    send.close()
    proc.join(120)
    if proc.exitcode is None:
        proc.kill()
        proc.join()
    try:
        out = receive.recv() if receive.poll() else ""
    except EOFError:  # killed before it reported
        out = ""
    receive.close()
    return proc.exitcode if proc.exitcode is not None else -9, out


def statement_count(url: str) -> int:
    """How many SQL statements a full upgrade of this database (a copy: it is consumed) issues."""
    rc, out = run_upgrade(url)
    assert rc == 0, out
    return int(out.split("statements")[1].split()[0])


def seed(url: str, revision: str) -> None:
    """A database at `revision` holding one worksheet row (data that must survive every kill)."""
    from planner.store import open_store

    eng = open_store(url, revision=revision)
    with eng.begin() as c:
        c.execute(
            sa.text("INSERT INTO worksheet (name, data_json, created_at_ms, updated_at_ms) VALUES ('kept', '{}', 1, 1)")
        )
    eng.dispose()


def state_after(url: str) -> tuple[str | None, int]:
    """(revision, worksheet rows) of the database as it is, without migrating; raises if it does not open."""
    from planner.store import open_store
    from planner.store.migrate import current_revision

    eng = open_store(url, migrate=False)
    try:
        rev = current_revision(eng)
        with eng.connect() as c:
            n = c.execute(sa.text("SELECT count(*) FROM worksheet")).scalar()
        return rev, int(n)
    finally:
        eng.dispose()
