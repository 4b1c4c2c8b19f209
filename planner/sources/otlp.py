"""An OTLP/HTTP receiver for OpenTelemetry GenAI telemetry: the SDKs' own exports, stored as production requests
(spans) and production hours (the TTFT metric).

`POST /v1/traces` takes an ExportTraceServiceRequest and `POST /v1/metrics` an ExportMetricsServiceRequest, each as
protobuf (`application/x-protobuf`, the SDK exporters' default; needs the `otlp` extra: opentelemetry-proto) or JSON
(`application/json`), gzip or not, with `Authorization: Bearer <token>` (the token from the environment variable the
source names; compared in constant time). The body is read within MAX_BODY_BYTES as it streams in, unzipped within
MAX_UNZIPPED_BYTES and refused past a bound on its values before it is parsed (planner.sources.otlp_body): a 413.
A body that is not such an export at all is a 400 with the reason; otherwise the answer is OTLP's export response,
in the request's encoding, with partial success counting and naming what was rejected: one malformed span, point
or entry at any level never costs the others. Nothing is half-stored: each export is one transaction, and when the
store cannot take it (locked, unreachable, full: planner.store.faults) the answer is a 503 with Retry-After, which
OTLP exporters retry (a 500 they drop): an outage shorter than the exporter's retrying delays spans but loses none.
A 500 is only a bug of ours, logged in one line; no body makes a traceback.

Traces (planner.sources.otlp_spans): each GenAI span (planner.logs.otel: gen_ai.usage.* attributes; TTFT from a
first-token event or `gen_ai.server.time_to_first_token`) becomes one row of the source, keyed by trace and span id
(a span without both is refused), so a batch the exporter retries is stored once; its API base is the server the
span names (`server.address`, `server.port`), so it maps to a registered endpoint as a LiteLLM row does. A span
that cannot be read, or that the admission rule of every live source refuses (planner.sources.admit: a start more
than a day after the receiver's clock, a negative or infinite timing), is counted back as rejected (rejectedSpans)
with its reason, and the rest are stored. Spans that are not model calls (HTTP, tools) are left out.

Metrics: the GenAI TTFT histogram `gen_ai.server.time_to_first_token` (planner/sources/otlp_metrics.py: units,
temporality, resets, bucket bounds): each data point's bucket counts are added to the hour it ends in, per model and
for every model together, and the hour's requests and p50/p95 recomputed, one transaction per export. A point that
cannot be read is counted back as rejected (rejectedDataPoints) and the rest stored; other metrics are ignored.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import os
import time
from collections.abc import Callable
from typing import Any

from sqlalchemy.engine import Engine
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from planner.logs.otlp_walk import Refusals
from planner.sources.otlp_body import (
    MAX_BODY_BYTES,
    MAX_UNZIPPED_BYTES,
    SIGNALS,
    OtlpError,
    OtlpTooLarge,
    Signal,
    decode,
    proto_module,
    read_body,
)
from planner.sources.otlp_metrics import store_ttft_points, ttft_points
from planner.sources.otlp_spans import request_rows
from planner.store.faults import STORE_FAILURES, describe
from planner.store.sources import SourceKind, list_sources, store_batch

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_UNZIPPED_BYTES",
    "RETRY_AFTER_S",
    "OtlpError",
    "OtlpTooLarge",
    "decode",
    "receiver_app",
    "shared_receiver_app",
    "wall_ms",
]

log = logging.getLogger("planner.sources.otlp")

RETRY_AFTER_S = 1  # the store was locked or away: an exporter waits this long (s) before it sends the export again


def wall_ms() -> int:
    """The wall clock, UTC epoch ms: the receiver's clock unless it is given one."""
    return int(time.time() * 1000)


def _answer(request: Request, signal: Signal, rejected: Refusals) -> Response:
    """OTLP's export response (partial success when something was rejected, naming the first five), in the
    request's encoding."""
    partial = {}
    if rejected.count:
        partial = {signal.rejected: rejected.count, "errorMessage": "; ".join(rejected.reasons[:5])[:2000]}
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind == "application/x-protobuf":
        from google.protobuf.json_format import ParseDict

        msg = ParseDict({"partialSuccess": partial}, getattr(proto_module(signal), signal.response)())
        return Response(msg.SerializeToString(), media_type="application/x-protobuf")
    return JSONResponse({"partialSuccess": partial})


