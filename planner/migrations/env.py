"""Alembic environment: always run with a connection passed in by planner.store.migrate."""

from alembic import context
from sqlalchemy import text

connection = context.config.attributes.get("connection")
if connection is None:  # pragma: no cover - only reached by running the alembic CLI by hand
    raise RuntimeError("run migrations through planner.store.open_store(), not the alembic CLI")

if connection.dialect.name == "postgresql":
    # Two processes opening the store at once must not both create tables.
    connection.execute(text("SELECT pg_advisory_xact_lock(7102026)"))

context.configure(
    connection=connection,
    target_metadata=None,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
