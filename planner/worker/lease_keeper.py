"""The vantage lease of one worker: take it, renew it, release it, and say whose slots are whose.

One worker per vantage probes (planner.store.leases holds the lease row). The LeaseKeeper takes or renews the lease
(housekeeping calls it every third of the lease's TTL) and tells the worker when it gains the lease (load the
schedule) or loses it (stand by). Taking over from a worker that never released its lease (it was killed), it works
out until when that worker was alive, so its last slots are labelled lost in a crash rather than "not running".
After the worker sat still for longer than a renewal period (SIGSTOP, a suspended VM) it re-checks the lease before
anything is stored: the slots after the lease was last confirmed may belong to the worker that took over.

Time is the worker's injected clock (`now_ms`), never the system's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from planner.store import leases
from planner.worker.context import WorkerContext

__all__ = ["LeaseKeeper"]

log = logging.getLogger("planner.worker")


class LeaseKeeper:
    """The lease of `vantage` for `holder`. `on_gained` (awaited) runs when the lease becomes ours, `on_lost` when
    another worker has it; `probes_run()` says whether this worker has probed yet (only for the log)."""

    def __init__(
        self,
        ctx: WorkerContext,
        *,
        ttl_s: float,
        on_gained: Callable[[], Awaitable[None]],
        on_lost: Callable[[], None],
        probes_run: Callable[[], int] = lambda: 0,
    ) -> None:
        engine, vantage, holder, now_ms = ctx.engine, ctx.vantage, ctx.holder, ctx.now_ms
        self.engine = engine
        self.vantage = vantage
        self.holder = holder
        self.ttl_s = ttl_s
        self.now_ms = now_ms
        self._on_gained = on_gained
        self._on_lost = on_lost
        self._probes_run = probes_run
        self.holds = False
        self.checked_ms = 0  # when the lease was last confirmed ours (clock ms)
        self.woke_from_pause = False  # the worker sat still past a renewal period; cleared by a renewal
        self.crashed_until_ms: int | None = None  # a killed predecessor's slots up to here were lost in its crash

    async def renew(self) -> None:
        """Take or renew the lease; on taking it, call on_gained; on losing it, on_lost. Raises database errors."""
        prev = None
        if not self.holds:
            prev = next(
                (r for r in await asyncio.to_thread(leases.current, self.engine) if r["vantage"] == self.vantage),
                None,
            )
        got = await asyncio.to_thread(leases.acquire, self.engine, self.vantage, self.holder, self.now_ms(), self.ttl_s)
        if got and prev is not None and prev["holder"] != self.holder and prev["expires_at_ms"] != 0:
            # The previous holder never released its lease: it was killed. What it probed in its last moments
            # never reached the database; those slots are labelled as lost in a crash, not "not running".
            self.crashed_until_ms = self._alive_until_ms(prev) + int(self.ttl_s * 1000 / 3)
            log.warning(
                "the previous worker of vantage %r (%s) did not stop cleanly; its last slots are "
                "labelled lost in a crash",
                self.vantage,
                prev["holder"],
            )
        if got:
            self.checked_ms = self.now_ms()
            self.woke_from_pause = False
        if got and not self.holds:
            log.info("holding the lease of vantage %r: probing", self.vantage)
            self.holds = True
            await self._on_gained()
        elif not got and self.holds:
            log.warning("lost the lease of vantage %r to another worker: standing by", self.vantage)
            self.holds = False
            self._on_lost()
        elif not got and not self._probes_run():
            log.debug("vantage %r is held by another worker: standing by", self.vantage)

    def _alive_until_ms(self, prev: dict[str, Any]) -> int:
        """When the killed holder `prev` was last known alive: its last renewal, or its state file's last write."""
        from planner.store import worker_state as state

        last = state.read_state(self.engine, self.vantage) or {}
        return max(
            int(prev["renewed_at_ms"]),
            int(last.get("updated_at_ms") or 0) if last.get("holder") == prev["holder"] else 0,
        )

    async def recheck_after_pause(self) -> None:
        """The worker sat still past a renewal period: mark it and re-check the lease now (a database error leaves
        the mark for the next flush, which re-checks before storing)."""
        self.woke_from_pause = True
        with contextlib.suppress(SQLAlchemyError, OSError):
            await self.renew()

    async def lost_while_paused(self) -> int | None:
        """After a pause, while we believe we hold the lease: re-check it. Returns the clock ms until which it was
        last confirmed ours when it turns out lost (the slots after that belong to the new holder), else None."""
        if not (self.holds and self.woke_from_pause):
            return None
        confirmed_ms = self.checked_ms
        with contextlib.suppress(SQLAlchemyError, OSError):
            await self.renew()
        return None if self.holds else confirmed_ms

    async def release(self, timeout_s: float) -> None:
        """Give the lease back at stop (bounded by timeout_s; a failure leaves it to expire). Never raises."""
        if not self.holds:
            return
        with contextlib.suppress(Exception):
            await asyncio.wait_for(
                asyncio.to_thread(leases.release, self.engine, self.vantage, self.holder), timeout=timeout_s
            )
        self.holds = False
