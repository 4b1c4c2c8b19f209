"""OTLP exports that no SDK sends: wrong types at every level, times and timings out of range, ids missing, values
nested thousands deep. For the OTLP receiver's tests and, case by case, for the shared hostile corpus.

`HOSTILE_TRACES` and `HOSTILE_METRICS` list (case id, export, rejected, why): an export (OTLP JSON's dict shape)
holding GOOD readable spans or points (`good_spans(n)`, `good_point()`: whole and valid, dated NOW_MS's hour) beside
the hostile part; `rejected` is how many spans or points (or malformed entries) the receiver must count back, and
`why` a piece of the reason it must give. The GOOD ones are stored whatever the hostile part is, and
`stored_expected` says how many rows (spans) or requests (the hour's, from points) the case stores in all.
`NOT_EXPORTS` lists (case id, body, content type) that are not an export at all: a 400.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "GOOD",
    "as_json",
    "HOSTILE_METRICS",
    "HOSTILE_TRACES",
    "NOT_EXPORTS",
    "NOW_MS",
    "TTFT",
    "deep",
    "good_point",
    "good_spans",
    "span",
    "stored_expected",
    "traces",
]

NOW_MS = 1_794_823_200_000  # 2026-11-16 10:00 UTC: the receiver's clock in these tests
T0_NS = (NOW_MS - 3_600_000) * 1_000_000  # an hour before it: the spans' hour
GOOD = 3
TTFT = "gen_ai.server.time_to_first_token"
_DEEP = 800  # under Python's JSON parser's limit, past anything a reader should recurse through


def deep(levels: int = _DEEP) -> Any:
    """A list nested `levels` deep, with a number at the bottom."""
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


def _value(v: Any) -> dict[str, Any]:
    return {"intValue": str(v)} if isinstance(v, int) else {"stringValue": str(v)}


def span(i: int, start_ns: int | None = None, **attrs: Any) -> dict[str, Any]:
    """A GenAI span as OTLP JSON: trace/span ids from `i`, 1,000 input tokens, TTFT 300 ms by its first-token event,
    900 ms long, starting at `start_ns` (default: i s after T0); `attrs` (None drops one) over its attributes."""
    start = T0_NS + i * 1_000_000_000 if start_ns is None else start_ns
    every = {"gen_ai.request.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": 1000, **attrs}
    return {
        "traceId": f"7{i:031x}",
        "spanId": f"5{i:015x}",
        "name": f"chat {i}",
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 900_000_000),
        "attributes": [{"key": k, "value": _value(v)} for k, v in every.items() if v is not None],
        "events": [{"name": "gen_ai.first_token", "timeUnixNano": str(start + 300_000_000)}],
    }


def good_spans(n: int = GOOD) -> list[dict[str, Any]]:
    return [span(i) for i in range(n)]


def traces(*extra_spans: Any, resource_extra: tuple[Any, ...] = (), scope_extra: tuple[Any, ...] = ()) -> dict:
    """A trace export: GOOD spans and `extra_spans` in one scope, then `scope_extra` scopeSpans entries, then
    `resource_extra` resourceSpans entries."""
    scope = {"scope": {"name": "genai"}, "spans": [*good_spans(), *extra_spans]}
    return {"resourceSpans": [{"scopeSpans": [scope, *scope_extra]}, *resource_extra]}


def _with(i: int, **fields: Any) -> dict[str, Any]:
    """span(i) with its top-level fields replaced (None: removed)."""
    out = span(i)
    for k, v in fields.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = v
    return out


def _attr_value(i: int, key: str, value: Any) -> dict[str, Any]:
    """span(i) with attribute `key`'s AnyValue set to `value` as given (any JSON)."""
    out = span(i)
    out["attributes"] = [a for a in out["attributes"] if a["key"] != key] + [{"key": key, "value": value}]
    return out


def _ttft_attr(i: int, value: Any) -> dict[str, Any]:
    """span(i) whose TTFT is only its gen_ai.server.time_to_first_token attribute, with AnyValue `value`."""
    return _attr_value(i, TTFT, value) | {"events": []}


