"""The latest cold reading of an endpoint: one rule for the Probes page's segment 2, Compare and `report`.

LATEST_RULE: the latest cold reading is the newest reading whose cold probe and the warm probe right after it both
answered (state done), by the time it completed. A reading that failed half-way (its warm probe refused, the worker
stopped) is in the history, never "the latest": its cold − warm is unknown, and an older complete reading still
stands. Compare falls back to an endpoint's latest kind='cold' sample only where it has no such reading.

Raises nothing of its own: the store's errors pass through.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Engine

from planner.lazy import lazy_module
from planner.store.cold_readings import newest_done_readings
from planner.store.probe_queries import cold_readings
from planner.worksheet.provenance import Figure
from planner.worksheet.segment_figures import segment2_figure

if TYPE_CHECKING:
    import pandas as pd
else:  # imported on first use: the worker stores rows and starts without it
    pd = lazy_module("pandas")

__all__ = ["LATEST_RULE", "cold_reading_history", "cold_start_figure", "latest_cold_reading", "latest_cold_readings"]

LATEST_RULE = (
    "The latest cold reading is the newest one whose cold and warm probes both answered; a reading that failed "
    "half-way stays in the history below."
)


def latest_cold_readings(
    engine: Engine, endpoint_ids: Collection[int], *, vantage: str | None = None
) -> dict[int, dict[str, Any]]:
    """endpoint_id → its latest cold reading by LATEST_RULE (every column of cold_reading: cold_ttft_ms,
    warm_ttft_ms, cold_minus_warm_ms in ms, completed_at_ms UTC epoch ms, …) from `vantage` (None: any vantage).
    Endpoints without one are absent."""
    return newest_done_readings(engine, endpoint_ids, vantage=vantage)


def latest_cold_reading(engine: Engine, endpoint_id: int, vantage: str | None) -> dict[str, Any] | None:
    """One endpoint's latest cold reading by LATEST_RULE, or None."""
    return latest_cold_readings(engine, [endpoint_id], vantage=vantage).get(endpoint_id)


def cold_start_figure(engine: Engine, endpoint_id: int, vantage: str | None, *, series: str) -> Figure | None:
    """Segment 2 (cold start, ms: cold − warm) from the endpoint's latest cold reading, labelled `series`; None
    without one."""
    reading = latest_cold_reading(engine, endpoint_id, vantage)
    return None if reading is None else segment2_figure(reading, series=series)


def cold_reading_history(engine: Engine, endpoint_id: int, vantage: str | None, limit: int = 50) -> pd.DataFrame:
    """The endpoint's cold readings, newest requested first, done or not (every column of cold_reading)."""
    return cold_readings(engine, endpoint_id, vantage, limit)
