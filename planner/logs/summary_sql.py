"""The log summary, computed by DuckDB over a table of requests: only the results come back to Python.

`summarize` is the one summary the Logs page and `logs summarize` show: it takes the command's RequestTable (filled by
the readers' sink) or the page's frame (loaded into one), and `summarize_table` computes every figure in SQL.
Nearest-rank percentiles are `quantile_disc` (planner.percentiles' rank rule), or for the whole log's token counts
picked at the same ranks from a histogram of the values (cheaper than gathering every value); local hours and weekdays
come from one zone offset per quarter hour of the log's span (zones change only on quarter-hour instants); the busiest
clock hour is counted per local clock hour; the cold-start curve replays the gaps between blocks of the shortest
window's length (a hash aggregate, not a sort of every arrival). The table has the columns of planner.logs.COLUMNS
(ts_ms, model, prompt_tokens, cached_tokens, output_tokens, ttft_ms, duration_ms; NULL for a timing not logged).
tests/planner/logs/test_logs_summary.py holds every figure equal to an independent pure-Python computation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from planner.logs.exposure import DEFAULT_WINDOWS_S
from planner.logs.load import SUMMARY_MEMORY_LIMIT, RequestTable, connect, return_freed_heap
from planner.logs.records import zone
from planner.logs.summary import (
    DEFAULT_WORKDAY,
    MODEL_COLUMNS,
    PS,
    WEEKDAYS,
    LogSummary,
    Rows,
    parse_workday,
    workday_sql,
)
from planner.percentiles import Percentile

if TYPE_CHECKING:
    import pandas as pd  # a frame is only ever handed in: `logs summarize` never loads pandas

__all__ = ["summarize", "summarize_table"]

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
    # hour_start_ms: the UTC instant the arrival's local clock hour began (the hour repeated when clocks go back
    # starts twice: its rows carry either start)
    con.execute(
        f"""CREATE OR REPLACE TEMP VIEW _clocked AS
        SELECT t.*, h // 24 AS day, h % 24 AS hour, m - (h // 24) * 1440 AS minute_of_day, (h // 24 + 3) % 7 AS dow,
               h AS hour_bucket, h * 3600000 - off_ms AS hour_start_ms
        FROM (SELECT t.*, (t.ts_ms + t.off_ms) // 60000 AS m, (t.ts_ms + t.off_ms) // 3600000 AS h
              FROM (SELECT t.*, {off_sql} AS off_ms FROM {table} t) t) t"""
    )
    return "_clocked"


def _pcts(column: str, where: str = "") -> str:
    """SQL: [p50, p90, p95, p99] of `column` (NULLs left out), its count and max, optionally filtered."""
    flt = f" FILTER (WHERE {where})" if where else ""
    levels = ", ".join(str(p) for p in PS)
    return f"quantile_disc({column}, [{levels}]){flt}, count({column}){flt}, max({column}){flt}"


def _ranked(column: str, source: str, filters: Sequence[str] = ("true",)) -> str:
    """SQL: one row with, for each filter, [p50, p90, p95, p99] of integer `column` over `source` (NULLs left out),
    its count and max, the nearest-rank percentiles picked from a histogram of the column's values.

    One hash aggregate (a token count takes some thousands of distinct values, however many requests) and a running
    count over its rows, not a gather and partial sort of every value as quantile_disc does: the same figures,
    ranks exact in integers as quantile_disc's are for decimal fractions, ceil(n·p) and at least 1.
    """
    counts = ", ".join(f"count(*) FILTER (WHERE {f}) AS c{i}" for i, f in enumerate(filters))
    running = ", ".join(
        f"sum(c{i}) OVER (ORDER BY v ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS r{i}, "
        f"sum(c{i}) OVER () AS n{i}"
        for i in range(len(filters))
    )
    picks = []
    for i in range(len(filters)):
        for p in PS:
            f = Fraction(str(p))  # the decimal quantile_disc is given
            rank = f"greatest(1, (n{i} * {f.numerator} + {f.denominator - 1}) // {f.denominator})"
            picks.append(f"min(v) FILTER (WHERE r{i} >= {rank})")
        picks.append(f"coalesce(any_value(n{i}), 0)::BIGINT, max(v) FILTER (WHERE c{i} > 0)")
    return f"""WITH h AS (SELECT {column} AS v, {counts} FROM {source} WHERE {column} IS NOT NULL GROUP BY v),
        r AS (SELECT *, {running} FROM h)
        SELECT {", ".join(picks)} FROM r"""


def _from_ranked(row: Sequence[Any]) -> list[dict[str, Percentile]]:
    """The percentiles of each filter from a row of _ranked's query."""
    k = len(PS) + 2
    return [_percentiles(row[i : i + len(PS)], row[i + len(PS)], row[i + len(PS) + 1]) for i in range(0, len(row), k)]


