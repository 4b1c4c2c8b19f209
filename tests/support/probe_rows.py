"""probe_sample rows for the tests that seed a series slot by slot (stored with store.probes.insert_samples)."""

from __future__ import annotations

from typing import Any

from planner.store.probes import ProbeSampleRow

__all__ = ["slot_row"]


def slot_row(
    endpoint_id: int,
    t_ms: int,
    ttft_ms: float | None = None,
    *,
    kind: str = "scheduled",
    vantage: str = "",
    **columns: Any,
) -> ProbeSampleRow:
    """The outcome of the slot at t_ms (scheduled and started then): a success with ttft_ms; without one a failed
    probe (server_error), or with kind="skipped" a skipped slot. `columns` sets any other column (timings, …)."""
    failed = ttft_ms is None and kind != "skipped"
    return ProbeSampleRow(
        endpoint_id=endpoint_id,
        vantage=vantage,
        kind=kind,
        scheduled_at_ms=t_ms,
        started_at_ms=t_ms,
        ok=ttft_ms is not None,
        ttft_ms=ttft_ms,
        error_class="server_error" if failed else None,
        **columns,
    )
