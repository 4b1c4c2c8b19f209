"""The OTLP receiver (a real local uvicorn server) against exports no SDK sends (tests/support/otlp_hostile.py): wrong
types at every level, times and timings out of range, missing ids, deep values. Each readable span or point is
stored, each other one is counted back in OTLP's partial success with its reason, a body that is no export is a
400, and nothing is a 500 or a traceback."""

from __future__ import annotations

import logging
import sys

import httpx
import pytest

from planner.simulator import running_simulator
from planner.sources.otlp import receiver_app
from planner.sources.otlp_metrics import ttft_points
from planner.sources.otlp_spans import request_rows, span_key
from planner.store.source_hours import load_hours
from planner.store.sources import SourceKind, add_source, load_source_requests
from tests.support.otlp_hostile import (
    HOSTILE_METRICS,
    HOSTILE_TRACES,
    NOT_EXPORTS,
    NOW_MS,
    as_json,
    good_point,
    good_spans,
    metrics,
    span,
    stored_expected,
    traces,
)

TOKEN = "s3cret-token"
JSON = {"Authorization": f"Bearer {TOKEN}", "content-type": "application/json"}


@pytest.fixture
def source(sqlite_engine):
    return add_source(sqlite_engine, "agents", SourceKind.OTLP, "OTLP_TOKEN_OF_THE_TEST")


@pytest.fixture
def receiver(sqlite_engine, source, caplog):
    """The receiver's base URL (…/v1), on a clock at NOW_MS; after the test, no error was logged."""
    caplog.set_level(logging.WARNING)
    app = receiver_app(sqlite_engine, source, TOKEN, now_ms=lambda: NOW_MS)
    with running_simulator(app=app) as base:
        yield base
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert errors == [], [r.getMessage() for r in errors]


def _partial(got: httpx.Response) -> dict:
    assert got.status_code == 200, got.text
    return got.json()["partialSuccess"]


@pytest.mark.parametrize(("case_id", "export", "rejected", "why"), HOSTILE_TRACES, ids=[c[0] for c in HOSTILE_TRACES])
def test_a_hostile_trace_export_stores_its_readable_spans_and_names_the_rest(
    sqlite_engine, source, receiver, case_id, export, rejected, why
):
    partial = _partial(httpx.post(f"{receiver}/traces", content=as_json(export), headers=JSON))
    assert partial.get("rejectedSpans", 0) == rejected, partial
    assert why in partial.get("errorMessage", ""), partial
    stored = load_source_requests(sqlite_engine, source)
    assert {span_key(s) for s in good_spans()} <= {r["request_id"] for r in stored}
    assert len(stored) == stored_expected("traces", case_id)
    assert all(r["ttft_ms"] is None or 0 <= r["ttft_ms"] < 7 * 86_400_000 for r in stored)
    assert all(r["duration_ms"] is None or 0 <= r["duration_ms"] < 7 * 86_400_000 for r in stored)


@pytest.mark.parametrize(("case_id", "export", "rejected", "why"), HOSTILE_METRICS, ids=[c[0] for c in HOSTILE_METRICS])
def test_a_hostile_metrics_export_stores_its_readable_points_and_names_the_rest(
    sqlite_engine, source, receiver, case_id, export, rejected, why
):
    partial = _partial(httpx.post(f"{receiver}/metrics", content=as_json(export), headers=JSON))
    assert partial.get("rejectedDataPoints", 0) == rejected, partial
    assert why in partial.get("errorMessage", ""), partial
    assert sum(h.requests for h in load_hours(sqlite_engine, source)) == stored_expected("metrics", case_id)


@pytest.mark.parametrize("signal", ["traces", "metrics"])
@pytest.mark.parametrize(("case_id", "body", "content_type"), NOT_EXPORTS, ids=[c[0] for c in NOT_EXPORTS])
def test_a_body_that_is_no_export_is_a_400_in_one_line(
    sqlite_engine, source, receiver, signal, case_id, body, content_type
):
    got = httpx.post(f"{receiver}/{signal}", content=body, headers={**JSON, "content-type": content_type})
    assert got.status_code == 400, got.text
    message = got.json()["message"]
    assert "\n" not in message and len(message) < 400 and "Traceback" not in message
    assert load_source_requests(sqlite_engine, source) == [] and load_hours(sqlite_engine, source) == []


def _deep_protobuf(levels: int) -> bytes:
    """An ExportTraceServiceRequest whose one span holds an attribute value nested `levels` arrays deep, by hand
    (the protobuf library refuses to build one past its own limit)."""

    def field(number: int, payload: bytes) -> bytes:  # a length-delimited field
        size, out = len(payload), bytearray()
        while True:
            byte, size = size & 0x7F, size >> 7
            out.append(byte | (0x80 if size else 0))
            if not size:
                break
        return bytes([number << 3 | 2]) + bytes(out) + payload

    value = field(1, b"x")  # AnyValue.string_value
    for _ in range(levels):
        value = field(5, field(1, value))  # AnyValue.array_value → ArrayValue.values
    attribute = field(1, b"k") + field(2, value)  # KeyValue
    span_ = field(1, bytes(range(1, 17))) + field(2, bytes(range(1, 9))) + field(9, attribute)
    return field(1, field(2, field(2, span_)))  # ExportTraceServiceRequest → ResourceSpans → ScopeSpans → Span


def test_a_protobuf_body_nested_past_the_parser_s_limit_is_a_400(sqlite_engine, source, receiver):
    headers = {**JSON, "content-type": "application/x-protobuf"}
    got = httpx.post(f"{receiver}/traces", content=_deep_protobuf(5_000), headers=headers)
    assert got.status_code == 400 and "not an OTLP protobuf trace export" in got.json()["message"]
    shallow = httpx.post(f"{receiver}/traces", content=_deep_protobuf(40), headers=headers)
    assert shallow.status_code == 200  # a deep value it can parse: no GenAI span, nothing stored or rejected
    assert load_source_requests(sqlite_engine, source) == []


def test_a_value_nested_past_python_s_limit_is_one_rejection_in_the_readers():
    """What the JSON parser can hand over but no recursive code could walk (here built in Python, 5x the limit)."""
    deep: object = 1
    for _ in range(5 * sys.getrecursionlimit()):
        deep = [deep]
    bad = span(10) | {"attributes": [{"key": "gen_ai.usage.input_tokens", "value": deep}]}
    rows, rejected = request_rows(traces(bad), NOW_MS)
    assert len(rows) == 3 and rejected.count == 1 and "nested too deeply" in rejected.reasons[0]
    points, rejected = ttft_points(metrics(good_point(attributes=[{"key": "x", "value": deep}])))
    assert len(points) == 1 and rejected.count == 1 and "nested too deeply" in rejected.reasons[0]


@pytest.mark.parametrize("encoding", ["zstd", "br", "deflate"])
def test_a_content_encoding_it_does_not_read_is_a_400_naming_it(sqlite_engine, source, receiver, encoding):
    got = httpx.post(f"{receiver}/traces", content=b"(\xb5/\xfd", headers={**JSON, "content-encoding": encoding})
    assert got.status_code == 400 and f"content encoding '{encoding}' is neither gzip nor none" in got.text