HOSTILE_TRACES: list[tuple[str, dict, int, str]] = [
    ("ttft abc", traces(_ttft_attr(10, {"stringValue": "abc"})), 1, f"{TTFT} is 'abc', not a number of seconds"),
    ("resourceSpans entry a string", traces(resource_extra=("x",)), 1, "resourceSpans[1] is 'x', not an object"),
    ("resourceSpans entry null", traces(resource_extra=(None,)), 1, "resourceSpans[1] is None"),
    ("scopeSpans a string", traces(resource_extra=({"scopeSpans": "x"},)), 1, "scopeSpans is 'x', not an array"),
    ("scopeSpans entry a string", traces(scope_extra=("x",)), 1, "scopeSpans[1] is 'x', not an object"),
    ("spans an object", traces(scope_extra=({"spans": {"a": 1}},)), 1, "spans is an object, not an array"),
    ("span a number", traces(7), 1, "spans[3] is 7, not an object"),
    ("attributes a string", traces(_with(10, attributes="x")), 1, "attributes is 'x', not a list"),
    ("attributes a number", traces(_with(10, attributes=5)), 1, "attributes is 5"),
    ("attribute entry a string", traces(_with(10, attributes=["x"])), 1, "attributes[0] is 'x'"),
    ("attribute key a number", traces(_with(10, attributes=[{"key": 5, "value": {}}])), 1, "attributes[0]"),
    (
        "input tokens an array",
        traces(_attr_value(10, "gen_ai.usage.input_tokens", {"arrayValue": {"values": []}})),
        1,
        "gen_ai.usage.input_tokens",
    ),
    (
        "input tokens a bool",
        traces(_attr_value(10, "gen_ai.usage.input_tokens", {"boolValue": True})),
        1,
        "gen_ai.usage.input_tokens",
    ),
    (
        "input tokens intValue abc",
        traces(_attr_value(10, "gen_ai.usage.input_tokens", {"intValue": "abc"})),
        1,
        "not a number: 'abc'",
    ),
    ("input tokens 1e30", traces(span(10, **{"gen_ai.usage.input_tokens": 10**30})), 1, "over 10⁹"),
    ("input tokens negative", traces(span(10, **{"gen_ai.usage.input_tokens": -3})), 1, "negative"),
    ("start 1e308", traces(_with(10, startTimeUnixNano=1e308)), 1, "startTimeUnixNano"),
    ("start -1", traces(_with(10, startTimeUnixNano="-1")), 1, "startTimeUnixNano"),
    ("start a huge int", traces(_with(10, startTimeUnixNano=10**30)), 1, "startTimeUnixNano"),
    ("start 40 digits", traces(_with(10, startTimeUnixNano="9" * 40)), 1, "startTimeUnixNano"),
    ("start an object", traces(_with(10, startTimeUnixNano={"a": 1})), 1, "startTimeUnixNano"),
    ("start missing", traces(_with(10, startTimeUnixNano=None)), 1, "missing timestamp startTimeUnixNano"),
    ("end inf", traces(_with(10, endTimeUnixNano="inf")), 1, "endTimeUnixNano"),
    ("end before start", traces(_with(10, endTimeUnixNano=str(T0_NS))), 1, "duration"),
    (
        "first token before start",
        traces(_with(10, events=[{"name": "gen_ai.first_token", "timeUnixNano": str(T0_NS)}])),
        1,
        "TTFT (the first-token event's time − startTimeUnixNano) is negative",
    ),
    ("events a string", traces(_with(10, events="x")), 1, "events is 'x', not an array"),
    ("events a number", traces(_with(10, events=5)), 1, "events is 5"),
    ("event entry a string", traces(_with(10, events=["x"])), 1, "events[0] is 'x'"),
    ("ttft -5 s", traces(_ttft_attr(10, {"doubleValue": -5})), 1, f"{TTFT} is negative (-5000 ms)"),
    ("ttft inf", traces(_ttft_attr(10, {"stringValue": "inf"})), 1, "not a finite number"),
    ("ttft nan", traces(_ttft_attr(10, {"doubleValue": "NaN"})), 1, "not a finite number"),
    ("ttft 10**400", traces(_ttft_attr(10, {"intValue": 10**400})), 1, TTFT),
    ("ttft over a week", traces(_ttft_attr(10, {"doubleValue": 700_000.0})), 1, "over a week"),
    ("start two days ahead", traces(span(11, (NOW_MS + 2 * 86_400_000) * 10**6)), 1, "more than a day in the future"),
    ("start in 2200", traces(span(11, 7_258_118_400 * 10**9)), 1, "outside 1970–2100"),
    ("model an object", traces(_attr_value(10, "gen_ai.request.model", {"kvlistValue": {}})), 1, "not a model name"),
    ("deep attribute value", traces(_attr_value(10, "gen_ai.usage.input_tokens", deep())), 1, "input_tokens"),
    ("deep name", traces(_with(10, name=deep(), attributes=5)), 1, "span an array"),
    ("no ids", traces(_with(10, traceId=None, spanId=None)), 1, "no traceId"),
    ("empty span id", traces(_with(10, spanId="")), 1, "no spanId"),
    ("span id not hex", traces(_with(10, spanId="zz" * 8)), 1, "spanId 'zzzzzzzzzzzzzzzz' is not 16 hex digits"),
    ("trace id a number", traces(_with(10, traceId=5)), 1, "traceId 5 is not 32 hex digits"),
    ("trace id base64", traces(_with(10, traceId="AAECAwQFBgcICQoLDA0ODw==")), 1, "traceId"),
    ("all-zero ids", traces(_with(10, traceId="0" * 32)), 1, "all zeros"),
    ("a good span twice", traces(span(0)), 0, ""),  # stored once: the export is at-least-once
    ("server port abc", traces(span(10, **{"server.address": "h", "server.port": "abc"})), 0, ""),
    (
        "model and server with a lone surrogate and a NUL",
        traces(span(10, **{"gen_ai.request.model": "m\ud800\x00", "server.address": "h\udfff"})),
        0,
        "",
    ),
]

