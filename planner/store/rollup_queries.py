"""Probes-page queries over raw samples AND the hourly rollups that retention leaves behind.

After `planner.store.rollups.apply_retention` a series keeps raw samples for the last
`retention_days` only; every older sample lives, exactly once, in a `probe_rollup` row (one per
endpoint, vantage and UTC hour: counts plus a log-spaced TTFT histogram). A date range that reaches
back past the oldest raw sample therefore has two parts, and these queries merge them:

- **raw part**: the same SQL as `planner.store.probe_queries` — counts per (group, 1 ms TTFT cell),
  then only the rows of the cells that hold the wanted ranks — so raw values enter exactly;
- **rolled-up part**: each histogram bucket enters as its upper edge (`bucket_upper_ms`), with its
  count; counts of ok / failed / skipped add up exactly.

The nearest rank (rank = ceil(p·n), planner.percentiles' definition) is then read from the union. Every
rolled-up value is replaced by something at most ~12 % above it (a bucket is 10^(1/20) ≈ 1.122 wide)
and raw values are unchanged, so every order statistic — every percentile — of the union is at least
the exact one and at most ~12.2 % above it: "from hourly histograms: upper bound within ~12%". A result
is also clamped to the exact maximum (rollups keep min/max), which keeps it an upper bound. With no
rollup in the range the functions return exactly what `probe_queries.summary` / `hour_of_day` return.

Which rollup hours count: those whose UTC hour *starts* in [start_ms, end_ms). In the hour-of-day
view a rollup hour goes to the local hour its start falls in; in zones with a whole-hour offset
(most) that is exact, in the few with a :30/:45 offset it shifts that hour's samples by up to 45 min.

The time series, heatmap, ECDF, phase breakdown and CSV export read raw samples only
(`raw_first_ms` tells the page from when).
"""

from __future__ import annotations

import bisect
import datetime as dt
import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from planner.lazy import lazy_module
from planner.percentiles import min_n_for
from planner.store import probe_queries as pq
from planner.store.database import table_of
from planner.store.probe_queries import HOUR_MS, SeriesKey, local_ms_sql, range_params
from planner.store.rollups import bucket_upper_ms
from planner.store.worker import ProbeRollupRow

if TYPE_CHECKING:
    import pandas as pd
else:  # imported on first use: the worker stores rows and starts without it
    pd = lazy_module("pandas")

__all__ = [
    "ROLLUP_BOUND",
    "ROLLUP_LABEL",
    "hour_of_day",
    "rollup_coverage",
    "summary",
]

#: what a percentile that used rollups can be off by: it is ≥ the exact value and ≤ exact × ROLLUP_BOUND.
ROLLUP_BOUND = 10 ** (1 / 20)
ROLLUP_LABEL = "from hourly histograms: upper bound within ~12%"
_SUMMARY_PS = (50, 90, 95, 99)
_R = table_of(ProbeRollupRow)
# One hour of a series: hour_start_ms, n_ok, n_failed, n_skipped, ttft_min_ms, ttft_max_ms, hist_json (_rollup_rows).
_HourRow = sa.Row[int, int, int, int, float | None, float | None, str]


def _in_range(key: SeriesKey, start_ms: int, end_ms: int) -> tuple[Any, ...]:
    """WHERE conditions: the series' rollup rows whose hour starts in [start_ms, end_ms) (a unique index seek)."""
    return (
        _R.c.endpoint_id == key.endpoint_id,
        _R.c.vantage == key.vantage,
        _R.c.hour_start_ms >= int(start_ms),
        _R.c.hour_start_ms < int(end_ms),
    )


def _rollup_rows(conn: sa.Connection, key: SeriesKey, start_ms: int, end_ms: int) -> Sequence[_HourRow]:
    """The series' rollup rows of the range (_in_range)."""
    return conn.execute(
        sa.select(
            _R.c.hour_start_ms,
            _R.c.n_ok,
            _R.c.n_failed,
            _R.c.n_skipped,
            _R.c.ttft_min_ms,
            _R.c.ttft_max_ms,
            _R.c.hist_json,
        ).where(*_in_range(key, start_ms, end_ms))
    ).all()


