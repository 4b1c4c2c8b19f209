"""Queries behind the Probes page, aggregated in SQL so a million samples stay fast.

Every percentile is nearest-rank (planner.percentiles' definition, rank = ceil(p·n))
computed in SQL with window functions: ``ROW_NUMBER() OVER (PARTITION BY key
ORDER BY ttft_ms)`` and the partition's ``COUNT(*)``, keeping the row whose rank
is ``(P·n + 99) / 100`` in integer arithmetic (= ceil(P/100 · n)). The same
statement serves the time series (key = time bucket), the hour-of-day shape
(key = hour in the viewer's time zone), the day × hour heatmap and the summary,
so only a few dozen rows ever leave the database. The summary, the hours of the day and
the time series use a faster two-pass variant instead of the window sort: counts per
(group, ttft cell of 1 ms — 8 ms for the time series' hundreds of buckets) first, then
only the rows of the cells that hold the wanted ranks; the result is the same exact
nearest rank. Range scans use the index
``(vantage, endpoint_id, started_at_ms)`` of probe_sample.

Viewer time zone: the UTC offset of each sample is applied in SQL with a CASE
over the zone's transitions inside the queried range, so hours stay right
across daylight-saving changes.

Which rows count: planner.endpoints.samples' one definition of a sample (successful,
kind scheduled or manual, not a cached series); the error rate is failed /
(ok + failed) of those kinds; skipped slots are counted apart; cold and warm
samples belong to cold readings.

Over 400 lines: every SQL-side percentile query of the Probes page, with the one rank definition they share; they are
grouped by the figure they feed.
"""

from __future__ import annotations

import bisect
import datetime as dt
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple
from zoneinfo import ZoneInfo

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from planner.endpoints.samples import ATTEMPT_SQL, SAMPLE_SQL
from planner.inputs.untrusted import csv_text
from planner.lazy import lazy_module
from planner.percentiles import min_n_for
from planner.probes.ttft import PHASES_MS
from planner.settings import vantage_name
from planner.store.database import table_of
from planner.store.endpoints import EndpointRow
from planner.store.probes import ProbeSampleRow
from planner.store.requests import ProbeRequestRow
from planner.store.worker import ColdReadingRow, EndpointStatusRow

if TYPE_CHECKING:
    import pandas as pd
else:  # imported on first use: the worker stores rows and starts without it
    pd = lazy_module("pandas")

__all__ = [
    "HEATMAP_MAX_DAYS",
    "HOUR_MS",
    "PHASES",
    "GroupCells",
    "SeriesKey",
    "TtftCell",
    "cell_values",
    "cold_readings",
    "day_hour_heatmap",
    "ecdf_points",
    "export_csv",
    "hour_of_day",
    "latest_requests",
    "local_ms_sql",
    "phase_breakdown",
    "range_params",
    "rank_cells",
    "series_bounds",
    "series_keys",
    "summary",
    "time_series",
    "ttft_cells",
]

HOUR_MS = 3_600_000
DAY_MS = 86_400_000
#: The phase breakdown's columns: our phases, then the endpoint's own latency figure where it reports one (Bedrock).
PHASES = (*PHASES_MS, "server_latency_ms")
_OK = SAMPLE_SQL
_ATTEMPT = ATTEMPT_SQL
_RANGE = "vantage = :vantage AND endpoint_id = :endpoint_id AND started_at_ms >= :start_ms AND started_at_ms < :end_ms"


@dataclass(frozen=True)
class SeriesKey:
    """One probe series: an endpoint seen from one vantage."""

    endpoint_id: int
    endpoint_name: str
    vantage: str

    @property
    def label(self) -> str:
        return f"{self.endpoint_name} @ {vantage_name(self.vantage)}"


def range_params(key: SeriesKey, start_ms: int, end_ms: int) -> dict[str, Any]:
    """The bind parameters of the series' range [start_ms, end_ms) that every statement here filters on."""
    return {"vantage": key.vantage, "endpoint_id": key.endpoint_id, "start_ms": int(start_ms), "end_ms": int(end_ms)}


