"""Summaries of a normalised request frame: prompt-token percentiles, cache share, traffic shape.

Percentiles are nearest-rank through planner.stats (always with n). Hours and weekdays are
local to `tz` (the viewer's or the team's zone), computed from the UTC epoch ms in the frame.
The working day is a local time window on Monday–Friday (default 09:00–18:00).

Over 400 lines: every summary the Logs page and `logs summarize` show is computed here from one frame, so the
working-day, hourly, weekday and per-model cuts share their helpers; split by page section it would pass the frame and
its clock around.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from planner.lazy import lazy_module
from planner.logs.exposure import DEFAULT_WINDOWS_S, cold_fraction_curve, mean_rate_per_s
from planner.logs.records import zone
from planner.stats import Percentile, nearest_rank_index

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
else:  # imported on first use: `logs summarize` reads through DuckDB alone
    np, pd = lazy_module("numpy"), lazy_module("pandas")

__all__ = [
    "DEFAULT_WORKDAY",
    "LogSummary",
    "MODEL_COLUMNS",
    "PS",
    "Rows",
    "TABLES",
    "WEEKDAYS",
    "cached_share",
    "ecdf_points",
    "histogram",
    "json_records",
    "hourly_profile",
    "local_times",
    "parse_workday",
    "peak_hour_rate_per_s",
    "per_hour_percentiles",
    "per_model",
    "percentiles",
    "summarize_logs",
    "weekday_profile",
    "workday_mask",
]

PS = (0.5, 0.9, 0.95, 0.99)
DEFAULT_WORKDAY = "09:00-18:00"
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
# The per-model table's columns (per_model, and planner.logs.engine's twin of it)
MODEL_COLUMNS = (
    "model",
    "n",
    "prompt_tokens_p50",
    "prompt_tokens_p95",
    "p95_reliable",
    "cached_token_fraction",
    "output_tokens_mean",
)


_COUNTING_MAX_SPAN = 1 << 24  # integer values spanning fewer than this are ranked by counting, not sorting


def _ranked(arr: np.ndarray, ranks: list[int]) -> list[float]:
    """The values at 0-based ranks of arr in sorted order: by counting for integers of a modest span, else by sorting.

    Both are exact; counting is O(n) and allocates one bin per distinct possible value.
    """
    if arr.dtype.kind in "iu" and arr.size > 4096:
        lo, hi = int(arr.min()), int(arr.max())
        if hi - lo < _COUNTING_MAX_SPAN:
            cum = np.cumsum(np.bincount(arr - lo if lo else arr, minlength=hi - lo + 1))
            return [float(lo + int(np.searchsorted(cum, r, side="right"))) for r in ranks]
    if len(ranks) <= 8 and arr.size > 4096:
        part = np.partition(arr, ranks)  # exact order statistics without a full sort
        return [float(part[r]) for r in ranks]
    srt = np.sort(arr)
    return [float(srt[r]) for r in ranks]


def percentiles(values: Any, ps: tuple[float, ...] = PS) -> dict[str, Percentile]:
    """Nearest-rank percentiles (planner.stats) of `values`, NaN dropped, keyed 'p50'…'p99', 'max'.

    Exact: whole token counts are ranked by counting, other values by partial sorting; the rank
    rule is planner.stats'.
    """
    arr = np.asarray(values)
    if arr.dtype.kind not in "iu":
        arr = np.asarray(arr, dtype=np.float64)
        arr = arr[~np.isnan(arr)]
    n = int(arr.size)
    levels = (*ps, 1.0)
    picked = _ranked(arr, [nearest_rank_index(p, n) for p in levels]) if n else [None] * len(levels)
    out: dict[str, Percentile] = {}
    for p, value in zip(levels, picked, strict=True):
        pc = Percentile(p=p, value=value, n=n)
        out["max" if p == 1.0 else pc.label] = pc
    return out


def parse_workday(text: str) -> tuple[int, int]:
    """'09:00-18:00' → (540, 1080) minutes after local midnight; raises ValueError naming the input."""
    m = re.fullmatch(r"\s*(\d{1,2}):(\d{2})\s*[-–]\s*(\d{1,2}):(\d{2})\s*", text or "")
    if not m:
        raise ValueError(f"working day {text!r} is not HH:MM-HH:MM (e.g. 09:00-18:00)")
    h1, m1, h2, m2 = map(int, m.groups())
    start, end = h1 * 60 + m1, h2 * 60 + m2
    if not (0 <= start < 24 * 60 and 0 < end <= 24 * 60 and m1 < 60 and m2 < 60) or end <= start:
        raise ValueError(f"working day {text!r} must start before it ends, within 00:00-24:00")
    return start, end


def local_times(frame: pd.DataFrame, tz: str = "UTC") -> pd.DatetimeIndex:
    """Arrival times of the frame as a tz-aware DatetimeIndex in `tz`."""
    return pd.to_datetime(frame["ts_ms"].to_numpy(dtype=np.int64), unit="ms", utc=True).tz_convert(tz)


_MS_PER_DAY = 86_400_000
_QUARTER_MS = 900_000


def _wall_clock_ms(ts: np.ndarray, tz: str) -> np.ndarray:
    """Local wall-clock ms of UTC epoch ms in `tz`.

    Zone offsets change only on quarter-hour UTC instants, so the offset is looked up once per
    quarter hour of the log's span (a few thousand conversions) instead of once per request.
    """
    q = ts // _QUARTER_MS
    q0 = int(q.min())
    span = int(q.max()) - q0 + 1
    if span > 4_000_000:  # a span of over a century: convert every arrival
        return pd.to_datetime(ts, unit="ms", utc=True).tz_convert(tz).tz_localize(None).as_unit("ms").asi8
    starts = (np.arange(span, dtype=np.int64) + q0) * _QUARTER_MS
    wall = pd.to_datetime(starts, unit="ms", utc=True).tz_convert(tz).tz_localize(None).as_unit("ms").asi8
    return ts + (wall - starts)[q - q0]


class _Clock:
    """Local wall-clock fields of every arrival, computed once (one time-zone conversion per summary)."""

    def __init__(self, frame: pd.DataFrame, tz: str) -> None:
        ts = frame["ts_ms"].to_numpy(dtype=np.int64)
        local = ts if tz in ("UTC", "utc") or len(ts) == 0 else _wall_clock_ms(ts, tz)
        # Small integer types: five fields of millions of arrivals in ~12 bytes each, not 40.
        minute = local // 60_000
        del local
        self.hour_bucket = (minute // 60).astype(np.int32)  # hours since 1970 (to year 245,000)
        self.day = (self.hour_bucket // 24).astype(np.int32)  # local calendar day number
        self.hour = (self.hour_bucket - self.day * 24).astype(np.int8)
        self.minute_of_day = (minute - self.day.astype(np.int64) * 1440).astype(np.int16)
        del minute
        self.dow = ((self.day + 3) % 7).astype(np.int8)  # 1970-01-01 was a Thursday; Monday = 0


def _clock(frame: pd.DataFrame, tz: str, clock: _Clock | None) -> _Clock:
    return clock if clock is not None else _Clock(frame, tz)


def workday_mask(
    frame: pd.DataFrame, tz: str = "UTC", workday: str = DEFAULT_WORKDAY, *, clock: _Clock | None = None
) -> np.ndarray:
    """Boolean mask of requests that arrived Monday–Friday inside the local working-day window."""
    start, end = parse_workday(workday)
    c = _clock(frame, tz, clock)
    return (c.dow < 5) & (c.minute_of_day >= start) & (c.minute_of_day < end)


def hourly_profile(frame: pd.DataFrame, tz: str = "UTC", *, clock: _Clock | None = None) -> pd.DataFrame:
    """Traffic per local hour of day (0..23), averaged over the calendar days the log spans.

    Columns: hour, requests, requests_per_s (requests / 3600), prompt_tokens, cached_tokens,
    output_tokens (sums per hour of day ÷ days), tokens_per_hour (prompt + output).
    """
    c = _clock(frame, tz, clock)
    days = int(c.day.max() - c.day.min()) + 1 if len(c.day) else 1
    out = pd.DataFrame({"hour": np.arange(24)})
    out["requests"] = np.bincount(c.hour, minlength=24)[:24] / days
    out["requests_per_s"] = out["requests"] / 3600.0
    for col in ("prompt_tokens", "cached_tokens", "output_tokens"):
        out[col] = np.bincount(c.hour, weights=frame[col].to_numpy(dtype=np.float64), minlength=24)[:24] / days
    out["tokens_per_hour"] = out["prompt_tokens"] + out["output_tokens"]
    return out


def weekday_profile(frame: pd.DataFrame, tz: str = "UTC", *, clock: _Clock | None = None) -> pd.DataFrame:
    """Requests and tokens per local weekday, averaged over the occurrences of that weekday in the log's span.

    Columns: weekday (0 = Monday), name, requests, prompt_tokens, output_tokens.
    """
    c = _clock(frame, tz, clock)
    out = pd.DataFrame({"weekday": np.arange(7), "name": WEEKDAYS})
    if len(c.day) == 0:
        for col in ("requests", "prompt_tokens", "output_tokens"):
            out[col] = 0.0
        return out
    span_days = np.arange(c.day.min(), c.day.max() + 1)
    occurrences = np.bincount((span_days + 3) % 7, minlength=7).astype(float)
    occurrences[occurrences == 0] = np.nan
    dow = c.dow
    out["requests"] = np.bincount(dow, minlength=7) / occurrences
    out["prompt_tokens"] = np.bincount(dow, weights=frame["prompt_tokens"].to_numpy(), minlength=7) / occurrences
    out["output_tokens"] = np.bincount(dow, weights=frame["output_tokens"].to_numpy(), minlength=7) / occurrences
    return out.fillna(0.0)


def peak_hour_rate_per_s(frame: pd.DataFrame, tz: str = "UTC", *, clock: _Clock | None = None) -> float:
    """Arrival rate (requests/s) in the busiest clock hour of the log.

    The busiest actual hour (date + hour), not the averaged profile, so a busy day is not
    smoothed away. A log shorter than one hour gives n / its span. 0.0 for an empty frame.
    """
    n = len(frame)
    if n == 0:
        return 0.0
    ts = frame["ts_ms"].to_numpy(dtype=np.int64)
    span_s = (ts.max() - ts.min()) / 1000.0
    if span_s < 3600:
        return n / max(span_s, 1.0)
    buckets = _clock(frame, tz, clock).hour_bucket
    return float(np.bincount(buckets - buckets.min()).max()) / 3600.0


def cached_share(frame: pd.DataFrame) -> dict[str, float]:
    """token_fraction: cached ÷ prompt tokens (what prefill skips); request_fraction: share of requests with any
    cache hit."""
    prompt = float(frame["prompt_tokens"].sum())
    cached = float(frame["cached_tokens"].sum())
    n = len(frame)
    return {
        "token_fraction": cached / prompt if prompt > 0 else 0.0,
        "request_fraction": float((frame["cached_tokens"] > 0).sum()) / n if n else 0.0,
    }


def _groups(codes: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """(row order grouping equal codes, stable; start offsets of each group, length n_groups + 1)."""
    small = codes.astype(np.int16 if n_groups < 32_000 else np.int64, copy=False)
    order = np.argsort(small, kind="stable")  # a radix sort for 16-bit codes
    bounds = np.zeros(n_groups + 1, dtype=np.int64)
    np.cumsum(np.bincount(codes, minlength=n_groups)[:n_groups], out=bounds[1:])
    return order, bounds


def per_model(frame: pd.DataFrame) -> pd.DataFrame:
    """Per model, by name: n, prompt-token p50/p95 (nearest-rank), p95_reliable, cached token fraction, mean output
    tokens."""
    rows = []
    codes, models = pd.factorize(frame["model"], sort=True)
    prompt = frame["prompt_tokens"].to_numpy(dtype=np.int64)
    cached = frame["cached_tokens"].to_numpy(dtype=np.int64)
    output = frame["output_tokens"].to_numpy(dtype=np.int64)
    order, bounds = _groups(codes, len(models))
    # By name (a categorical column factorises in its categories' order, i.e. as the reader first saw them).
    for i in sorted(range(len(models)), key=lambda k: str(models[k])):
        model = models[i]
        sel = order[bounds[i] : bounds[i + 1]]
        p_sel = prompt[sel]
        pc = percentiles(p_sel, (0.5, 0.95))
        p_sum = int(p_sel.sum())
        rows.append(
            {
                "model": model or "(unnamed)",
                "n": int(sel.size),
                "prompt_tokens_p50": pc["p50"].value,
                "prompt_tokens_p95": pc["p95"].value,
                "p95_reliable": pc["p95"].reliable,
                "cached_token_fraction": int(cached[sel].sum()) / p_sum if p_sum else 0.0,
                "output_tokens_mean": float(output[sel].mean()),
            }
        )
    return pd.DataFrame(rows, columns=list(MODEL_COLUMNS))


def per_hour_percentiles(
    frame: pd.DataFrame, column: str = "prompt_tokens", tz: str = "UTC", *, clock: _Clock | None = None
) -> pd.DataFrame:
    """Per local hour of day (0..23): n, p50, p95 of `column` (nearest-rank), p95_reliable (n ≥ 20)."""
    hours = _clock(frame, tz, clock).hour
    col = frame[column]
    values = col.to_numpy() if col.dtype.kind in "iu" else col.to_numpy(dtype=np.float64)
    order, bounds = _groups(hours, 24)
    rows = []
    for h in range(24):
        pc = percentiles(values[order[bounds[h] : bounds[h + 1]]], (0.5, 0.95))
        rows.append(
            {
                "hour": h,
                "n": pc["p50"].n,
                "p50": pc["p50"].value,
                "p95": pc["p95"].value,
                "p95_reliable": pc["p95"].reliable,
            }
        )
    return pd.DataFrame(rows)


def histogram(values: Any, bins: int = 40) -> pd.DataFrame:
    """Histogram with equal-width bins: columns left, right, count (NaN dropped)."""
    arr = np.asarray(values, dtype=np.float64)
    arr = arr[~np.isnan(arr)]
    if arr.size == 0:
        return pd.DataFrame({"left": [], "right": [], "count": []})
    counts, edges = np.histogram(arr, bins=bins)
    return pd.DataFrame({"left": edges[:-1], "right": edges[1:], "count": counts})


def ecdf_points(values: Any, max_points: int = 2000) -> pd.DataFrame:
    """Empirical CDF as columns value, fraction (i/n), thinned to at most max_points steps for plotting."""
    arr = np.sort(np.asarray(values, dtype=np.float64))
    arr = arr[~np.isnan(arr)]
    n = arr.size
    if n == 0:
        return pd.DataFrame({"value": [], "fraction": []})
    idx = np.unique(np.linspace(0, n - 1, min(n, max_points)).round().astype(int))
    return pd.DataFrame({"value": arr[idx], "fraction": (idx + 1) / n})


class Rows:
    """One of a summary's small tables (the models, 24 hours, 7 weekdays, the scale-down windows) as plain Python
    values, read as a pandas frame only where one is wanted: `logs summarize` writes the records without pandas.

    Made from records (the engine's results; NaN written None) or from a frame (summarize_logs'), each giving the
    other when first asked.
    """

    def __init__(
        self, columns: Sequence[str], records: Sequence[dict[str, Any]] | None = None, frame: pd.DataFrame | None = None
    ) -> None:
        self.columns = tuple(columns)
        self._records = None if records is None else [dict(r) for r in records]
        self._frame = frame

    @classmethod
    def of(cls, frame: pd.DataFrame) -> Rows:
        return cls(tuple(str(c) for c in frame.columns), frame=frame)

    @property
    def records(self) -> list[dict[str, Any]]:
        """One dict per row, plain Python values (numpy scalars converted, NaN → None)."""
        if self._records is None:
            self._records = json_records(self._frame) if self._frame is not None else []
        return self._records

    def frame(self) -> pd.DataFrame:
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
    """Everything the Logs page and `logs summarize` show; see summarize_logs.

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
    cached: dict[str, float]
    mean_rate_per_s: float
    peak_hour_rate_per_s: float
    tables: dict[str, Rows]

    models = _TableFrame()
    hourly = _TableFrame()
    weekdays = _TableFrame()
    prompt_by_hour = _TableFrame()
    ttft_by_hour = _TableFrame()
    cold = _TableFrame()

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
            "peak_hour_rate_per_s": self.peak_hour_rate_per_s,
            **{name: self.tables[key].records for key, name in TABLES.items()},
        }