def rollup_coverage(engine: Engine, key: SeriesKey, start_ms: int, end_ms: int) -> dict[str, Any]:
    """What of [start_ms, end_ms) comes from rollups: hours, n_ok, n_failed, n_skipped, first_ms / end_ms
    (the first rolled-up hour's start and the last one's end; None when there is none), and raw_first_ms
    (the series' oldest raw sample, None when it has none)."""
    with engine.connect() as conn:
        agg = conn.execute(
            sa.select(
                sa.func.count(),
                sa.func.sum(_R.c.n_ok),
                sa.func.sum(_R.c.n_failed),
                sa.func.sum(_R.c.n_skipped),
                sa.func.min(_R.c.hour_start_ms),
                sa.func.max(_R.c.hour_start_ms),
            ).where(*_in_range(key, start_ms, end_ms))
        ).one()
    raw_first, _ = pq.series_bounds(engine, key)
    hours, ok, failed, skipped, first, last = agg
    return {
        "hours": int(hours or 0),
        "n_ok": int(ok or 0),
        "n_failed": int(failed or 0),
        "n_skipped": int(skipped or 0),
        "first_ms": None if first is None else int(first),
        "end_ms": None if last is None else int(last) + HOUR_MS,
        "raw_first_ms": None if raw_first is None else int(raw_first),
    }


def _merged(
    conn: sa.Connection,
    key_sql: str,
    params: dict[str, Any],
    rollups: Sequence[_HourRow],
    group_of: Callable[[int], int],
    ps: tuple[int, ...],
) -> dict[int, dict[str, Any]]:
    """Per group k: n, n_rollup, failed, skipped, min_ms, max_ms and p<P>_ms over raw cells ∪ rollup histograms.

    `group_of(hour_start_ms)` maps a rollup hour to its group. The raw part is pass 1 of probe_queries'
    two-pass percentiles (1 ms cells). Clusters in TTFT order: a raw cell with the histogram edges that fall
    inside it, or a lone edge; the rank lands in one cluster, and only cells where it lands are read row by
    row (pass 2), as in probe_queries."""
    groups = pq.ttft_cells(conn, key_sql, params)
    points: defaultdict[int, defaultdict[float, int]] = defaultdict(lambda: defaultdict(int))  # k -> {edge ms: count}
    roll: defaultdict[int, dict[str, Any]] = defaultdict(
        lambda: {"n": 0, "failed": 0, "skipped": 0, "min": None, "max": None}
    )
    for hour, n_ok, n_failed, n_skipped, lo, hi, hist_json in rollups:
        k = group_of(int(hour))
        r = roll[k]
        r["n"] += int(n_ok)
        r["failed"] += int(n_failed)
        r["skipped"] += int(n_skipped)
        if lo is not None:
            r["min"] = lo if r["min"] is None else min(r["min"], lo)
        if hi is not None:
            r["max"] = hi if r["max"] is None else max(r["max"], hi)
        for idx, c in json.loads(hist_json).items():
            points[k][bucket_upper_ms(int(idx))] += int(c)
    out: dict[int, dict[str, Any]] = {}
    Edges = list[tuple[float, int]]  # the histogram edges (ms, count) inside one raw cell
    wanted: defaultdict[tuple[int, int], list[tuple[int, int, Edges]]] = defaultdict(
        list
    )  # (k, b) -> [(p, offset within the cluster, edges inside the cell)]
    for k in set(groups) | set(roll):
        g = groups.get(k, pq.GroupCells([], 0, 0))
        r = roll[k]
        n_raw = sum(c.n for c in g.cells)
        n = n_raw + sum(points[k].values()) if k in points else n_raw
        mins = [v for v in ([g.cells[0].min_ms] if g.cells else []) + [r["min"]] if v is not None]
        maxs = [v for v in ([max(c.max_ms for c in g.cells)] if g.cells else []) + [r["max"]] if v is not None]
        row: dict[str, Any] = {
            "k": k,
            "n": n,
            "n_rollup": n - n_raw,
            "failed": g.failed + r["failed"],
            "skipped": g.skipped + r["skipped"],
            "min_ms": min(mins) if mins else None,
            "max_ms": max(maxs) if maxs else None,
        }
        out[k] = row
        if n == 0:
            continue
        # Clusters in TTFT order: [start value, count, cell b or None, edges inside the cell].
        los = [c.min_ms for c in g.cells]
        inside: defaultdict[int, Edges] = defaultdict(list)
        clusters: list[list[Any]] = [[c.min_ms, c.n, c.b, inside[c.b]] for c in g.cells]
        for e, c in sorted(points.get(k, {}).items()):
            i = bisect.bisect_right(los, e) - 1
            if i >= 0 and g.cells[i].min_ms <= e <= g.cells[i].max_ms:
                clusters[i][1] += c
                inside[g.cells[i].b].append((e, c))
            else:
                clusters.append([e, c, None, None])
        clusters.sort(key=lambda x: x[0])
        for p, (i, offset) in pq.rank_cells([c for _, c, _, _ in clusters], ps).items():
            start, _, b, edges = clusters[i]
            if b is None:
                row[f"p{p}_ms"] = start
            else:
                wanted[(k, b)].append((p, offset, edges))
    if wanted:
        values = pq.cell_values(conn, key_sql, params, wanted)
        for (k, b), picks in wanted.items():
            for p, offset, edges in picks:
                vs = sorted(values[(k, b)] + [e for e, c in edges for _ in range(c)])
                out[k][f"p{p}_ms"] = vs[offset]
    for row in out.values():
        for p in ps:
            v = row.get(f"p{p}_ms")
            if v is not None and row["max_ms"] is not None:
                row[f"p{p}_ms"] = min(v, row["max_ms"])  # still ≥ the exact value, which is ≤ the exact max
    return out


