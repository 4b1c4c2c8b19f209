"""OpenTelemetry GenAI spans pushed by the real opentelemetry-sdk OTLP/HTTP exporter to the receiver, stored as
production requests; a wrong token, a body that is not OTLP and a retried batch change nothing."""

from __future__ import annotations

import json

import httpx
import pytest
from click.testing import CliRunner
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk import trace as otel_sdk
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult

from planner.cli import cli
from planner.simulator import running_simulator
from planner.sources.otlp import receiver_app
from planner.store.sources import SourceKind, add_source, get_source, load_source_requests

T0_NS = 1_794_819_600_000_000_000  # 2026-11-16 09:00 UTC
TOKEN = "s3cret-token"


@pytest.fixture
def receiver(engine):
    source_id = add_source(engine, "agents", SourceKind.OTLP, "OTLP_TOKEN_OF_THE_TEST")
    with running_simulator(app=receiver_app(engine, source_id, TOKEN)) as base:  # serves any app; base ends in /v1
        yield f"{base}/traces", source_id


def _emit(url: str, token: str, n: int) -> list:
    """n GenAI spans (and one HTTP span, not a model call) through the SDK's exporter; their export results."""
    provider = otel_sdk.TracerProvider()
    results = []

    class Recording(OTLPSpanExporter):
        def export(self, spans):
            results.append(super().export(spans))
            return results[-1]

    provider.add_span_processor(
        SimpleSpanProcessor(Recording(endpoint=url, headers={"Authorization": f"Bearer {token}"}))
    )
    tracer = provider.get_tracer("agent")
    for i in range(n):
        start = T0_NS + i * 1_000_000_000
        span = tracer.start_span(f"chat claude-{i}", start_time=start)
        span.set_attributes(
            {
                "gen_ai.request.model": "claude-sonnet-4-5",
                "gen_ai.usage.input_tokens": 1000 + i,
                "gen_ai.usage.output_tokens": 20 + i,
                "gen_ai.usage.cache_read.input_tokens": 500,
            }
        )
        span.add_event("gen_ai.first_token", timestamp=start + (200 + i) * 1_000_000)
        span.end(end_time=start + 1_500_000_000)
    tracer.start_span("GET /health", start_time=T0_NS).end(end_time=T0_NS + 1_000_000)
    provider.shutdown()
    return results


def test_the_sdk_exporter_s_spans_are_stored_as_requests_with_their_ttft(engine, receiver):
    url, source_id = receiver
    assert set(_emit(url, TOKEN, 5)) == {SpanExportResult.SUCCESS}
    got = load_source_requests(engine, source_id)
    assert len(got) == 5  # the HTTP span is not a model call
    r3 = next(r for r in got if r["prompt_tokens"] == 1003)
    assert (r3["ttft_ms"], r3["duration_ms"], r3["output_tokens"], r3["cached_tokens"]) == (203.0, 1500.0, 23, 500)
    assert r3["ts_ms"] == T0_NS // 1_000_000 + 3000 and r3["model"] == "claude-sonnet-4-5"
    assert get_source(engine, "agents").n_requests == 5


