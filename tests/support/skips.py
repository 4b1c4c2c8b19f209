"""Skipped slots a busy or suspended worker records on its own.

On a loaded machine a 0.3 s slot can come round while the previous probe's end is still being handled, or the loop
can wake late. The worker then stores the slot as skipped with its cause; that is an honest label, not a failure.
Tests of real worker processes (real clocks) that check other skips (a crash, a pause) set these apart instead of
assuming an idle machine. In-process tests on a clock the test moves (tests/support/worker_driver.py) never see them
unless the test lets a probe run past the next slot."""

from __future__ import annotations

from planner.endpoints.samples import SkipCause

OVERLOAD = (SkipCause.IN_FLIGHT, SkipCause.LATE, SkipCause.PASSED_OVER)


def overload_skip(row: dict) -> bool:
    """True for a stored probe_sample row that a busy or suspended worker skipped (see OVERLOAD)."""
    return row["kind"] == "skipped" and row["skip_cause"] in OVERLOAD
