"""Requests from the dashboard and the CLI, run by the worker: "probe now" and cold readings.

The dashboard never probes (the worker is the only writer of probe rows): it
inserts a `probe_request` row; the worker of a matching vantage claims it with
a conditional UPDATE (so exactly one worker runs it), runs it and writes the
outcome back. A cold reading follows planner.worker.cold's state machine with
the endpoint's schedule paused, and stores a `cold_reading` row plus its cold
and warm samples.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError

from planner.store.probes import EndpointRow
from planner.store.worker import ColdReadingRow, ProbeRequestRow
from planner.worker import cold

__all__ = ["COLD_PROBE_TIMEOUT_S", "RequestHandling"]

COLD_PROBE_TIMEOUT_S = 300.0

_REQ = ProbeRequestRow.__table__
_COLD = ColdReadingRow.__table__


class RequestHandling:
    """Mixed into planner.worker.runner.Worker: claims and runs probe requests (uses its engine, clock,
    scheduler, buffer and probe helpers)."""

    # ---------------------------------------------------------------- requests

    def _claim(self) -> list[dict]:
        mine = [e for e in self._endpoints if f"endpoint:{e}" in self.scheduler.jobs]
        if not mine:
            return []
        now = self.clock.now_ms()
        claimed = []
        with self.engine.begin() as conn:
            rows = conn.execute(sa.select(_REQ).where(
                _REQ.c.status == "pending", _REQ.c.endpoint_id.in_(mine),
                sa.or_(_REQ.c.vantage == "", _REQ.c.vantage == self.config.vantage)).order_by(_REQ.c.id)).mappings().all()
        for r in rows:
            with self.engine.begin() as conn:
                got = conn.execute(_REQ.update().where(_REQ.c.id == r["id"], _REQ.c.status == "pending").values(
                    status="running", claimed_by=self.config.holder, claimed_at_ms=now)).rowcount
            if got == 1:
                claimed.append(dict(r))
        return claimed

    async def _claim_requests(self) -> None:
        for req in await asyncio.to_thread(self._claim):
            ep = self._endpoints.get(req["endpoint_id"])
            if req["kind"] == "probe_now":
                self._spawn(self._probe_now(ep, req))
            elif req["kind"] == "cold_reading":
                self._spawn(self._cold_reading(ep, req))
            else:
                await asyncio.to_thread(self._finish_request, req["id"], "failed", f"unknown request kind {req['kind']!r}")

    def _finish_request(self, req_id: int, status: str, detail: str | None) -> None:
        with self.engine.begin() as conn:
            conn.execute(_REQ.update().where(_REQ.c.id == req_id).values(
                status=status, detail=(detail or None) and detail[:500], done_at_ms=self.clock.now_ms()))

    async def _wait_idle(self, job_key: str) -> None:
        job = self.scheduler.jobs.get(job_key)
        while job is not None and job.in_flight and not self._stop.is_set():
            await asyncio.sleep(0.05)

    async def _probe_now(self, ep: EndpointRow, req: dict) -> None:
        key = f"endpoint:{ep.id}"
        await self._wait_idle(key)
        job = self.scheduler.jobs.get(key)
        if job is not None:
            job.in_flight = True
        sample = await self._probe_endpoint(ep, self.clock.now_ms(), "manual", key if job is not None else None)
        if sample is None:
            detail, status = self._status.get(ep.id, {}).get("detail") or "not probed", "failed"
        elif getattr(sample, "ok", False):
            detail, status = f"TTFT {sample.ttft_ms:.0f} ms", "done"
        else:
            detail, status = f"{getattr(sample, 'error_class', 'failed')}: {getattr(sample, 'error_detail', '') or ''}", "done"
        await asyncio.to_thread(self._finish_request, req["id"], status, detail)

    async def _cold_reading(self, ep: EndpointRow, req: dict) -> None:
        key = f"endpoint:{ep.id}"
        try:
            idle_s = cold.idle_seconds_for(ep.scale_down_window_s, req.get("idle_s"))
        except cold.ColdReadingError as exc:
            await asyncio.to_thread(self._finish_request, req["id"], "failed", str(exc))
            return
        self._cold_active.add(ep.id)
        self.scheduler.pause(key)
        self._set_status(ep.id, "paused", f"cold reading: idling {idle_s:g} s")
        reading_id = None
        try:
            await self._wait_idle(key)
            last_end = self._last_probe_end_ms.get(ep.id, self.clock.now_ms())
            idle_until = last_end + int(idle_s * 1000)
            reading_id = await asyncio.to_thread(self._insert_reading, ep, req, idle_s, idle_until)
            while self.clock.now_ms() < idle_until:
                if self._stop.is_set():
                    raise asyncio.CancelledError
                await asyncio.sleep(min(0.5, max(0.0, (idle_until - self.clock.now_ms()) / 1000)))
            await asyncio.to_thread(self._update_reading, reading_id, state="cold")

            async def one():
                # A cold start may hold the request instead of answering 503: give the cold probe time.
                s = await self._probe_sample(ep, attempts=1, timeout_s=max(ep.timeout_s, COLD_PROBE_TIMEOUT_S))
                if s is None:
                    raise cold.ColdReadingError(self._status.get(ep.id, {}).get("detail") or "key missing")
                return s

            window = ep.scale_down_window_s
            out = await cold.measure_cold_then_warm(one, cold_deadline_s=self.config.cold_deadline_s,
                                                    max_backoff_s=min(5.0, window / 2) if window else 5.0,
                                                    wall_ms=self.clock.now_ms)
            rows = []
            gap = float((out.cold_started_at_ms or idle_until) - last_end)
            if out.cold_sample is not None:
                row = out.cold_sample.to_row(ep.id, self.config.vantage, "cold", out.cold_started_at_ms, idle_gap_ms=gap)
                row.attempts = out.attempts
                if out.cold_ttft_ms is not None:
                    row.ttft_ms = out.cold_ttft_ms
                rows.append(row)
            if out.warm_sample is not None:
                rows.append(out.warm_sample.to_row(ep.id, self.config.vantage, "warm", out.warm_sample.started_at_ms, idle_gap_ms=0.0))
            self._buffer_rows(rows)
            await self._flush()
            warm = getattr(out.warm_sample, "ttft_ms", None) if out.warm_sample is not None else None
            await asyncio.to_thread(self._update_reading, reading_id, state=out.state, detail=out.detail or None,
                                    cold_started_at_ms=out.cold_started_at_ms, cold_ttft_ms=out.cold_ttft_ms,
                                    cold_attempts=out.attempts, cold_status_503=out.status_503, warm_ttft_ms=warm,
                                    cold_minus_warm_ms=out.cold_minus_warm_ms, completed_at_ms=self.clock.now_ms())
            summary = (f"cold {out.cold_ttft_ms:.0f} ms, warm {warm:.0f} ms" if out.state == "done" else out.detail)
            await asyncio.to_thread(self._finish_request, req["id"], "done" if out.state == "done" else "failed", summary)
        except (asyncio.CancelledError, cold.ColdReadingError) as exc:
            detail = "the worker stopped during the cold reading" if isinstance(exc, asyncio.CancelledError) else str(exc)
            with contextlib.suppress(SQLAlchemyError):
                if reading_id is not None:
                    await asyncio.to_thread(self._update_reading, reading_id, state="failed", detail=detail,
                                            completed_at_ms=self.clock.now_ms())
                await asyncio.to_thread(self._finish_request, req["id"], "failed", detail)
        finally:
            self._cold_active.discard(ep.id)
            self.scheduler.resume(key)
            self._set_status(ep.id, "ok", None)

    def _insert_reading(self, ep: EndpointRow, req: dict, idle_s: float, idle_until: int) -> int:
        with self.engine.begin() as conn:
            res = conn.execute(_COLD.insert().values(
                endpoint_id=ep.id, vantage=self.config.vantage, request_id=req["id"], state="idle", idle_s=idle_s,
                requested_at_ms=req["requested_at_ms"], idle_until_ms=idle_until, cold_attempts=0, cold_status_503=0))
            return int(res.inserted_primary_key[0])

    def _update_reading(self, reading_id: int, **values: Any) -> None:
        with self.engine.begin() as conn:
            conn.execute(_COLD.update().where(_COLD.c.id == reading_id).values(**values))
