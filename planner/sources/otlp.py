"""An OTLP/HTTP receiver for OpenTelemetry GenAI telemetry: the SDKs' own exports, stored as production requests
(spans) and production hours (the TTFT metric).

`POST /v1/traces` takes an ExportTraceServiceRequest and `POST /v1/metrics` an ExportMetricsServiceRequest, each as
protobuf (`application/x-protobuf`, the SDK exporters' default; needs the `otlp` extra: opentelemetry-proto) or JSON
(`application/json`), gzip or not (at most MAX_BODY_BYTES as sent, MAX_UNZIPPED_BYTES unzipped), with
`Authorization: Bearer <token>` (the token from the environment variable the source names; compared in constant
time). A body that is not such an export is a 400 with the reason; the answer is OTLP's export response, in the
request's encoding, with partial success counting what was rejected; nothing half-stored.

Traces: each GenAI span (planner.logs.otel: gen_ai.usage.* attributes; TTFT from a first-token event or
`gen_ai.server.time_to_first_token`) becomes one row of the source, keyed by trace and span id, so a batch the
exporter retries is stored once; its API base is the server the span names (`server.address`, `server.port`), so
it maps to a registered endpoint as a LiteLLM row does. A span that cannot be read is counted back as rejected
(rejectedSpans) and the rest are stored. Spans that are not model calls (HTTP, tools) are left out.

Metrics: the GenAI TTFT histogram `gen_ai.server.time_to_first_token` (planner/sources/otlp_metrics.py: units,
temporality, resets, bucket bounds): each data point's bucket counts are added to the hour it ends in, per model and
for every model together, and the hour's requests and p50/p95 recomputed, one transaction per export. A point that
cannot be read is counted back as rejected (rejectedDataPoints) and the rest stored; other metrics are ignored.
"""

from __future__ import annotations

import asyncio
import hmac
import importlib
import json
import math
import os
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Engine
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from planner.errors import PlannerError
from planner.logs.otel import keyed_spans, server_base
from planner.logs.records import Reject
from planner.sources.otlp_metrics import ExportShapeError, store_ttft_points, ttft_points
from planner.store.sources import SourceKind, list_sources, store_batch

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_UNZIPPED_BYTES",
    "OtlpError",
    "OtlpTooLarge",
    "decode",
    "receiver_app",
    "shared_receiver_app",
]

MAX_BODY_BYTES = 16 << 20  # an OTLP batch larger than this is refused (the SDK's batches are far smaller)
MAX_UNZIPPED_BYTES = 64 << 20  # … and a gzip body that unzips to more than this


class OtlpError(PlannerError, ValueError):
    """A body that is not an OTLP export of the signal posted: the message says why."""


class OtlpTooLarge(OtlpError):
    """A gzip body that unzips to more than MAX_UNZIPPED_BYTES."""


@dataclass(frozen=True)
class _Signal:
    """What differs between /v1/traces and /v1/metrics: the export's top list and its protobuf messages."""

    what: str  # in messages: "trace", "metrics"
    top: str  # OTLP JSON's top-level list
    module: str  # opentelemetry-proto's module of the collector service
    request: str
    response: str
    rejected: str  # the partial success's count, as OTLP JSON names it


SIGNALS = {
    "traces": _Signal(
        "trace",
        "resourceSpans",
        "opentelemetry.proto.collector.trace.v1.trace_service_pb2",
        "ExportTraceServiceRequest",
        "ExportTraceServiceResponse",
        "rejectedSpans",
    ),
    "metrics": _Signal(
        "metrics",
        "resourceMetrics",
        "opentelemetry.proto.collector.metrics.v1.metrics_service_pb2",
        "ExportMetricsServiceRequest",
        "ExportMetricsServiceResponse",
        "rejectedDataPoints",
    ),
}


def _proto(signal: _Signal) -> Any:
    try:
        return importlib.import_module(signal.module)
    except ImportError:
        raise OtlpError("protobuf bodies need the otlp extra: pip install 'ttft-planner[otlp]'") from None


def _gunzip(body: bytes) -> bytes:
    """The body unzipped (every gzip member, as gzip.decompress), refusing more than MAX_UNZIPPED_BYTES."""
    out = bytearray()
    rest = body
    while rest:
        unzip = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out += unzip.decompress(rest, MAX_UNZIPPED_BYTES + 1 - len(out))
        except zlib.error as exc:
            raise OtlpError(f"the body is not gzip: {exc}") from None
        if unzip.unconsumed_tail or len(out) > MAX_UNZIPPED_BYTES:
            raise OtlpTooLarge(f"the body unzips to over {MAX_UNZIPPED_BYTES >> 20} MB")
        if not unzip.eof:
            raise OtlpError("the body is not gzip: it ends inside the compressed stream")
        rest = unzip.unused_data.lstrip(b"\x00")  # gzip files may be padded with zeros
    return bytes(out)


