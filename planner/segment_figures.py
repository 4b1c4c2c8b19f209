"""From probe data to worksheet figures: queueing excess per hour (segment 1) and cold readings (segment 2).

Queueing excess per hour = that hour's percentile − the quietest
hour's p50. Only hours with enough samples for a p95 (n ≥ 20, planner.stats)
count, and only samples in planner.samples' definition (cold-reading probes
and skipped slots never enter). Segment 1 for the worksheet is the worst such
hour's p95 − the quietest *other* such hour's p50: the queueing a p95 user
meets at the busiest hour over the quiet-hour baseline. It needs at least two
distinct hours of day with n ≥ 20 each; with fewer, `queueing_segment` says
why it cannot be computed instead of quoting one hour's own spread. Probes and
Compare both use it. Segment 2 is the latest completed cold reading's cold −
warm difference.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from planner.provenance import Figure, Source
from planner.stats import min_n_for

__all__ = ["MIN_HOURS", "Queueing", "queueing_excess", "queueing_segment", "segment1_figure", "segment2_figure"]

MIN_HOURS = 2  # distinct hours of day with n ≥ 20 that segment 1 needs (a worst hour and a quiet hour)


@dataclass(frozen=True)
class Queueing:
    """Segment 1 from an hour-of-day frame: the value (ms) and the hours behind it, or why there is none."""

    value_ms: float | None
    worst_hour: int | None = None
    worst_p95_ms: float | None = None
    quiet_hour: int | None = None
    quiet_p50_ms: float | None = None
    n: int = 0  # samples in the hours with n ≥ 20
    reason: str | None = None  # set when value_ms is None


def _reliable(hours: pd.DataFrame) -> pd.DataFrame:
    need = min_n_for(0.95)
    return hours[(hours["n"] >= need) & hours["p50_ms"].notna() & hours["p95_ms"].notna()]


def queueing_segment(hours: pd.DataFrame) -> Queueing:
    """Segment 1 (ms) from hour-of-day rows (columns hour, n, p50_ms, p95_ms; n = samples in the hour).

    worst hour's p95 − quietest other hour's p50, over hours with n ≥ 20; None with a reason when fewer than
    two distinct hours have that many samples. A negative excess is reported as 0.
    """
    need = min_n_for(0.95)
    rel = _reliable(hours)
    if len(rel) < MIN_HOURS:
        have = "no hour has" if rel.empty else f"only {int(rel['hour'].iloc[0]):02d}:00 has"
        return Queueing(
            None,
            n=int(rel["n"].sum()),
            reason=(
                f"Needs at least {MIN_HOURS} different hours of day "
                f"with {need} or more samples each (a busy hour and a "
                f"quiet hour); {have} that many in this range. Keep the worker running: at a 60 s interval a day of "
                "probing gives 60 samples in every hour."
            ),
        )
    quiet = rel.loc[rel["p50_ms"].astype(float).idxmin()]
    others = rel[rel["hour"] != quiet["hour"]]
    worst = others.loc[others["p95_ms"].astype(float).idxmax()]
    value = max(0.0, float(worst["p95_ms"]) - float(quiet["p50_ms"]))
    return Queueing(
        round(value, 1),
        int(worst["hour"]),
        float(worst["p95_ms"]),
        int(quiet["hour"]),
        float(quiet["p50_ms"]),
        int(rel["n"].sum()),
    )


def queueing_excess(hours: pd.DataFrame) -> tuple[pd.DataFrame, int | None]:
    """Add excess_p50_ms and excess_p95_ms (over the quietest reliable hour's p50) to an hour-of-day frame.

    Returns (frame, quietest hour) — (frame with NaN excess, None) when no hour has n ≥ 20.
    """
    df = hours.copy()
    rel = _reliable(df)
    if rel.empty:
        df["excess_p50_ms"] = float("nan")
        df["excess_p95_ms"] = float("nan")
        return df, None
    quiet = rel.loc[rel["p50_ms"].astype(float).idxmin()]
    base = float(quiet["p50_ms"])
    df["excess_p50_ms"] = df["p50_ms"].astype(float) - base
    df["excess_p95_ms"] = df["p95_ms"].astype(float) - base
    return df, int(quiet["hour"])


def segment1_figure(
    hours: pd.DataFrame, *, series: str, tz: str, window: str, measured_at_ms: int | None = None
) -> Figure | None:
    """Segment 1 (queueing, ms) as a PROBE figure (see queueing_segment); None when it cannot be computed.

    `series` names the endpoint and vantage, `window` the date range, `tz` the zone the hours are in.
    """
    q = queueing_segment(hours)
    if q.value_ms is None:
        return None
    detail = (
        f"{series} · worst hour {q.worst_hour:02d}:00 p95 {q.worst_p95_ms:,.0f} ms − "
        f"quietest {q.quiet_hour:02d}:00 p50 {q.quiet_p50_ms:,.0f} ms ({tz})"
    )
    return Figure(
        value=q.value_ms,
        unit="ms",
        source=Source.PROBE,
        detail=detail,
        n=q.n,
        window=window,
        measured_at_ms=measured_at_ms,
    )


def segment2_figure(reading: Mapping[str, Any], *, series: str) -> Figure | None:
    """Segment 2 (cold start, ms) from a cold_reading row: cold − warm TTFT, as a COLD_READING figure.

    None unless the reading is done and both probes succeeded. A negative difference is reported as 0.
    """
    diff = reading.get("cold_minus_warm_ms")
    if reading.get("state") != "done" or diff is None or pd.isna(diff):
        return None
    detail = (
        f"{series} · cold {float(reading['cold_ttft_ms']):,.0f} ms − warm {float(reading['warm_ttft_ms']):,.0f} ms"
        f" after {float(reading['idle_s']):g} s idle · {int(reading.get('cold_attempts') or 1)} attempt(s),"
        f" {int(reading.get('cold_status_503') or 0)} × 503"
    )
    return Figure(
        value=round(max(0.0, float(diff)), 1),
        unit="ms",
        source=Source.COLD_READING,
        detail=detail,
        n=1,
        window="one cold reading",
        measured_at_ms=None if reading.get("completed_at_ms") is None else int(reading["completed_at_ms"]),
    )
