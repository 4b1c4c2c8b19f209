"""An OTLP/HTTP receiver for OpenTelemetry GenAI spans: the SDKs' own exports, stored as production requests.

`POST /v1/traces` takes an ExportTraceServiceRequest as protobuf (`application/x-protobuf`, the SDK exporter's
default; needs the `otlp` extra: opentelemetry-proto) or JSON (`application/json`), gzip or not, with
`Authorization: Bearer <token>` (the token from the environment variable the source names; compared in constant
time). Each GenAI span (planner.logs.otel: gen_ai.usage.* attributes; TTFT from a first-token event or
`gen_ai.server.time_to_first_token`) becomes one row of the source, keyed by trace and span id, so a batch the
exporter retries is stored once. A span that cannot be read is counted back to the exporter as rejected (OTLP's
partial success) and the rest are stored; a body that is not OTLP at all is a 400 with the reason; nothing half-stored.
Spans that are not model calls (HTTP, tools) are left out. Metrics (`/v1/metrics`) are not read yet.
"""

from __future__ import annotations

import asyncio
import gzip
import hmac
import json
import math
from typing import Any

from sqlalchemy.engine import Engine
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from planner.errors import PlannerError
from planner.logs.otel import keyed_spans
from planner.logs.records import Reject
from planner.store.sources import store_batch

__all__ = ["MAX_BODY_BYTES", "OtlpError", "decode", "receiver_app"]

MAX_BODY_BYTES = 16 << 20  # an OTLP batch larger than this is refused (the SDK's batches are far smaller)


class OtlpError(PlannerError, ValueError):
    """A body that is not an OTLP trace export: the message says why."""


def decode(body: bytes, content_type: str, content_encoding: str = "") -> dict[str, Any]:
    """An ExportTraceServiceRequest as OTLP JSON's dict shape, from protobuf or JSON; OtlpError otherwise."""
    if content_encoding.lower() == "gzip":
        try:
            body = gzip.decompress(body)
        except (OSError, EOFError) as exc:
            raise OtlpError(f"the body is not gzip: {exc}") from None
    kind = content_type.split(";")[0].strip().lower()
    if kind == "application/json":
        try:
            got = json.loads(body)
        except ValueError as exc:
            raise OtlpError(f"the body is not JSON: {exc}") from None
        if not isinstance(got, dict) or not isinstance(got.get("resourceSpans", []), list):
            raise OtlpError("the JSON is not an OTLP trace export (no resourceSpans list)")
        return got
    if kind == "application/x-protobuf":
        try:
            from google.protobuf.json_format import MessageToDict
            from google.protobuf.message import DecodeError
            from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
        except ImportError:
            raise OtlpError("protobuf bodies need the otlp extra: pip install 'ttft-planner[otlp]'") from None
        msg = ExportTraceServiceRequest()
        try:
            msg.ParseFromString(body)
        except DecodeError as exc:
            raise OtlpError(f"the body is not an OTLP protobuf trace export: {exc}") from None
        return MessageToDict(msg)
    raise OtlpError(f"content type {kind or '(none)'} is neither application/x-protobuf nor application/json")


def _row(key: str, row: Any) -> dict[str, Any]:
    return {
        "request_id": key[:200],
        "ts_ms": int(row.ts_ms),
        "model": str(row.model)[:200],
        "api_base": "otlp",
        "prompt_tokens": int(row.prompt_tokens),
        "cached_tokens": int(row.cached_tokens),
        "output_tokens": int(row.output_tokens),
        "ttft_ms": None if math.isnan(row.ttft_ms) else float(row.ttft_ms),
        "duration_ms": None if math.isnan(row.duration_ms) else float(row.duration_ms),
    }


def receiver_app(store: Engine, source_id: int, token: str) -> Starlette:
    """The receiver's ASGI app: /v1/traces into source `source_id` of `store`, for the holder of `token`."""
    if not token:
        raise ValueError("the receiver needs a bearer token")
    expected = f"Bearer {token}".encode()

    async def traces(request: Request) -> Response:
        given = request.headers.get("authorization", "").encode()
        if not hmac.compare_digest(given, expected):
            return JSONResponse({"message": "a valid bearer token is required"}, status_code=401)
        body = await request.body()
        if len(body) > MAX_BODY_BYTES:
            return JSONResponse({"message": f"the body is over {MAX_BODY_BYTES >> 20} MB"}, status_code=413)
        try:
            export = decode(body, request.headers.get("content-type", ""), request.headers.get("content-encoding", ""))
        except OtlpError as exc:
            return JSONResponse({"message": str(exc)}, status_code=400)
        rows, rejected = [], []
        for key, got in keyed_spans(export):
            if isinstance(got, Reject):
                rejected.append(str(got))
            else:
                rows.append(_row(key, got))
        await asyncio.to_thread(store_batch, store, source_id, rows, None)  # a database call off the event loop
        partial = {"rejectedSpans": len(rejected), "errorMessage": "; ".join(rejected[:5])} if rejected else {}
        return JSONResponse({"partialSuccess": partial})

    return Starlette(routes=[Route("/v1/traces", traces, methods=["POST"])])