def decode(body: bytes, content_type: str, content_encoding: str = "", signal: str = "traces") -> dict[str, Any]:
    """An OTLP export of `signal` ("traces": ExportTraceServiceRequest, "metrics": ExportMetricsServiceRequest) as
    OTLP JSON's dict shape, from protobuf or JSON; OtlpError otherwise."""
    sig = SIGNALS[signal]
    if content_encoding.lower() == "gzip":
        body = _gunzip(body)
    kind = content_type.split(";")[0].strip().lower()
    if kind == "application/json":
        try:
            got = json.loads(body)
        except ValueError as exc:
            raise OtlpError(f"the body is not JSON: {exc}") from None
        if not isinstance(got, dict) or not isinstance(got.get(sig.top, []), list):
            raise OtlpError(f"the JSON is not an OTLP {sig.what} export (no {sig.top} list)")
        return got
    if kind == "application/x-protobuf":
        module = _proto(sig)
        from google.protobuf.json_format import MessageToDict
        from google.protobuf.message import DecodeError

        msg = getattr(module, sig.request)()
        try:
            msg.ParseFromString(body)
        except DecodeError as exc:
            raise OtlpError(f"the body is not an OTLP protobuf {sig.what} export: {exc}") from None
        return dict(MessageToDict(msg))
    raise OtlpError(f"content type {kind or '(none)'} is neither application/x-protobuf nor application/json")


def _answer(request: Request, signal: _Signal, rejected: list[str]) -> Response:
    """OTLP's export response (partial success when something was rejected), in the request's encoding."""
    partial = {signal.rejected: len(rejected), "errorMessage": "; ".join(rejected[:5])} if rejected else {}
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind == "application/x-protobuf":
        from google.protobuf.json_format import ParseDict

        msg = ParseDict({"partialSuccess": partial}, getattr(_proto(signal), signal.response)())
        return Response(msg.SerializeToString(), media_type="application/x-protobuf")
    return JSONResponse({"partialSuccess": partial})


def _row(key: str, row: Any, api_base: str | None) -> dict[str, Any]:
    """A span's request row; its API base from the span's server.address/port (planner.logs.otel.server_base), so
    planner.sources.endpoints maps it to a registered endpoint, or "otlp" where the span names no server."""
    return {
        "request_id": key[:200],
        "ts_ms": int(row.ts_ms),
        "model": str(row.model)[:200],
        "api_base": (api_base or "otlp")[:300],
        "prompt_tokens": int(row.prompt_tokens),
        "cached_tokens": int(row.cached_tokens),
        "output_tokens": int(row.output_tokens),
        "ttft_ms": None if math.isnan(row.ttft_ms) else float(row.ttft_ms),
        "duration_ms": None if math.isnan(row.duration_ms) else float(row.duration_ms),
    }


def receiver_app(store: Engine, source_id: int, token: str) -> Starlette:
    """The receiver's ASGI app: /v1/traces and /v1/metrics into source `source_id` of `store`, for the holder of
    `token`."""
    if not token:
        raise ValueError("the receiver needs a bearer token")
    expected = f"Bearer {token}".encode()
    return _receiver(store, lambda given: source_id if hmac.compare_digest(given, expected) else None)


def shared_receiver_app(store: Engine) -> Starlette:
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

    return _receiver(store, resolve, resolve_in_thread=True)


def _receiver(store: Engine, resolve: Callable[[bytes], int | None], *, resolve_in_thread: bool = False) -> Starlette:
    """The routes, for the source `resolve` finds from the Authorization header (None: refused with a 401)."""

    async def export_of(request: Request, signal: str) -> tuple[int, dict[str, Any]] | Response:
        """The source and its posted export, or the error response: 401 without a token, 413 too large, 400 not an
        export."""
        given = request.headers.get("authorization", "").encode()
        source_id = await asyncio.to_thread(resolve, given) if resolve_in_thread else resolve(given)
        if source_id is None:
            return JSONResponse({"message": "a valid bearer token is required"}, status_code=401)
        body = await request.body()
        if len(body) > MAX_BODY_BYTES:
            return JSONResponse({"message": f"the body is over {MAX_BODY_BYTES >> 20} MB"}, status_code=413)
        try:
            got = decode(
                body, request.headers.get("content-type", ""), request.headers.get("content-encoding", ""), signal
            )
        except OtlpTooLarge as exc:
            return JSONResponse({"message": str(exc)}, status_code=413)
        except OtlpError as exc:
            return JSONResponse({"message": str(exc)}, status_code=400)
        return source_id, got

    async def traces(request: Request) -> Response:
        got = await export_of(request, "traces")
        if isinstance(got, Response):
            return got
        source_id, export = got
        rows, rejected = [], []
        for key, row, span in keyed_spans(export):
            if isinstance(row, Reject):
                rejected.append(str(row))
            else:
                rows.append(_row(key, row, server_base(span)))
        await asyncio.to_thread(store_batch, store, source_id, rows, None)  # a database call off the event loop
        return _answer(request, SIGNALS["traces"], rejected)

    async def metrics(request: Request) -> Response:
        got = await export_of(request, "metrics")
        if isinstance(got, Response):
            return got
        source_id, export = got
        try:
            points, rejected = ttft_points(export)
        except ExportShapeError as exc:
            return JSONResponse({"message": f"the body is not an OTLP metrics export: {exc}"}, status_code=400)
        rejected += await asyncio.to_thread(store_ttft_points, store, source_id, points)
        return _answer(request, SIGNALS["metrics"], rejected)

    return Starlette(
        routes=[Route("/v1/traces", traces, methods=["POST"]), Route("/v1/metrics", metrics, methods=["POST"])]
    )
