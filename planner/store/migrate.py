"""Alembic, driven from code: the schema is upgraded in place when the store opens.

Why Alembic: it is SQLAlchemy's own migration tool (SQLModel sits on
SQLAlchemy), it handles SQLite's limited ALTER TABLE with batch mode, and its
revision chain lets a database made by any older version upgrade in place.
Revisions are hand-written (planner/migrations/versions/NNNN_*.py).
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
from sqlalchemy.engine import Engine

__all__ = ["current_revision", "head_revision", "upgrade"]

_SCRIPT_LOCATION = Path(__file__).resolve().parent.parent / "migrations"


def _config(engine: Engine, conn=None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(_SCRIPT_LOCATION))
    cfg.attributes["connection"] = conn
    return cfg


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Upgrade the schema to `revision` inside one transaction."""
    with engine.begin() as conn:
        command.upgrade(_config(engine, conn), revision)


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at (None for an empty database)."""
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def head_revision() -> str:
    """The newest revision this version of the code knows."""
    head = ScriptDirectory.from_config(_config(None)).get_current_head()
    assert head is not None
    return head
