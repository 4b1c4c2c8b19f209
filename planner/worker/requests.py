"""Requests from the dashboard and the CLI, run by the worker: "probe now", cold readings and RTT measurements.

The dashboard never probes an endpoint or measures a server-side RTT itself (the worker writes those rows): it
inserts a `probe_request` or `rtt_request` row; the worker of a matching vantage claims it
(planner.store.requests.claim_requests / claim_rtt_requests, a conditional UPDATE, so exactly one worker runs it), runs
it and writes the outcome back. A cold reading follows planner.worker.cold's state machine with the endpoint's
schedule paused, and stores a `cold_reading` row plus its cold and warm samples. An RTT request runs
planner.probes.rtt.probe_rtt_many on a thread, as the scheduled RTT targets do, and stores its samples through
planner.store.rtt.insert_rtt_samples.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy.exc import SQLAlchemyError

from planner.endpoints.cold_policy import ColdReadingError, idle_seconds_for
from planner.endpoints.samples import SampleKind
from planner.probes.rtt import probe_rtt_many
from planner.store import leases
from planner.store.endpoints import EndpointRow
from planner.store.probes import ProbeSampleRow, sample_row
from planner.store.requests import (
    RequestKind,
    RequestStatus,
    claim_requests,
    claim_rtt_requests,
    fail_orphaned_requests,
    finish_request,
    finish_rtt_request,
    rtt_request_targets,
)
from planner.store.rtt import insert_rtt_samples
from planner.store.worker import ColdState, EndpointState, insert_cold_reading, update_cold_reading
from planner.worker import cold
from planner.worker.buffer import first_line
from planner.worker.context import WorkerContext

if TYPE_CHECKING:
    from planner.probes.ttft import TtftSample
    from planner.worker.buffer import RowBuffer
    from planner.worker.scheduler import Scheduler
    from planner.worker.status import EndpointStatuses

__all__ = ["COLD_PROBE_TIMEOUT_S", "ORPHAN_DETAIL", "RTT_CONCURRENCY", "RequestHost", "RequestRunner"]

COLD_PROBE_TIMEOUT_S = 300.0
ORPHAN_DETAIL = "the worker running it stopped before it finished (killed or lost its lease); request it again"
RTT_CONCURRENCY = 8  # targets of one RTT request measured at once (each target's connects stay sequential)

log = logging.getLogger("planner.worker")


class RequestHost(Protocol):
    """The worker's probe path, as the requests use it (planner.worker.runner.Worker is one)."""

    @property
    def endpoints(self) -> Mapping[int, EndpointRow]: ...  # the endpoints it probes, by id

    @property
    def last_probe_end_ms(self) -> Mapping[int, int]: ...  # endpoint id → when its last probe ended

    @property
    def stopping(self) -> bool: ...

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]: ...  # a task the stop waits for

    async def probe_endpoint(
        self, ep: EndpointRow, slot_ms: int, kind: SampleKind, job_key: str | None
    ) -> ProbeSampleRow | None: ...

    async def probe_sample(
        self, ep: EndpointRow, *, attempts: int | None = None, timeout_s: float | None = None
    ) -> TtftSample | None: ...

    async def flush(self, final: bool = False) -> None: ...