def json_records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as plain-Python dicts (numpy scalars converted, NaN → None)."""
    out = []
    for rec in df.to_dict(orient="records"):
        clean = {}
        for k, v in rec.items():
            if isinstance(v, np.generic):
                v = v.item()
            if isinstance(v, float) and math.isnan(v):
                v = None
            clean[k] = v
        out.append(clean)
    return out


def summarize_logs(
    frame: pd.DataFrame,
    tz: str = "UTC",
    workday: str = DEFAULT_WORKDAY,
    windows_s: tuple[float, ...] = DEFAULT_WINDOWS_S,
) -> LogSummary:
    """The whole summary of a normalised frame (see planner.logs.COLUMNS).

    Raises ValueError for a bad working-day window or time zone.
    """
    parse_workday(workday)
    zone(tz)
    n = len(frame)
    ts = frame["ts_ms"].to_numpy(dtype=np.int64)
    clock = _Clock(frame, tz)
    mask = workday_mask(frame, tz, workday, clock=clock)
    duration = frame["duration_ms"].to_numpy(dtype=np.float64)
    return LogSummary(
        n=n,
        first_ts_ms=int(ts.min()) if n else None,
        last_ts_ms=int(ts.max()) if n else None,
        tz=tz,
        workday=workday,
        prompt=percentiles(frame["prompt_tokens"]),
        prompt_workday=percentiles(frame["prompt_tokens"].to_numpy()[mask]),
        output=percentiles(frame["output_tokens"]),
        ttft=percentiles(frame["ttft_ms"]),
        cached=cached_share(frame),
        mean_rate_per_s=mean_rate_per_s(ts),
        peak_hour_rate_per_s=peak_hour_rate_per_s(frame, tz, clock=clock),
        tables={
            "models": Rows.of(per_model(frame)),
            "hourly": Rows.of(hourly_profile(frame, tz, clock=clock)),
            "weekdays": Rows.of(weekday_profile(frame, tz, clock=clock)),
            "prompt_by_hour": Rows.of(per_hour_percentiles(frame, "prompt_tokens", tz, clock=clock)),
            "ttft_by_hour": Rows.of(per_hour_percentiles(frame, "ttft_ms", tz, clock=clock)),
            "cold": Rows.of(
                cold_fraction_curve(ts, windows_s, np.nan_to_num(duration, nan=0.0)) if n else pd.DataFrame()
            ),
        },
    )
