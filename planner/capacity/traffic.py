"""Traffic for the capacity models from a stored request log: token mix, hour-of-day tokens, peak arrivals.

Thin glue over the log summary (planner.logs.summarize: the busiest clock hour): the Capacity & cost page
and the Compare page price and size the team's own traffic when a log upload exists.

The daily model of a log (DAILY_RULE), the one every capacity model uses: a log stands for
`days_represented(span)` = max(1, span ÷ 24 h) days of traffic, span = first to last request. A log shorter than a
day is one day's traffic — its requests once a day at their own clock times, none in the rest of the day — so the
Break-even tab prices its tokens once a day and the Warm pool tab keeps a replica warm for its span once a day;
a longer log is averaged per day (tokens per hour of day over the clock hours it covers).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from planner.capacity.errors import CapacityError
from planner.capacity.specs import TokenMix
from planner.logs import summarize
from planner.percentiles import percentile

__all__ = [
    "DAILY_RULE",
    "LogTraffic",
    "PromptFigures",
    "daily_words",
    "days_represented",
    "hourly_tokens_over_covered_hours",
    "prompt_figures",
    "traffic_from_frame",
]

_MS_PER_HOUR = 3_600_000
SECONDS_PER_DAY = 86_400.0

#: The daily model of a log, in words, as the Capacity & cost page states it.
DAILY_RULE = (
    "A log stands for max(1, its span ÷ 24 h) days: one shorter than a day is one day's traffic, its requests once "
    "a day at their own clock times and none in the rest of the day; a longer one is averaged per day."
)


def days_represented(span_s: float) -> float:
    """Days of traffic a log spanning `span_s` seconds (first to last request) stands for: max(1, span_s / 86,400).

    Raises CapacityError for a negative or non-finite span.
    """
    if span_s is None or not math.isfinite(span_s) or span_s < 0:
        raise CapacityError(f"a log's span must be a number of seconds ≥ 0, got {span_s!r}")
    return max(1.0, float(span_s) / SECONDS_PER_DAY)


def _duration_words(span_s: float) -> str:
    if span_s < 2 * 3600:
        return f"{span_s / 60:,.0f} min"
    if span_s < 2 * SECONDS_PER_DAY:
        return f"{span_s / 3600:,.1f} h"
    return f"{span_s / SECONDS_PER_DAY:,.1f} days"


def hourly_tokens_over_covered_hours(frame: pd.DataFrame, tz: str = "UTC") -> tuple[tuple[float, ...], tuple[int, ...]]:
    """Tokens (prompt incl. cached + output) per local hour of day, averaged over the clock hours the log covers.

    A log from Mon 00:15 to Wed 23:45 (71.5 h) covers every hour of day 3 times, so each hour of day is its
    tokens ÷ 3, and the 24 values sum to the log's tokens ÷ 72 h × 24 — not ÷ the 4 calendar days it touches.
    An hour of day the log never covers counts 0 tokens. Returns (tokens per hour for hours 0..23, covered clock
    hours per hour of day). Hours are wall-clock hours in `tz`.
    """
    if len(frame) == 0:
        return (0.0,) * 24, (0,) * 24
    ts = frame["ts_ms"].to_numpy(dtype=np.int64)
    if tz in ("UTC", "utc"):
        wall = ts
    else:
        wall = pd.to_datetime(ts, unit="ms", utc=True).tz_convert(tz).tz_localize(None).as_unit("ms").asi8
    bucket = wall // _MS_PER_HOUR  # local wall-clock hour number
    first, last = int(bucket.min()), int(bucket.max())
    covered = np.bincount(np.arange(first, last + 1) % 24, minlength=24)[:24]
    tokens = frame["prompt_tokens"].to_numpy(dtype=np.float64) + frame["output_tokens"].to_numpy(dtype=np.float64)
    per_hour = np.bincount(bucket % 24, weights=tokens, minlength=24)[:24]
    avg = np.divide(per_hour, covered, out=np.zeros(24), where=covered > 0)
    return tuple(float(x) for x in avg), tuple(int(c) for c in covered)


@dataclass(frozen=True)
class LogTraffic:
    """What the capacity models take from a log: mix, tokens per hour of day, peak arrivals, the trace."""

    label: str
    n_requests: int
    mix: TokenMix
    hourly_tokens: tuple[float, ...]  # 24 values, tokens/h averaged over the clock hours the log covers
    peak_arrivals_per_hour: float  # busiest actual clock hour
    mean_service_s: float | None  # mean logged request duration (s), None when not logged
    arrival_ms: np.ndarray  # UTC epoch ms, sorted
    service_ms: np.ndarray  # per request, NaN → 0
    tz: str = "UTC"  # the zone the hours of day are in
    covered_hours: int = 0  # clock hours from the first request's hour to the last's
    n_durations: int = 0  # requests with a logged duration (behind mean_service_s)
    mean_output_tokens: float = 0.0  # per request
    mean_ttft_s: float | None = None  # mean logged TTFT (s), None when not logged
    prompt_tokens_p95: float | None = None  # nearest rank over the requests' prompt tokens (planner.percentiles)
    # Whether the log records cached prompt tokens: as the Logs page rules (planner.logs.summary_sql), a log where no
    # request has a cached token (no cache column, or nothing hit) leaves the cache-hit rate unknown, never a measured
    # 0.
    cache_known: bool = False

    @property
    def span_s(self) -> float:
        """Seconds from the first request to the last."""
        return float(self.arrival_ms[-1] - self.arrival_ms[0]) / 1000.0 if len(self.arrival_ms) else 0.0

    @property
    def days(self) -> float:
        """Days of traffic the log stands for (days_represented of its span)."""
        return days_represented(self.span_s)

    @property
    def busy_hours_of_day(self) -> int:
        """Hours of day (of 24) in which the log has requests."""
        return sum(1 for t in self.hourly_tokens if t > 0)


def daily_words(traffic: LogTraffic) -> str:
    """The daily model of `traffic` in one sentence (DAILY_RULE applied), e.g. "The log spans 57 min, in 2 of the
    24 hours of day (UTC): taken as one day's traffic — its requests once a day at their own clock times, none in
    the other 22 hours."."""
    span = _duration_words(traffic.span_s)
    busy = traffic.busy_hours_of_day
    if traffic.days <= 1.0:
        return (
            f"The log spans {span}, in {busy} of the 24 hours of day ({traffic.tz}): taken as one day's traffic — its "
            f"requests once a day at their own clock times, none in the other {24 - busy} hours."
        )
    return (
        f"The log spans {span}: averaged per day, each hour of day over the clock hours the log covers "
        f"({traffic.tz}); an hour of day it never covers carries no traffic."
    )