def series_keys(engine: Engine) -> list[SeriesKey]:
    """Every (endpoint, vantage) pair worth showing: each endpoint's own vantage plus every vantage
    whose worker reported on it. Cheap: reads the endpoint and endpoint_status tables, not the samples."""
    e, st = table_of(EndpointRow), table_of(EndpointStatusRow)
    with engine.connect() as conn:
        eps = conn.execute(sa.select(e.c.id, e.c.name, e.c.vantage).order_by(e.c.name)).all()
        seen = conn.execute(sa.select(st.c.endpoint_id, st.c.vantage)).all()
    vantages: dict[int, set[str]] = {i: {v} for i, _, v in eps}
    for i, v in seen:
        vantages.setdefault(i, set()).add(v)
    return [SeriesKey(i, name, v) for i, name, _ in eps for v in sorted(vantages[i])]


def series_bounds(engine: Engine, key: SeriesKey) -> tuple[int | None, int | None]:
    """(first, last) started_at_ms of the series, or (None, None) when it has no samples (two index seeks)."""
    s = table_of(ProbeSampleRow)
    where = (s.c.vantage == key.vantage, s.c.endpoint_id == key.endpoint_id)
    with engine.connect() as conn:
        lo = conn.execute(sa.select(sa.func.min(s.c.started_at_ms)).where(*where)).scalar()
        hi = conn.execute(sa.select(sa.func.max(s.c.started_at_ms)).where(*where)).scalar()
    return lo, hi


def local_ms_sql(tz: str, start_ms: int, end_ms: int) -> str:
    """SQL for `started_at_ms + <UTC offset of tz at that instant, ms>` valid over [start_ms, end_ms)."""
    zone = ZoneInfo(tz)

    def off(ms: int) -> int:
        when = dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).astimezone(zone)
        offset = when.utcoffset()
        assert offset is not None  # an aware datetime always has its offset
        return int(offset.total_seconds() * 1000)

    step = 6 * HOUR_MS
    bounds: list[tuple[int, int]] = []  # (transition instant, offset from then on)
    t, cur = start_ms, off(start_ms)
    first = cur
    while t < end_ms:
        nxt = min(t + step, end_ms)
        o = off(nxt)
        if o != cur:
            lo, hi = t, nxt  # bisect to the millisecond
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if off(mid) == cur:
                    lo = mid
                else:
                    hi = mid
            bounds.append((hi, o))
            cur = o
        t = nxt
    if not bounds:
        return f"(started_at_ms + {first})"
    whens = []
    prev = first
    for at, o in bounds:
        whens.append(f"WHEN started_at_ms < {int(at)} THEN {int(prev)}")
        prev = o
    return f"(started_at_ms + CASE {' '.join(whens)} ELSE {int(prev)} END)"


class TtftCell(NamedTuple):
    """Pass 1 of the two-pass percentiles: the successful samples of one group whose ttft_ms falls in bucket `b`."""

    b: int
    n: int
    min_ms: float
    max_ms: float


@dataclass(frozen=True)
class GroupCells:
    """Pass 1 over one group `k`: its cells in TTFT order (empty when nothing succeeded), failed and skipped rows."""

    cells: list[TtftCell]
    failed: int
    skipped: int


def _bucket_sql(width_ms: float) -> str:
    # A monotonic function of ttft_ms on both engines (SQLite's CAST truncates, PostgreSQL's rounds): cells in
    # bucket order are cells in TTFT order, which is all the nearest rank needs.
    return "CAST(ttft_ms AS INTEGER)" if width_ms == 1 else f"CAST(ttft_ms / {float(width_ms)!r} AS INTEGER)"


def ttft_cells(
    conn: sa.Connection, key_sql: str, params: dict[str, Any], width_ms: float = 1.0
) -> dict[int, GroupCells]:
    """Pass 1 of the two-pass percentiles, per group k = `key_sql` over the range `params` (range_params):
    successful samples counted per TTFT bucket of `width_ms`, with each bucket's min and max, and the failed and
    skipped rows — one GROUP BY, which SQLite runs much faster than a window sort over every row."""
    bucket = _bucket_sql(width_ms)
    # One scan serves the counts too: failed and skipped rows land in the cell b = NULL of their group.
    rows = conn.execute(
        sa.text(
            "SELECT k, b, COUNT(*) AS c, MIN(ttft_ms) AS lo, MAX(ttft_ms) AS hi, SUM(f) AS failed, "
            "SUM(sk) AS skipped FROM ("
            f"  SELECT {key_sql} AS k, CASE WHEN {_OK} THEN {bucket} END AS b, ttft_ms,"
            f"         CASE WHEN {_ATTEMPT} AND NOT ({_OK}) THEN 1 ELSE 0 END AS f,"
            f"         CASE WHEN kind = 'skipped' THEN 1 ELSE 0 END AS sk"
            f"  FROM probe_sample WHERE {_RANGE}) AS s GROUP BY k, b"
        ),
        params,
    ).all()
    cells: dict[int, list[TtftCell]] = {}
    failed: dict[int, int] = {}
    skipped: dict[int, int] = {}
    for k, b, c, lo, hi, f, sk in rows:
        k = int(k)
        cells.setdefault(k, [])
        failed[k] = failed.get(k, 0) + int(f or 0)
        skipped[k] = skipped.get(k, 0) + int(sk or 0)
        if b is not None:
            cells[k].append(TtftCell(int(b), int(c), float(lo), float(hi)))
    return {k: GroupCells(sorted(cells[k]), failed[k], skipped[k]) for k in cells}


