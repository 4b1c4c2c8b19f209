"""How long the store waits for another connection's lock: below planner.store.database (which opens connections)
and planner.store.migrate (which opens its own for an upgrade), so neither imports the other for it."""

from __future__ import annotations

__all__ = ["SQLITE_BUSY_TIMEOUT_MS"]

#: How long a SQLite connection waits for a lock another connection holds before it gives up ("database is locked").
SQLITE_BUSY_TIMEOUT_MS = 5000