def traffic_from_frame(frame: pd.DataFrame, label: str, tz: str = "UTC") -> LogTraffic:
    """Build LogTraffic from a normalised request frame (planner.logs COLUMNS) in time zone `tz`.

    Raises CapacityError for an empty frame.
    """
    if frame is None or len(frame) == 0:
        raise CapacityError(f"the log {label!r} has no requests")
    prompt = float(frame["prompt_tokens"].sum())
    cached = float(frame["cached_tokens"].sum())
    output = float(frame["output_tokens"].sum())
    mix = TokenMix.from_totals(prompt, min(cached, prompt), output, label=label, source="request log")
    hourly, covered = hourly_tokens_over_covered_hours(frame, tz)
    ttft = frame["ttft_ms"].to_numpy(dtype=np.float64)
    ttft_known = ttft[~np.isnan(ttft)]
    durations = frame["duration_ms"].to_numpy(dtype=np.float64)
    known = durations[~np.isnan(durations)]
    mean_s = float(known.mean()) / 1000.0 if known.size else None
    arrival = np.sort(frame["ts_ms"].to_numpy(dtype=np.float64))
    order = np.argsort(frame["ts_ms"].to_numpy(dtype=np.float64), kind="stable")
    service = np.nan_to_num(durations[order], nan=0.0)
    peak = summarize(frame, tz=tz).peak_hour_rate_per_s * 3600.0  # the busiest clock hour's requests, as Logs says
    p95 = percentile(frame["prompt_tokens"].to_numpy(dtype=np.float64), 0.95).value
    return LogTraffic(
        label,
        len(frame),
        mix,
        hourly,
        float(peak) if math.isfinite(peak) else 0.0,
        mean_s,
        arrival,
        service,
        tz=tz,
        covered_hours=int(sum(covered)),
        n_durations=int(known.size),
        mean_output_tokens=output / len(frame),
        mean_ttft_s=float(ttft_known.mean()) / 1000.0 if ttft_known.size else None,
        prompt_tokens_p95=p95,
        cache_known=bool(cached > 0),
    )


@dataclass(frozen=True)
class PromptFigures:
    """The p95 prompt (tokens) and the prefix-cache hit rate (0–1) the Prefill tab starts from, from ONE source
    (`source`: "log" or "worksheet"), and that source in words (`words`)."""

    prompt_tokens_p95: float
    cache_hit_fraction: float
    source: str
    words: str


def prompt_figures(
    traffic: LogTraffic | None, worksheet_prompt_p95: float, worksheet_cache_hit: float, worksheet_name: str
) -> PromptFigures:
    """The p95 prompt and cache-hit rate as a pair from one source: the log's own when it has both (a p95 prompt, and
    a cache-hit rate it records), else the worksheet's — never the log's prompt beside the worksheet's cache hit, nor
    a log without cached tokens read as a 0 % hit rate."""
    ws = f"your worksheet “{worksheet_name}”"
    if traffic is not None and traffic.prompt_tokens_p95 is not None and traffic.cache_known:
        return PromptFigures(
            traffic.prompt_tokens_p95,
            traffic.mix.cache_hit_fraction,
            "log",
            f"p95 prompt and cache-hit rate from the log {traffic.label} (nearest rank; cached ÷ prompt tokens)",
        )
    why = (
        ""
        if traffic is None
        else f" — the log {traffic.label} records no cached prompt tokens, so its cache-hit rate is unknown, not 0"
    )
    return PromptFigures(
        worksheet_prompt_p95,
        worksheet_cache_hit,
        "worksheet",
        f"p95 prompt and cache-hit rate from {ws}{why}",
    )