def rank_cells(counts: Sequence[int], ps: Sequence[int]) -> dict[int, tuple[int, int]]:
    """Where each nearest-rank percentile P (whole percent) of the values in consecutive cells lies: P → (index of
    the cell, 0-based offset within it), the cells holding counts[i] values each, in ascending value order.
    The rank is ceil(P/100 · n) in integers, planner.percentiles' nearest rank exactly. Needs sum(counts) > 0."""
    ends = list(itertools.accumulate(counts))
    out = {}
    for p in ps:
        rank = (p * ends[-1] + 99) // 100
        i = bisect.bisect_left(ends, rank)  # the first cell that reaches the rank
        out[p] = (i, rank - (ends[i - 1] if i else 0) - 1)
    return out


def cell_values(
    conn: sa.Connection, key_sql: str, params: dict[str, Any], cells: Iterable[tuple[int, int]], width_ms: float = 1.0
) -> dict[tuple[int, int], list[float]]:
    """Pass 2 of the two-pass percentiles: the successful ttft_ms values of the given (k, bucket) cells only."""
    cells = sorted(cells)
    listed = ", ".join(f"({int(k)}, {int(b)})" for k, b in cells)
    rows = conn.execute(
        sa.text(
            f"SELECT k, b, ttft_ms FROM (SELECT {key_sql} AS k, {_bucket_sql(width_ms)} AS b, ttft_ms "
            f"FROM probe_sample WHERE {_RANGE} AND {_OK}) AS s WHERE (k, b) IN (VALUES {listed})"
        ),
        params,
    ).all()
    values: dict[tuple[int, int], list[float]] = {(int(k), int(b)): [] for k, b in cells}
    for k, b, v in rows:
        values[(int(k), int(b))].append(float(v))
    return values


