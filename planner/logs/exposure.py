"""Cold-start exposure from a request trace.

Trace-driven, for one scale-to-zero replica with scale-down window W: request i is cold when
the gap between its arrival and the moment the replica last became idle exceeds W; the first
request is always cold. With service times the replica is busy until the latest finish so far
(max over earlier arrival + service), which equals finish_{i−1} when requests do not overlap.
For Poisson arrivals at rate λ the same fraction is e^(−λW). Cold starts reach the p95 only when
more than 5% of requests are cold.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from planner.lazy import lazy_module

if TYPE_CHECKING:
    import numpy as np
else:  # imported on first use: `logs summarize` reads through DuckDB alone (its curve: planner.logs.summary_sql)
    np = lazy_module("numpy")


__all__ = [
    "DEFAULT_WINDOWS_S",
    "P95_COLD_THRESHOLD",
    "cold_in_p95",
    "poisson_cold_fraction",
    "trace_cold_fraction",
]

P95_COLD_THRESHOLD = 0.05
# Scale-down windows from 10 s to 1 h, as offered by serverless GPU platforms.
DEFAULT_WINDOWS_S = (10, 20, 30, 60, 120, 180, 300, 600, 900, 1200, 1800, 2700, 3600)


def _prepare(arrival_ms: np.ndarray, service_ms: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    arrival = np.asarray(arrival_ms, dtype=np.float64)
    if arrival.ndim != 1 or arrival.size == 0:
        raise ValueError("cold-start exposure needs at least one arrival time")
    if not np.isfinite(arrival).all():
        raise ValueError("arrival times must be finite epoch ms")
    service = np.broadcast_to(np.asarray(service_ms, dtype=np.float64), arrival.shape)
    service = np.where(np.isfinite(service), service, 0.0)
    if (service < 0).any():
        raise ValueError("service times must be ≥ 0 ms")
    if arrival.size > 1 and (arrival[1:] < arrival[:-1]).any():  # read_logs gives arrival order already
        order = np.argsort(arrival, kind="stable")
        arrival, service = arrival[order], service[order]
    busy_until = np.maximum.accumulate(arrival + service)
    return arrival, busy_until


def _cold_counts(arrival: np.ndarray, busy_until: np.ndarray, windows_ms: np.ndarray) -> np.ndarray:
    gaps = np.sort(arrival[1:] - busy_until[:-1])  # negative when the replica was still busy
    # cold = 1 (first request) + number of gaps strictly greater than W
    return 1 + gaps.size - np.searchsorted(gaps, windows_ms, side="right")


def trace_cold_fraction(arrival_ms: np.ndarray, window_s: float, service_ms: np.ndarray | float = 0.0) -> float:
    """Fraction of requests that find a single scale-to-zero replica cold, for window W = window_s.

    arrival_ms: arrival times (epoch ms, any order); service_ms: per-request (or one) service time in ms,
    e.g. the logged duration (NaN counts as 0). Raises ValueError for an empty trace or negative inputs.
    """
    if not window_s >= 0:
        raise ValueError(f"the scale-down window must be ≥ 0 s, got {window_s}")
    arrival, busy_until = _prepare(arrival_ms, service_ms)
    cold = _cold_counts(arrival, busy_until, np.asarray([window_s * 1000.0]))
    return float(cold[0] / arrival.size)


def poisson_cold_fraction(rate_per_s: float, window_s: float) -> float:
    """P(cold) = e^(−λW) for Poisson arrivals at rate_per_s with scale-down window window_s.

    Raises ValueError for a negative rate or window.
    """
    if rate_per_s < 0 or window_s < 0:
        raise ValueError("rate and window must be ≥ 0")
    return math.exp(-rate_per_s * window_s)


def cold_in_p95(cold_fraction: float) -> bool:
    """True when more than 5% of requests are cold: the cold start then shows in the p95."""
    return cold_fraction > P95_COLD_THRESHOLD
