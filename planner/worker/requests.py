"""Requests from the dashboard and the CLI, run by the worker: "probe now" and cold readings.

The dashboard never probes an endpoint (the worker writes the probe rows of registered endpoints): it inserts a
`probe_request` row; the worker of a matching vantage claims it (planner.store.worker.claim_requests, a conditional
UPDATE, so exactly one worker runs it), runs it and writes the outcome back. A cold reading follows
planner.worker.cold's state machine with the endpoint's schedule paused, and stores a `cold_reading` row plus its
cold and warm samples.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from sqlalchemy.exc import SQLAlchemyError

from planner.cold_policy import ColdReadingError, idle_seconds_for
from planner.samples import SampleKind
from planner.store.endpoints import EndpointRow
from planner.store.probes import sample_row
from planner.store.worker import (
    ColdState,
    EndpointState,
    RequestKind,
    RequestStatus,
    claim_requests,
    finish_request,
    insert_cold_reading,
    update_cold_reading,
)
from planner.worker import cold

if TYPE_CHECKING:
    from planner.probes.ttft import TtftSample
    from planner.worker.runner import Worker

__all__ = ["COLD_PROBE_TIMEOUT_S", "RequestRunner"]

COLD_PROBE_TIMEOUT_S = 300.0

log = logging.getLogger("planner.worker")


class RequestRunner:
    """Claims and runs the probe requests for the endpoints `worker` schedules.

    Uses the worker's probe (`probe_endpoint`, `probe_sample`), its schedule (to wait for and pause a job), its
    row buffer and its endpoint statuses; all SQL is in planner.store.worker."""

    def __init__(self, worker: Worker) -> None:
        self.w = worker

    async def claim_and_start(self) -> None:
        """Claim pending requests and start each as a task of the worker."""
        w = self.w
        mine = [e for e in w.endpoints if f"endpoint:{e}" in w.scheduler.jobs]
        claimed = await asyncio.to_thread(
            claim_requests, w.engine, mine, w.config.vantage, w.config.holder, w.clock.now_ms()
        )
        for req in claimed:
            ep = w.endpoints.get(req["endpoint_id"])
            if ep is None:  # removed after the claim: say so instead of leaving it running
                await self._finish(req["id"], RequestStatus.FAILED, "the endpoint is no longer probed")
            elif req["kind"] == RequestKind.PROBE_NOW:
                w.spawn(self._probe_now(ep, req))
            elif req["kind"] == RequestKind.COLD_READING:
                w.spawn(self._cold_reading(ep, req))
            else:
                await self._finish(req["id"], RequestStatus.FAILED, f"unknown request kind {req['kind']!r}")

    async def _finish(self, req_id: int, status: RequestStatus, detail: str | None) -> None:
        await asyncio.to_thread(finish_request, self.w.engine, req_id, status, detail, self.w.clock.now_ms())

    async def _wait_idle(self, job_key: str) -> None:
        job = self.w.scheduler.jobs.get(job_key)
        while job is not None and job.in_flight and not self.w.stopping:
            await asyncio.sleep(0.05)

    async def _probe_now(self, ep: EndpointRow, req: dict) -> None:
        assert ep.id is not None  # a stored endpoint has its id
        w = self.w
        key = f"endpoint:{ep.id}"
        await self._wait_idle(key)
        job = w.scheduler.jobs.get(key)
        if job is not None:
            job.in_flight = True
        row = await w.probe_endpoint(ep, w.clock.now_ms(), SampleKind.MANUAL, key if job is not None else None)
        if row is None:
            status, detail = RequestStatus.FAILED, w.statuses.detail(ep.id) or "not probed"
        elif row.ok:
            status, detail = RequestStatus.DONE, f"TTFT {row.ttft_ms:.0f} ms"
        else:
            status, detail = RequestStatus.DONE, f"{row.error_class}: {row.error_detail or ''}"
        await self._finish(req["id"], status, detail)

    async def _cold_reading(self, ep: EndpointRow, req: dict) -> None:
        assert ep.id is not None  # a stored endpoint has its id
        endpoint_id = ep.id  # narrowed, for one() below
        w = self.w
        key = f"endpoint:{ep.id}"
        try:
            idle_s = idle_seconds_for(ep.scale_down_window_s, req.get("idle_s"))
        except ColdReadingError as exc:
            await self._finish(req["id"], RequestStatus.FAILED, str(exc))
            return
        w.cold_active.add(ep.id)
        w.scheduler.pause(key)
        w.statuses.set(ep.id, EndpointState.PAUSED, f"cold reading: idling {idle_s:g} s")
        reading_id = None
        try:
            await self._wait_idle(key)
            last_end = w.last_probe_end_ms.get(ep.id, w.clock.now_ms())
            idle_until = last_end + int(idle_s * 1000)
            reading_id = await asyncio.to_thread(
                insert_cold_reading, w.engine, ep.id, w.config.vantage, req, idle_s, idle_until
            )
            while w.clock.now_ms() < idle_until:
                if w.stopping:
                    raise asyncio.CancelledError
                await asyncio.sleep(min(0.5, max(0.0, (idle_until - w.clock.now_ms()) / 1000)))
            await asyncio.to_thread(update_cold_reading, w.engine, reading_id, state=ColdState.COLD)

            async def one() -> TtftSample:
                # A cold start may hold the request instead of answering 503: give the cold probe time.
                s = await w.probe_sample(ep, attempts=1, timeout_s=max(ep.timeout_s, COLD_PROBE_TIMEOUT_S))
                if s is None:
                    raise ColdReadingError(w.statuses.detail(endpoint_id) or "key missing")
                return s

            window = ep.scale_down_window_s
            out = await cold.measure_cold_then_warm(
                one,
                cold_deadline_s=w.config.cold_deadline_s,
                max_backoff_s=min(5.0, window / 2) if window else 5.0,
                wall_ms=w.clock.now_ms,
            )
            rows = []
            gap = float((out.cold_started_at_ms or idle_until) - last_end)
            if out.cold_sample is not None:
                assert out.cold_started_at_ms is not None  # measure_cold_then_warm stamps the start first
                row = sample_row(
                    out.cold_sample, ep.id, w.config.vantage, SampleKind.COLD, out.cold_started_at_ms, idle_gap_ms=gap
                )
                row.attempts = out.attempts
                if out.cold_ttft_ms is not None:
                    row.ttft_ms = out.cold_ttft_ms
                rows.append(row)
            if out.warm_sample is not None:
                rows.append(
                    sample_row(
                        out.warm_sample,
                        ep.id,
                        w.config.vantage,
                        SampleKind.WARM,
                        out.warm_sample.started_at_ms,
                        idle_gap_ms=0.0,
                    )
                )
            w.buffer.add(rows)
            await w.flush()
            warm = out.warm_sample.ttft_ms if out.warm_sample is not None else None
            await asyncio.to_thread(
                update_cold_reading,
                w.engine,
                reading_id,
                state=out.state,
                detail=out.detail or None,
                cold_started_at_ms=out.cold_started_at_ms,
                cold_ttft_ms=out.cold_ttft_ms,
                cold_attempts=out.attempts,
                cold_status_503=out.status_503,
                warm_ttft_ms=warm,
                cold_minus_warm_ms=out.cold_minus_warm_ms,
                completed_at_ms=w.clock.now_ms(),
            )
            done = out.state == ColdState.DONE
            summary = f"cold {out.cold_ttft_ms:.0f} ms, warm {warm:.0f} ms" if done else out.detail
            await self._finish(req["id"], RequestStatus.DONE if done else RequestStatus.FAILED, summary)
        except (asyncio.CancelledError, ColdReadingError) as exc:
            stopped = isinstance(exc, asyncio.CancelledError)
            detail = "the worker stopped during the cold reading" if stopped else str(exc)
            with contextlib.suppress(SQLAlchemyError):
                if reading_id is not None:
                    await asyncio.to_thread(
                        update_cold_reading,
                        w.engine,
                        reading_id,
                        state=ColdState.FAILED,
                        detail=detail,
                        completed_at_ms=w.clock.now_ms(),
                    )
                await self._finish(req["id"], RequestStatus.FAILED, detail)
        finally:
            w.cold_active.discard(ep.id)
            w.scheduler.resume(key)
            w.statuses.set(ep.id, EndpointState.OK, None)
