"""A clock that moves only when the test moves it, for the worker's SteadyClock seam (planner.worker.scheduler).

The worker reads every decision off its clock (slots, lateness, housekeeping periods, the lease), so a worker on a
FakeClock fires exactly the slots the test moves it to, on any machine, however loaded.
"""

from __future__ import annotations

import time

from planner.worker.scheduler import SteadyClock

__all__ = ["FakeClock"]


class FakeClock:
    """Whole epoch ms that change only through `advance` / `advance_to`.

    The monotonic and the wall clock read the same count, so the SteadyClock built on them (`steady()`) never sees a
    jump and reads exactly `ms`. It starts at now, rounded down to the second, so stored rows look recent (retention
    and the dashboard's windows treat them as today's).
    """

    def __init__(self, start_ms: int | None = None) -> None:
        self.ms = start_ms if start_ms is not None else int(time.time()) * 1000

    def seconds(self) -> float:
        """The clock in seconds (both SteadyClock sources)."""
        return self.ms / 1000

    def steady(self) -> SteadyClock:
        """A worker's clock on this one: `Worker(engine, config, clock=fake.steady())`."""
        return SteadyClock(mono=self.seconds, wall=self.seconds)

    def advance(self, ms: int) -> None:
        """Move forward by `ms` (≥ 0)."""
        self.advance_to(self.ms + ms)

    def advance_to(self, ms: int) -> None:
        """Move forward to epoch ms `ms`; a clock never runs backwards (ValueError)."""
        if ms < self.ms:
            raise ValueError(f"a clock never runs backwards: {ms} < {self.ms}")
        self.ms = ms
