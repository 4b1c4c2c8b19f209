"""Kill a schema upgrade part-way (SIGKILL, as `kill -9` does) and check what is left on disk.

Shared by tests/planner/test_store_migration_crash.py (a few kills) and
bench/bench_migration_kill.py (20). The upgrade runs in a child process that
kills itself just before its Nth SQL statement reaches the database, so "a
random point" is reproducible and always lands inside the upgrade.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import sqlalchemy as sa

_CHILD = r"""
import os, signal, sys
import sqlalchemy as sa
from sqlalchemy import event
n = int(sys.argv[2]); seen = [0]
@event.listens_for(sa.engine.Engine, "before_cursor_execute")
def _count(conn, cursor, statement, *args):
    seen[0] += 1
    if seen[0] == n:
        os.kill(os.getpid(), signal.SIGKILL)
if len(sys.argv) > 3 and sys.argv[3] == "legacy":  # the baseline: DDL autocommitted by the sqlite3 driver
    from alembic import command
    import planner.store.migrate as m
    def _legacy(engine, revision="head"):
        with engine.begin() as conn:
            command.upgrade(m._config(engine, conn), revision)
    m.upgrade = _legacy
from planner.store import open_store
open_store(sys.argv[1])
print("statements", seen[0])
"""

ROOT = Path(__file__).resolve().parents[2]


def run_upgrade(url: str, kill_at_statement: int = 0, *, legacy: bool = False) -> tuple[int, str]:
    """Open (and upgrade) the store in a child; kill it before statement N (0: never). Returns (rc, stdout).

    legacy=True runs the upgrade as versions before issue 15 did (the baseline of the benchmark)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, url, str(kill_at_statement), "legacy" if legacy else "atomic"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc.returncode, proc.stdout + proc.stderr


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
