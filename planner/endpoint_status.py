"""An endpoint's status in words, from what its workers reported (planner.store.worker.endpoint_statuses).

One rule for every page that shows it: a missing key or a disabled endpoint says so whatever a worker last reported;
otherwise each vantage's state ("ok @ eu-west"), or "not probed yet". A probe that keeps failing earns a warning
once FAILING_WARNING_AFTER probes in a row failed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from planner.endpoints import key_status
from planner.store.endpoints import EndpointRow
from planner.store.worker import EndpointState

__all__ = [
    "DISABLED",
    "FAILING_WARNING_AFTER",
    "NOT_PROBED_YET",
    "at_vantage",
    "endpoint_state",
    "failing_warnings",
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


def failing_warnings(ep: EndpointRow, reports: Sequence[Report]) -> list[str]:
    """One sentence per vantage whose probes of `ep` failed FAILING_WARNING_AFTER or more times in a row."""
    return [
        f"{at_vantage(ep.name, s['vantage'])}: {s['consecutive_failures']} failures in a row — {s['detail']}"
        for s in reports
        if s["state"] == EndpointState.FAILING and s["consecutive_failures"] >= FAILING_WARNING_AFTER
    ]