class RequestRunner:
    """Claims and runs the requests for the endpoints `host` schedules, and the RTT requests of its vantage.

    Uses the host's probe path (RequestHost), the schedule (to wait for and pause a job), the row buffer and the
    endpoint statuses; all SQL is in planner.store.requests and planner.store.worker. `cold_active` holds the
    endpoints a cold reading is idling: their jobs stay paused across a reload."""

    def __init__(
        self,
        ctx: WorkerContext,
        host: RequestHost,
        *,
        scheduler: Scheduler,
        statuses: EndpointStatuses,
        buffer: RowBuffer,
        cold_deadline_s: float,
    ) -> None:
        engine, vantage, holder, now_ms = ctx.engine, ctx.vantage, ctx.holder, ctx.now_ms
        self.host = host
        self.engine = engine
        self.vantage = vantage
        self.holder = holder
        self.scheduler = scheduler
        self.statuses = statuses
        self.buffer = buffer
        self.now_ms = now_ms
        self.cold_deadline_s = cold_deadline_s
        self.cold_active: set[int] = set()

    async def claim_and_start(self) -> None:
        """Claim pending requests and start each as a task of the host."""
        host = self.host
        mine = [e for e in host.endpoints if f"endpoint:{e}" in self.scheduler.jobs]
        claimed = await asyncio.to_thread(claim_requests, self.engine, mine, self.vantage, self.holder, self.now_ms())
        for req in claimed:
            ep = host.endpoints.get(req["endpoint_id"])
            if ep is None:  # removed after the claim: say so instead of leaving it running
                await self._finish(req["id"], RequestStatus.FAILED, "the endpoint is no longer probed")
            elif req["kind"] == RequestKind.PROBE_NOW:
                host.spawn(self._probe_now(ep, req))
            elif req["kind"] == RequestKind.COLD_READING:
                host.spawn(self._cold_reading(ep, req))
            else:
                await self._finish(req["id"], RequestStatus.FAILED, f"unknown request kind {req['kind']!r}")
        for req in await asyncio.to_thread(claim_rtt_requests, self.engine, self.vantage, self.holder, self.now_ms()):
            host.spawn(self._measure_rtt(req))

    async def fail_orphans(self) -> int:
        """Fail the requests a worker that is gone left running (killed mid-request: it holds no live lease now)."""

        def orphan_pass() -> int:
            now = self.now_ms()
            live = {r["holder"] for r in leases.live_leases(leases.current(self.engine), now)}
            return fail_orphaned_requests(self.engine, live, ORPHAN_DETAIL, now)

        failed = await asyncio.to_thread(orphan_pass)
        if failed:
            log.warning("failed %d request(s) left running by a worker that is gone", failed)
        return failed

    async def _finish(self, req_id: int, status: RequestStatus, detail: str | None) -> None:
        await asyncio.to_thread(finish_request, self.engine, req_id, status, detail, self.now_ms())

    async def _wait_idle(self, job_key: str) -> None:
        job = self.scheduler.jobs.get(job_key)
        while job is not None and job.in_flight and not self.host.stopping:
            await asyncio.sleep(0.05)

    async def _measure_rtt(self, req: dict[str, Any]) -> None:
        """Measure an RTT request's targets from this vantage, store the samples, report the outcome. Never raises."""
        status, detail = RequestStatus.FAILED, "the worker stopped during the measurement"
        try:
            targets = rtt_request_targets(req)
            results = await asyncio.to_thread(
                probe_rtt_many, targets, n=int(req["n"]), vantage=self.vantage, concurrency=RTT_CONCURRENCY
            )
            stored = await asyncio.to_thread(insert_rtt_samples, self.engine, [x for r in results for x in r.records()])
            failed = [r for r in results if not r.ok]
            detail = f"stored {stored} samples of {len(results)} target(s)"
            if failed:
                detail += f"; {len(failed)} failed: " + ", ".join(f"{r.region_id} ({r.error_class})" for r in failed)
            status = RequestStatus.DONE
        except ValueError as exc:  # a request row create_rtt_request did not write
            detail = str(exc)
        except (SQLAlchemyError, OSError) as exc:
            detail = f"the samples could not be stored: {first_line(exc)}"
            log.warning("RTT request %s: %s", req["id"], detail)
        except asyncio.CancelledError:
            pass  # the stop's grace ran out: reported below as stopped
        with contextlib.suppress(SQLAlchemyError, OSError):
            await asyncio.to_thread(finish_rtt_request, self.engine, req["id"], status, detail, self.now_ms())

    async def _probe_now(self, ep: EndpointRow, req: dict[str, Any]) -> None:
        assert ep.id is not None  # a stored endpoint has its id
        key = f"endpoint:{ep.id}"
        await self._wait_idle(key)
        job = self.scheduler.jobs.get(key)
        if job is not None:
            job.in_flight = True
        row = await self.host.probe_endpoint(ep, self.now_ms(), SampleKind.MANUAL, key if job is not None else None)
        if row is None:
            status, detail = RequestStatus.FAILED, self.statuses.detail(ep.id) or "not probed"
        elif row.ok:
            status, detail = RequestStatus.DONE, f"TTFT {row.ttft_ms:.0f} ms"
        else:
            status, detail = RequestStatus.DONE, f"{row.error_class}: {row.error_detail or ''}"
        await self._finish(req["id"], status, detail)

    async def _cold_reading(self, ep: EndpointRow, req: dict[str, Any]) -> None:
        assert ep.id is not None  # a stored endpoint has its id
        endpoint_id = ep.id  # narrowed, for one() below
        host = self.host
        key = f"endpoint:{ep.id}"
        try:
            idle_s = idle_seconds_for(ep.scale_down_window_s, req.get("idle_s"))
        except ColdReadingError as exc:
            await self._finish(req["id"], RequestStatus.FAILED, str(exc))
            return
        self.cold_active.add(ep.id)
        self.scheduler.pause(key)
        self.statuses.set(ep.id, EndpointState.PAUSED, f"cold reading: idling {idle_s:g} s")
        reading_id = None
        try:
            await self._wait_idle(key)
            last_end = host.last_probe_end_ms.get(ep.id, self.now_ms())
            idle_until = last_end + int(idle_s * 1000)
            reading_id = await asyncio.to_thread(
                insert_cold_reading, self.engine, ep.id, self.vantage, req, idle_s, idle_until
            )
            while self.now_ms() < idle_until:
                if host.stopping:
                    raise asyncio.CancelledError
                await asyncio.sleep(min(0.5, max(0.0, (idle_until - self.now_ms()) / 1000)))
            await asyncio.to_thread(update_cold_reading, self.engine, reading_id, state=ColdState.COLD)

            async def one() -> TtftSample:
                # A cold start may hold the request instead of answering 503: give the cold probe time.
                s = await host.probe_sample(ep, attempts=1, timeout_s=max(ep.timeout_s, COLD_PROBE_TIMEOUT_S))
                if s is None:
                    raise ColdReadingError(self.statuses.detail(endpoint_id) or "key missing")
                return s

            window = ep.scale_down_window_s
            out = await cold.measure_cold_then_warm(
                one,
                cold_deadline_s=self.cold_deadline_s,
                max_backoff_s=min(5.0, window / 2) if window else 5.0,
                wall_ms=self.now_ms,
            )
            rows = []
            gap = float((out.cold_started_at_ms or idle_until) - last_end)
            if out.cold_sample is not None:
                assert out.cold_started_at_ms is not None  # measure_cold_then_warm stamps the start first
                row = sample_row(
                    out.cold_sample, ep.id, self.vantage, SampleKind.COLD, out.cold_started_at_ms, idle_gap_ms=gap
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
                        self.vantage,
                        SampleKind.WARM,
                        out.warm_sample.started_at_ms,
                        idle_gap_ms=0.0,
                    )
                )
            self.buffer.add(rows)
            await host.flush()
            warm = out.warm_sample.ttft_ms if out.warm_sample is not None else None
            await asyncio.to_thread(
                update_cold_reading,
                self.engine,
                reading_id,
                state=out.state,
                detail=out.detail or None,
                cold_started_at_ms=out.cold_started_at_ms,
                cold_ttft_ms=out.cold_ttft_ms,
                cold_attempts=out.attempts,
                cold_status_503=out.status_503,
                warm_ttft_ms=warm,
                cold_minus_warm_ms=out.cold_minus_warm_ms,
                completed_at_ms=self.now_ms(),
            )
            done = out.state == ColdState.DONE
            summary = f"cold {out.cold_ttft_ms:,.0f} ms, warm {warm:,.0f} ms" if done else out.detail
            await self._finish(req["id"], RequestStatus.DONE if done else RequestStatus.FAILED, summary)
        except (asyncio.CancelledError, ColdReadingError) as exc:
            stopped = isinstance(exc, asyncio.CancelledError)
            detail = "the worker stopped during the cold reading" if stopped else str(exc)
            with contextlib.suppress(SQLAlchemyError):
                if reading_id is not None:
                    await asyncio.to_thread(
                        update_cold_reading,
                        self.engine,
                        reading_id,
                        state=ColdState.FAILED,
                        detail=detail,
                        completed_at_ms=self.now_ms(),
                    )
                await self._finish(req["id"], RequestStatus.FAILED, detail)
        finally:
            self.cold_active.discard(ep.id)
            self.scheduler.resume(key)
            self.statuses.set(ep.id, EndpointState.OK, None)
