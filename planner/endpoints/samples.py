"""What counts as "a sample": one definition, used by the Probes page, Compare, the report and the CLI.

A sample is one successful probe with a time to first token, of kind
`scheduled` (the worker's schedule) or `manual` ("Probe now", `ttft-planner probe
--store`), that is not a deliberately cached series. Cold-reading probes
(kinds `cold` and `warm`) are shown apart as cold readings; skipped schedule
slots are neither successes nor failures. A failed probe of a sample kind is
an attempt: it counts in the error rate, never in the percentiles. A skipped
row's cause is data (SkipCause, in the skip_cause column); its error_detail
says the same in words for people.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["ATTEMPT_SQL", "DEFINITION", "MEASURED_KINDS", "SAMPLE_SQL", "SampleKind", "SkipCause", "is_sample"]


class SampleKind(StrEnum):
    """What a probe_sample row records (the stored value is the member's value)."""

    SCHEDULED = "scheduled"  # the worker's regular probe
    MANUAL = "manual"  # `probe --store` or "Probe now"
    COLD = "cold"  # the first half of a cold reading
    WARM = "warm"  # its second half, right after
    SKIPPED = "skipped"  # a slot the worker could not run (skip_cause says why; error_detail in words)


class SkipCause(StrEnum):
    """Why the worker skipped a slot: the stored value of probe_sample.skip_cause (the member's value, as the worker's
    stop line counts it). A skipped row's error_detail starts with its cause's `text`; only LATE's and a long gap's
    first row add particulars after it."""

    IN_FLIGHT = "in_flight"
    PAUSED = "paused"
    LATE = "late"  # the loop woke more than half an interval after the firing time
    PASSED_OVER = "passed_over"
    NOT_RUNNING = "not_running"
    #: Slots a killed worker had probed (or was due to) but never stored.
    CRASHED = "crashed"

    @property
    def text(self) -> str:
        """The cause in words, as a skipped row's error_detail starts (migration 0011 reads stored rows by it)."""
        return _SKIP_TEXT[self]


_SKIP_TEXT: dict[SkipCause, str] = {
    SkipCause.IN_FLIGHT: "previous probe still running",
    SkipCause.PAUSED: "paused for a cold reading",
    SkipCause.LATE: "late by",
    SkipCause.PASSED_OVER: "missed: the worker was suspended or overloaded",
    SkipCause.NOT_RUNNING: "missed: the worker was not running",
    SkipCause.CRASHED: "lost in a crash: the previous worker was killed before storing this slot",
}


MEASURED_KINDS: tuple[SampleKind, ...] = (SampleKind.SCHEDULED, SampleKind.MANUAL)

DEFINITION = (
    "A sample is one successful scheduled or manual (“Probe now”) probe with a time to first token; "
    "cold-reading probes are shown apart, skipped slots and deliberately cached series never count, "
    "and failed probes count only in the error rate."
)

_KINDS_SQL = ", ".join(f"'{k.value}'" for k in MEASURED_KINDS)
#: SQL predicate over probe_sample rows: the row is a sample (enters the percentiles and n).
SAMPLE_SQL = f"(ok AND ttft_ms IS NOT NULL AND kind IN ({_KINDS_SQL}) AND NOT cached_series)"
#: SQL predicate: the row is an attempt of a sample kind (a sample or a failure; enters the error rate).
ATTEMPT_SQL = f"(kind IN ({_KINDS_SQL}) AND NOT cached_series)"


def is_sample(*, ok: bool, ttft_ms: float | None, kind: str, cached_series: bool) -> bool:
    """SAMPLE_SQL for one row in Python (the worker's /metrics counts exactly what the pages count)."""
    return bool(ok) and ttft_ms is not None and kind in MEASURED_KINDS and not cached_series
