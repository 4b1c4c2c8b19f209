"""The log summary computed by DuckDB over a table of requests: only the results come back to Python.

`summarize_table` gives the LogSummary that planner.logs.summary.summarize_logs gives for the same requests,
figure for figure (tests/planner/test_logs_engine.py holds them equal): nearest-rank percentiles are
`quantile_disc` (the same rank rule), local hours and weekdays come from one zone offset per quarter hour
of the log's span (zones change only on quarter-hour instants), and the cold-start curve replays the
arrivals in time order with window functions. The table has the columns of planner.logs.COLUMNS
(ts_ms, model, prompt_tokens, cached_tokens, output_tokens, ttft_ms, duration_ms; NULL for a timing not
logged); planner.logs.request_table.RequestTable builds one from the readers' batches.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from planner.lazy import lazy_module
from planner.logs.exposure import DEFAULT_WINDOWS_S
from planner.logs.records import zone
from planner.logs.request_table import RequestTable
from planner.logs.summary import DEFAULT_WORKDAY, MODEL_COLUMNS, PS, WEEKDAYS, LogSummary, Rows, parse_workday
from planner.stats import Percentile

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
else:  # imported on first use: `logs summarize` reads through DuckDB alone
    np, pd = lazy_module("numpy"), lazy_module("pandas")

__all__ = ["summarize_table"]

_LEVELS = (*PS, 1.0)


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


def _models(con, table: str) -> Rows:
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
    return Rows(MODEL_COLUMNS, out)


_HOURLY_COLUMNS = ("hour", "requests", "requests_per_s", "prompt_tokens", "cached_tokens", "output_tokens")
_PER_HOUR_COLUMNS = ("hour", "n", "p50", "p95", "p95_reliable")


def _per_hour(n: int, p50: Any, p95: Any) -> dict[str, Any]:
    pc = Percentile(p=0.95, value=None if p95 is None else float(p95), n=n)
    return {"n": n, "p50": None if p50 is None else float(p50), "p95": pc.value, "p95_reliable": pc.reliable}


def _by_hour(con, view: str, days: int) -> tuple[Rows, Rows, Rows]:
    """(the mean traffic per local hour of day, the prompt-token and the TTFT p50/p95 per hour) in one pass."""
    got = {
        int(r[0]): r[1:]
        for r in con.execute(
            f"""SELECT hour, count(*), sum(prompt_tokens), sum(cached_tokens), sum(output_tokens),
                   count(prompt_tokens), quantile_disc(prompt_tokens, [0.5, 0.95]),
                   count(ttft_ms), quantile_disc(ttft_ms, [0.5, 0.95])
            FROM {view} GROUP BY hour"""
        ).fetchall()
    }
    traffic, prompt, ttft = [], [], []
    for hour in range(24):
        n, prompt_sum, cached_sum, output_sum, n_prompt, prompt_q, n_ttft, ttft_q = got.get(
            hour, (0, 0, 0, 0, 0, None, 0, None)
        )
        requests, prompt_tokens, output_tokens = n / days, float(prompt_sum or 0) / days, float(output_sum or 0) / days
        traffic.append(
            {
                "hour": hour,
                "requests": requests,
                "requests_per_s": requests / 3600.0,
                "prompt_tokens": prompt_tokens,
                "cached_tokens": float(cached_sum or 0) / days,
                "output_tokens": output_tokens,
                "tokens_per_hour": prompt_tokens + output_tokens,
            }
        )
        prompt.append({"hour": hour, **_per_hour(n_prompt, *(prompt_q or (None, None)))})
        ttft.append({"hour": hour, **_per_hour(n_ttft, *(ttft_q or (None, None)))})
    hourly = Rows((*_HOURLY_COLUMNS, "tokens_per_hour"), traffic)
    return hourly, Rows(_PER_HOUR_COLUMNS, prompt), Rows(_PER_HOUR_COLUMNS, ttft)


def _weekdays(con, view: str, first_day: int | None, last_day: int | None) -> Rows:
    columns = ("weekday", "name", "requests", "prompt_tokens", "output_tokens")
    if first_day is None or last_day is None:
        return Rows(columns, [dict(zip(columns, (d, WEEKDAYS[d], 0.0, 0.0, 0.0), strict=True)) for d in range(7)])
    occurrences = [0] * 7  # how often each weekday occurs in the log's span (day 0, 1970-01-01, was a Thursday)
    for day in range(first_day, last_day + 1):
        occurrences[(day + 3) % 7] += 1
    got = {
        int(r[0]): r[1:]
        for r in con.execute(
            f"SELECT dow, count(*), sum(prompt_tokens), sum(output_tokens) FROM {view} GROUP BY dow"
        ).fetchall()
    }
    rows = [(dow, *got.get(dow, (0, 0, 0))) for dow in range(7)]
    out = []
    for dow, n, prompt, output in rows:
        times = occurrences[dow]  # 0: a weekday the span does not hold, and no requests on it
        values = (n / times, float(prompt or 0) / times, float(output or 0) / times) if times else (0.0, 0.0, 0.0)
        out.append(dict(zip(columns, (dow, WEEKDAYS[dow], *values), strict=True)))
    return Rows(columns, out)


def _cold(con, table: str, windows_s: Sequence[float], n: int, rate: float, with_durations: bool) -> Rows:
    """The trace's cold fractions per window (planner.logs.exposure.cold_fraction_curve's, replayed in SQL)."""
    windows = [float(w) for w in windows_s]
    if any(w < 0 for w in windows):
        raise ValueError("scale-down windows must be ≥ 0 s")
    counts = ", ".join(f"count(*) FILTER (WHERE gap > {w * 1000.0!r})" for w in windows)
    if with_durations:  # busy until the latest finish so far
        gaps = f"""WITH s AS (SELECT ts_ms, max(ts_ms + coalesce(duration_ms, 0.0))
                     OVER (ORDER BY ts_ms ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS busy FROM {table})
                   SELECT ts_ms - lag(busy) OVER (ORDER BY ts_ms) AS gap FROM s"""
    else:  # no service times: busy until the arrival itself, so the gaps are between arrivals (one column sorted)
        gaps = f"SELECT ts_ms - lag(ts_ms) OVER (ORDER BY ts_ms) AS gap FROM {table}"
    row = con.execute(f"SELECT {counts} FROM ({gaps})").fetchall()[0]
    out = [
        {
            "window_s": w,
            "trace_cold_fraction": (1 + cold) / n,
            "poisson_cold_fraction": math.exp(-rate * w) if math.isfinite(rate) else None,
        }
        for w, cold in zip(windows, row, strict=True)
    ]
    return Rows(("window_s", "trace_cold_fraction", "poisson_cold_fraction"), out)


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
    hourly, prompt_by_hour, ttft_by_hour = _by_hour(con, view, days)
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
        tables={
            "models": _models(con, table),
            "hourly": hourly,
            "weekdays": _weekdays(con, view, first_day, last_day),
            "prompt_by_hour": prompt_by_hour,
            "ttft_by_hour": ttft_by_hour,
            "cold": _cold(con, table, windows_s, n, rate, durations > 0) if n else Rows(()),
        },
    )