def test_a_wrong_token_a_body_that_is_not_otlp_and_a_retry_store_nothing_more(engine, receiver):
    url, source_id = receiver
    assert set(_emit(url, "wrong", 2)) == {SpanExportResult.FAILURE}
    assert load_source_requests(engine, source_id) == []
    auth = {"Authorization": f"Bearer {TOKEN}"}
    bad = httpx.post(url, content=b"\x0a\xff\xff garbage", headers={**auth, "content-type": "application/x-protobuf"})
    assert bad.status_code == 400 and "not an OTLP protobuf" in bad.json()["message"]
    odd = httpx.post(url, content=b"{}", headers={**auth, "content-type": "text/plain"})
    assert odd.status_code == 400 and "neither application/x-protobuf nor application/json" in odd.json()["message"]
    export = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": "ab" * 16,
                                "spanId": "cd" * 8,
                                "name": "chat",
                                "startTimeUnixNano": str(T0_NS),
                                "endTimeUnixNano": str(T0_NS + 900_000_000),
                                "attributes": [
                                    {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "700"}},
                                    {"key": "gen_ai.server.time_to_first_token", "value": {"doubleValue": 0.25}},
                                ],
                            },
                            {
                                "traceId": "ab" * 16,
                                "spanId": "ef" * 8,
                                "name": "broken",
                                "startTimeUnixNano": str(T0_NS),
                                "attributes": [{"key": "gen_ai.usage.input_tokens", "value": {"intValue": "-3"}}],
                            },
                        ]
                    }
                ]
            }
        ]
    }
    for _ in range(2):  # the exporter retries a batch: stored once
        ok = httpx.post(url, content=json.dumps(export), headers={**auth, "content-type": "application/json"})
        assert ok.status_code == 200 and ok.json()["partialSuccess"]["rejectedSpans"] == 1
    got = load_source_requests(engine, source_id)
    assert [(r["prompt_tokens"], r["ttft_ms"]) for r in got] == [(700, 250.0)]


def test_receive_needs_an_otlp_source_and_its_token(sqlite_store_url, monkeypatch):
    run = lambda *a: CliRunner().invoke(cli, ["sources", *a, "--database-url", sqlite_store_url])  # noqa: E731
    assert run("add", "agents", "--otlp-token-env", "OTLP_TOKEN_OF_THE_TEST").exit_code == 0
    assert run("add", "both", "--otlp-token-env", "X", "--litellm-dsn-env", "Y").exit_code == 2
    monkeypatch.delenv("OTLP_TOKEN_OF_THE_TEST", raising=False)
    unset = run("receive", "agents", "--port", "9")
    assert unset.exit_code == 1 and "$OTLP_TOKEN_OF_THE_TEST is not set" in unset.output
    synced = run("sync", "agents")
    assert synced.exit_code == 1 and "nothing to sync" in synced.output


def test_whatif_replays_a_source_as_it_replays_the_same_requests_from_a_file(sqlite_store_url, tmp_path):
    import datetime as dt

    from sqlalchemy import create_engine

    from planner.store.sources import store_batch

    eng = create_engine(sqlite_store_url)
    sid = add_source(eng, "prod", SourceKind.OTLP, "OTLP_TOKEN_OF_THE_TEST")
    t0 = T0_NS // 1_000_000
    rows = [
        {
            "request_id": f"r{i}",
            "ts_ms": t0 + i * 7_000,
            "model": "m",
            "api_base": "otlp",
            "prompt_tokens": 2000 + 37 * i,
            "cached_tokens": 500,
            "output_tokens": 40,
            "ttft_ms": None,
            "duration_ms": None,
        }
        for i in range(300)
    ]
    store_batch(eng, sid, rows, None)
    csv = tmp_path / "same.csv"
    csv.write_text(
        "timestamp,model,prompt_tokens,cached_tokens,output_tokens\n"
        + "".join(
            f"{dt.datetime.fromtimestamp(r['ts_ms'] / 1000, dt.UTC).isoformat()},m,{r['prompt_tokens']},500,40\n"
            for r in rows
        )
    )
    spec = "dedicated:replicas=1,slots=4,prefill=12000,decode=60,usd_per_gpu_h=3.2,gpus=1,rtt=40"
    base = ["whatif", "--deployment", spec, "--json", "--database-url", sqlite_store_url]
    from_source = CliRunner().invoke(cli, [*base, "--source", "prod"])
    from_file = CliRunner().invoke(cli, [*base, "--log", str(csv)])
    assert from_source.exit_code == 0 and from_file.exit_code == 0, from_source.output + from_file.output
    a, b = json.loads(from_source.output), json.loads(from_file.output)
    assert a["candidates"] == b["candidates"] and a["n_requests"] == 300
    assert any("production traffic from OpenTelemetry spans, source “prod”" in n for n in a["notes"])
    neither = CliRunner().invoke(cli, ["whatif", "--deployment", spec, "--database-url", sqlite_store_url])
    assert neither.exit_code == 2 and "--log FILE… or --source NAME" in neither.output


