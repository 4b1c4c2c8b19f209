"""A finished cold reading stored straight into the store (cold_reading table), for the tests and page states that
show one without running the worker's cold-reading request."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from planner.store.worker import ColdReadingRow

__all__ = ["store_cold_reading"]


def store_cold_reading(
    engine: Engine,
    endpoint_id: int,
    *,
    idle_s: float,
    cold_ttft_ms: float,
    warm_ttft_ms: float,
    requested_at_ms: int,
    completed_at_ms: int,
    cold_attempts: int = 1,
    cold_status_503: int = 0,
) -> None:
    """Store a done cold reading of `endpoint_id` (vantage ""): cold_minus_warm_ms is cold_ttft_ms − warm_ttft_ms;
    by default its cold probe was answered at the first attempt (no 503)."""
    with engine.begin() as c:
        c.execute(
            sa.insert(ColdReadingRow.__table__).values(
                endpoint_id=endpoint_id,
                vantage="",
                state="done",
                idle_s=idle_s,
                requested_at_ms=requested_at_ms,
                cold_ttft_ms=cold_ttft_ms,
                warm_ttft_ms=warm_ttft_ms,
                cold_minus_warm_ms=cold_ttft_ms - warm_ttft_ms,
                cold_attempts=cold_attempts,
                cold_status_503=cold_status_503,
                completed_at_ms=completed_at_ms,
            )
        )
