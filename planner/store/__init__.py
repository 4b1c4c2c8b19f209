"""The store: SQLModel tables, the engine (SQLite default, PostgreSQL by URL), migrations and queries.

Table modules live beside this file (worksheets, probes, …); each owns its
tables and queries. Schema changes go through planner/migrations/versions.
The package itself offers what a caller needs to reach the store; the rest of the
engine (make_engine, data_dir, table_of, …) is planner.store.database's.
"""

from planner.store.database import StoreError, database_url, open_store, redacted, session

__all__ = ["StoreError", "database_url", "open_store", "redacted", "session"]
