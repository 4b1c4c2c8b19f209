"""Database engine: SQLite by default, PostgreSQL by URL; migrations on open.

SQLite gets WAL, busy_timeout and synchronous=NORMAL on every connection
(measured on a 2-core VM when this was chosen: WAL removes
reader/writer blocking, NORMAL cuts commits from 7 to 1.9 ms).

PostgreSQL sessions get idle_in_transaction_session_timeout: a client frozen
inside a transaction (a paused VM, a machine cut off without a reset) would
keep its row locks until TCP noticed, hours later, and a standby worker could
not take the lease over; the server ends such a session after
PG_IDLE_IN_TRANSACTION_TIMEOUT_S instead.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import sqlalchemy as sa
from filelock import FileLock
from sqlalchemy import event
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.exc import ArgumentError, OperationalError, SQLAlchemyError
from sqlalchemy.pool import ConnectionPoolEntry
from sqlmodel import Session, SQLModel

from planner import settings
from planner.errors import PlannerError
from planner.inputs.urls import redact_url
from planner.store.timeouts import SQLITE_BUSY_TIMEOUT_MS

__all__ = [
    "DATABASE_URL_ENV",
    "DATA_DIR_ENV",
    "StoreError",
    "data_dir",
    "database_url",
    "make_engine",
    "open_store",
    "redacted",
    "session",
    "sqlite_file",
    "table_of",
]

DATABASE_URL_ENV = settings.DATABASE_URL.name
DATA_DIR_ENV = settings.DATA_DIR.name
PG_IDLE_IN_TRANSACTION_TIMEOUT_S = 60.0  # no transaction of ours sits idle for anything near this


class StoreError(PlannerError, RuntimeError):
    """The database cannot be opened or used; the message names the (password-free) URL and the reason."""


def data_dir() -> Path:
    """Where the default SQLite file and other local state live.

    $TTFT_PLANNER_DATA_DIR, else $XDG_DATA_HOME/ttft-planner, else ~/.local/share/ttft-planner.
    """
    configured = settings.DATA_DIR.raw()
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "ttft-planner"


def database_url() -> str:
    """$TTFT_PLANNER_DATABASE_URL, else sqlite:///<data dir>/planner.db."""
    return settings.DATABASE_URL.raw() or f"sqlite:///{data_dir() / 'planner.db'}"


def redacted(url: str) -> str:
    """The database URL as SQLAlchemy renders it with every credential replaced by ***, safe for messages and logs:
    the password however it is written (percent-encoded, or holding an unencoded `@`, which SQLAlchemy and libpq
    read as the end of the password and the rest as the host) and a secret query parameter's value (libpq's
    `?password=`, `?sslpassword=`; planner.inputs.urls.redact_url). The user name is kept."""
    try:
        return redact_url(make_url(url).render_as_string(hide_password=True), keep_user=True)
    except ArgumentError:
        return "<unparseable database URL>"


def sqlite_file(url: str | URL) -> Path | None:
    """The file behind a SQLite URL (also the URI form ``sqlite:///file:/path?mode=ro&uri=true``); None for
    in-memory databases and other back ends. Files next to the database (lock, spool, worker state) go beside it."""
    parsed = url if isinstance(url, URL) else make_url(str(url))
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
        return None
    db = parsed.database
    if db.startswith("file:"):
        db = db[len("file:") :].split("?", 1)[0]
        if not db or db == ":memory:" or "mode=memory" in parsed.database:
            return None
    return Path(db).expanduser()


def _sqlite_pragmas(dbapi_conn: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def _pg_session(dbapi_conn: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
    cur = dbapi_conn.cursor()
    cur.execute(f"SET idle_in_transaction_session_timeout = {int(PG_IDLE_IN_TRANSACTION_TIMEOUT_S * 1000)}")
    cur.close()
    dbapi_conn.commit()  # SET is transactional: committed, it holds for the whole session


def make_engine(url: str | None = None) -> Engine:
    """An engine for `url` (default: database_url()) with the product's connection settings.

    Raises StoreError for an unparseable URL or an unsupported/missing driver.
    Does not connect and does not migrate (see open_store).
    """
    url = url or database_url()
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise StoreError(f"database URL {redacted(url)!r} is not a valid SQLAlchemy URL: {exc}") from None
    try:
        if parsed.get_backend_name() == "sqlite":
            path = sqlite_file(parsed)
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
            engine = sa.create_engine(parsed, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})
            event.listen(engine, "connect", _sqlite_pragmas)
        else:
            engine = sa.create_engine(parsed, pool_pre_ping=True, connect_args={"connect_timeout": 5})
            if parsed.get_backend_name() == "postgresql":
                event.listen(engine, "connect", _pg_session)
    except (ArgumentError, ImportError, SQLAlchemyError) as exc:
        raise StoreError(f"cannot use database {redacted(url)}: {exc}") from None
    return engine


@contextlib.contextmanager
def _migration_lock(engine: Engine) -> Iterator[None]:
    """Serialise concurrent migrations (dashboard and worker start together)."""
    path = sqlite_file(engine.url)
    if path is not None:
        lock_path = path.with_suffix(".migrate.lock")
        with FileLock(lock_path):  # flock on POSIX, msvcrt on Windows
            yield
    else:
        yield  # PostgreSQL: env.py takes a transaction-scoped advisory lock


def open_store(url: str | None = None, *, migrate: bool = True, revision: str = "head") -> Engine:
    """Open the store and bring its schema to `revision` (default: the newest).

    Raises StoreError naming the redacted URL when the database cannot be reached,
    is corrupt, or cannot be migrated; nothing already stored is touched then.
    """
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
        if migrate:
            from planner.store.migrate import current_revision, head_revision, upgrade

            # Already there: opening is a read, so a writer holding the lock (or a read-only file) does not stop it.
            if current_revision(engine) != (head_revision() if revision == "head" else revision):
                with _migration_lock(engine):
                    upgrade(engine, revision)
    except StoreError:
        engine.dispose()
        raise
    except (OperationalError, SQLAlchemyError, OSError) as exc:
        engine.dispose()
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        raise StoreError(f"cannot open database {redacted(str(engine.url))}: {reason}") from None
    return engine


@contextlib.contextmanager
def session(engine: Engine) -> Iterator[Session]:
    """A SQLModel session that commits on success and rolls back on error."""
    with Session(engine, expire_on_commit=False) as s:
        try:
            yield s
            s.commit()
        except BaseException:
            s.rollback()
            raise


def table_of(model: type[SQLModel]) -> sa.Table:
    """The Core table of a SQLModel class, typed (mypy does not see the `__table__` SQLModel sets)."""
    table: sa.Table = model.__table__  # type: ignore[attr-defined]  # set by SQLModel's metaclass, not declared
    return table
