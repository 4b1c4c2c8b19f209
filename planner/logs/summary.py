"""The log summary's vocabulary: what every figure is called and the LogSummary that holds them.

planner.logs.summary_sql.summarize computes a LogSummary (one SQL summary in DuckDB, for the Logs page and `logs
summarize` alike); this module only names and carries it. Percentiles are nearest-rank (planner.percentiles, always with
n); hours and weekdays are local to the summary's `tz`; the working day is a local time window on Monday–Friday (default
09:00–18:00).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from planner.lazy import lazy_module
from planner.logs.records import zone
from planner.percentiles import Percentile

if TYPE_CHECKING:
    import pandas as pd
else:  # imported on first use: `logs summarize` never loads pandas
    pd = lazy_module("pandas")

__all__ = [
    "DEFAULT_WORKDAY",
    "LogSummary",
    "MODEL_COLUMNS",
    "PS",
    "Rows",
    "TABLES",
    "WEEKDAYS",
    "busiest_hour_words",
    "parse_workday",
    "workday_sql",
    "span_words",
]

PS = (0.5, 0.9, 0.95, 0.99)
DEFAULT_WORKDAY = "09:00-18:00"
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
# The per-model table's columns
MODEL_COLUMNS = (
    "model",
    "n",
    "prompt_tokens_p50",
    "prompt_tokens_p95",
    "p95_reliable",
    "cached_token_fraction",
    "output_tokens_mean",
)


def parse_workday(text: str) -> tuple[int, int]:
    """'09:00-18:00' → (540, 1080) minutes after local midnight; an overnight shift ends before it starts on the clock:
    '22:00-06:00' → (1320, 360), the hours from 22:00 of a weekday to 06:00 the next morning (workday_sql). Raises
    ValueError naming the input."""
    m = re.fullmatch(r"\s*(\d{1,2}):(\d{2})\s*[-–]\s*(\d{1,2}):(\d{2})\s*", text or "")
    if not m:
        raise ValueError(f"working day {text!r} is not HH:MM-HH:MM (e.g. 09:00-18:00, or 22:00-06:00 overnight)")
    h1, m1, h2, m2 = map(int, m.groups())
    start, end = h1 * 60 + m1, h2 * 60 + m2
    if not (0 <= start < 24 * 60 and 0 <= end <= 24 * 60 and m1 < 60 and m2 < 60) or end == start:
        raise ValueError(f"working day {text!r} must have a start and a different end, within 00:00-24:00")
    if end < start and end == 0:
        end = 24 * 60  # '18:00-00:00' is the evening, to midnight
    return start, end


def workday_sql(start: int, end: int) -> str:
    """SQL over a view with `dow` (Monday 0) and `minute_of_day`: the requests in the working day (start, end) of
    parse_workday, Monday to Friday. An overnight shift (end < start) belongs to the weekday it starts on: Monday
    22:00 to Tuesday 06:00, …, Friday 22:00 to Saturday 06:00."""
    if start < end:
        return f"(dow < 5 AND minute_of_day >= {start} AND minute_of_day < {end})"
    return f"((dow < 5 AND minute_of_day >= {start}) OR (dow BETWEEN 1 AND 5 AND minute_of_day < {end}))"


class Rows:
    """One of a summary's small tables (the models, 24 hours, 7 weekdays, the scale-down windows) as plain Python
    records (None where a figure is unknown), read as a pandas frame only where one is wanted: `logs summarize` writes
    the records without pandas."""

    def __init__(self, columns: Sequence[str], records: Sequence[dict[str, Any]] = ()) -> None:
        self.columns = tuple(columns)
        self.records = [dict(r) for r in records]
        self._frame: pd.DataFrame | None = None

    def frame(self) -> pd.DataFrame:
        """The records as a frame of `columns` (made once)."""
        if self._frame is None:
            self._frame = pd.DataFrame(self.records, columns=list(self.columns))
        return self._frame


class _TableFrame:
    """A LogSummary table read as a pandas frame: `summary.hourly` is summary.tables["hourly"].frame()."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, summary: LogSummary, owner: type | None = None) -> pd.DataFrame:
        return summary.tables[self.name].frame()


# LogSummary.tables' keys → their names in to_dict
TABLES = {
    "models": "models",
    "hourly": "hourly",
    "weekdays": "weekdays",
    "prompt_by_hour": "prompt_tokens_by_hour",
    "ttft_by_hour": "ttft_ms_by_hour",
    "cold": "cold_exposure",
}


