"""Alembic, driven from code: the schema is upgraded in place when the store opens.

Why Alembic: it is SQLAlchemy's own migration tool (SQLModel sits on
SQLAlchemy), it handles SQLite's limited ALTER TABLE with batch mode, and its
revision chain lets a database made by any older version upgrade in place.
Revisions are hand-written (planner/migrations/versions/NNNN_*.py).

Atomic on both back ends: an upgrade is one transaction, DDL included, so a
process killed mid-upgrade leaves the database at the old revision, never
half-way ("table log_upload already exists"). PostgreSQL has transactional
DDL as it is. Python's sqlite3 driver, left to itself, commits before every
CREATE/DROP; migrations therefore run on a connection of their own where the
driver's transaction handling is off and the upgrade opens with
`BEGIN IMMEDIATE` (which also takes the write lock for the whole upgrade) and
ends with one COMMIT. Foreign keys are off on that connection, so that a batch
table rebuild (drop + rename) cannot cascade into the rows that refer to it.
"""

from __future__ import annotations

import logging
from pathlib import Path

# Alembic narrates every plugin (at import) and revision at INFO; the worker's INFO log is for probes.
logging.getLogger("alembic").setLevel(logging.WARNING)

from alembic import command  # noqa: E402  (after the logger level, on purpose)
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.pool import ConnectionPoolEntry, NullPool

from planner.store.timeouts import SQLITE_BUSY_TIMEOUT_MS

__all__ = ["current_revision", "head_revision", "upgrade"]

_SCRIPT_LOCATION = Path(__file__).resolve().parent.parent / "migrations"


def _config(engine: Engine | None, conn: Connection | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(_SCRIPT_LOCATION))
    cfg.attributes["connection"] = conn
    return cfg


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Upgrade the schema to `revision` inside one transaction (DDL included, on SQLite too)."""
    if engine.dialect.name != "sqlite":
        with engine.begin() as conn:
            command.upgrade(_config(engine, conn), revision)
        return
    mig = _sqlite_migration_engine(engine)
    try:
        with mig.begin() as conn:
            command.upgrade(_config(mig, conn), revision)
    finally:
        mig.dispose()


def _sqlite_migration_engine(engine: Engine) -> Engine:
    """A one-connection engine on the same SQLite file whose transactions cover DDL (see the module doc)."""
    mig = create_engine(
        engine.url, poolclass=NullPool, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000, "isolation_level": None}
    )

    @event.listens_for(mig, "connect")
    def _pragmas(
        dbapi_conn: DBAPIConnection, _record: ConnectionPoolEntry
    ) -> None:  # outside any transaction: PRAGMAs that must be
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA foreign_keys=OFF")
        cur.close()

    @event.listens_for(mig, "begin")
    def _begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return mig


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at (None for an empty database)."""
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def head_revision() -> str:
    """The newest revision this version of the code knows."""
    head = ScriptDirectory.from_config(_config(None)).get_current_head()
    assert head is not None
    return head
