"""An OTLP trace export's GenAI spans as a source's request rows, and a reason for each span refused.

Each span is read by planner.logs.otel (a span or entry of the wrong shape, a token count that is no count, a
negative or infinite TTFT or duration: refused, the others read). A span is keyed by its trace and span id, so a
batch the exporter retries is stored once: both must be there, as OTLP JSON writes them (hex: 32 digits for a
trace, 16 for a span, not all zeros; protobuf ids arrive as the same hex, planner.sources.otlp_body), or the span
is refused, never stored under an empty key that every id-less span would share. Then the one rule for every live
source's requests (planner.sources.admit: arrival 1970–2100 and at most a day ahead of now, timings finite and
under a week, counts whole) decides what is stored.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from planner.logs.otel import server_base, span_records
from planner.logs.otlp_walk import Refusals, shown, storable
from planner.logs.records import Reject, Row
from planner.sources.admit import admit

__all__ = ["request_rows", "span_key"]

_ID_DIGITS = {"traceId": 32, "spanId": 16}  # OTLP: a trace id is 16 bytes, a span id 8, written as hex in JSON


def _span_id(span: Mapping[str, Any], field: str) -> str:
    value = span.get(field)
    digits = _ID_DIGITS[field]
    if value is None or value == "":
        raise Reject(f"no {field}: a span is stored under its trace and span id")
    if not isinstance(value, str) or not re.fullmatch(f"[0-9a-fA-F]{{{digits}}}", value):
        raise Reject(f"{field} {shown(value)} is not {digits} hex digits")
    if not value.strip("0"):
        raise Reject(f"{field} is all zeros, which OTLP reserves for no id")
    return value.lower()


def span_key(span: Mapping[str, Any]) -> str:
    """The span's row key, "<trace id>:<span id>" in lower-case hex; Reject naming the id that is missing or not one."""
    return f"{_span_id(span, 'traceId')}:{_span_id(span, 'spanId')}"


def _text(value: str, limit: int) -> str:
    """Outside text for a column: NULs dropped (PostgreSQL refuses them in text), cut to the column's length."""
    return value.replace("\x00", "")[:limit]


def _row(key: str, row: Row, api_base: str | None) -> dict[str, Any]:
    """A span's request row; its API base from the span's server.address/port (planner.logs.otel.server_base), so
    planner.sources.by_endpoint maps it to a registered endpoint, or "otlp" where the span names no server."""
    return {
        "request_id": key,
        "ts_ms": int(row.ts_ms),
        "model": storable(str(row.model), 200),
        "api_base": storable(api_base or "otlp", 300),
        "prompt_tokens": int(row.prompt_tokens),
        "cached_tokens": int(row.cached_tokens),
        "output_tokens": int(row.output_tokens),
        "ttft_ms": None if math.isnan(row.ttft_ms) else float(row.ttft_ms),
        "duration_ms": None if math.isnan(row.duration_ms) else float(row.duration_ms),
    }


def request_rows(export: dict[str, Any], now_ms: int) -> tuple[list[dict[str, Any]], Refusals]:
    """The request rows (dicts of planner.store.sources.REQUEST_COLUMNS) of one trace export (OTLP JSON's dict
    shape) as of `now_ms` (UTC epoch ms: a span dated more than a day after it is refused), and a reason for each
    span or entry refused. Spans that are not model calls are neither."""
    rows: list[dict[str, Any]] = []
    rejected = Refusals()
    for span, got in span_records(export):
        if isinstance(got, Reject):
            rejected.add(str(got))
            continue
        try:
            key = span_key(span)
        except Reject as exc:
            rejected.add(f"span {shown(span.get('name'))}: {exc}")
            continue
        rows.append(_row(key, got, server_base(span)))
    kept, left_out = admit(rows, now_ms)
    rejected.extend(f"span {key}: {why}" for key, why in left_out)
    return kept, rejected