@dataclass
class LogSummary:
    """Everything the Logs page and `logs summarize` show (planner.logs.summary_sql.summarize computes it).

    cached: {"token_fraction": cached ÷ prompt tokens, "request_fraction": share of requests with a cache hit}, both
    None when no request records a cached token (no cache column, or nothing hit): unknown, not a measured 0.
    peak_hour_*: the busiest local clock hour (the most requests; the earliest of a tie): its requests, the UTC epoch
    ms it starts at, and how many of its seconds lie between the log's first and last arrival (3600 for an hour the
    log covers whole; less for the first or last hour, and for a log shorter than an hour). peak_hour_rate_per_s is
    its requests ÷ its length (3600 s; 7200 s for the hour repeated when clocks go back): an hourly count, never
    extrapolated from the part of an hour a log covers. mean_rate_per_s: (n − 1) ÷ the log's span, NaN below two
    requests or a zero span.
    The tables (TABLES' keys) are Rows, read as frames by the attributes of the same name.
    """

    n: int
    first_ts_ms: int | None
    last_ts_ms: int | None
    tz: str
    workday: str
    prompt: dict[str, Percentile]
    prompt_workday: dict[str, Percentile]
    output: dict[str, Percentile]
    ttft: dict[str, Percentile]
    cached: dict[str, float | None]
    mean_rate_per_s: float
    peak_hour_requests: int
    peak_hour_start_ms: int | None
    peak_hour_covered_s: float
    peak_hour_rate_per_s: float
    tables: dict[str, Rows]

    models = _TableFrame()
    hourly = _TableFrame()
    weekdays = _TableFrame()
    prompt_by_hour = _TableFrame()
    ttft_by_hour = _TableFrame()
    cold = _TableFrame()

    @property
    def span_s(self) -> float:
        """Seconds from the first arrival to the last (0.0 for an empty log)."""
        if self.first_ts_ms is None or self.last_ts_ms is None:
            return 0.0
        return (self.last_ts_ms - self.first_ts_ms) / 1000.0

    @property
    def cache_known(self) -> bool:
        """Whether the log records cached tokens at all (some request hit the cache)."""
        return self.cached["token_fraction"] is not None

    def headline_prompt(self) -> tuple[str, dict[str, Percentile]]:
        """("working day", its prompt percentiles), or ("whole log", the whole log's) when no request falls in the
        working day (a trace recorded at night in the viewer's zone): the figures a headline and a hand-off use."""
        if self.prompt_workday["p95"].n == 0 and self.n > 0:
            return "whole log", self.prompt
        return "working day", self.prompt_workday

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: percentiles as {value, n, reliable}, tables as lists of records."""

        def pcs(d: dict[str, Percentile]) -> dict[str, Any]:
            return {k: {"value": v.value, "n": v.n, "reliable": v.reliable} for k, v in d.items()}

        return {
            "n": self.n,
            "first_ts_ms": self.first_ts_ms,
            "last_ts_ms": self.last_ts_ms,
            "tz": self.tz,
            "workday": self.workday,
            "prompt_tokens": pcs(self.prompt),
            "prompt_tokens_workday": pcs(self.prompt_workday),
            "output_tokens": pcs(self.output),
            "ttft_ms": pcs(self.ttft),
            "cached_share": self.cached,
            "mean_rate_per_s": self.mean_rate_per_s,
            "peak_hour_requests": self.peak_hour_requests,
            "peak_hour_start_ms": self.peak_hour_start_ms,
            "peak_hour_covered_s": self.peak_hour_covered_s,
            "peak_hour_rate_per_s": self.peak_hour_rate_per_s,
            **{name: self.tables[key].records for key, name in TABLES.items()},
        }


def span_words(seconds: float) -> str:
    """A span in words: '12 s', '57 min', '3.5 h', '9.2 days'."""
    if seconds < 120:
        return f"{seconds:,.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:,.0f} min"
    if seconds < 172_800:
        return f"{seconds / 3600:,.1f} h"
    return f"{seconds / 86_400:,.1f} days"


def busiest_hour_words(s: LogSummary) -> str:
    """The busiest local clock hour in words, as the Logs page and `logs summarize` say it: '2023-11-16 18:00–19:00
    UTC: 8,090 requests (the log covers 45 min of that hour)', and '(the log spans 57 min, less than an hour)' for a
    log shorter than an hour; '—' for an empty log."""
    if s.peak_hour_start_ms is None:
        return "—"
    start = dt.datetime.fromtimestamp(s.peak_hour_start_ms / 1000, zone(s.tz))
    text = f"{start:%Y-%m-%d %H:%M}–{(start.hour + 1) % 24:02d}:{start.minute:02d} {s.tz}: {s.peak_hour_requests:,} "
    text += "request" if s.peak_hour_requests == 1 else "requests"
    if s.span_s < 3600:
        return text + f" (the log spans {span_words(s.span_s)}, less than an hour)"
    if s.peak_hour_covered_s < 3600:
        return text + f" (the log covers {span_words(s.peak_hour_covered_s)} of that hour)"
    return text
