"""What every collaborator of one worker shares: the store, the vantage it probes from, its lease holder id and its
clock (planner.worker.runner builds one WorkerContext and hands it to each collaborator, beside the few collaborators
that one uses)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy.engine import Engine

from planner.worker.scheduler import SteadyClock

__all__ = ["WorkerContext"]


@dataclass(frozen=True)
class WorkerContext:
    """engine: the store; vantage: where this worker probes from ("" for the default); holder: this process's lease
    holder id (planner.store.leases.holder_id); clock: the one clock every decision reads (a test injects it)."""

    engine: Engine
    vantage: str
    holder: str
    clock: SteadyClock

    @property
    def now_ms(self) -> Callable[[], int]:
        """Wall time, UTC epoch ms, of the injected clock."""
        return self.clock.now_ms

    @property
    def mono_s(self) -> Callable[[], float]:
        """Monotonic seconds of the injected clock (periods and deadlines)."""
        return self.clock.mono_s
