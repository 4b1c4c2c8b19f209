"""What the Probes page reads of an endpoint's probe history: its series, the range's summary and hours (exact from raw
samples, merged with hourly rollups once raw samples pass retention), the time series, heatmap, ECDF, phases, the
latest requests and the CSV export.

The public surface pages use; the SQL lives in planner.store.probe_queries and planner.store.rollup_queries. Times are
UTC epoch ms, TTFT in ms; every percentile is nearest rank (planner.percentiles). Raises the store's errors only.
"""

from __future__ import annotations

from planner.store.probe_queries import (
    HEATMAP_MAX_DAYS,
    SeriesKey,
    day_hour_heatmap,
    ecdf_points,
    export_csv,
    latest_requests,
    phase_breakdown,
    series_keys,
    time_series,
)
from planner.store.rollup_queries import ROLLUP_LABEL, hour_of_day, summary

__all__ = [
    "HEATMAP_MAX_DAYS",
    "ROLLUP_LABEL",
    "SeriesKey",
    "day_hour_heatmap",
    "ecdf_points",
    "export_csv",
    "hour_of_day",
    "latest_requests",
    "phase_breakdown",
    "series_keys",
    "summary",
    "time_series",
]
