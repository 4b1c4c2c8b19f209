"""From probe data to worksheet figures: queueing excess per hour (segment 1) and cold readings (segment 2).

Queueing excess per hour (DESIGN §3) = that hour's percentile − the quietest
hour's p50. The quietest hour is the hour with the lowest p50 among hours with
enough samples for a p95 (n ≥ 20; if no hour has that many, n ≥ 2), so a
sparse hour never sets the baseline. Segment 1 for the worksheet is the
largest p95 excess over the reliable hours: the queueing a p95 user meets at
the worst hour of the day. Segment 2 is the latest completed cold reading's
cold − warm difference.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from planner.provenance import Figure, Source
from planner.stats import min_n_for

__all__ = ["queueing_excess", "segment1_figure", "segment2_figure"]


def queueing_excess(hours: pd.DataFrame) -> tuple[pd.DataFrame, int | None]:
    """Add excess_p50_ms and excess_p95_ms to an hour-of-day frame (columns hour, n, p50_ms, p95_ms).

    Returns (frame, quietest hour) — (frame with NaN excess, None) when no hour has n ≥ 2.
    """
    df = hours.copy()
    strict = df[(df["n"] >= min_n_for(0.95)) & df["p50_ms"].notna()]
    pool = strict if not strict.empty else df[(df["n"] >= min_n_for(0.5)) & df["p50_ms"].notna()]
    if pool.empty:
        df["excess_p50_ms"] = float("nan")
        df["excess_p95_ms"] = float("nan")
        return df, None
    quiet = pool.loc[pool["p50_ms"].astype(float).idxmin()]
    base = float(quiet["p50_ms"])
    df["excess_p50_ms"] = df["p50_ms"].astype(float) - base
    df["excess_p95_ms"] = df["p95_ms"].astype(float) - base
    return df, int(quiet["hour"])


def segment1_figure(hours: pd.DataFrame, *, series: str, tz: str, window: str,
                    measured_at_ms: int | None = None) -> Figure | None:
    """Segment 1 (queueing, ms): the worst reliable hour's p95 − the quietest hour's p50, as a PROBE figure.

    `series` names the endpoint and vantage, `window` the date range. None when no hour has
    n ≥ 20 (a p95 from fewer samples is the maximum, not a p95).
    """
    df, quiet = queueing_excess(hours)
    reliable = df[(df["n"] >= min_n_for(0.95)) & df["excess_p95_ms"].notna()]
    if quiet is None or reliable.empty:
        return None
    worst = reliable.loc[reliable["excess_p95_ms"].idxmax()]
    base = float(df.loc[df["hour"] == quiet, "p50_ms"].iloc[0])
    value = max(0.0, float(worst["excess_p95_ms"]))
    detail = (f"{series} · worst hour {int(worst['hour']):02d}:00 p95 {float(worst['p95_ms']):.0f} ms − "
              f"quietest {quiet:02d}:00 p50 {base:.0f} ms ({tz})")
    return Figure(value=round(value, 1), unit="ms", source=Source.PROBE, detail=detail, n=int(df["n"].sum()),
                  window=window, measured_at_ms=measured_at_ms)


def segment2_figure(reading: Mapping[str, Any], *, series: str) -> Figure | None:
    """Segment 2 (cold start, ms) from a cold_reading row: cold − warm TTFT, as a COLD_READING figure.

    None unless the reading is done and both probes succeeded. A negative difference is reported as 0.
    """
    diff = reading.get("cold_minus_warm_ms")
    if reading.get("state") != "done" or diff is None or pd.isna(diff):
        return None
    detail = (f"{series} · cold {float(reading['cold_ttft_ms']):.0f} ms − warm {float(reading['warm_ttft_ms']):.0f} ms"
              f" after {float(reading['idle_s']):g} s idle · {int(reading.get('cold_attempts') or 1)} attempt(s),"
              f" {int(reading.get('cold_status_503') or 0)} × 503")
    return Figure(value=round(max(0.0, float(diff)), 1), unit="ms", source=Source.COLD_READING, detail=detail, n=1,
                  window="one cold reading", measured_at_ms=None if reading.get("completed_at_ms") is None
                  else int(reading["completed_at_ms"]))
