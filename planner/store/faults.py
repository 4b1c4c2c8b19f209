"""One sentence for every way the store can fail under a command or a page: locked, full, read-only, unreachable,
a value the database refuses. The CLI and the dashboard both print `describe(exc)` instead of a traceback.

Classification is by exception type and by the driver's own message (SQLite and PostgreSQL word these
conditions in stable, documented ways); the SQL statement is never part of the sentence.
"""

from __future__ import annotations

import sqlite3

from sqlalchemy import exc as sa_exc

from planner.store.database import StoreError

__all__ = ["NOT_SAVED", "STORE_FAILURES", "describe", "is_store_failure"]

NOT_SAVED = "your changes were not saved"
_REASON_CHARS = 240

# (what the message contains, lower case) → the sentence's head. First match wins.
_BY_MESSAGE: tuple[tuple[tuple[str, ...], str], ...] = (
    (
        (
            "database is locked",
            "database table is locked",
            "database is busy",
            "lock timeout",
            "could not obtain lock",
            "deadlock detected",
        ),
        "the database is locked (another program is writing to it)",
    ),
    (
        ("disk is full", "no space left", "could not extend file", "disk full", "diskfull"),
        "the database's disk is full",
    ),
    (("readonly", "read-only", "read only"), "the database is read-only"),
    (
        (
            "could not connect",
            "connection refused",
            "connection timed out",
            "timeout expired",
            "server closed the connection",
            "terminating connection",
            "connection is closed",
            "the database system is",
            "unable to open database file",
            "no such host",
            "name or service not known",
            "could not translate host name",
            "connection to server",
            "consuming input failed",
            "ssl connection has been closed",
        ),
        "the database is unreachable",
    ),
    (
        ("disk i/o error", "malformed", "not a database", "file is encrypted"),
        "the database file is damaged or unreadable",
    ),
    (
        ("value too long", "nul (0x00)", "0x00", "invalid byte sequence", "out of range", "numeric field overflow"),
        "the database refused a value",
    ),
)

try:  # psycopg is optional (PostgreSQL only)
    import psycopg as _psycopg

    _DRIVER_ERRORS: tuple[type[BaseException], ...] = (sqlite3.Error, _psycopg.Error)
except ImportError:  # pragma: no cover - SQLite-only installs
    _DRIVER_ERRORS = (sqlite3.Error,)


# Failures of the database itself (not of the caller's logic), for `except STORE_FAILURES as exc:`.
STORE_FAILURES: tuple[type[BaseException], ...] = (
    StoreError,
    sa_exc.DBAPIError,
    sa_exc.TimeoutError,
    sa_exc.DisconnectionError,
    *_DRIVER_ERRORS,
)


def is_store_failure(exc: BaseException) -> bool:
    """True when `exc` is one of STORE_FAILURES: what `describe` words."""
    return isinstance(exc, STORE_FAILURES)


def _reason(exc: BaseException) -> str:
    inner = getattr(exc, "orig", None) or exc
    lines = [ln.strip() for ln in str(inner).strip().splitlines() if ln.strip() and not ln.lstrip().startswith("[SQL")]
    text = lines[0] if lines else type(inner).__name__
    return text if len(text) <= _REASON_CHARS else text[: _REASON_CHARS - 1] + "…"


def describe(exc: BaseException, *, consequence: str = NOT_SAVED) -> str:
    """'the database is locked (…): <driver reason>; <consequence>' — one line, no SQL, no traceback.

    `consequence` is what the user lost ('your changes were not saved' by default; a page that was only
    reading passes e.g. 'the page could not load its data').
    """
    reason = _reason(exc)
    if isinstance(exc, StoreError):
        return f"the database is not available: {reason}; {consequence}"
    low = reason.lower()
    head = next((h for keys, h in _BY_MESSAGE if any(k in low for k in keys)), None)
    if head is None:
        if isinstance(exc, sa_exc.IntegrityError):
            head = "the database refused the change (it conflicts with a stored record)"
        elif isinstance(exc, sa_exc.DataError):
            head = "the database refused a value"
        elif isinstance(exc, (sa_exc.InterfaceError, sa_exc.DisconnectionError, sa_exc.TimeoutError)):
            head = "the database is unreachable"
        else:
            head = "the database failed"
    return f"{head}: {reason}; {consequence}"
