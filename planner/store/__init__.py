"""The store: SQLModel tables, the engine (SQLite default, PostgreSQL by URL), migrations and queries.

Table modules live beside this file (worksheets, probes, …); each owns its
tables and queries. Schema changes go through planner/migrations/versions.
"""

from planner.store.engine import (
    DATA_DIR_ENV,
    DATABASE_URL_ENV,
    StoreError,
    data_dir,
    database_url,
    make_engine,
    open_store,
    redacted,
    session,
)

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
]
