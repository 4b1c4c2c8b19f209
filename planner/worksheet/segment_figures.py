"""From probe data to worksheet figures: queueing excess per hour (segment 1) and cold readings (segment 2).

Queueing excess per hour = that hour's percentile − the quietest
hour's p50. Only hours with enough samples for a p95 (n ≥ 20, planner.percentiles)
count, and only samples in planner.endpoints.samples' definition (cold-reading probes
and skipped slots never enter). Segment 1 for the worksheet (SEGMENT1_RULE) is
the worst hour's p95 − the quietest hour's p50: the worst hour is the one with
the largest p95, the quietest the one with the smallest p50, each over the hours
with n ≥ 20, chosen independently — when they are the same hour the segment is
that hour's p95 − p50. It is the tallest bar of the excess-p95 shape
(`queueing_excess`). It needs at least two distinct hours of day with n ≥ 20
each (a day's shape, not one hour); with fewer, `queueing_segment` says why,
and how long the endpoint's own probe interval takes to fill an hour. Probes
and Compare both use it. Segment 2 is the latest completed cold reading's cold −
warm difference.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from planner.percentiles import min_n_for
from planner.worksheet.provenance import Figure, Source

__all__ = [
    "MIN_HOURS",
    "SEGMENT1_RULE",
    "Queueing",
    "hours_to_fill_words",
    "queueing_excess",
    "queueing_segment",
    "queueing_words",
    "segment1_figure",
    "segment2_figure",
]

MIN_HOURS = 2  # distinct hours of day with n ≥ 20 that segment 1 needs (a day's shape, not one hour)

#: Segment 1's rule in words, as the Probes page and the manual (docs/measurement.md) state it.
SEGMENT1_RULE = (
    "Worst hour's p95 − quietest hour's p50, over hours of day with n ≥ 20: the worst hour has the largest p95, the "
    "quietest the smallest p50, and they may be the same hour (then it is that hour's p95 − p50)."
)


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


def hours_to_fill_words(interval_s: float | None) -> str:
    """How a probe interval (s) fills an hour of day with the n ≥ 20 samples a p95 needs, in one sentence.

    3600 / interval_s samples an hour a day; "" when the interval is unknown or not positive.
    """
    if interval_s is None or not interval_s > 0:
        return ""
    need = min_n_for(0.95)
    per_hour = 3600.0 / float(interval_s)
    days = max(1, math.ceil(need / per_hour))
    per = f"{per_hour:,.0f}" if per_hour >= 1 else f"{per_hour:.2g}"
    sample_s = "sample" if per == "1" else "samples"
    tail = "" if days == 1 else f", so every hour reaches {need} after {days:,} days"
    return (
        f"At this endpoint's {float(interval_s):g} s interval a day of probing gives {per} {sample_s} "
        f"in every hour{tail}."
    )


def queueing_segment(hours: pd.DataFrame, interval_s: float | None = None) -> Queueing:
    """Segment 1 (ms) from hour-of-day rows (columns hour, n, p50_ms, p95_ms; n = samples in the hour).

    SEGMENT1_RULE: the largest p95 − the smallest p50 over hours with n ≥ 20 (the two may be the same hour); None
    with a reason when fewer than two distinct hours have that many samples — the reason says how long the probe
    interval `interval_s` (s, when known) takes to fill them. A negative excess is reported as 0.
    """
    need = min_n_for(0.95)
    rel = _reliable(hours)
    if len(rel) < MIN_HOURS:
        have = "no hour has" if rel.empty else f"only {int(rel['hour'].iloc[0]):02d}:00 has"
        fill = hours_to_fill_words(interval_s)
        return Queueing(
            None,
            n=int(rel["n"].sum()),
            reason=(
                f"Needs at least {MIN_HOURS} different hours of day "
                f"with {need} or more samples each (a busy hour and a "
                f"quiet hour); {have} that many in this range. Keep the worker running"
                + (f": {fill[0].lower()}{fill[1:]}" if fill else ".")
            ),
        )
    worst = rel.loc[rel["p95_ms"].astype(float).idxmax()]
    quiet = rel.loc[rel["p50_ms"].astype(float).idxmin()]
    value = max(0.0, float(worst["p95_ms"]) - float(quiet["p50_ms"]))
    return Queueing(
        round(value, 1),
        int(worst["hour"]),
        float(worst["p95_ms"]),
        int(quiet["hour"]),
        float(quiet["p50_ms"]),
        int(rel["n"].sum()),
    )


def queueing_words(q: Queueing) -> str:
    """The hours behind a computed segment 1, e.g. "worst hour 06:00 p95 164 ms − quietest 07:00 p50 155 ms" (or
    "worst and quietest hour 06:00: p95 164 ms − p50 155 ms" when they are one hour); "" when q has no value."""
    if q.value_ms is None or q.worst_p95_ms is None or q.quiet_p50_ms is None:
        return ""
    if q.worst_hour == q.quiet_hour:
        return (
            f"worst and quietest hour {q.worst_hour:02d}:00: p95 {q.worst_p95_ms:,.0f} ms − "
            f"p50 {q.quiet_p50_ms:,.0f} ms"
        )
    return (
        f"worst hour {q.worst_hour:02d}:00 p95 {q.worst_p95_ms:,.0f} ms − "
        f"quietest {q.quiet_hour:02d}:00 p50 {q.quiet_p50_ms:,.0f} ms"
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
    detail = f"{series} · {queueing_words(q)} ({tz})"
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
