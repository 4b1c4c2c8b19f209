"""When a cold reading idles, and whether an endpoint keeps itself warm: the rules the dashboard, the CLI and the
worker share (the worker's state machine is planner.worker.cold; the request is planner.store.requests.create_request).
"""

from __future__ import annotations

from planner.errors import PlannerError

__all__ = [
    "IDLE_MARGIN_S",
    "IDLE_WITHOUT_WINDOW_S",
    "ColdReadingError",
    "idle_seconds_for",
    "keeps_itself_warm",
    "suggested_idle_s",
]

IDLE_MARGIN_S = 30.0
IDLE_WITHOUT_WINDOW_S = 60.0  # what a form suggests for an endpoint with no scale-down window


class ColdReadingError(PlannerError, ValueError):
    """A cold reading cannot be planned (e.g. neither --idle nor a scale-down window)."""


def idle_seconds_for(scale_down_window_s: float | None, idle_s: float | None = None) -> float:
    """How long to idle before the cold probe: `idle_s` if given, else the window + max(30 s, 10 %).

    Raises ColdReadingError when neither is known or idle_s is negative.
    """
    if idle_s is not None:
        if idle_s < 0:
            raise ColdReadingError(f"idle time must be ≥ 0 s, got {idle_s:g}")
        return float(idle_s)
    if scale_down_window_s is None:
        raise ColdReadingError(
            "the endpoint has no scale-down window: give an idle time (--idle-s S) or set scale_down_window_s"
        )
    return float(scale_down_window_s) + max(IDLE_MARGIN_S, 0.1 * scale_down_window_s)


def keeps_itself_warm(interval_s: float, scale_down_window_s: float | None) -> bool:
    """True when probes every interval_s keep a replica with this scale-down window warm (no cold start is ever
    seen)."""
    return scale_down_window_s is not None and interval_s < scale_down_window_s


def suggested_idle_s(scale_down_window_s: float | None) -> float:
    """The idle time a form starts from: idle_seconds_for the window, or IDLE_WITHOUT_WINDOW_S without one."""
    return idle_seconds_for(scale_down_window_s) if scale_down_window_s else IDLE_WITHOUT_WINDOW_S