def _take(store: Engine, source_id: int, signal: str, export: dict[str, Any], now_ms: int) -> Refusals:
    """Store what `export` holds of `signal` for the source, in one transaction; the reason for each span, point
    or entry rejected. Raises the store's errors (SQLAlchemy's) when it cannot take the export."""
    if signal == "traces":
        rows, rejected = request_rows(export, now_ms)
        store_batch(store, source_id, rows, None)  # with no rows too: the source was heard from
        return rejected
    points, rejected = ttft_points(export)
    return store_ttft_points(store, source_id, points, rejected)


def receiver_app(store: Engine, source_id: int, token: str, *, now_ms: Callable[[], int] = wall_ms) -> Starlette:
    """The receiver's ASGI app: /v1/traces and /v1/metrics into source `source_id` of `store`, for the holder of
    `token`; `now_ms` is its clock (UTC epoch ms: a span dated more than a day after it is refused)."""
    if not token:
        raise ValueError("the receiver needs a bearer token")
    expected = f"Bearer {token}".encode()
    return _receiver(store, lambda given: source_id if hmac.compare_digest(given, expected) else None, now_ms)


def shared_receiver_app(store: Engine, *, now_ms: Callable[[], int] = wall_ms) -> Starlette:
    """Every OpenTelemetry source's receiver on one port (the worker's `--otlp-port`): the bearer token says which
    source an export is for — each source's token is read from the variable it names at each export, so a source
    added later is received without a restart; a source whose variable is unset receives nothing."""

    def resolve(given: bytes) -> int | None:
        found = None
        for src in list_sources(store):
            token = os.environ.get(src.secret_ref, "") if src.kind is SourceKind.OTLP else ""
            if token and hmac.compare_digest(given, f"Bearer {token}".encode()):
                found = src.id  # every token compared, in constant time each: no early answer to time
        return found

    return _receiver(store, resolve, now_ms)


def _message(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    return JSONResponse({"message": message}, status_code=status, headers=headers)


def _receiver(store: Engine, resolve: Callable[[bytes], int | None], now_ms: Callable[[], int]) -> Starlette:
    """The routes, for the source `resolve` finds from the Authorization header (None: refused with a 401)."""

    async def receive(request: Request, signal: str) -> Response:
        """401 without a token, 413 too large, 400 not an export, 503 (Retry-After) the store away; else the
        export stored and OTLP's answer. The store's work and the decoding run off the event loop (the worker
        probes in it)."""
        try:
            source_id = await asyncio.to_thread(resolve, request.headers.get("authorization", "").encode())
            if source_id is None:
                return _message(401, "a valid bearer token is required")
            body = await read_body(request.stream(), request.headers.get("content-length"))
            headers = request.headers
            export = await asyncio.to_thread(
                decode, body, headers.get("content-type", ""), headers.get("content-encoding", ""), signal
            )
            del body  # the export holds what it says
            rejected = await asyncio.to_thread(_take, store, source_id, signal, export, now_ms())
        except OtlpTooLarge as exc:
            return _message(413, str(exc))
        except OtlpError as exc:
            return _message(400, str(exc))
        except ClientDisconnect:
            return _message(400, "the client went away before the body ended")
        except STORE_FAILURES as exc:  # locked, unreachable, full: it passes, so the exporter is to send it again
            why = describe(exc, consequence=f"nothing of the export was stored; retry after {RETRY_AFTER_S} s")
            log.warning("OTLP %s export answered 503: %s", signal, why)
            return _message(503, why, {"Retry-After": str(RETRY_AFTER_S)})
        except Exception as exc:  # noqa: BLE001 - a bug of ours: one line in the log and to the client, no traceback
            where = exc.__traceback__
            while where is not None and where.tb_next is not None:
                where = where.tb_next
            at = f"{where.tb_frame.f_code.co_filename}:{where.tb_lineno}" if where else "?"
            log.error("OTLP %s export failed (a bug): %s: %s at %s", signal, type(exc).__name__, str(exc)[:200], at)
            return _message(500, f"the receiver failed ({type(exc).__name__}); nothing of the export was stored")
        return _answer(request, SIGNALS[signal], rejected)

    async def traces(request: Request) -> Response:
        return await receive(request, "traces")

    async def metrics(request: Request) -> Response:
        return await receive(request, "metrics")

    return Starlette(
        routes=[Route("/v1/traces", traces, methods=["POST"]), Route("/v1/metrics", metrics, methods=["POST"])]
    )