def _span(i: int, attrs: dict | None = None) -> dict:
    """One GenAI span as OTLP JSON: 1,000 input tokens, TTFT 300 + i ms, the given extra attributes."""
    start = T0_NS + i * 1_000_000_000
    every = {"gen_ai.request.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": 1000, **(attrs or {})}
    return {
        "traceId": f"7{i:031x}",  # never all zeros: OTLP's "no id"
        "spanId": f"5{i:015x}",
        "name": "chat gpt-4o-mini",
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 900_000_000),
        "attributes": [{"key": k, "value": _any_value(v)} for k, v in every.items()],
        "events": [{"name": "gen_ai.first_token", "timeUnixNano": str(start + (300 + i) * 1_000_000)}],
    }


def _any_value(v) -> dict:
    return {"intValue": str(v)} if isinstance(v, int) else {"stringValue": str(v)}


def test_a_span_naming_its_server_maps_to_the_registered_endpoint_it_called(engine, receiver):
    from planner.endpoints.registry import add_endpoint
    from planner.logs.otel import server_base
    from planner.sources.by_endpoint import production_ttft
    from planner.store.endpoints import endpoint_rows

    url, source_id = receiver
    add_endpoint(engine, {"name": "openai", "base_url": "https://api.openai.com/v1", "model": "gpt-4o-mini"})
    add_endpoint(engine, {"name": "local", "base_url": "http://10.0.0.5:8000/v1", "model": "gpt-4o-mini"})
    spans = [_span(i, {"server.address": "api.openai.com", "server.port": 443}) for i in range(3)]
    spans += [_span(i, {"server.address": "10.0.0.5", "server.port": 8000}) for i in range(3, 5)]
    spans += [_span(5, {})]  # names no server: kept, mapped to nothing
    export = {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
    got = httpx.post(url, json=export, headers={"Authorization": f"Bearer {TOKEN}"})
    assert got.status_code == 200, got.text
    stored = {r["request_id"].split(":")[1][-1]: r["api_base"] for r in load_source_requests(engine, source_id)}
    assert stored == {
        **{str(i): "https://api.openai.com:443" for i in range(3)},
        "3": "http://10.0.0.5:8000",
        "4": "http://10.0.0.5:8000",
        "5": "otlp",
    }
    endpoints = {e.name: e for e in endpoint_rows(engine)}
    openai = production_ttft(engine, endpoints["openai"])
    local = production_ttft(engine, endpoints["local"])
    assert (openai.n, openai.p95.value) == (3, 302.0) and (local.n, local.p95.value) == (2, 304.0)
    # the scheme: url.scheme where given, else https on 443 or no port, http on another port
    assert server_base({"attributes": [{"key": "server.address", "value": {"stringValue": "h"}}]}) == "https://h"
    both = {"server.address": "h", "server.port": 8443, "url.scheme": "https"}
    assert server_base({"attributes": both}) == "https://h:8443"
    assert server_base({"attributes": {"server.address": "::1", "server.port": 8000}}) == "http://[::1]:8000"


# --- unreadable, id-less and impossible spans (issue 42) --------------------------------------------------------------


def _finished_spans(n: int, shape=None) -> list:
    """n GenAI spans as the SDK finishes them (its ReadableSpans, nothing sent yet), like _emit's; `shape(i, span)`
    may set more on span i before it ends and return its end time (ns), or None for _emit's."""
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = otel_sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("agent")
    for i in range(n):
        start = T0_NS + i * 1_000_000_000
        span = tracer.start_span(f"chat {i}", start_time=start)
        span.set_attributes({"gen_ai.request.model": "claude-sonnet-4-5", "gen_ai.usage.input_tokens": 1000 + i})
        end = shape(i, span) if shape else None
        span.end(end_time=end or start + 1_500_000_000)
    provider.shutdown()
    return list(memory.get_finished_spans())


def _export_once(url: str, spans: list, timeout_s: float = 10.0) -> SpanExportResult:
    """One export of `spans` by the SDK's OTLP/HTTP exporter (protobuf), retrying as it does."""
    exporter = OTLPSpanExporter(endpoint=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=timeout_s)
    try:
        return exporter.export(spans)
    finally:
        exporter.shutdown()


def test_one_unreadable_span_costs_only_itself_and_is_counted_back(engine, receiver):
    """99 readable spans and one whose TTFT attribute is "abc", in one SDK export: the 99 are stored, the one is
    rejected with its reason (OTLP's partial success), and the export is a success: never a 500 the SDK drops."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

    url, source_id = receiver

    def shape(i, span):
        span.set_attribute("gen_ai.server.time_to_first_token", "abc" if i == 42 else 0.25)

    spans = _finished_spans(100, shape)
    assert _export_once(url, spans) is SpanExportResult.SUCCESS
    assert len(load_source_requests(engine, source_id)) == 99
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    auth = {"Authorization": f"Bearer {TOKEN}", "content-type": "application/x-protobuf"}
    again = httpx.post(url, content=encode_spans(spans).SerializeToString(), headers=auth)  # to read the answer
    partial = ExportTraceServiceResponse.FromString(again.content).partial_success
    assert again.status_code == 200 and partial.rejected_spans == 1
    assert "span 'chat 42'" in partial.error_message and "time_to_first_token is 'abc'" in partial.error_message
    assert len(load_source_requests(engine, source_id)) == 99  # the retry stored nothing twice


def test_spans_without_ids_are_refused_not_stored_as_one(engine, receiver):
    """20 spans without usable trace or span ids, in two exports: none stored (not one row under the key ":"), each
    counted back naming its id; the SDK's own spans are keyed by the hex of their ids, as the same span in JSON is."""
    url, source_id = receiver
    auth = {"Authorization": f"Bearer {TOKEN}"}
    broken = [{"traceId": None}, {"spanId": None}, {"traceId": "", "spanId": ""}, {"spanId": "xyz"}]
    for half in (range(10), range(10, 20)):
        spans = [{k: v for k, v in (_span(i) | broken[i % 4]).items() if v is not None} for i in half]
        got = httpx.post(url, json={"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}, headers=auth)
        partial = got.json()["partialSuccess"]
        assert got.status_code == 200 and partial["rejectedSpans"] == 10
        assert "no traceId" in partial["errorMessage"] and "no spanId" in partial["errorMessage"]
    assert load_source_requests(engine, source_id) == []

    [sdk_span] = _finished_spans(1)
    assert _export_once(url, [sdk_span]) is SpanExportResult.SUCCESS
    ctx = sdk_span.get_span_context()
    [row] = load_source_requests(engine, source_id)
    assert row["request_id"] == f"{ctx.trace_id:032x}:{ctx.span_id:016x}"
    as_json = {
        "traceId": f"{ctx.trace_id:032X}",  # hex in either case is the same id
        "spanId": f"{ctx.span_id:016x}",
        "name": "chat 0",
        "startTimeUnixNano": str(T0_NS),
        "attributes": [{"key": "gen_ai.usage.input_tokens", "value": {"intValue": "1000"}}],
    }
    got = httpx.post(url, json={"resourceSpans": [{"scopeSpans": [{"spans": [as_json]}]}]}, headers=auth)
    assert got.status_code == 200 and got.json() == {"partialSuccess": {}}
    assert len(load_source_requests(engine, source_id)) == 1  # the same span, sent as JSON: stored once


def test_negative_infinite_and_future_timings_are_refused_by_the_receiver_s_clock(engine):
    """Through the SDK: a first-token event before the span's start, an end before it, a TTFT of -5 s or +inf are
    refused with their reasons; a span dated two days after the receiver's clock is refused until its clock
    reaches it (the clock is the receiver's `now_ms`)."""
    source_id = add_source(engine, "agents", SourceKind.OTLP, "OTLP_TOKEN_OF_THE_TEST")
    now = {"ms": T0_NS // 1_000_000}
    ahead_ns = T0_NS + 2 * 86_400_000 * 1_000_000

    def shape(i, span):
        start = T0_NS + i * 1_000_000_000
        if i == 1:
            span.add_event("gen_ai.first_token", timestamp=start - 1_000_000)
        elif i == 2:
            return start - 5_000_000
        elif i == 3:
            span.set_attribute("gen_ai.server.time_to_first_token", -5.0)
        elif i == 4:
            span.set_attribute("gen_ai.server.time_to_first_token", float("inf"))
        return None

    spans = _finished_spans(5, shape)
    with running_simulator(app=receiver_app(engine, source_id, TOKEN, now_ms=lambda: now["ms"])) as base:
        url = f"{base}/traces"
        assert _export_once(url, spans) is SpanExportResult.SUCCESS
        [kept] = load_source_requests(engine, source_id)
        assert kept["prompt_tokens"] == 1000 and kept["duration_ms"] == 1500.0
        ahead = {**_span(9), "startTimeUnixNano": str(ahead_ns), "endTimeUnixNano": str(ahead_ns + 900_000_000)}
        ahead["events"] = [{"name": "gen_ai.first_token", "timeUnixNano": str(ahead_ns + 300_000_000)}]
        export = {"resourceSpans": [{"scopeSpans": [{"spans": [ahead]}]}]}
        refused = httpx.post(url, json=export, headers={"Authorization": f"Bearer {TOKEN}"}).json()["partialSuccess"]
        assert refused["rejectedSpans"] == 1 and "more than a day in the future" in refused["errorMessage"]
        now["ms"] = ahead_ns // 1_000_000  # the clock reaches it: the same span is a request
        assert httpx.post(url, json=export, headers={"Authorization": f"Bearer {TOKEN}"}).json() == {
            "partialSuccess": {}
        }
    stored = load_source_requests(engine, source_id)
    assert len(stored) == 2 and all(r["ttft_ms"] is None or r["ttft_ms"] >= 0 for r in stored)


def test_an_export_to_an_unreachable_postgresql_is_a_503_to_send_again():
    """PostgreSQL stopped (nothing listens at its address): the export is answered 503 with Retry-After, which
    OTLP exporters send again (a 500 they drop), in one line; the worker's shared receiver answers the same."""
    from sqlalchemy import create_engine

    from planner.sources.otlp import RETRY_AFTER_S, shared_receiver_app
    from tests.support.rtt_target import free_port

    away = create_engine(
        f"postgresql+psycopg://planner@127.0.0.1:{free_port()}/gone", connect_args={"connect_timeout": 5}
    )
    export = {"resourceSpans": [{"scopeSpans": [{"spans": [_span(1)]}]}]}
    for app in (receiver_app(away, 1, TOKEN), shared_receiver_app(away)):
        with running_simulator(app=app) as base:
            got = httpx.post(f"{base}/traces", json=export, headers={"Authorization": f"Bearer {TOKEN}"})
        assert got.status_code == 503 and got.headers["retry-after"] == str(RETRY_AFTER_S)
        message = got.json()["message"]
        assert "the database is unreachable" in message and "\n" not in message


def test_a_model_or_server_with_a_nul_or_a_lone_surrogate_is_stored_as_text_the_database_takes(engine, receiver):
    """JSON can carry "\\u0000" and an unpaired "\\ud800", which neither PostgreSQL nor UTF-8 take: the span is
    stored with the NUL dropped and the surrogate as U+FFFD, not refused by the database (a 503 forever)."""
    url, source_id = receiver
    odd = _span(1, {"gen_ai.request.model": "gpt\x00-4o\ud800", "server.address": "h\udfff", "server.port": 8000})
    body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [odd]}]}]})
    headers = {"Authorization": f"Bearer {TOKEN}", "content-type": "application/json"}
    got = httpx.post(url, content=body, headers=headers)
    assert got.status_code == 200 and got.json() == {"partialSuccess": {}}
    [row] = load_source_requests(engine, source_id)
    assert (row["model"], row["api_base"]) == ("gpt-4o\ufffd", "http://h\ufffd:8000")
