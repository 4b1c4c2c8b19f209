"""OpenTelemetry GenAI spans in OTLP JSON (a collector's file exporter, or an OTLP/HTTP JSON body).

Shape: {"resourceSpans": [{"scopeSpans": [{"spans": [{"startTimeUnixNano", "endTimeUnixNano",
"attributes": [{"key", "value": {"stringValue" | "intValue" | "doubleValue"}}], "events": [...]}]}]}]}.
A model call is a span with `gen_ai.usage.input_tokens` (semantic conventions: includes cached
tokens) or the older `gen_ai.usage.prompt_tokens`; cached tokens come from
`gen_ai.usage.cache_read.input_tokens` (or `gen_ai.usage.cache_read_input_tokens`). Spans without
gen_ai usage (HTTP, tool calls) are not model calls and are left out. TTFT comes from an event whose
name mentions first_token (time since span start), or a `gen_ai.server.time_to_first_token`
attribute in seconds.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from planner.logs.records import Reject, Row, epoch_ms, token_count

__all__ = ["FORMATS", "keyed_spans", "looks_like", "server_base", "spans"]

FORMATS = {"otel": "OpenTelemetry GenAI spans as OTLP JSON (resourceSpans, gen_ai.usage.input_tokens)"}

_INPUT_KEYS = ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens")
_OUTPUT_KEYS = ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens")
_CACHED_KEYS = ("gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_read_input_tokens")
_MODEL_KEYS = ("gen_ai.response.model", "gen_ai.request.model")


def looks_like(rec: dict) -> bool:
    return isinstance(rec.get("resourceSpans"), list)


def _value(v: Any) -> Any:
    if not isinstance(v, dict):
        return v
    for key in ("stringValue", "intValue", "doubleValue", "boolValue"):
        if key in v:
            return v[key]
    return None


def _attrs(items: Any) -> dict[str, Any]:
    if isinstance(items, dict):  # some exporters write attributes as a plain object
        return items
    out: dict[str, Any] = {}
    for item in items or ():
        if isinstance(item, dict) and "key" in item:
            out[item["key"]] = _value(item.get("value"))
    return out


def _first(attrs: dict, keys: tuple[str, ...]) -> tuple[str, Any]:
    for key in keys:
        if attrs.get(key) is not None:
            return key, attrs[key]
    return keys[0], None


def _span_row(span: dict, tz: str) -> Row | None:
    attrs = _attrs(span.get("attributes"))
    in_key, raw_in = _first(attrs, _INPUT_KEYS)
    if raw_in is None and not any(k.startswith("gen_ai.usage.") for k in attrs):
        return None
    prompt = token_count(raw_in, in_key)
    out_key, raw_out = _first(attrs, _OUTPUT_KEYS)
    output = token_count(raw_out, out_key, required=False)
    cached_key, raw_cached = _first(attrs, _CACHED_KEYS)
    cached = token_count(raw_cached, cached_key, required=False)
    if cached > prompt:
        raise Reject(f"cached tokens ({cached}) exceed input tokens ({prompt})")
    start = epoch_ms(span.get("startTimeUnixNano"), "startTimeUnixNano", tz)
    duration = math.nan
    if span.get("endTimeUnixNano"):
        duration = float(epoch_ms(span["endTimeUnixNano"], "endTimeUnixNano", tz) - start)
    ttft = math.nan
    for event in span.get("events") or ():
        if isinstance(event, dict) and "first_token" in str(event.get("name", "")) and event.get("timeUnixNano"):
            ttft = float(epoch_ms(event["timeUnixNano"], "events.timeUnixNano", tz) - start)
            break
    if math.isnan(ttft) and attrs.get("gen_ai.server.time_to_first_token") is not None:
        ttft = float(attrs["gen_ai.server.time_to_first_token"]) * 1000.0
    _, model = _first(attrs, _MODEL_KEYS)
    return Row(start, str(model or ""), prompt, cached, output, ttft, duration)


def server_base(span: dict) -> str | None:
    """The base URL a GenAI client span says it called (semantic conventions: `server.address`, `server.port`), or
    None without an address. The scheme is `url.scheme` where given; else https on port 443 or no port, http on any
    other (an engine on :8000 inside the network, as vLLM and llama.cpp serve by default)."""
    attrs = _attrs(span.get("attributes"))
    address = attrs.get("server.address")
    if not address:
        return None
    port = attrs.get("server.port")
    try:
        port = int(port) if port is not None else None
    except (TypeError, ValueError):
        port = None
    scheme = str(attrs.get("url.scheme") or ("https" if port in (None, 443) else "http"))
    host = f"[{address}]" if ":" in str(address) else str(address)
    return f"{scheme}://{host}" + ("" if port is None else f":{port}")


def keyed_spans(rec: dict, tz: str = "UTC") -> Iterator[tuple[str, Row | Reject, dict]]:
    """(trace id + span id, the span as a Row or a Reject naming it, the span itself) for each GenAI span of one OTLP
    object."""
    for rs in rec.get("resourceSpans") or ():
        for ss in (rs or {}).get("scopeSpans") or (rs or {}).get("instrumentationLibrarySpans") or ():
            for span in (ss or {}).get("spans") or ():
                key = f"{span.get('traceId', '')}:{span.get('spanId', '')}"
                try:
                    row = _span_row(span, tz)
                except Reject as exc:
                    yield key, Reject(f"span {str(span.get('name', '?'))[:40]!r}: {exc}"), span
                    continue
                if row is not None:
                    yield key, row, span


def spans(rec: dict, tz: str = "UTC") -> Iterator[Row | Reject]:
    """Each GenAI span of one OTLP object as a Row, or a Reject naming the span; other spans are skipped."""
    for _, got, _ in keyed_spans(rec, tz):
        yield got
