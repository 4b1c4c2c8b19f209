"""The worker's counters (WorkerStats): probes run, slots skipped (by cause), rows stored, spooled and dropped,
lateness."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from planner.endpoints.samples import SkipCause

__all__ = ["WorkerStats", "by_cause"]


@dataclass
class WorkerStats:
    """Counters and schedule lateness (ms) for benchmarks and the log."""

    runs: int = 0
    skipped: int = 0
    stored: int = 0  # rows the store took: neither rows sent again after a failed flush nor slots it already held
    failed_flushes: int = 0
    spooled: int = 0
    dropped: int = 0  # rows lost unsaved: past the held-rows bound, or refused by the spool at stop
    lateness_ms: list[float] = field(default_factory=list)
    skip_causes: Counter[SkipCause] = field(default_factory=Counter)


def by_cause(causes: Counter[SkipCause]) -> str:
    """' (in_flight 3, late 1)' for the stop line, most frequent first; '' when nothing was skipped."""
    if not causes:
        return ""
    return " (" + ", ".join(f"{cause.value} {n}" for cause, n in causes.most_common()) + ")"
