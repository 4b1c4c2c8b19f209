"""OpenTelemetry GenAI spans in OTLP JSON (a collector's file exporter, or an OTLP/HTTP JSON body).

Shape: {"resourceSpans": [{"scopeSpans": [{"spans": [{"startTimeUnixNano", "endTimeUnixNano",
"attributes": [{"key", "value": {"stringValue" | "intValue" | "doubleValue"}}], "events": [...]}]}]}]}.
A model call is a span with `gen_ai.usage.input_tokens` (semantic conventions: includes cached
tokens) or the older `gen_ai.usage.prompt_tokens`; cached tokens come from
`gen_ai.usage.cache_read.input_tokens` (or `gen_ai.usage.cache_read_input_tokens`). Spans without
gen_ai usage (HTTP, tool calls) are not model calls and are left out. TTFT comes from an event whose
name mentions first_token (time since span start), or a `gen_ai.server.time_to_first_token`
attribute in seconds. A timing that is negative or not finite (a first-token event before the span's start, an
end before it, `inf`) makes the span a Reject, as a value of the wrong type does at any level (planner.logs.otlp_walk):
a span or entry that cannot be read is named, the others are read.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from planner.logs.otlp_walk import attributes, entries, shown
from planner.logs.records import Reject, Row, epoch_ms, token_count

__all__ = ["FORMATS", "looks_like", "server_base", "span_records", "spans"]

FORMATS = {"otel": "OpenTelemetry GenAI spans as OTLP JSON (resourceSpans, gen_ai.usage.input_tokens)"}

_INPUT_KEYS = ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens")
_OUTPUT_KEYS = ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens")
_CACHED_KEYS = ("gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_read_input_tokens")
_MODEL_KEYS = ("gen_ai.response.model", "gen_ai.request.model")
_TTFT_KEY = "gen_ai.server.time_to_first_token"


def looks_like(rec: dict) -> bool:
    return isinstance(rec.get("resourceSpans"), list)


def _first(attrs: dict, keys: tuple[str, ...]) -> tuple[str, Any]:
    for key in keys:
        if attrs.get(key) is not None:
            return key, attrs[key]
    return keys[0], None


def _timing_ms(ms: float, what: str) -> float:
    """A span's TTFT or duration (ms) as read; Reject when it is not finite or is negative: a bad span, not a missing
    timing (the log reader's rule for every format: planner.logs.mapped)."""
    if not math.isfinite(ms):
        raise Reject(f"{what} is not a finite number ({ms})")
    if ms < 0:
        raise Reject(f"{what} is negative ({ms:g} ms)")
    return ms


def _seconds_ms(value: Any, field: str) -> float:
    """An attribute in seconds (a number, or a numeric string) as ms; Reject naming `field` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise Reject(f"{field} is {shown(value)}, not a number of seconds")
    try:
        return float(value) * 1000.0
    except (ValueError, OverflowError):
        raise Reject(f"{field} is {shown(value)}, not a number of seconds") from None


def _span_row(span: dict, tz: str) -> Row | None:
    attrs = attributes(span.get("attributes"))
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
        end = epoch_ms(span["endTimeUnixNano"], "endTimeUnixNano", tz)
        duration = _timing_ms(float(end - start), "the duration (endTimeUnixNano − startTimeUnixNano)")
    ttft = math.nan
    events = span.get("events")
    if events is not None and not isinstance(events, list):
        raise Reject(f"events is {shown(events)}, not an array")
    for i, event in enumerate(events or ()):
        if not isinstance(event, dict):
            raise Reject(f"events[{i}] is {shown(event)}, not an object")
        name = event.get("name")
        if isinstance(name, str) and "first_token" in name and event.get("timeUnixNano"):
            at = epoch_ms(event["timeUnixNano"], "events.timeUnixNano", tz)
            ttft = _timing_ms(float(at - start), "the TTFT (the first-token event's time − startTimeUnixNano)")
            break
    if math.isnan(ttft) and attrs.get(_TTFT_KEY) is not None:
        ttft = _timing_ms(_seconds_ms(attrs[_TTFT_KEY], _TTFT_KEY), _TTFT_KEY)
    model_key, model = _first(attrs, _MODEL_KEYS)
    if model is not None and (isinstance(model, bool) or not isinstance(model, str | int | float)):
        raise Reject(f"{model_key} is {shown(model)}, not a model name")
    return Row(start, "" if model is None else str(model), prompt, cached, output, ttft, duration)


def _port(value: Any) -> int | None:
    """A port from 1 to 65535 (a number, or its text), else None."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    text = str(value).strip()
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 5 and 0 < int(text) < 65536 else None


def server_base(span: dict) -> str | None:
    """The base URL a GenAI client span says it called (semantic conventions: `server.address`, `server.port`), or
    None without an address (or with one that is not text). The scheme is `url.scheme` where it is http or https;
    else https on port 443 or no port, http on any other (an engine on :8000 inside the network, as vLLM and
    llama.cpp serve by default). A port that is not one (text, out of 1–65535) is left out."""
    try:
        attrs = attributes(span.get("attributes"))
    except Reject:
        return None
    address = attrs.get("server.address")
    if not isinstance(address, str) or not address.strip():
        return None
    address = address.strip()
    port = _port(attrs.get("server.port"))
    scheme = attrs.get("url.scheme")
    if not isinstance(scheme, str) or scheme.lower() not in ("http", "https"):
        scheme = "https" if port in (None, 443) else "http"
    host = f"[{address}]" if ":" in address else address
    return f"{scheme.lower()}://{host}" + ("" if port is None else f":{port}")


def span_records(rec: dict, tz: str = "UTC") -> Iterator[tuple[dict[str, Any], Row | Reject]]:
    """(span, its Row) for each GenAI span of one OTLP object, and (span, a Reject naming the span, where it is and
    why) for each span that cannot be read; an entry at any level that is not an object (a scopeSpans entry that is
    a string) is a Reject naming its place, with {} as its span. Spans that are not model calls are left out."""
    for rs_place, rs in entries(rec, ("resourceSpans",)):
        if isinstance(rs, Reject):
            yield {}, rs
            continue
        for ss_place, ss in entries(rs, ("scopeSpans", "instrumentationLibrarySpans"), rs_place):
            if isinstance(ss, Reject):
                yield {}, ss
                continue
            for place, span in entries(ss, ("spans",), ss_place):
                if isinstance(span, Reject):
                    yield {}, span
                    continue
                try:
                    row = _span_row(span, tz)
                except Reject as exc:
                    yield span, Reject(f"span {shown(span.get('name'))} at {place}: {exc}")
                    continue
                except RecursionError:  # a value nested thousands deep: a hostile body, not a crash
                    yield span, Reject(f"span at {place}: nested too deeply to be a span")
                    continue
                if row is not None:
                    yield span, row


def spans(rec: dict, tz: str = "UTC") -> Iterator[Row | Reject]:
    """Each GenAI span of one OTLP object as a Row, or a Reject naming the span; other spans are skipped."""
    for _, got in span_records(rec, tz):
        yield got
