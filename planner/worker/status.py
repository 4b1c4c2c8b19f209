"""What the worker knows about each endpoint (state, detail, failures in a row), written to endpoint_status.

Changes are kept in memory and marked dirty; housekeeping writes the dirty ones through
planner.store.worker.upsert_statuses, and a failed write keeps them dirty for the next round.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from planner.store.probes import ProbeSampleRow
from planner.store.worker import EndpointState, upsert_statuses
from planner.worker.context import WorkerContext

__all__ = ["EndpointStatuses"]


class EndpointStatuses:
    """Endpoint id → its latest status for one vantage; `next_slot_ms(id)` supplies the schedule's next slot."""

    def __init__(
        self,
        ctx: WorkerContext,
        *,
        next_slot_ms: Callable[[int], int | None],
    ) -> None:
        engine, vantage, now_ms = ctx.engine, ctx.vantage, ctx.now_ms
        self.engine = engine
        self.vantage = vantage
        self.by_endpoint: dict[int, dict[str, Any]] = {}
        self._dirty: set[int] = set()
        self._now_ms = now_ms
        self._next_slot_ms = next_slot_ms

    def detail(self, endpoint_id: int) -> str | None:
        """The endpoint's current status detail (None when all is well)."""
        return self.by_endpoint.get(endpoint_id, {}).get("detail")

    def set(self, endpoint_id: int, state: EndpointState, detail: str | None, **extra: Any) -> None:
        """Record a new state (with a detail cut by the caller) and mark it for the next write."""
        st = self.by_endpoint.setdefault(endpoint_id, {"consecutive_failures": 0})
        st.update(state=EndpointState(state), detail=detail, **extra)
        self._dirty.add(endpoint_id)

    def after_probe(self, endpoint_id: int, row: ProbeSampleRow) -> None:
        """ok, or failing with one more failure in a row, from a probe's stored row."""
        fails = 0 if row.ok else self.by_endpoint.get(endpoint_id, {}).get("consecutive_failures", 0) + 1
        if row.ok:
            self.set(endpoint_id, EndpointState.OK, None, consecutive_failures=0, last_probe_at_ms=row.started_at_ms)
        else:
            self.set(
                endpoint_id,
                EndpointState.FAILING,
                f"{row.error_class}: {row.error_detail or ''}"[:500],
                consecutive_failures=fails,
                last_probe_at_ms=row.started_at_ms,
            )

    async def write(self) -> None:
        """Store the changed statuses; raises the database's error (they stay marked for the next write)."""
        if not self._dirty:
            return
        dirty, self._dirty = self._dirty, set()
        payload = {i: dict(self.by_endpoint[i], next_slot_at_ms=self._next_slot_ms(i)) for i in dirty}
        try:
            await asyncio.to_thread(upsert_statuses, self.engine, self.vantage, payload, self._now_ms())
        except (SQLAlchemyError, OSError):
            self._dirty |= dirty
            raise
