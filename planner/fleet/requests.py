"""What a page asks of the worker: a probe now, a cold reading, a server-side RTT measurement. The page never probes
itself; it queues a request the worker of its vantage claims (planner.worker.requests) and shows its progress.

The tables and their SQL are planner.store.requests'. Raises planner.endpoints.cold_policy.ColdReadingError for a cold
reading without an idle time it can use, and the store's errors.
"""

from __future__ import annotations

from sqlalchemy.engine import Engine

from planner.endpoints.cold_policy import idle_seconds_for
from planner.store.requests import (
    RequestKind,
    RequestStatus,
    abandon_rtt_request,
    create_request,
    create_rtt_request,
    get_rtt_request,
    rtt_request_targets,
)

__all__ = [
    "RequestKind",
    "RequestStatus",
    "abandon_rtt_request",
    "create_rtt_request",
    "get_rtt_request",
    "request_cold_reading",
    "request_probe_now",
    "rtt_request_targets",
]


def request_probe_now(engine: Engine, endpoint_id: int, vantage: str) -> int:
    """Queue one probe of the endpoint now for the worker of `vantage`; returns the request's id."""
    return create_request(engine, endpoint_id, RequestKind.PROBE_NOW, vantage=vantage)


def request_cold_reading(
    engine: Engine, endpoint_id: int, vantage: str, *, scale_down_window_s: float | None, idle_s: float | None
) -> tuple[int, float]:
    """Queue a cold reading (the Probes page's button, `worker cold-reading`): the worker pauses the endpoint, idles,
    then probes cold and warm. The idle time is planner.endpoints.cold_policy.idle_seconds_for's (`idle_s` s, or past
    the scale-down window when None). Returns (the request's id, the idle time in s); raises ColdReadingError for a
    negative idle time, or none and no scale-down window."""
    idle = idle_seconds_for(scale_down_window_s, idle_s)
    return create_request(engine, endpoint_id, RequestKind.COLD_READING, vantage=vantage, idle_s=idle), idle