def _percentiles(values: Sequence[Any] | None, n: int, top: Any) -> dict[str, Percentile]:
    out: dict[str, Percentile] = {}
    picked = list(values or []) + [top] if n else [None] * len(_LEVELS)
    for p, value in zip(_LEVELS, picked, strict=True):
        pc = Percentile(p=p, value=None if value is None else float(value), n=n)
        out["max" if p == 1.0 else pc.label] = pc
    return out


def _models(con, table: str, cache_known: bool) -> Rows:
    """Per model, by name: n, prompt-token p50/p95, p95_reliable, cached share of prompt tokens (None when the log
    records no cached token, or the model no prompt token), mean output tokens."""
    rows = con.execute(
        f"""SELECT model, count(*), quantile_disc(prompt_tokens, [0.5, 0.95]),
               sum(cached_tokens), sum(prompt_tokens), avg(output_tokens)
        FROM {table} GROUP BY model ORDER BY model"""
    ).fetchall()
    out = []
    for model, n, (p50, p95), cached, prompt, output_mean in rows:
        pc = Percentile(p=0.95, value=float(p95), n=n)
        out.append(
            {
                "model": model or "(unnamed)",
                "n": n,
                "prompt_tokens_p50": float(p50),
                "prompt_tokens_p95": pc.value,
                "p95_reliable": pc.reliable,
                "cached_token_fraction": int(cached) / int(prompt) if cache_known and prompt else None,
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


def _hour_buckets(con, view: str) -> list[tuple[int, int, int, int, int, int, int]]:
    """(weekday, requests, prompt tokens, output tokens, hour number, first and last UTC start ms) of each local clock
    hour of the log (a few thousand rows a year): the busiest hour and the weekday traffic both come from this one
    pass. The two starts differ only for the hour repeated when clocks go back."""
    return con.execute(
        f"""SELECT (hour_bucket // 24 + 3) % 7, count(*), coalesce(sum(prompt_tokens), 0),
               coalesce(sum(output_tokens), 0), hour_bucket, min(hour_start_ms), max(hour_start_ms)
        FROM {view} GROUP BY hour_bucket"""
    ).fetchall()


def _busiest(buckets: Sequence[Sequence[int]], first: int, last: int) -> tuple[int, int | None, float, float]:
    """(requests, UTC start ms, seconds covered by the log, requests per second of its length) of the busiest local
    clock hour: the most requests, the earliest of a tie. Covered: the part of the hour between the log's first and
    last arrival; its length is 3600 s but for the hour repeated when clocks go back (twice as long)."""
    if not buckets:
        return 0, None, 0.0, 0.0
    _, n, _, _, _, start, last_start = max(buckets, key=lambda b: (b[1], -b[4]))
    end = int(last_start) + 3_600_000
    covered_s = max(0, min(int(last), end) - max(int(first), int(start))) / 1000.0
    return int(n), int(start), covered_s, int(n) / ((end - int(start)) / 1000.0)


def _weekdays(buckets: Sequence[Sequence[int]], first_day: int | None, last_day: int | None) -> Rows:
    columns = ("weekday", "name", "requests", "prompt_tokens", "output_tokens")
    if first_day is None or last_day is None:
        return Rows(columns, [dict(zip(columns, (d, WEEKDAYS[d], 0.0, 0.0, 0.0), strict=True)) for d in range(7)])
    occurrences = [0] * 7  # how often each weekday occurs in the log's span (day 0, 1970-01-01, was a Thursday)
    for day in range(first_day, last_day + 1):
        occurrences[(day + 3) % 7] += 1
    totals = [[0, 0, 0] for _ in range(7)]
    for dow, n, prompt, output, *_ in buckets:
        got = totals[int(dow)]
        got[0], got[1], got[2] = got[0] + n, got[1] + int(prompt), got[2] + int(output)
    out = []
    for dow, (n, prompt, output) in enumerate(totals):
        times = occurrences[dow]  # 0: a weekday the span does not hold, and no requests on it
        values = (n / times, float(prompt) / times, float(output) / times) if times else (0.0, 0.0, 0.0)
        out.append(dict(zip(columns, (dow, WEEKDAYS[dow], *values), strict=True)))
    return Rows(columns, out)


def _cold(
    con, table: str, windows_s: Sequence[float], n: int, rate: float, with_durations: bool, first_ms: int
) -> Rows:
    """The trace's cold fractions per window (planner.logs.exposure.trace_cold_fraction's, replayed in SQL).

    first_ms: the log's first arrival (UTC epoch ms). The arrivals are cut into blocks of `block` ms from it, block
    the shortest window (whole ms, at least 1), and only each block's first arrival can find the replica idle longer
    than a window: any later arrival in the block follows one less than `block` ms before it, busy until at least
    then (timings are ≥ 0; every reader checks). So the gaps are taken between the blocks, from the first arrival of
    each to the latest finish of those before it: a hash aggregate of the arrivals and a sort of the blocks (at most
    the log's span ÷ block), not a sort of every arrival; the same counts either way.
    """
    windows = [float(w) for w in windows_s]
    if any(w < 0 for w in windows):
        raise ValueError("scale-down windows must be ≥ 0 s")
    counts = ", ".join(f"count(*) FILTER (WHERE gap > {w * 1000.0!r})" for w in windows)
    block = max(1, math.floor(min(windows, default=0.0) * 1000.0))
    # busy until the latest finish so far; with no service times, until the arrival itself
    fin = "ts_ms + coalesce(duration_ms, 0.0)" if with_durations else "ts_ms"
    gaps = f"""SELECT first - max(fin) OVER (ORDER BY b ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS gap
        FROM (SELECT (ts_ms - {int(first_ms)}) // {block} AS b, min(ts_ms) AS first, max({fin}) AS fin
              FROM {table} GROUP BY b)"""
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


def summarize(
    requests: RequestTable | pd.DataFrame,
    *,
    tz: str = "UTC",
    workday: str = DEFAULT_WORKDAY,
    windows_s: tuple[float, ...] = DEFAULT_WINDOWS_S,
) -> LogSummary:
    """The summary of a log's requests, hours and working day in `tz`: the one the Logs page and `logs summarize`
    show.

    requests: a RequestTable (the command reads its files into one through read_logs' sink) or a frame of
    planner.logs.COLUMNS (the page's reading, a stored upload, a production source), loaded into a private DuckDB
    table for the summary (the frame is left as it is). Either way summarize_table computes every figure.
    Raises ValueError for a bad working-day window or time zone.
    """
    parse_workday(workday)
    zone(tz)
    if isinstance(requests, RequestTable):  # the files are read: their readers' memory is the summary's
        return_freed_heap()
        requests.con.execute(f"SET memory_limit = '{SUMMARY_MEMORY_LIMIT}'")
        return summarize_table(requests.con, requests, tz, workday, windows_s)
    con = connect()
    try:
        table = RequestTable(con)
        table.append(requests)
        return summarize_table(con, table, tz, workday, windows_s)
    finally:
        con.close()


def summarize_table(
    con,
    table: str | RequestTable = "requests",
    tz: str = "UTC",
    workday: str = DEFAULT_WORKDAY,
    windows_s: tuple[float, ...] = DEFAULT_WINDOWS_S,
) -> LogSummary:
    """The whole summary of the requests in `table` (its name on `con`, or the RequestTable), computed by DuckDB.

    Raises ValueError for a bad working-day window or time zone.
    """
    start, end = parse_workday(workday)
    zone(tz)
    if isinstance(table, RequestTable):
        table.flush()
        table = table.name
    view = _clock_view(con, table, tz)
    wd = workday_sql(start, end)
    n, first, last, prompt_sum, cached_sum, hits, first_day, last_day, durations, *ttft_pcts = con.execute(
        f"""SELECT count(*), min(ts_ms), max(ts_ms), coalesce(sum(prompt_tokens), 0), coalesce(sum(cached_tokens), 0),
               count(*) FILTER (WHERE cached_tokens > 0), min(day), max(day), count(duration_ms),
               {_pcts("ttft_ms")}
        FROM {view}"""
    ).fetchall()[0]
    ttft = _percentiles(*ttft_pcts)
    prompt, prompt_wd = _from_ranked(con.execute(_ranked("prompt_tokens", view, ("true", wd))).fetchall()[0])
    (output,) = _from_ranked(con.execute(_ranked("output_tokens", table)).fetchall()[0])
    span_s = (last - first) / 1000.0 if n else 0.0
    rate = (n - 1) / span_s if n >= 2 and span_s > 0 else math.nan
    buckets = _hour_buckets(con, view) if n else []
    peak_n, peak_start, peak_covered_s, peak_rate = _busiest(buckets, first, last)
    days = int(last_day - first_day) + 1 if n else 1
    hourly, prompt_by_hour, ttft_by_hour = _by_hour(con, view, days)
    cache_known = hits > 0  # no request with a cached token: no cache column, or nothing hit — unknown, not 0 %
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
            "token_fraction": float(cached_sum) / float(prompt_sum) if cache_known and prompt_sum > 0 else None,
            "request_fraction": hits / n if cache_known else None,
        },
        mean_rate_per_s=rate,
        peak_hour_requests=peak_n,
        peak_hour_start_ms=peak_start,
        peak_hour_covered_s=peak_covered_s,
        peak_hour_rate_per_s=peak_rate,
        tables={
            "models": _models(con, table, cache_known),
            "hourly": hourly,
            "weekdays": _weekdays(buckets, first_day, last_day),
            "prompt_by_hour": prompt_by_hour,
            "ttft_by_hour": ttft_by_hour,
            "cold": _cold(con, table, windows_s, n, rate, durations > 0, first) if n else Rows(()),
        },
    )