def _two_pass_percentiles(
    conn: sa.Connection, key_sql: str, params: dict[str, Any], ps: tuple[int, ...], width_ms: float
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Exact nearest-rank percentiles per group `k` without a window sort over every row.

    Pass 1 (ttft_cells) counts successful samples per (k, ttft bucket); the rank of each percentile
    then falls in a known bucket at a known offset. Pass 2 (cell_values) reads only the rows of those
    (k, bucket) cells and picks the value at that offset, so the result is exactly planner.percentiles'
    nearest rank. Returns (percentile rows, failed/skipped count rows), both keyed by k.
    """
    groups = ttft_cells(conn, key_sql, params, width_ms)
    wanted: dict[tuple[int, int], list[tuple[int, int]]] = {}  # (k, bucket) -> [(p, offset within bucket)]
    out: dict[int, dict[str, Any]] = {}
    for k, g in groups.items():
        if not g.cells:
            continue
        n = sum(c.n for c in g.cells)
        out[k] = {"k": k, "n": n, "min_ms": min(c.min_ms for c in g.cells), "max_ms": max(c.max_ms for c in g.cells)}
        for p, (i, offset) in rank_cells([c.n for c in g.cells], ps).items():
            wanted.setdefault((k, g.cells[i].b), []).append((p, offset))
    if wanted:
        values = cell_values(conn, key_sql, params, wanted, width_ms)
        for (k, b), picks in wanted.items():
            vs = sorted(values[(k, b)])
            for p, offset in picks:
                out[k][f"p{p}_ms"] = vs[offset]
    return list(out.values()), [{"k": k, "failed": g.failed, "skipped": g.skipped} for k, g in groups.items()]


def _grouped(
    engine: Engine,
    key_sql: str,
    key: SeriesKey,
    start_ms: int,
    end_ms: int,
    ps: tuple[int, ...] = (50, 95),
    *,
    two_pass_width_ms: float | None = None,
) -> pd.DataFrame:
    """Per group `k`: n (ok samples), failed, skipped, nearest-rank percentiles p<P>_ms, min/max.

    Two statements over the same index range: a plain GROUP BY for the counts, and one window
    pass over the successful rows only for the percentiles (the sort is the expensive part, so
    failures and skipped rows never enter it)."""
    pcols = ", ".join(f"MAX(CASE WHEN rn = ({p} * n + 99) / 100 THEN ttft_ms END) AS p{p}_ms" for p in ps)
    pct_sql = f"""
        SELECT k, MAX(n) AS n, {pcols}, MIN(ttft_ms) AS min_ms, MAX(ttft_ms) AS max_ms FROM (
            SELECT k, ttft_ms,
                   ROW_NUMBER() OVER (PARTITION BY k ORDER BY ttft_ms) AS rn,
                   COUNT(*) OVER (PARTITION BY k) AS n
            FROM (SELECT {key_sql} AS k, ttft_ms FROM probe_sample WHERE {_RANGE} AND {_OK}) AS s
        ) AS r GROUP BY k
    """
    count_sql = f"""
        SELECT {key_sql} AS k,
               SUM(CASE WHEN {_ATTEMPT} AND NOT ({_OK}) THEN 1 ELSE 0 END) AS failed,
               SUM(CASE WHEN kind = 'skipped' THEN 1 ELSE 0 END) AS skipped
        FROM probe_sample WHERE {_RANGE} GROUP BY {key_sql}
    """
    params = range_params(key, start_ms, end_ms)
    pct: Sequence[Mapping[Any, Any]]  # RowMapping rows or the two-pass dicts
    counts: Sequence[Mapping[Any, Any]]
    with engine.connect() as conn:
        if two_pass_width_ms is not None:
            pct, counts = _two_pass_percentiles(conn, key_sql, params, ps, two_pass_width_ms)
        else:
            pct = conn.execute(sa.text(pct_sql), params).mappings().all()
            counts = conn.execute(sa.text(count_sql), params).mappings().all()
    pcols_names = [f"p{p}_ms" for p in ps]
    a = pd.DataFrame([dict(r) for r in pct], columns=["k", "n", *pcols_names, "min_ms", "max_ms"])
    b = pd.DataFrame([dict(r) for r in counts], columns=["k", "failed", "skipped"])
    df = b.merge(a, on="k", how="outer").sort_values("k").reset_index(drop=True)
    df = df[["k", "n", "failed", "skipped", *pcols_names, "min_ms", "max_ms"]]
    for c in ("n", "failed", "skipped"):
        df[c] = df[c].fillna(0).astype("int64")
    for c in (*pcols_names, "min_ms", "max_ms"):
        df[c] = df[c].astype("float64")
    attempts = df["n"] + df["failed"]
    df["error_rate"] = (df["failed"] / attempts.where(attempts > 0)).astype("float64")
    return df


def summary(engine: Engine, key: SeriesKey, start_ms: int, end_ms: int) -> dict[str, Any]:
    """n, failed, skipped, error_rate, p50/p90/p95/p99 (ms, nearest rank) and which are reliable (n big enough)."""
    df = _grouped(engine, "(started_at_ms * 0)", key, start_ms, end_ms, ps=(50, 90, 95, 99), two_pass_width_ms=1)
    if df.empty:
        return {
            "n": 0,
            "failed": 0,
            "skipped": 0,
            "error_rate": None,
            **{f"p{p}_ms": None for p in (50, 90, 95, 99)},
            "reliable": {},
        }
    row = df.iloc[0].to_dict()
    row.pop("k")
    for c in ("n", "failed", "skipped"):
        row[c] = int(row[c])
    row["reliable"] = {f"p{p}": int(row["n"]) >= min_n_for(p / 100) for p in (50, 90, 95, 99)}
    row["error_rate"] = None if pd.isna(row["error_rate"]) else float(row["error_rate"])
    return {k: (None if isinstance(v, float) and pd.isna(v) else v) for k, v in row.items()}


def time_series(
    engine: Engine, key: SeriesKey, start_ms: int, end_ms: int, *, max_raw: int = 3000, buckets: int = 400
) -> tuple[str, pd.DataFrame]:
    """The TTFT time series: ('raw', one row per sample) when the range holds ≤ max_raw rows, else
    ('bucketed', per time bucket p50/p95 with n and failures). Raw columns: started_at_ms, ttft_ms,
    ok, kind, error_class, cached_series; bucketed: t_ms, bucket_ms, n, failed, skipped, p50_ms, p95_ms, error_rate."""
    s = table_of(ProbeSampleRow)
    where = sa.and_(
        s.c.vantage == key.vantage,
        s.c.endpoint_id == key.endpoint_id,
        s.c.started_at_ms >= start_ms,
        s.c.started_at_ms < end_ms,
    )
    with engine.connect() as conn:
        raw = conn.execute(
            sa.select(s.c.started_at_ms, s.c.ttft_ms, s.c.ok, s.c.kind, s.c.error_class, s.c.cached_series)
            .where(where)
            .order_by(s.c.started_at_ms)
            .limit(max_raw + 1)
        ).all()
    if len(raw) <= max_raw:
        df = pd.DataFrame(raw, columns=["started_at_ms", "ttft_ms", "ok", "kind", "error_class", "cached_series"])
        df["ok"] = df["ok"].astype(bool)
        df["cached_series"] = df["cached_series"].astype(bool)
        return "raw", df
    bucket_ms = max(60_000, -(-(end_ms - start_ms) // buckets))
    bucket_ms = -(-bucket_ms // 60_000) * 60_000
    df = _grouped(engine, f"(started_at_ms / {bucket_ms})", key, start_ms, end_ms, two_pass_width_ms=8)
    df["t_ms"] = df["k"].astype("int64") * bucket_ms
    df["bucket_ms"] = bucket_ms
    return "bucketed", df.drop(columns=["k"])


def hour_of_day(engine: Engine, key: SeriesKey, start_ms: int, end_ms: int, tz: str = "UTC") -> pd.DataFrame:
    """24 rows (hour 0–23 in `tz`): n, failed, skipped, error_rate, p50_ms, p95_ms and `reliable_p50`/`reliable_p95`
    (n ≥ 2 / n ≥ 20: below that the UI greys the hour). Hours without samples have n = 0."""
    local = local_ms_sql(tz, start_ms, end_ms)
    df = _grouped(engine, f"(({local} / {HOUR_MS}) % 24)", key, start_ms, end_ms, two_pass_width_ms=1)
    df = df.rename(columns={"k": "hour"})
    df["hour"] = df["hour"].astype("int64")
    full = pd.DataFrame({"hour": range(24)}).merge(df, on="hour", how="left")
    for c in ("n", "failed", "skipped"):
        full[c] = full[c].fillna(0).astype("int64")
    full["reliable_p50"] = full["n"] >= min_n_for(0.5)
    full["reliable_p95"] = full["n"] >= min_n_for(0.95)
    return full


HEATMAP_MAX_DAYS = 31  # the day × hour grid's rows at most: a taller grid is unreadable


def day_hour_heatmap(
    engine: Engine, key: SeriesKey, start_ms: int, end_ms: int, tz: str = "UTC", max_days: int = HEATMAP_MAX_DAYS
) -> pd.DataFrame:
    """One row per (local day, hour) with samples: day (datetime.date), hour, n, failed, p50_ms, p95_ms.

    Covers at most the last `max_days` days of the range (a taller grid is unreadable, and it keeps
    the query inside the page's time budget on long ranges)."""
    start_ms = max(start_ms, end_ms - max_days * DAY_MS)
    local = local_ms_sql(tz, start_ms, end_ms)
    df = _grouped(engine, f"({local} / {HOUR_MS})", key, start_ms, end_ms)
    hours = df["k"].astype("int64")
    df["day"] = [dt.date(1970, 1, 1) + dt.timedelta(days=int(h) // 24) for h in hours]
    df["hour"] = hours % 24
    return df.drop(columns=["k"])


def ecdf_points(engine: Engine, key: SeriesKey, start_ms: int, end_ms: int, max_points: int = 500) -> pd.DataFrame:
    """The empirical CDF of TTFT (ms), thinned in SQL to ≤ ~max_points ranks: ttft_ms, fraction (rank/n), n."""
    sql = f"""
        WITH r AS (
            SELECT ttft_ms, ROW_NUMBER() OVER (ORDER BY ttft_ms) AS rn, COUNT(*) OVER () AS n
            FROM probe_sample WHERE {_RANGE} AND {_OK}
        )
        SELECT ttft_ms, rn, n FROM r
        WHERE rn = 1 OR rn = n OR rn % ((n + {max_points - 1}) / {max_points}) = 0
        ORDER BY rn
    """
    with engine.connect() as conn:
        rows = conn.execute(sa.text(sql), range_params(key, start_ms, end_ms)).all()
    df = pd.DataFrame(rows, columns=["ttft_ms", "rn", "n"])
    df["fraction"] = (df["rn"] / df["n"]).astype("float64") if len(df) else pd.Series(dtype="float64")
    return df


def phase_breakdown(engine: Engine, key: SeriesKey, start_ms: int, end_ms: int, latest: int = 2000) -> pd.DataFrame:
    """Median (nearest-rank p50) of each phase over the newest `latest` successful samples of the range:
    phase, p50_ms, n. dns/connect/tls are durations; headers, first event, TTFT and first content are
    offsets from send. (The newest 2,000 — a day and a half at 60 s — describe the connection path of now;
    seven sorts over months of samples would not fit the page's time budget.)"""
    cols = ", ".join(PHASES)
    parts = []
    for col in PHASES:
        parts.append(f"""
            SELECT '{col}' AS phase, MAX(CASE WHEN rn = (50 * n + 99) / 100 THEN v END) AS p50_ms, MAX(n) AS n FROM (
                SELECT {col} AS v, ROW_NUMBER() OVER (ORDER BY {col}) AS rn, COUNT(*) OVER () AS n
                FROM latest WHERE {col} IS NOT NULL
            ) AS x_{col}""")
    sql = (
        f"WITH latest AS (SELECT {cols} FROM probe_sample WHERE {_RANGE} AND {_OK} "
        f"ORDER BY started_at_ms DESC LIMIT {int(latest)}) " + " UNION ALL ".join(parts)
    )
    with engine.connect() as conn:
        rows = conn.execute(sa.text(sql), range_params(key, start_ms, end_ms)).all()
    df = pd.DataFrame(rows, columns=["phase", "p50_ms", "n"])
    df["n"] = df["n"].fillna(0).astype("int64")
    order = {p: i for i, p in enumerate(PHASES)}
    return df.sort_values("phase", key=lambda s: s.map(order)).reset_index(drop=True)


def cold_readings(engine: Engine, endpoint_id: int, vantage: str | None = None, limit: int = 50) -> pd.DataFrame:
    """Cold readings of an endpoint (newest first), all columns of cold_reading."""
    c = table_of(ColdReadingRow)
    q = sa.select(c).where(c.c.endpoint_id == endpoint_id)
    if vantage is not None:
        q = q.where(c.c.vantage == vantage)
    with engine.connect() as conn:
        rows = conn.execute(q.order_by(c.c.requested_at_ms.desc()).limit(limit)).mappings().all()
    return pd.DataFrame([dict(r) for r in rows], columns=[col.name for col in c.columns])


def latest_requests(engine: Engine, endpoint_id: int, limit: int = 5) -> pd.DataFrame:
    """The newest probe-now / cold-reading requests of an endpoint with their status."""
    r = table_of(ProbeRequestRow)
    with engine.connect() as conn:
        rows = (
            conn.execute(sa.select(r).where(r.c.endpoint_id == endpoint_id).order_by(r.c.id.desc()).limit(limit))
            .mappings()
            .all()
        )
    return pd.DataFrame([dict(x) for x in rows], columns=[col.name for col in r.columns])


def export_csv(engine: Engine, key: SeriesKey, start_ms: int, end_ms: int) -> str:
    """Every raw sample of the series in the range as CSV (header row first), oldest first. No secrets: rows hold
    none."""
    s = table_of(ProbeSampleRow)
    cols = [c for c in s.columns]
    with engine.connect() as conn:
        result = conn.execute(
            sa.select(*cols)
            .where(
                s.c.vantage == key.vantage,
                s.c.endpoint_id == key.endpoint_id,
                s.c.started_at_ms >= start_ms,
                s.c.started_at_ms < end_ms,
            )
            .order_by(s.c.started_at_ms)
        )
        # names and error details come from outside: csv_text keeps a spreadsheet from running them as formulas
        return csv_text(
            ([key.endpoint_name, *row] for row in result), header=["endpoint_name", *[c.name for c in cols]]
        )
