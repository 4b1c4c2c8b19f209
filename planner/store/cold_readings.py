"""The cold_reading table's read behind the one rule of "the latest cold reading" (planner.endpoints.cold_readings); the
history of an endpoint's readings is planner.store.probe_queries.cold_readings.

Only the SQL lives here: the rule's words and what each page and command makes of the row are
planner.endpoints.cold_readings'.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from planner.store.database import table_of
from planner.store.worker import ColdReadingRow, ColdState

__all__ = ["newest_done_readings"]


def newest_done_readings(
    engine: Engine, endpoint_ids: Collection[int], *, vantage: str | None = None
) -> dict[int, dict[str, Any]]:
    """endpoint_id → every column of its newest cold reading in state done (its cold and its warm probe both
    answered), newest by completed_at_ms (then id), from `vantage` (None: any). Endpoints without one are absent."""
    c = table_of(ColdReadingRow).c
    q = sa.select(table_of(ColdReadingRow)).where(
        c.endpoint_id.in_(list(endpoint_ids)),
        c.state == ColdState.DONE.value,
        c.cold_ttft_ms.is_not(None),
        c.warm_ttft_ms.is_not(None),
        c.completed_at_ms.is_not(None),
    )
    if vantage is not None:
        q = q.where(c.vantage == vantage)
    out: dict[int, dict[str, Any]] = {}
    with engine.connect() as conn:
        for row in conn.execute(q.order_by(c.completed_at_ms, c.id)).mappings():
            out[row["endpoint_id"]] = dict(row)  # oldest first: the newest is the one left
    return out
