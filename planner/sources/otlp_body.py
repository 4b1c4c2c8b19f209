"""An OTLP/HTTP export's body: read within a byte cap as it streams in, unzipped within a cap, decoded to OTLP JSON's
dict shape from protobuf or JSON.

`read_body` refuses a body over MAX_BODY_BYTES as soon as its Content-Length says so (nothing read) or as soon as
the bytes streamed in pass it (at most one chunk more held), so a client sending 800 MB costs the receiver 16 MB.
`decode` unzips a gzip body to at most MAX_UNZIPPED_BYTES (streamed: a bomb is stopped at the cap, not unzipped
whole) and parses it; a body that is not an export of the signal posted is an OtlpError saying why (JSON nested too
deeply to parse included). Protobuf trace and span ids (bytes) come out as the lower-case hex OTLP JSON writes, so
a span sent either way has one key.

What parsing builds grows with the number of values, not of bytes (`{},` is 3 bytes and a dict; an empty protobuf
span 2 bytes, a message and a dict), so that number is bounded before parsing: MAX_JSON_VALUES, counted by the `{`,
`[` and `,` of a JSON body (one per value or key/value pair; those inside strings count too, so the count is never
short), and MAX_PROTOBUF_MESSAGES, counted on the wire (planner.sources.otlp_wire). An export past either is an
OtlpTooLarge; the largest either lets through costs a few hundred MB to parse, not gigabytes.
"""

from __future__ import annotations

import importlib
import json
import zlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from planner.errors import PlannerError
from planner.logs.otlp_walk import shown
from planner.sources.otlp_wire import messages

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_JSON_VALUES",
    "MAX_PROTOBUF_MESSAGES",
    "MAX_UNZIPPED_BYTES",
    "SIGNALS",
    "OtlpError",
    "OtlpTooLarge",
    "decode",
    "proto_module",
    "read_body",
]

MAX_BODY_BYTES = 16 << 20  # an OTLP batch larger than this is refused (the SDK's batches are far smaller)
MAX_UNZIPPED_BYTES = 64 << 20  # … and a gzip body that unzips to more than this
# A span is some 85 JSON values (25 objects, 60 values) or 25 protobuf messages: these let a collector's batch of
# 8,192 spans through, and keep what parsing the largest export builds to a few hundred MB.
MAX_JSON_VALUES = 2_000_000
MAX_PROTOBUF_MESSAGES = 1_000_000


class OtlpError(PlannerError, ValueError):
    """A body that is not an OTLP export of the signal posted: the message says why."""


class OtlpTooLarge(OtlpError):
    """A body over MAX_BODY_BYTES, or a gzip body that unzips to more than MAX_UNZIPPED_BYTES."""


@dataclass(frozen=True)
class Signal:
    """What differs between /v1/traces and /v1/metrics: the export's top list and its protobuf messages."""

    what: str  # in messages: "trace", "metrics"
    top: str  # OTLP JSON's top-level list
    module: str  # opentelemetry-proto's module of the collector service
    request: str
    response: str
    rejected: str  # the partial success's count, as OTLP JSON names it


SIGNALS = {
    "traces": Signal(
        "trace",
        "resourceSpans",
        "opentelemetry.proto.collector.trace.v1.trace_service_pb2",
        "ExportTraceServiceRequest",
        "ExportTraceServiceResponse",
        "rejectedSpans",
    ),
    "metrics": Signal(
        "metrics",
        "resourceMetrics",
        "opentelemetry.proto.collector.metrics.v1.metrics_service_pb2",
        "ExportMetricsServiceRequest",
        "ExportMetricsServiceResponse",
        "rejectedDataPoints",
    ),
}


def proto_module(signal: Signal) -> Any:
    """opentelemetry-proto's collector module of `signal`; OtlpError when the otlp extra is not installed."""
    try:
        return importlib.import_module(signal.module)
    except ImportError:
        raise OtlpError("protobuf bodies need the otlp extra: pip install 'ttft-planner[otlp]'") from None


