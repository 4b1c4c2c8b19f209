"""The worker's prober: one probe of one endpoint for one slot, ending as one ProbeSampleRow in the buffer.

A probe runs in a probe process (planner.worker.probe_pool: a clean lane, or the quarantine lane for an endpoint
whose last probe failed reading junk), or in the worker's own loop when there are no probe processes or a test
injects `probe`. Its TtftSample becomes a row through planner.store.probes.sample_row; a probe that outlives its
slot, or a bug in one, still ends as a row (a read timeout, an internal error), so every slot is accounted for.
A missing API key is no row: the endpoint's status says so.

Skips of a job decided while its probe runs are held here (`hold_skip`) and buffered after the probe's own row,
never before it: a restart resumes after the newest stored slot, so a skip stored first would leave the running
slot unrecorded if the worker were killed in between.

Timestamps are the worker's injected clock (`now_ms`); real time is left to the measurement (planner.probes.ttft)
and its bounds (the probe's timeout).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Protocol

from planner.endpoints.samples import SampleKind, SkipCause
from planner.probes.errors import ErrorClass, MissingApiKey
from planner.probes.ttft import ProbeTarget, TtftSample, probe_once, resolve_api_key
from planner.probes.warmup import warm_up
from planner.store.endpoints import EndpointRow
from planner.store.probes import ProbeSampleRow, sample_row
from planner.store.worker import EndpointState
from planner.worker.buffer import RowBuffer
from planner.worker.context import WorkerContext
from planner.worker.scheduler import Scheduler
from planner.worker.status import EndpointStatuses

if TYPE_CHECKING:
    from planner.worker.probe_pool import ProbePool

__all__ = ["ProbeFn", "Prober", "skip_row", "target_for"]

log = logging.getLogger("planner.worker")


class ProbeFn(Protocol):
    """A probe (planner.probes.ttft.probe_once's shape): one TtftSample for `target`."""

    def __call__(
        self, target: ProbeTarget, *, api_key: str | None, max_attempts: int, max_retry_wait_s: float
    ) -> Awaitable[TtftSample]: ...


def target_for(ep: EndpointRow) -> ProbeTarget:
    """What to probe for endpoint `ep` (its timeout kept within 90 % of its interval)."""
    timeout = min(ep.timeout_s, ep.interval_s * 0.9)
    return ProbeTarget(
        base_url=ep.base_url,
        model=ep.model,
        protocol=ep.protocol,
        api_key_env=ep.api_key_env,
        prompt_tokens=ep.prompt_tokens,
        max_tokens=ep.max_tokens,
        timeout_s=timeout,
        keep_alive=ep.connection_policy == "keep-alive",
    )


def skip_row(
    endpoint_id: int, vantage: str, slot_ms: int, now_ms: int, reason: str, cause: SkipCause | None
) -> ProbeSampleRow:
    """The row of a skipped slot: its cause as data (skip_cause) and in words (error_detail, cut to the column's 500
    characters)."""
    return ProbeSampleRow(
        endpoint_id=endpoint_id,
        vantage=vantage,
        kind=SampleKind.SKIPPED.value,
        scheduled_at_ms=slot_ms,
        started_at_ms=now_ms,
        ok=False,
        error_class=ErrorClass.SKIPPED.value,
        error_detail=reason[:500],
        skip_cause=None if cause is None else cause.value,
    )


class Prober:
    """Probes endpoints for `vantage` and buffers their rows. `probe` defaults to probe processes
    (`probe_processes` clean lanes plus the quarantine; 0: planner.probes.ttft.probe_once in this loop)."""

    def __init__(
        self,
        ctx: WorkerContext,
        *,
        probe: ProbeFn | None,
        probe_processes: int,
        probe_attempts: int,
        buffer: RowBuffer,
        statuses: EndpointStatuses,
        scheduler: Scheduler,
    ) -> None:
        vantage, now_ms = ctx.vantage, ctx.now_ms
        self.vantage = vantage
        self._probe = probe
        self._probe_processes = probe_processes
        self._probe_attempts = probe_attempts
        self.now_ms = now_ms
        self.buffer = buffer
        self.statuses = statuses
        self.scheduler = scheduler
        self.pool: ProbePool | None = None
        self.last_error: dict[int, str | None] = {}  # the last probe's error class: picks its probe lane
        self.last_probe_end_ms: dict[int, int] = {}
        self._after_probe: dict[str, list[ProbeSampleRow]] = {}  # job key → skips while its probe runs

    async def start(self) -> None:
        """Start the probe processes (or, probing in this loop, warm it up). Never raises: a pool that cannot
        start means probing in the worker's own loop (worse isolation, not no probing)."""
        if self._probe is None and self._probe_processes > 0:
            from planner.worker.probe_pool import ProbePool

            pool = ProbePool(self._probe_processes)
            try:
                await pool.start()
                self.pool = pool
            except Exception as exc:  # noqa: BLE001 - probing in-process is worse isolation, not no probing
                log.error("cannot start probe processes (%s): probing in the worker's own loop", exc)
                await pool.close()
        if self._probe is None and self.pool is None:  # probes in this loop: the first sample must not pay for
            await warm_up()  # lazy imports, the CA bundle and the resolver thread, nor stall the schedule (issue 14)

    async def close(self) -> None:
        """Stop the probe processes."""
        if self.pool is not None:
            await self.pool.close()

    def hold_skip(self, job_key: str, row: ProbeSampleRow) -> None:
        """Buffer `row` (a skip of `job_key`'s slot) once the job's running probe has buffered its own row."""
        self._after_probe.setdefault(job_key, []).append(row)

    async def probe_sample(
        self, ep: EndpointRow, *, attempts: int | None = None, timeout_s: float | None = None
    ) -> TtftSample | None:
        """One TtftSample for `ep`, or None (status set) when its API key is missing."""
        assert ep.id is not None  # a stored endpoint has its id
        target = target_for(ep)
        if timeout_s is not None:
            target = dataclasses.replace(target, timeout_s=timeout_s)
        try:
            api_key = resolve_api_key(target)
        except MissingApiKey as exc:
            self.statuses.set(ep.id, EndpointState.KEY_MISSING, str(exc))
            return None
        n = self._probe_attempts if attempts is None else attempts
        wait_s = max(0.0, min(5.0, ep.interval_s * 0.2))
        if self._probe is None and self.pool is not None:
            lane = self.pool.lane_for(ep.id, self.last_error.get(ep.id))
            return await self.pool.probe(target, api_key=api_key, max_attempts=n, max_retry_wait_s=wait_s, lane=lane)
        probe: ProbeFn = self._probe or probe_once
        return await probe(target, api_key=api_key, max_attempts=n, max_retry_wait_s=wait_s)

    async def probe_endpoint(
        self, ep: EndpointRow, slot_ms: int, kind: SampleKind, job_key: str | None
    ) -> ProbeSampleRow | None:
        """Probe `ep` for one slot and buffer its row; returns that row, or None when it was not probed
        (its API key is missing: the endpoint's status says so). Never raises."""
        assert ep.id is not None  # a stored endpoint has its id
        try:
            now = self.now_ms()
            gap = None
            if ep.id in self.last_probe_end_ms:
                gap = float(now - self.last_probe_end_ms[ep.id])
            try:
                # Belt and braces: a probe never outlives its interval, whatever its retries do.
                sample = await asyncio.wait_for(self.probe_sample(ep), timeout=max(ep.interval_s * 0.95, ep.timeout_s))
            except TimeoutError:
                row = ProbeSampleRow(
                    endpoint_id=ep.id,
                    vantage=self.vantage,
                    kind=kind.value,
                    scheduled_at_ms=slot_ms,
                    started_at_ms=now,
                    ok=False,
                    error_class=ErrorClass.READ_TIMEOUT.value,
                    idle_gap_ms=gap,
                    error_detail=f"probe exceeded its slot deadline ({ep.interval_s:g} s)",
                )
            else:
                if sample is None:
                    return None
                row = sample_row(sample, ep.id, self.vantage, kind, slot_ms, idle_gap_ms=gap)
            self.buffer.add([row])
            self.last_error[ep.id] = None if row.ok else row.error_class
            self.statuses.after_probe(ep.id, row)
            return row
        except Exception as exc:  # a bug in a probe must not kill the worker or stop the other endpoints
            log.exception("probe of endpoint %s failed unexpectedly", ep.name)
            row = ProbeSampleRow(
                endpoint_id=ep.id,
                vantage=self.vantage,
                kind=kind.value,
                scheduled_at_ms=slot_ms,
                started_at_ms=self.now_ms(),
                ok=False,
                error_class=ErrorClass.HTTP_ERROR.value,
                error_detail=f"internal error: {type(exc).__name__}: {exc}"[:500],
            )
            self.buffer.add([row])
            return row
        except asyncio.CancelledError:
            # Cut off at stop: this slot stays unstored, and so do the skips behind it, so the next start labels
            # them all (it resumes after the newest stored slot) instead of leaving this one out.
            if job_key is not None:
                self._after_probe.pop(job_key, None)
            raise
        finally:
            self.last_probe_end_ms[ep.id] = self.now_ms()
            if job_key is not None:
                if skipped_meanwhile := self._after_probe.pop(job_key, []):
                    self.buffer.add(skipped_meanwhile)
                self.scheduler.done(job_key)
