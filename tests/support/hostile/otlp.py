"""The OTLP receiver (planner.sources.otlp.receiver_app on a real local uvicorn server), traces and metrics.

Each case is posted as exports: a value in every slot of an export holding GOOD readable spans (or one good data
point) beside it (`span_slots`, `export_slots`: a span's TTFT, times, ids, attributes, events; a point's counts,
bounds, times; an entry at every level), then as the whole top list and the whole body; a time as the spans' start
(as a string of digits and as a number); a body or a transform as JSON and as protobuf; a huge body streamed lazily,
a gzip or zstd bomb as the Content-Encoding says. An answer is REFUSED when it is a 4xx with a message or an OTLP
partial success naming what it rejected, READ when it is a full success; either way the good spans are stored and
every stored row or hour is sane. A 500, a 503 or an error logged is WRONG.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
from collections.abc import Iterator
from typing import Any

import httpx

from planner.simulator.runner import running_simulator
from planner.sources.otlp import receiver_app
from planner.store.source_hours import load_hours
from planner.store.sources import SourceKind, add_source, load_source_requests
from tests.support.hostile.corpus import HOLE, HUGE_BYTES, OTLP_TOKEN, Case, embed, gzip_bomb, zstd_bomb
from tests.support.hostile.outcome import READ, REFUSED, WRONG, Env, Outcome, logged_failures, one_line, sane_number

__all__ = ["NOW_MS", "otlp_accepts", "otlp_metrics", "otlp_traces"]

NOW_MS = 1_794_823_200_000  # 2026-11-16 10:00 UTC: the receiver's clock
_T0_NS = (NOW_MS - 3_600_000) * 1_000_000
_WEEK_MS = 7 * 86_400_000
GOOD = 3
TTFT = "gen_ai.server.time_to_first_token"
_H = HOLE
_ids = itertools.count(1)


def otlp_accepts(case: Case) -> bool:
    return case.role not in ("echo", "dsn", "pasted")


def _attrs(**values: Any) -> list[dict[str, Any]]:
    return [{"key": k, "value": v} for k, v in values.items()]


def span(start_ns: int | str | float | None = None, **over: Any) -> dict[str, Any]:
    """A GenAI span as OTLP JSON with fresh ids: 1,000 input tokens, TTFT 300 ms by its first-token event, 900 ms
    long, starting at `start_ns` (default: a fresh second of T0's hour); `over` replaces its fields."""
    n = next(_ids)
    start = _T0_NS + (n % 3000) * 1_000_000_000 if start_ns is None else start_ns
    shift = (lambda ms: str(int(start) + ms * 1_000_000)) if isinstance(start, int) else (lambda ms: start)
    out = {
        "traceId": f"{n:032x}",
        "spanId": f"{n:016x}",
        "name": "chat m",
        "startTimeUnixNano": str(start) if isinstance(start, int) else start,
        "endTimeUnixNano": shift(900),
        "attributes": _attrs(
            **{"gen_ai.request.model": {"stringValue": "m"}, "gen_ai.usage.input_tokens": {"intValue": "1000"}}
        ),
        "events": [{"name": "gen_ai.first_token", "timeUnixNano": shift(300)}],
    }
    return out | over


def _with_attr(key: str, value: Any) -> dict[str, Any]:
    out = span()
    out["attributes"] = [a for a in out["attributes"] if a["key"] != key] + [{"key": key, "value": value}]
    if key == TTFT:
        out["events"] = []
    return out


def span_slots() -> list[Any]:
    """One span for each slot a value can take (fresh ids each call)."""
    first = span()
    first["events"] = [{"name": "gen_ai.first_token", "timeUnixNano": _H}]
    return [
        _with_attr(TTFT, {"doubleValue": _H}),
        _with_attr(TTFT, {"intValue": _H}),
        _with_attr(TTFT, {"stringValue": _H}),
        _with_attr(TTFT, _H),
        _with_attr("gen_ai.usage.input_tokens", {"intValue": _H}),
        _with_attr("gen_ai.usage.output_tokens", {"doubleValue": _H}),
        _with_attr("gen_ai.request.model", {"stringValue": _H}),
        _with_attr("server.port", {"intValue": _H}),
        span(startTimeUnixNano=_H),
        span(endTimeUnixNano=_H),
        first,
        span(traceId=_H),
        span(spanId=_H),
        span(name=_H),
        span(attributes=_H),
        span(attributes=[_H]),
        span(attributes=[{"key": _H, "value": {"stringValue": "x"}}]),
        span(events=_H),
        span(events=[_H]),
        _H,
    ]


def _traces(spans: list[Any], *, extra: bool = True) -> tuple[dict[str, Any], list[str]]:
    """A trace export of GOOD spans and `spans` (and, with `extra`, a value at every level above a span); the good
    spans' keys."""
    good = [span() for _ in range(GOOD)]
    scopes: list[Any] = [{"scope": {"name": "genai"}, "spans": [*good, *spans]}]
    resources: list[Any] = [{"resource": {"attributes": []}, "scopeSpans": scopes}]
    if extra:
        scopes += [{"scope": {"name": "x"}, "spans": _H}, _H, {"scope": _H, "spans": []}]
        resources += [{"resource": {"attributes": _H}, "scopeSpans": []}, {"resource": _H}, _H]
    return {"resourceSpans": resources}, [f"{s['traceId']}:{s['spanId']}" for s in good]


def _point(**over: Any) -> dict[str, Any]:
    """A DELTA point of the TTFT histogram (s) for model m: 6 requests in T0's hour."""
    point = {
        "startTimeUnixNano": str(_T0_NS),
        "timeUnixNano": str(_T0_NS + 60_000_000_000),
        "count": "6",
        "sum": 1.2,
        "bucketCounts": ["1", "2", "3", "0", "0", "0"],
        "explicitBounds": [0.05, 0.1, 0.2, 0.5, 1.0],
        "attributes": _attrs(**{"gen_ai.request.model": {"stringValue": "m"}}),
    }
    return point | over


def _metric(points: list[Any], **over: Any) -> dict[str, Any]:
    histogram = {"dataPoints": points, "aggregationTemporality": 1}
    return {"name": TTFT, "unit": "s", "histogram": histogram} | over


def _metrics(points: list[Any], *, extra: bool = True) -> dict[str, Any]:
    metrics: list[Any] = [_metric([_point(), *points])]
    if extra:
        metrics += [
            _metric([_point()], unit=_H),
            _metric([_point()], name=_H),
            _metric([], histogram=_H),
            _metric([], histogram={"dataPoints": _H, "aggregationTemporality": 1}),
            _metric([], histogram={"dataPoints": [_point()], "aggregationTemporality": _H}),
            _H,
        ]
    scopes: list[Any] = [{"scope": {"name": "genai"}, "metrics": metrics}]
    if extra:
        scopes += [_H, {"scope": _H, "metrics": _H}]
    resources: list[Any] = [{"scopeMetrics": scopes}] + ([_H, {"resource": {"attributes": _H}}] if extra else [])
    return {"resourceMetrics": resources}


def point_slots() -> list[Any]:
    return [
        _point(count=_H),
        _point(sum=_H),
        _point(bucketCounts=_H),
        _point(bucketCounts=[_H, "2", "3", "0", "0", "0"]),
        _point(explicitBounds=_H),
        _point(explicitBounds=[_H, 0.1, 0.2, 0.5, 1.0]),
        _point(timeUnixNano=_H),
        _point(startTimeUnixNano=_H),
        _point(attributes=_H),
        _point(attributes=_attrs(**{"gen_ai.request.model": {"stringValue": _H}})),
        _H,
    ]


def _ns(epoch_s: float) -> list[str | float]:
    """A time in ns as OTLP JSON writes it (a string of digits) and as a bare number."""
    whole = str(int(epoch_s) * 10**9) if math.isfinite(epoch_s) else repr(epoch_s)
    return [whole, epoch_s * 1e9]


@functools.cache
def _proto(signal: str) -> Any:
    from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

    if signal == "traces":
        return trace_service_pb2.ExportTraceServiceRequest
    return metrics_service_pb2.ExportMetricsServiceRequest


def _protobuf(signal: str, export: dict[str, Any]) -> bytes:
    """`export` (OTLP JSON's shape, without holes) as protobuf."""
    from google.protobuf.json_format import ParseDict

    return ParseDict(export, _proto(signal)()).SerializeToString()


_JSON, _PROTO = "application/json", "application/x-protobuf"


def _posts(signal: str, case: Case) -> Iterator[tuple[str, Any, dict[str, str], list[str]]]:
    """(what it holds, body, headers, good span keys) of every post the case makes to `signal`."""
    traces = signal == "traces"
    if case.role == "body":
        assert case.body is not None
        yield "the body as JSON", case.body, {"content-type": _JSON}, []
        yield "the body as protobuf", case.body, {"content-type": _PROTO}, []
    elif case.role == "transform":
        assert case.transform is not None
        export, good = _traces([], extra=False) if traces else (_metrics([], extra=False), [])
        yield "a good export", case.transform(json.dumps(export).encode()), {"content-type": _JSON}, []
        yield "a good export", case.transform(_protobuf(signal, export)), {"content-type": _PROTO}, []
    elif case.role == "value":
        export, good = _traces(span_slots()) if traces else (_metrics(point_slots()), [])
        yield "a value in every slot", embed(export, case.value).encode(), {"content-type": _JSON}, good
        top = "resourceSpans" if traces else "resourceMetrics"
        yield f"{top} the value", embed({top: _H}, case.value).encode(), {"content-type": _JSON}, []
        yield "the value as the body", embed(_H, case.value).encode(), {"content-type": _JSON}, []
    elif case.role == "time":
        assert case.epoch_s is not None
        for start in _ns(case.epoch_s):
            if traces:
                export, good = _traces([span(start)], extra=False)
            else:
                export, good = _metrics([_point(startTimeUnixNano=start, timeUnixNano=start)], extra=False), []
            yield f"a time of {start!r} ns", json.dumps(export).encode(), {"content-type": _JSON}, good
    elif case.behaviour == "huge":
        yield "a huge body", _lazy(HUGE_BYTES), {"content-type": _JSON}, []
    elif case.behaviour in ("gzip_bomb", "zstd_bomb"):
        coding = "gzip" if case.behaviour == "gzip_bomb" else "zstd"
        body = gzip_bomb() if coding == "gzip" else zstd_bomb()
        for kind in (_JSON, _PROTO):
            yield f"a {coding} bomb", body, {"content-type": kind, "content-encoding": coding}, []


def _lazy(total: int) -> Iterator[bytes]:
    chunk = b" " * (1 << 20)
    for _ in range(total // len(chunk)):
        yield chunk


class Receiver:
    """The receiver on the Env's store, on a clock at NOW_MS, with one source per signal."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self.source = add_source(env.store, env.name("otlp"), SourceKind.OTLP, "HOSTILE_CORPUS_OTLP_TOKEN")
        app = receiver_app(env.store, self.source, OTLP_TOKEN, now_ms=lambda: NOW_MS)
        self.base = env.enter(running_simulator(app=app))
        self.client = env.enter(httpx.Client(timeout=120.0))


def _receiver(env: Env) -> Receiver:
    if not hasattr(env, "otlp_receiver"):
        env.otlp_receiver = Receiver(env)  # type: ignore[attr-defined]
    return env.otlp_receiver  # type: ignore[attr-defined]


def _stored_problems(rx: Receiver, good: list[str]) -> list[str]:
    rows = load_source_requests(rx.env.store, rx.source)
    ids = {r["request_id"] for r in rows}
    out = [f"good span {g} not stored" for g in good if g not in ids]
    for r in rows:
        times = sane_number(r["ttft_ms"], top=_WEEK_MS) and sane_number(r["duration_ms"], top=_WEEK_MS)
        counts = all(sane_number(r[c], whole=True, top=1e9) for c in ("prompt_tokens", "output_tokens"))
        if not (times and counts and 0 <= r["ts_ms"] <= NOW_MS + 86_400_000):
            out.append(f"stored {r!r}")
    for h in load_hours(rx.env.store, rx.source):
        if not all(sane_number(x) for x in (h.requests, h.p50_ms, h.p95_ms)):
            out.append(f"stored hour {h!r}")
    return out


def _post(signal: str, case: Case, env: Env) -> list[Outcome]:
    rx = _receiver(env)
    out = []
    for held, body, headers, good in _posts(signal, case):
        mark = env.log_mark()
        headers = {"authorization": f"Bearer {OTLP_TOKEN}", **headers}
        got = rx.client.post(f"{rx.base}/{signal}", content=body, headers=headers)
        logged = [r.getMessage() for r in env.logged_since(mark)]
        texts = [got.text[:5000], *logged]
        bugs = logged_failures(env.logged_since(mark))
        problems = _stored_problems(rx, good if got.status_code == 200 else [])
        if got.status_code >= 500 or bugs or problems:
            said = f"{held}: {got.status_code} {got.text[:300]}; logged {bugs}; {problems[:3]}"
            out.append(Outcome(WRONG, said, texts))
        elif got.status_code >= 400:
            message = got.json().get("message", "") if _is_json(got) else got.text
            out.append(one_line(f"{got.status_code}: {message}", *texts))
        else:
            partial = _partial(signal, got)
            rejected = {k: v for k, v in partial.items() if k.startswith("rejected")}
            if any(rejected.values()):
                ok = bool(partial.get("errorMessage"))
                verdict = REFUSED if ok else WRONG
                out.append(Outcome(verdict, f"{held}: {rejected}: {partial.get('errorMessage', '(no reason)')}", texts))
            else:
                out.append(Outcome(READ, f"{held}: stored in full", texts))
    return out


def _is_json(got: httpx.Response) -> bool:
    return got.headers.get("content-type", "").startswith("application/json")


def _partial(signal: str, got: httpx.Response) -> dict[str, Any]:
    """The answer's partial success, read from JSON or protobuf (counts as ints)."""
    if _is_json(got):
        partial = got.json().get("partialSuccess", {})
    else:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

        module = trace_service_pb2 if signal == "traces" else metrics_service_pb2
        kind = "ExportTraceServiceResponse" if signal == "traces" else "ExportMetricsServiceResponse"
        partial = MessageToDict(getattr(module, kind).FromString(got.content)).get("partialSuccess", {})
    return {k: int(v) if k.startswith("rejected") else v for k, v in partial.items()}


def otlp_traces(case: Case, env: Env, deadline_s: float) -> list[Outcome]:
    """The case posted to /v1/traces (`deadline_s` unused: the receiver is the server here)."""
    return _post("traces", case, env)


def otlp_metrics(case: Case, env: Env, deadline_s: float) -> list[Outcome]:
    """The case posted to /v1/metrics."""
    return _post("metrics", case, env)