def summary(engine: Engine, key: SeriesKey, start_ms: int, end_ms: int) -> dict[str, Any]:
    """probe_queries.summary over raw samples and rollups, plus n_rollup (ok samples read from histograms;
    0 = every figure is exact) and rollup (rollup_coverage, or None when the range holds no rollup)."""
    with engine.connect() as conn:
        rollups = _rollup_rows(conn, key, start_ms, end_ms)
    if not rollups:
        return {**pq.summary(engine, key, start_ms, end_ms), "n_rollup": 0, "rollup": None}
    with engine.connect() as conn:
        merged = _merged(
            conn, "(started_at_ms * 0)", range_params(key, start_ms, end_ms), rollups, lambda _: 0, _SUMMARY_PS
        )
    row = merged.get(0, {"n": 0, "n_rollup": 0, "failed": 0, "skipped": 0, "min_ms": None, "max_ms": None})
    attempts = row["n"] + row["failed"]
    out = {
        "n": row["n"],
        "failed": row["failed"],
        "skipped": row["skipped"],
        "error_rate": row["failed"] / attempts if attempts else None,
        **{f"p{p}_ms": row.get(f"p{p}_ms") for p in _SUMMARY_PS},
        "min_ms": row["min_ms"],
        "max_ms": row["max_ms"],
        "reliable": {f"p{p}": row["n"] >= min_n_for(p / 100) for p in _SUMMARY_PS},
        "n_rollup": row["n_rollup"],
        "rollup": rollup_coverage(engine, key, start_ms, end_ms),
    }
    return out


def _local_hour_fn(tz: str) -> Callable[[int], int]:
    zone = ZoneInfo(tz)

    def hour_of(ms: int) -> int:
        return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).astimezone(zone).hour

    return hour_of


def hour_of_day(engine: Engine, key: SeriesKey, start_ms: int, end_ms: int, tz: str = "UTC") -> pd.DataFrame:
    """probe_queries.hour_of_day over raw samples and rollups: 24 rows with n, failed, skipped, error_rate,
    p50_ms, p95_ms, reliable_p50/p95, plus n_rollup per hour (ok samples read from histograms; where > 0 that
    hour's percentiles are upper bounds within ~12%)."""
    with engine.connect() as conn:
        rollups = _rollup_rows(conn, key, start_ms, end_ms)
    if not rollups:
        df = pq.hour_of_day(engine, key, start_ms, end_ms, tz)
        df["n_rollup"] = 0
        return df
    local = local_ms_sql(tz, start_ms, end_ms)
    with engine.connect() as conn:
        merged = _merged(
            conn,
            f"(({local} / {HOUR_MS}) % 24)",
            range_params(key, start_ms, end_ms),
            rollups,
            _local_hour_fn(tz),
            (50, 95),
        )
    cols = ["n", "failed", "skipped", "p50_ms", "p95_ms", "min_ms", "max_ms", "n_rollup"]
    df = pd.DataFrame([{"hour": h, **{c: merged.get(h, {}).get(c) for c in cols}} for h in range(24)])
    for c in ("n", "failed", "skipped", "n_rollup"):
        df[c] = df[c].fillna(0).astype("int64")
    for c in ("p50_ms", "p95_ms", "min_ms", "max_ms"):
        df[c] = df[c].astype("float64")
    attempts = df["n"] + df["failed"]
    df["error_rate"] = (df["failed"] / attempts.where(attempts > 0)).astype("float64")
    df["reliable_p50"] = df["n"] >= min_n_for(0.5)
    df["reliable_p95"] = df["n"] >= min_n_for(0.95)
    return df[
        [
            "hour",
            "n",
            "failed",
            "skipped",
            "p50_ms",
            "p95_ms",
            "min_ms",
            "max_ms",
            "error_rate",
            "reliable_p50",
            "reliable_p95",
            "n_rollup",
        ]
    ]