# --- metrics --------------------------------------------------------------------------------------------------------

BOUNDS_S = [0.05, 0.1, 0.2, 0.5, 1.0]


def good_point(**fields: Any) -> dict[str, Any]:
    """A DELTA point of the TTFT histogram (s) for model m: 6 requests, in T0's hour; `fields` over its own."""
    point = {
        "startTimeUnixNano": str(T0_NS),
        "timeUnixNano": str(T0_NS + 60_000_000_000),
        "count": "6",
        "bucketCounts": ["1", "2", "3", "0", "0", "0"],
        "explicitBounds": list(BOUNDS_S),
        "attributes": [{"key": "gen_ai.request.model", "value": {"stringValue": "m"}}],
    }
    for k, v in fields.items():
        if v is None:
            point.pop(k, None)
        else:
            point[k] = v
    return point


def metrics(*extra_points: Any, metric_extra: tuple = (), scope_extra: tuple = (), resource_extra: tuple = ()) -> dict:
    """A metrics export: one good point and `extra_points` of the TTFT histogram (delta, s), then the extra metrics,
    scopeMetrics and resourceMetrics entries."""
    ttft = {"name": TTFT, "unit": "s", "histogram": {"dataPoints": [good_point(), *extra_points]}}
    ttft["histogram"]["aggregationTemporality"] = 1
    scope = {"scope": {"name": "genai"}, "metrics": [ttft, *metric_extra]}
    return {"resourceMetrics": [{"scopeMetrics": [scope, *scope_extra]}, *resource_extra]}


def _ttft_metric(**over: Any) -> dict[str, Any]:
    metric = {"name": TTFT, "unit": "s", "histogram": {"dataPoints": [good_point()], "aggregationTemporality": 1}}
    return metric | over