async def read_body(
    chunks: AsyncIterator[bytes], content_length: str | None, limit_bytes: int = MAX_BODY_BYTES
) -> bytes:
    """The body from its `chunks` as they stream in (Starlette's `request.stream()`). OtlpTooLarge at once when
    `content_length` (the header, as sent) is over `limit_bytes`, and as soon as the bytes read pass it: no more
    than `limit_bytes` plus one chunk is ever held."""
    declared = (content_length or "").strip()
    if declared.isascii() and declared.isdigit() and (len(declared) > 18 or int(declared) > limit_bytes):
        raise OtlpTooLarge(f"the body is over {limit_bytes >> 20} MB (Content-Length {declared[:20]})")
    body = bytearray()
    async for chunk in chunks:
        body += chunk
        if len(body) > limit_bytes:
            raise OtlpTooLarge(f"the body is over {limit_bytes >> 20} MB")
    return bytes(body)


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


def _hex_ids(msg: Any, export: dict[str, Any]) -> None:
    """Each span's traceId and spanId in `export` (MessageToDict of `msg`, which writes bytes as base64) as the hex
    of its bytes, as OTLP JSON writes them; an empty id stays absent. MessageToDict keeps every list's order, so
    the message and the dict are walked side by side."""
    for rs_msg, rs in zip(msg.resource_spans, export.get("resourceSpans", ()), strict=True):
        for ss_msg, ss in zip(rs_msg.scope_spans, rs.get("scopeSpans", ()), strict=True):
            for span_msg, span in zip(ss_msg.spans, ss.get("spans", ()), strict=True):
                for field, raw in (("traceId", span_msg.trace_id), ("spanId", span_msg.span_id)):
                    if raw:
                        span[field] = raw.hex()


def _from_protobuf(body: bytes, sig: Signal) -> dict[str, Any]:
    module = proto_module(sig)
    from google.protobuf.json_format import MessageToDict
    from google.protobuf.message import DecodeError

    msg = getattr(module, sig.request)()
    if messages(body, msg.DESCRIPTOR, MAX_PROTOBUF_MESSAGES) > MAX_PROTOBUF_MESSAGES:
        raise OtlpTooLarge(f"the export holds over {MAX_PROTOBUF_MESSAGES:,} messages: send smaller batches")
    try:
        msg.ParseFromString(body)
        export = dict(MessageToDict(msg))
    except (DecodeError, RecursionError) as exc:
        raise OtlpError(f"the body is not an OTLP protobuf {sig.what} export: {str(exc)[:200]}") from None
    if sig.top == "resourceSpans":
        _hex_ids(msg, export)
    return export


def decode(body: bytes, content_type: str, content_encoding: str = "", signal: str = "traces") -> dict[str, Any]:
    """An OTLP export of `signal` ("traces": ExportTraceServiceRequest, "metrics": ExportMetricsServiceRequest) as
    OTLP JSON's dict shape, from protobuf or JSON; OtlpError when it is not one (OtlpTooLarge: it unzips past
    MAX_UNZIPPED_BYTES)."""
    sig = SIGNALS[signal]
    encoding = content_encoding.strip().lower()
    if encoding == "gzip":
        body = _gunzip(body)
    elif encoding not in ("", "identity"):
        raise OtlpError(f"content encoding {shown(content_encoding)} is neither gzip nor none")
    kind = content_type.split(";")[0].strip().lower()
    if kind == "application/json":
        if body.count(b"{") + body.count(b"[") + body.count(b",") > MAX_JSON_VALUES:
            raise OtlpTooLarge(f"the export holds over {MAX_JSON_VALUES:,} JSON values: send smaller batches")
        try:
            got = json.loads(body)
        except RecursionError:
            raise OtlpError("the body is JSON nested too deeply to be an OTLP export") from None
        except ValueError as exc:
            raise OtlpError(f"the body is not JSON: {str(exc)[:200]}") from None
        if not isinstance(got, dict) or not isinstance(got.get(sig.top, []), list):
            raise OtlpError(f"the JSON is not an OTLP {sig.what} export (no {sig.top} list)")
        return got
    if kind == "application/x-protobuf":
        return _from_protobuf(body, sig)
    raise OtlpError(f"content type {kind[:60] or '(none)'} is neither application/x-protobuf nor application/json")
