"""One RTT measurement as the probes produce it (server probe, browser component), before the store keeps it.

planner.store.rtt.insert_rtt_samples stores these; the probes never import the store.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SampleRecord"]


@dataclass(frozen=True)
class SampleRecord:
    """A sample before it is stored (what probes and the browser component produce)."""

    region_id: str
    target: str
    side: str
    method: str
    rtt_ms: float | None
    measured_at_ms: int
    vantage: str = ""
    run_id: str = ""
    error_class: str | None = None
    error_detail: str | None = None
    remote_ip: str | None = None
    proxy: str | None = None
