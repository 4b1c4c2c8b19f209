"""Reading the store back in a test: the rows of one SQL query, as plain dicts."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

__all__ = ["sql_rows"]


def sql_rows(engine: Engine, sql: str, **params: Any) -> list[dict[str, Any]]:
    """The rows of `sql` (with bound `params`), each a dict of column → value."""
    with engine.connect() as c:
        return [dict(r) for r in c.execute(sa.text(sql), params).mappings()]
