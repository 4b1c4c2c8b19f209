"""The alerts' vocabulary: what a rule watches (AlertKind), the state of a series (AlertState), the transitions that
notify (Transition), a Rule and a series' stored SeriesStatus. Pure data, no I/O.

It sits below both of its users: planner.store.alerts stores and reads these values, planner.alerts.rules steps the
state machine over them (and re-exports every name here, so `from planner.alerts.rules import Rule` keeps working).
The store never imports planner.alerts.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["PRODUCTION_VANTAGE", "UNITS", "AlertKind", "AlertState", "Rule", "SeriesStatus", "Transition"]


class AlertKind(StrEnum):
    """What a rule measures; the threshold's unit follows from it (see `Rule.unit`)."""

    P95_OVER = "p95_over"  # rolling p95 TTFT over the window, ms
    ERROR_RATE_OVER = "error_rate_over"  # failed / attempts over the window, a fraction 0..1
    NO_SUCCESS = "no_success"  # minutes since the last successful sample
    COLD_OVER = "cold_over"  # the newest cold reading's cold TTFT in the window, s
    # p95 TTFT of the production requests a live source read that went to the endpoint (planner.sources.by_endpoint)
    PRODUCTION_P95_OVER = "production_p95_over"  # ms

    @property
    def production(self) -> bool:
        """Watches the team's own requests (read by a live source), not the probes; its series' vantage is
        PRODUCTION_VANTAGE."""
        return self is AlertKind.PRODUCTION_P95_OVER


class AlertState(StrEnum):
    OK = "ok"
    PENDING = "pending"
    FIRING = "firing"


class Transition(StrEnum):
    """A change that notifies someone."""

    FIRING = "firing"
    RESOLVED = "resolved"


UNITS = {
    AlertKind.P95_OVER: "ms",
    AlertKind.ERROR_RATE_OVER: "",
    AlertKind.NO_SUCCESS: "min",
    AlertKind.COLD_OVER: "s",
    AlertKind.PRODUCTION_P95_OVER: "ms",
}

#: The vantage of a production rule's series, stored beside the probe series (rule, endpoint, vantage): production
#: requests are seen from no probe vantage. Rules of the probe kinds never make a series with it, and a rule's series
#: are its own, so a probe vantage that happens to carry this label is never confused with it.
PRODUCTION_VANTAGE = "production"


@dataclass(frozen=True)
class Rule:
    """One alert rule. `endpoint_id` None watches every endpoint; thresholds are in `unit`."""

    name: str
    kind: AlertKind
    threshold: float
    window_s: float = 900.0
    for_s: float = 300.0
    min_n: int = 20
    clear_margin: float = 0.10
    endpoint_id: int | None = None
    interaction: str = ""  # the interaction type whose target set the threshold (shown in messages)
    webhook_env: str = ""  # NAME of the variable holding the webhook URL (the URL carries a token: never stored)
    webhook_format: str = "json"  # json | slack | teams
    email_to: str = ""  # comma-separated addresses
    id: int | None = None

    @property
    def unit(self) -> str:
        return UNITS[self.kind]

    @property
    def clear_below(self) -> float:
        """The value a firing series must come back under to resolve."""
        return self.threshold * (1.0 - self.clear_margin)


@dataclass(frozen=True)
class SeriesStatus:
    """The state of one (rule, endpoint, vantage) series, as stored between evaluations."""

    state: AlertState = AlertState.OK
    since_ms: int | None = None  # when the current state began
    value: float | None = None  # the last value seen
    n: int = 0
