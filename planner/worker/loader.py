"""The worker's schedule loader: the enabled endpoints and RTT targets of one vantage, read into the schedule.

Each reload reads the endpoint list (planner.endpoints.registry) and the scheduled RTT targets (planner.store.rtt) on a
thread, validates each again (a row an older version stored may no longer be valid: it is reported, never
scheduled), adds or re-times its job in the Scheduler and removes the jobs of what is gone. The first load after
taking the lease resumes each endpoint after its newest stored slot (planner.store.worker.last_slots), so the slots
nobody probed meanwhile become skipped rows.

Time is the worker's injected clock (`now_ms`), never the system's.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from planner.endpoints.registry import endpoint_problem, list_endpoints
from planner.regions.catalog import RTT_INTERVAL_BOUNDS_S
from planner.store.endpoints import EndpointRow
from planner.store.rtt import RttTargetRow, scheduled_rtt_targets
from planner.store.worker import EndpointState, last_slots
from planner.worker.context import WorkerContext
from planner.worker.scheduler import Scheduler
from planner.worker.status import EndpointStatuses

__all__ = ["ScheduleLoader", "endpoint_key", "rtt_key"]

log = logging.getLogger("planner.worker")


def endpoint_key(endpoint_id: int) -> str:
    """The schedule's job key of an endpoint."""
    return f"endpoint:{endpoint_id}"


def rtt_key(target_id: int | None) -> str:
    """The schedule's job key of an RTT target."""
    return f"rtt:{target_id}"


class ScheduleLoader:
    """Keeps `scheduler`'s jobs equal to the enabled endpoints and RTT targets of `vantage`; `endpoints` holds the
    endpoint rows it scheduled, by id. `is_paused(id)`: a cold reading idles that endpoint (its job stays paused);
    `wake()` tells the schedule loop to look again."""

    def __init__(
        self,
        ctx: WorkerContext,
        *,
        scheduler: Scheduler,
        statuses: EndpointStatuses,
        is_paused: Callable[[int], bool],
        wake: Callable[[], None],
    ) -> None:
        engine, vantage, now_ms = ctx.engine, ctx.vantage, ctx.now_ms
        self.engine = engine
        self.vantage = vantage
        self.scheduler = scheduler
        self.statuses = statuses
        self.now_ms = now_ms
        self._is_paused = is_paused
        self._wake = wake
        self.endpoints: dict[int, EndpointRow] = {}
        self._bad_rtt: set[str] = set()  # RTT targets already reported as not probed

    def _load(self, initial: bool) -> tuple[list[EndpointRow], dict[int, int], list[RttTargetRow]]:
        eps = list_endpoints(self.engine, enabled_only=True, vantage=self.vantage)
        last = last_slots(self.engine, self.vantage) if initial and eps else {}
        return eps, last, list(scheduled_rtt_targets(self.engine, self.vantage))

    async def reload(self, initial: bool = False, crashed_until_ms: int | None = None) -> None:
        """Re-read the enabled endpoints and RTT targets into the schedule (`initial`: resume each endpoint after its
        last stored slot; `crashed_until_ms`: slots up to then were lost in a killed predecessor's crash)."""
        eps, last, rtt_targets = await asyncio.to_thread(self._load, initial)
        now = self.now_ms()
        keep: set[str] = set()
        for ep in eps:
            assert ep.id is not None  # a stored endpoint has its id
            key = endpoint_key(ep.id)
            problem = endpoint_problem(ep)
            if problem is not None:  # e.g. a row an older version stored: report it, never schedule it
                if self.statuses.detail(ep.id) != f"not probed: {problem}":
                    log.error("endpoint %s is not probed: %s", ep.name, problem)
                    self.statuses.set(ep.id, EndpointState.ERROR, f"not probed: {problem}"[:500])
                continue
            keep.add(key)
            self.endpoints[ep.id] = ep
            job = self.scheduler.add(
                key,
                int(round(ep.interval_s * 1000)),
                now,
                payload=ep,
                last_slot_ms=last.get(ep.id) if initial else None,
                crashed_until_ms=crashed_until_ms if initial else None,
            )
            if self._is_paused(ep.id):
                job.paused = True
            if ep.id not in self.statuses.by_endpoint:
                self.statuses.set(ep.id, EndpointState.OK, None)
        for t in rtt_targets:
            key = rtt_key(t.id)
            interval_s = float(t.interval_s)
            if not 0 < interval_s <= RTT_INTERVAL_BOUNDS_S[1]:  # inf / NaN / huge from an older row: never scheduled
                if key not in self._bad_rtt:
                    log.error(
                        "RTT target %s is not probed: its interval %r s is not a finite number of seconds up to %g",
                        t.region_id,
                        t.interval_s,
                        RTT_INTERVAL_BOUNDS_S[1],
                    )
                    self._bad_rtt.add(key)
                continue
            keep.add(key)
            self.scheduler.add(key, int(round(interval_s * 1000)), now, payload=t)
        for key in list(self.scheduler.jobs):
            if key not in keep:
                self.scheduler.remove(key)
        self._wake()
