"""Traffic for the capacity models from a stored request log: token mix, hour-of-day tokens, peak arrivals.

Thin glue over planner.logs.summary (hourly_profile, peak_hour_rate_per_s): the Capacity & cost page
and the Compare page price and size the team's own traffic when a log upload exists.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from planner.capacity.errors import CapacityError
from planner.capacity.presets import TokenMix
from planner.logs.summary import hourly_profile, peak_hour_rate_per_s

__all__ = ["LogTraffic", "traffic_from_frame"]


@dataclass(frozen=True)
class LogTraffic:
    """What the capacity models take from a log: mix, tokens per hour of day, peak arrivals, the trace."""

    label: str
    n_requests: int
    mix: TokenMix
    hourly_tokens: tuple[float, ...]       # 24 values, tokens/h averaged over the days the log spans
    peak_arrivals_per_hour: float          # busiest actual clock hour
    mean_service_s: float | None           # mean logged request duration (s), None when not logged
    arrival_ms: np.ndarray                 # UTC epoch ms, sorted
    service_ms: np.ndarray                 # per request, NaN → 0


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
    prof = hourly_profile(frame, tz)
    durations = frame["duration_ms"].to_numpy(dtype=np.float64)
    known = durations[~np.isnan(durations)]
    mean_s = float(known.mean()) / 1000.0 if known.size else None
    arrival = np.sort(frame["ts_ms"].to_numpy(dtype=np.float64))
    order = np.argsort(frame["ts_ms"].to_numpy(dtype=np.float64), kind="stable")
    service = np.nan_to_num(durations[order], nan=0.0)
    peak = peak_hour_rate_per_s(frame, tz) * 3600.0
    return LogTraffic(label, len(frame), mix, tuple(float(x) for x in prof["tokens_per_hour"]),
                      float(peak) if math.isfinite(peak) else 0.0, mean_s, arrival, service)
