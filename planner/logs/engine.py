"""The log summary computed by DuckDB over a table of requests: only the results come back to Python.

`summarize_table` gives the LogSummary that planner.logs.summary.summarize_logs gives for the same requests,
figure for figure (tests/planner/test_logs_engine.py holds them equal): nearest-rank percentiles are
`quantile_disc` (the same rank rule), local hours and weekdays come from one zone offset per quarter hour
of the log's span (zones change only on quarter-hour instants), and the cold-start curve replays the
arrivals in time order with window functions. The table has the columns of planner.logs.COLUMNS
(ts_ms, model, prompt_tokens, cached_tokens, output_tokens, ttft_ms, duration_ms; NULL for a timing not
logged); `RequestTable` builds one from the readers' batches.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from planner.logs.exposure import DEFAULT_WINDOWS_S
from planner.logs.records import zone
from planner.logs.summary import DEFAULT_WORKDAY, MODEL_COLUMNS, PS, WEEKDAYS, LogSummary, parse_workday
from planner.stats import Percentile

__all__ = ["RequestTable", "connect", "summarize_table"]

_LEVELS = (*PS, 1.0)
_COLUMNS = ("ts_ms", "model", "prompt_tokens", "cached_tokens", "output_tokens", "ttft_ms", "duration_ms")


def connect(keep_order: bool = False):
    """A DuckDB connection for summarising logs (planner.logs.duckpath.connect), insertion order not kept unless
    asked (RequestTable.frame keeps file order for rows at the same instant): no summary needs it."""
    from planner.logs.duckpath import MEMORY_LIMIT
    from planner.logs.duckpath import connect as duck_connect

    return duck_connect(keep_order=keep_order, memory_limit=MEMORY_LIMIT)


class RequestTable:
    """A DuckDB table of requests filled a batch (a frame of planner.logs.COLUMNS) at a time.

    Batches are inserted about a million rows at a time (each INSERT has a fixed cost of some milliseconds);
    flush() inserts what is pending, and is done by mark(), rollback() and summarize_table.
    """

    FLUSH_ROWS = 1 << 20

    def __init__(self, con, name: str = "requests") -> None:
        self.con, self.name, self.n = con, name, 0
        self._pending: list = []  # Arrow tables not inserted yet
        self._pending_rows = 0
        con.execute(
            # counts are at most 10⁹ (planner.logs.records.MAX_TOKENS): 4 bytes each
            f"CREATE OR REPLACE TABLE {name} (ts_ms BIGINT, model VARCHAR, prompt_tokens INTEGER, "
            "cached_tokens INTEGER, output_tokens INTEGER, ttft_ms DOUBLE, duration_ms DOUBLE)"
        )

    def append(self, frame: pd.DataFrame) -> None:
        if not len(frame):
            return
        import pyarrow as pa

        # As Arrow: DuckDB scans it column by column (a pandas frame with object columns is sniffed row by row).
        types = (pa.int64(), pa.string(), pa.int64(), pa.int64(), pa.int64(), pa.float64(), pa.float64())
        schema = pa.schema(list(zip(_COLUMNS, types, strict=True)))
        self._pending.append(pa.Table.from_pandas(frame[list(_COLUMNS)], preserve_index=False).cast(schema))
        self._pending_rows += len(frame)
        self.n += len(frame)
        if self._pending_rows >= self.FLUSH_ROWS:
            self.flush()

    def flush(self) -> None:
        if not self._pending:
            return
        import pyarrow as pa

        batch = pa.concat_tables(self._pending)
        self._pending, self._pending_rows = [], 0
        self.con.register("_batch", batch)
        try:
            self.con.execute(
                f"INSERT INTO {self.name} SELECT ts_ms, model::VARCHAR, prompt_tokens, cached_tokens, output_tokens, "
                "CASE WHEN isnan(ttft_ms) THEN NULL ELSE ttft_ms END, "
                "CASE WHEN isnan(duration_ms) THEN NULL ELSE duration_ms END FROM _batch"
            )
        finally:
            self.con.unregister("_batch")

    def insert_chat(self, path: Path) -> int:
        """An OpenAI chat JSON Lines file's requests inserted by DuckDB alone (planner.logs.duckpath.insert_chat)."""
        from planner.logs.duckpath import insert_chat

        got = insert_chat(self.con, self.name, path)
        self.n += got
        return got

    def insert_mapped(self, source: str, params: dict, mapping: Mapping[str, str], start_ms: int, tz: str) -> int:
        """The rows of a table source (read_csv / read_parquet SQL) under a plain mapping, inserted by DuckDB alone
        (planner.logs.sqlmap); the number inserted.

        All or nothing: raises Doubt (nothing inserted) when the mapping or a column's type is not a plain case,
        or at the first row that fails a check or that DuckDB cannot read; the batch reader then names it.
        """
        import duckdb

        from planner.logs.duckpath import Doubt
        from planner.logs.sqlmap import mapped_select

        self.flush()
        try:
            self.con.execute("SET TimeZone = '" + tz.replace("'", "''") + "'")  # times without a zone are in it
            described = self.con.execute(f"DESCRIBE SELECT * FROM {source}", params).fetchall()
            rows = mapped_select(mapping, {r[0]: str(r[1]) for r in described}, start_ms)
            if rows is None:
                raise Doubt("not a plain mapping for the engine")
            doubt = "'a row the engine does not vouch for'"
            inserted = self.con.execute(
                f"""INSERT INTO {self.name} SELECT {rows.select} FROM ({rows.over(f"SELECT * FROM {source}")})
                WHERE CASE WHEN {rows.ok} THEN true ELSE error({doubt}) END""",
                params,
            ).fetchall()[0][0]
        except duckdb.Error as exc:
            raise Doubt(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
        self.n += int(inserted)
        return int(inserted)

    def insert_csv(self, path: Path, header: list[str], delimiter: str, rows, tz: str):
        """A CSV file's rows inserted by the engine, the lines it does not vouch for returned with their text
        (planner.logs.csvengine.insert_csv); None (nothing kept) when it cannot place them."""
        from planner.logs.csvengine import insert_csv

        mark = self.mark()
        got = insert_csv(self.con, self.name, path, header, delimiter, rows, tz, lambda: self.rollback(mark))
        if got is not None:
            self.n += got.inserted
        return got

    def frame(self) -> pd.DataFrame:
        """The rows as a frame of planner.logs.COLUMNS' dtypes (without `source`; the model a category), sorted by
        arrival; rows at the same instant in the order they were appended when the connection keeps insertion order
        (connect(keep_order=True)), as the readers' frames are."""
        self.flush()
        got = self.con.sql(f"SELECT * FROM {self.name} ORDER BY ts_ms, rowid").to_arrow_table()
        frame = got.to_pandas(strings_to_categorical=True)
        for col in ("prompt_tokens", "cached_tokens", "output_tokens"):
            frame[col] = frame[col].astype(np.int64)
        return frame

    def zero_output_since(self, mark: int) -> int:
        """Rows appended since mark() with 0 output tokens (BurstGPT's failed requests)."""
        self.flush()
        q = f"SELECT count(*) FROM {self.name} WHERE rowid >= {int(mark)} AND output_tokens = 0"
        return int(self.con.execute(q).fetchall()[0][0])

    def mark(self) -> int:
        """A point to roll back to: the next row id."""
        self.flush()
        return int(self.con.execute(f"SELECT coalesce(max(rowid) + 1, 0) FROM {self.name}").fetchall()[0][0])

    def rollback(self, mark: int) -> int:
        """Drop the rows appended since mark(); returns how many."""
        self.flush()
        gone = self.con.execute(f"SELECT count(*) FROM {self.name} WHERE rowid >= {int(mark)}").fetchall()[0][0]
        self.con.execute(f"DELETE FROM {self.name} WHERE rowid >= {int(mark)}")
        self.n -= gone
        return int(gone)


def _clock_view(con, table: str, tz: str) -> str:
    """A view of `table` with each arrival's local clock in `tz`: day, hour, minute of day, weekday (Monday 0).

    The zone's offset is looked up once per quarter hour of the log's span (zones change only on quarter-hour
    instants) and its runs written into the view as one CASE over ts_ms: arithmetic per row, no join.
    """
    con.execute("SET TimeZone = 'UTC'")
    quarters = con.execute(
        f"""SELECT q, epoch_ms(timezone($tz, epoch_ms(q * 900000)::TIMESTAMPTZ)) - q * 900000 AS off_ms
        FROM range((SELECT min(ts_ms) // 900000 FROM {table}), (SELECT max(ts_ms) // 900000 + 1 FROM {table})) r(q)
        ORDER BY q""",
        {"tz": "UTC" if tz in ("", "utc") else tz},
    ).fetchall()
    runs: list[tuple[int, int]] = []  # (first quarter, offset ms) where the offset changes
    for q, off in quarters:
        if not runs or runs[-1][1] != off:
            runs.append((int(q), int(off)))
    if len(runs) <= 1:
        off_sql = str(runs[0][1]) if runs else "0"
    else:
        arms = " ".join(
            f"WHEN ts_ms < {q * 900000} THEN {prev}" for (q, _), (_, prev) in zip(runs[1:], runs, strict=False)
        )
        off_sql = f"(CASE {arms} ELSE {runs[-1][1]} END)"
    con.execute(
        f"""CREATE OR REPLACE TEMP VIEW _clocked AS
        SELECT t.*, h // 24 AS day, h % 24 AS hour, m - (h // 24) * 1440 AS minute_of_day, (h // 24 + 3) % 7 AS dow,
               h AS hour_bucket
        FROM (SELECT t.*, (t.ts_ms + {off_sql}) // 60000 AS m, (t.ts_ms + {off_sql}) // 3600000 AS h
              FROM {table} t) t"""
    )
    return "_clocked"


def _pcts(column: str, where: str = "") -> str:
    """SQL: [p50, p90, p95, p99] of `column` (NULLs left out), its count and max, optionally filtered."""
    flt = f" FILTER (WHERE {where})" if where else ""
    levels = ", ".join(str(p) for p in PS)
    return f"quantile_disc({column}, [{levels}]){flt}, count({column}){flt}, max({column}){flt}"


def _percentiles(values: Sequence[Any] | None, n: int, top: Any) -> dict[str, Percentile]:
    out: dict[str, Percentile] = {}
    picked = list(values or []) + [top] if n else [None] * len(_LEVELS)
    for p, value in zip(_LEVELS, picked, strict=True):
        pc = Percentile(p=p, value=None if value is None else float(value), n=n)
        out["max" if p == 1.0 else pc.label] = pc
    return out


def _per_hour(con, view: str, column: str) -> pd.DataFrame:
    rows = con.execute(
        f"""SELECT h.hour, count(v.{column}), quantile_disc(v.{column}, 0.5), quantile_disc(v.{column}, 0.95)
        FROM range(24) h(hour) LEFT JOIN {view} v ON v.hour = h.hour GROUP BY h.hour ORDER BY h.hour"""
    ).fetchall()
    out = []
    for hour, n, p50, p95 in rows:
        pc = Percentile(p=0.95, value=None if p95 is None else float(p95), n=n)
        out.append(
            {
                "hour": hour,
                "n": n,
                "p50": None if p50 is None else float(p50),
                "p95": pc.value,
                "p95_reliable": pc.reliable,
            }
        )
    return pd.DataFrame(out)


def _models(con, table: str) -> pd.DataFrame:
    rows = con.execute(
        f"""SELECT model, count(*), quantile_disc(prompt_tokens, 0.5), quantile_disc(prompt_tokens, 0.95),
               sum(cached_tokens), sum(prompt_tokens), avg(output_tokens)
        FROM {table} GROUP BY model ORDER BY model"""
    ).fetchall()
    out = []
    for model, n, p50, p95, cached, prompt, output_mean in rows:
        pc = Percentile(p=0.95, value=float(p95), n=n)
        out.append(
            {
                "model": model or "(unnamed)",
                "n": n,
                "prompt_tokens_p50": float(p50),
                "prompt_tokens_p95": pc.value,
                "p95_reliable": pc.reliable,
                "cached_token_fraction": int(cached) / int(prompt) if prompt else 0.0,
                "output_tokens_mean": float(output_mean),
            }
        )
    return pd.DataFrame(out, columns=list(MODEL_COLUMNS))


def _hourly(con, view: str, days: int) -> pd.DataFrame:
    rows = con.execute(
        f"""SELECT h.hour, count(v.ts_ms), coalesce(sum(v.prompt_tokens), 0), coalesce(sum(v.cached_tokens), 0),
               coalesce(sum(v.output_tokens), 0)
        FROM range(24) h(hour) LEFT JOIN {view} v ON v.hour = h.hour GROUP BY h.hour ORDER BY h.hour"""
    ).fetchall()
    out = pd.DataFrame({"hour": np.arange(24)})
    out["requests"] = [r[1] / days for r in rows]
    out["requests_per_s"] = out["requests"] / 3600.0
    for i, col in enumerate(("prompt_tokens", "cached_tokens", "output_tokens"), 2):
        out[col] = [float(r[i]) / days for r in rows]
    out["tokens_per_hour"] = out["prompt_tokens"] + out["output_tokens"]
    return out


def _weekdays(con, view: str, first_day: int | None, last_day: int | None) -> pd.DataFrame:
    out = pd.DataFrame({"weekday": np.arange(7), "name": WEEKDAYS})
    if first_day is None or last_day is None:
        for col in ("requests", "prompt_tokens", "output_tokens"):
            out[col] = 0.0
        return out
    occurrences = np.bincount((np.arange(first_day, last_day + 1) + 3) % 7, minlength=7).astype(float)
    occurrences[occurrences == 0] = np.nan
    rows = con.execute(
        f"""SELECT d.dow, count(v.ts_ms), coalesce(sum(v.prompt_tokens), 0), coalesce(sum(v.output_tokens), 0)
        FROM range(7) d(dow) LEFT JOIN {view} v ON v.dow = d.dow GROUP BY d.dow ORDER BY d.dow"""
    ).fetchall()
    out["requests"] = np.asarray([r[1] for r in rows], dtype=float) / occurrences
    out["prompt_tokens"] = np.asarray([float(r[2]) for r in rows]) / occurrences
    out["output_tokens"] = np.asarray([float(r[3]) for r in rows]) / occurrences
    return out.fillna(0.0)


def _cold(con, table: str, windows_s: Sequence[float], n: int, rate: float, with_durations: bool) -> pd.DataFrame:
    """The trace's cold fractions per window (planner.logs.exposure.cold_fraction_curve's, replayed in SQL)."""
    windows = np.asarray(list(windows_s), dtype=np.float64)
    if (windows < 0).any():
        raise ValueError("scale-down windows must be ≥ 0 s")
    counts = ", ".join(f"count(*) FILTER (WHERE gap > {float(w) * 1000.0!r})" for w in windows)
    if with_durations:  # busy until the latest finish so far
        busy = f"""SELECT ts_ms, max(ts_ms + coalesce(duration_ms, 0.0))
                     OVER (ORDER BY ts_ms ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS busy FROM {table}"""
    else:  # no service times: busy until the arrival itself (one sort fewer)
        busy = f"SELECT ts_ms, ts_ms AS busy FROM {table}"
    row = con.execute(
        f"""WITH s AS ({busy}), g AS (SELECT ts_ms - lag(busy) OVER (ORDER BY ts_ms) AS gap FROM s)
            SELECT {counts} FROM g"""
    ).fetchall()[0]
    trace = (1 + np.asarray(row, dtype=np.float64)) / n
    poisson = np.exp(-rate * windows) if math.isfinite(rate) else np.full(windows.shape, np.nan)
    return pd.DataFrame({"window_s": windows, "trace_cold_fraction": trace, "poisson_cold_fraction": poisson})


def summarize_table(
    con,
    table: str | RequestTable = "requests",
    tz: str = "UTC",
    workday: str = DEFAULT_WORKDAY,
    windows_s: tuple[float, ...] = DEFAULT_WINDOWS_S,
) -> LogSummary:
    """The whole summary of the requests in `table` (its name, or the RequestTable) as summarize_logs gives it,
    computed by DuckDB.

    Raises ValueError for a bad working-day window or time zone.
    """
    start, end = parse_workday(workday)
    zone(tz)
    if isinstance(table, RequestTable):
        table.flush()
        table = table.name
    view = _clock_view(con, table, tz)
    wd = f"dow < 5 AND minute_of_day >= {start} AND minute_of_day < {end}"
    (
        n,
        first,
        last,
        prompt_sum,
        cached_sum,
        hits,
        first_day,
        last_day,
        durations,
        *pcts,
    ) = con.execute(
        f"""SELECT count(*), min(ts_ms), max(ts_ms), coalesce(sum(prompt_tokens), 0), coalesce(sum(cached_tokens), 0),
               count(*) FILTER (WHERE cached_tokens > 0), min(day), max(day), count(duration_ms),
               {_pcts("prompt_tokens")}, {_pcts("prompt_tokens", wd)}, {_pcts("output_tokens")}, {_pcts("ttft_ms")}
        FROM {view}"""
    ).fetchall()[0]
    prompt, prompt_wd, output, ttft = (_percentiles(*pcts[i : i + 3]) for i in range(0, 12, 3))
    span_s = (last - first) / 1000.0 if n else 0.0
    rate = (n - 1) / span_s if n >= 2 and span_s > 0 else math.nan
    if n == 0:
        peak = 0.0
    elif span_s < 3600:
        peak = n / max(span_s, 1.0)
    else:
        busiest = con.execute(f"SELECT max(c) FROM (SELECT count(*) AS c FROM {view} GROUP BY hour_bucket)")
        peak = float(busiest.fetchall()[0][0]) / 3600.0
    days = int(last_day - first_day) + 1 if n else 1
    return LogSummary(
        n=n,
        first_ts_ms=int(first) if n else None,
        last_ts_ms=int(last) if n else None,
        tz=tz,
        workday=workday,
        prompt=prompt,
        prompt_workday=prompt_wd,
        output=output,
        ttft=ttft,
        cached={
            "token_fraction": float(cached_sum) / float(prompt_sum) if prompt_sum > 0 else 0.0,
            "request_fraction": hits / n if n else 0.0,
        },
        mean_rate_per_s=rate,
        peak_hour_rate_per_s=peak,
        models=_models(con, table),
        hourly=_hourly(con, view, days),
        weekdays=_weekdays(con, view, first_day, last_day),
        prompt_by_hour=_per_hour(con, view, "prompt_tokens"),
        ttft_by_hour=_per_hour(con, view, "ttft_ms"),
        cold=_cold(con, table, windows_s, n, rate, durations > 0) if n else pd.DataFrame(),
    )