HOSTILE_METRICS: list[tuple[str, dict, int, str]] = [
    ("resourceMetrics entry a string", metrics(resource_extra=("x",)), 1, "resourceMetrics[1] is 'x'"),
    ("scopeMetrics a number", metrics(resource_extra=({"scopeMetrics": 3},)), 1, "scopeMetrics is 3, not an array"),
    ("scopeMetrics entry a string", metrics(scope_extra=("x",)), 1, "scopeMetrics[1] is 'x'"),
    ("metrics entry a number", metrics(metric_extra=(7,)), 1, "metrics[1] is 7, not an object"),
    (
        "dataPoints a string",
        metrics(metric_extra=(_ttft_metric(histogram={"dataPoints": "x", "aggregationTemporality": 1}),)),
        1,
        "histogram.dataPoints is 'x', not an array",
    ),
    ("data point a number", metrics(7), 1, "dataPoints[1] is 7"),
    ("histogram a list", metrics(metric_extra=(_ttft_metric(histogram=[1]),)), 1, "histogram is an array"),
    ("unit an object", metrics(metric_extra=(_ttft_metric(unit={"a": deep()}),)), 1, "unit an object"),
    ("resource attributes a string", metrics(resource_extra=({"resource": {"attributes": "x"}},)), 1, "resource"),
    ("point attributes a number", metrics(good_point(attributes=5)), 1, "attributes is 5"),
    ("bucket count abc", metrics(good_point(bucketCounts=["abc", "2", "3", "0", "0", "0"])), 1, "'abc', not a count"),
    ("bucket count 30 digits", metrics(good_point(bucketCounts=["9" * 30, *"23000"])), 1, "not a count"),
    ("bucket counts an object", metrics(good_point(bucketCounts={"a": 1})), 1, "must be lists"),
    ("bound abc", metrics(good_point(explicitBounds=["abc", 0.1, 0.2, 0.5, 1.0])), 1, "'abc', not a number"),
    ("bound 10**400", metrics(good_point(explicitBounds=[10**400, 0.1, 0.2, 0.5, 1.0])), 1, "not a number"),
    ("time 1e308", metrics(good_point(timeUnixNano=1e308)), 1, "timeUnixNano"),
    ("time -1", metrics(good_point(timeUnixNano="-1")), 1, "timeUnixNano"),
    ("time huge", metrics(good_point(timeUnixNano=10**30)), 1, "timeUnixNano"),
    ("time unicode digits", metrics(good_point(timeUnixNano="²³")), 1, "timeUnixNano"),
    (
        "temporality a list",
        metrics(metric_extra=(_ttft_metric(histogram={"dataPoints": [good_point()], "aggregationTemporality": [1]}),)),
        1,
        "aggregationTemporality an array is neither delta nor cumulative",
    ),
    ("a deep point attribute is an attribute", metrics(good_point(attributes=[{"key": "x", "value": deep()}])), 0, ""),
    (
        "a model with a lone surrogate and a NUL",
        metrics(good_point(attributes=[{"key": "gen_ai.request.model", "value": {"stringValue": "m\ud800\x00"}}])),
        0,
        "",
    ),
]

# --- not an export at all -------------------------------------------------------------------------------------------

NOT_EXPORTS: list[tuple[str, bytes, str]] = [
    ("JSON 100,000 deep", b"[" * 100_000 + b"]" * 100_000, "application/json"),
    ("JSON object 100,000 deep", b'{"a":' * 100_000 + b"1" + b"}" * 100_000, "application/json"),
    ("a top-level list", b"[1, 2]", "application/json"),
    ("a top-level string", b'"resourceSpans"', "application/json"),
    ("the top list a string", b'{"resourceSpans": "x", "resourceMetrics": "x"}', "application/json"),
    ("invalid UTF-8", b'\xff\xfe{"resourceSpans": []}', "application/json"),
    ("an int of 5,000 digits", b'{"resourceSpans": [], "x": ' + b"9" * 5000 + b"}", "application/json"),
    ("protobuf garbage", b"\x0a\xff\xff\xff\xff\x0f", "application/x-protobuf"),
    ("text/plain", b"{}", "text/plain"),
]


def as_json(export: dict) -> bytes:
    """The export as an OTLP/HTTP JSON body."""
    return json.dumps(export).encode()


#: Cases whose hostile part holds something readable besides the GOOD spans or the good point: what more it stores.
_MORE_STORED = {
    "server port abc": 1,
    "model and server with a lone surrogate and a NUL": 1,
    "a deep point attribute is an attribute": 6,
    "a model with a lone surrogate and a NUL": 6,
}


def stored_expected(signal: str, case_id: str) -> int:
    """What a case stores: spans ("traces") or TTFT requests in the hour ("metrics")."""
    return (GOOD if signal == "traces" else 6) + _MORE_STORED.get(case_id, 0)
