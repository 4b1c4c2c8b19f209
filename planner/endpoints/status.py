"""An endpoint's status in words, from what its workers reported (planner.store.worker.endpoint_statuses).

One rule for every page that shows it: a missing key or a disabled endpoint says so whatever a worker last reported;
otherwise each vantage's state ("ok @ eu-west"), or "not probed yet". A probe that keeps failing earns a warning
once FAILING_WARNING_AFTER probes in a row failed (`is_failing`): Endpoints, Probes and Compare all warn by it, with
the same sentence (`failing_warnings`), and Compare names such an endpoint's failure instead of asking for more
probing (`failing_by_endpoint`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.engine import Engine

from planner.endpoints.registry import key_status, list_endpoints
from planner.store.endpoints import EndpointRow
from planner.store.worker import EndpointState, endpoint_statuses

__all__ = [
    "DISABLED",
    "FAILING_WARNING_AFTER",
    "NOT_PROBED_YET",
    "at_vantage",
    "endpoint_state",
    "failing_by_endpoint",
    "failing_warnings",
    "is_failing",
]

#: Consecutive failed probes (endpoint_status.consecutive_failures) from which a failing endpoint is warned about:
#: one or two failures are a blip the next probe usually clears.
FAILING_WARNING_AFTER = 3
DISABLED = "disabled"
NOT_PROBED_YET = "not probed yet"

Report = Mapping[str, Any]  # one endpoint_status row: state, vantage, detail, consecutive_failures, …


def at_vantage(text: str, vantage: str | None) -> str:
    """`text` of one vantage: "ok @ eu-west"; the default vantage ('') adds nothing."""
    return f"{text} @ {vantage}" if vantage else text


def endpoint_state(ep: EndpointRow, reports: Sequence[Report]) -> str:
    """The endpoint's status: "key missing", "disabled", each reporting vantage's state, or "not probed yet"."""
    if key_status(ep).startswith(EndpointState.KEY_MISSING):
        return EndpointState.KEY_MISSING.value
    if not ep.enabled:
        return DISABLED
    return ", ".join(at_vantage(str(s["state"]), s["vantage"]) for s in reports) or NOT_PROBED_YET


def is_failing(report: Report) -> bool:
    """Whether one vantage's report warns of a failing endpoint: FAILING, FAILING_WARNING_AFTER or more in a row."""
    return report["state"] == EndpointState.FAILING and int(report["consecutive_failures"]) >= FAILING_WARNING_AFTER


def failing_warnings(ep: EndpointRow, reports: Sequence[Report], vantage: str | None = None) -> list[str]:
    """One sentence per vantage whose probes of `ep` failed FAILING_WARNING_AFTER or more times in a row (only
    `vantage`'s when given), e.g. "sim @ office: 5 failures in a row — refused: connection refused"."""
    return [
        f"{at_vantage(ep.name, s['vantage'])}: {s['consecutive_failures']} failures in a row — {s['detail']}"
        for s in reports
        if is_failing(s) and (vantage is None or s["vantage"] == vantage)
    ]


def failing_by_endpoint(engine: Engine, names: Sequence[str], vantage: str | None = None) -> dict[str, list[str]]:
    """The failing warnings (failing_warnings) of the endpoints named `names`, by name; an endpoint that is not
    failing (or not stored) is absent. `vantage`: only that vantage's reports (None: every vantage)."""
    statuses = endpoint_statuses(engine)
    wanted = set(names)
    out: dict[str, list[str]] = {}
    for ep in list_endpoints(engine):
        if ep.name in wanted and ep.id is not None:
            lines = failing_warnings(ep, statuses.get(ep.id, []), vantage)
            if lines:
                out[ep.name] = lines
    return out
