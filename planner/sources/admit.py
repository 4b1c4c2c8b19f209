"""What a live source's request must be to be stored: one rule for every per-request source (LiteLLM, OpenTelemetry).

A row read from outside is admitted when
- its arrival (`ts_ms`) is a time from 1970 to 2100 (planner.logs.records.MAX_EPOCH_MS, the log reader's window) and
  no later than `now_ms` + FUTURE_SKEW_MS: a live source reports requests that already happened, so a row dated a
  day or more ahead (a clock gone wrong, `2999-01-01`, PostgreSQL's `infinity`) is a bad row, never "the newest
  request", and never moves a watermark or a source's newest hour;
- each timing (`ttft_ms`, `duration_ms`) is absent (None: the source saw no first token or no end) or a finite
  number from 0 to MAX_TIMING_MS; a negative, infinite or NaN timing is a bad row, not a missing one;
- each token count is a whole number from 0 to planner.logs.records.MAX_TOKENS, with cached ≤ prompt.

`problem(row, now_ms)` names what is wrong (None: admitted); `admit(rows, now_ms)` splits a batch into the rows to
store and (request id, why) for the rest, the shape planner.sources.sync.SyncReport.left_out and the OTLP receiver's
rejected spans report.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable
from typing import Any

from planner.logs.records import FUTURE_SKEW_MS, MAX_EPOCH_MS, MAX_TIMING_MS, MAX_TOKENS

__all__ = ["FUTURE_SKEW_MS", "MAX_TIMING_MS", "admit", "problem", "start_problem"]

# FUTURE_SKEW_MS (a day): clocks disagree by seconds, time zones by hours; a day ahead is not a clock skew. It lives
# beside MAX_EPOCH_MS so the store (a layer below) reads the same window (planner.store.source_hours.newest_ms).


def _timing_problem(value: Any, field: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"{field} is not a number: {str(value)[:40]!r}"
    if not math.isfinite(value):
        return f"{field} is not a finite number ({value})"
    if value < 0:
        return f"{field} is negative ({value:g} ms): the first token or the end is before the start"
    if value > MAX_TIMING_MS:
        return f"{field} is {value:g} ms, over a week: not a request's timing"
    return None


def _count_problem(value: Any, field: str) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS:
        return f"{field} is not a whole number from 0 to 10⁹: {str(value)[:40]!r}"
    return None


def start_problem(ts: Any, now_ms: int) -> str | None:
    """Why `ts` (a request's start, UTC epoch ms) is no start a live request has, or None when it is one: a row
    with such a start must never move a watermark; one left out for another reason may."""
    if isinstance(ts, bool) or not isinstance(ts, int) or not 0 < ts < MAX_EPOCH_MS:
        return f"its start is not a time from 1970 to 2100: {str(ts)[:40]!r}"
    if ts > now_ms + FUTURE_SKEW_MS:
        return f"its start is more than a day in the future ({_iso(ts)}; now {_iso(now_ms)})"
    return None


def problem(row: dict[str, Any], now_ms: int) -> str | None:
    """Why `row` (a dict of planner.store.sources.REQUEST_COLUMNS) cannot be stored, or None when it can."""
    why = start_problem(row.get("ts_ms"), now_ms)
    if why:
        return why
    for field in ("ttft_ms", "duration_ms"):
        why = _timing_problem(row.get(field), field)
        if why:
            return why
    for field in ("prompt_tokens", "cached_tokens", "output_tokens"):
        why = _count_problem(row.get(field), field)
        if why:
            return why
    if row["cached_tokens"] > row["prompt_tokens"]:
        return f"cached_tokens ({row['cached_tokens']}) is more than prompt_tokens ({row['prompt_tokens']})"
    return None


def admit(rows: Iterable[dict[str, Any]], now_ms: int) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """The rows to store, and (request id, why) for each one left out."""
    kept: list[dict[str, Any]] = []
    left_out: list[tuple[str, str]] = []
    for row in rows:
        why = problem(row, now_ms)
        if why is None:
            kept.append(row)
        else:
            left_out.append((str(row.get("request_id", ""))[:200], why))
    return kept, left_out


def _iso(ms: int) -> str:
    try:
        return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    except (OverflowError, OSError, ValueError):
        return str(ms)
