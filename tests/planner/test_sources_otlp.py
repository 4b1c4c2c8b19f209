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


def _span(i: int, attrs: dict) -> dict:
    """One GenAI span as OTLP JSON: 1,000 input tokens, TTFT 300 + i ms, the given extra attributes."""
    start = T0_NS + i * 1_000_000_000
    every = {"gen_ai.request.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": 1000, **attrs}
    return {
        "traceId": f"{i:032x}",
        "spanId": f"{i:016x}",
        "name": "chat gpt-4o-mini",
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 900_000_000),
        "attributes": [{"key": k, "value": _any_value(v)} for k, v in every.items()],
        "events": [{"name": "gen_ai.first_token", "timeUnixNano": str(start + (300 + i) * 1_000_000)}],
    }


def _any_value(v) -> dict:
    return {"intValue": str(v)} if isinstance(v, int) else {"stringValue": str(v)}


def test_a_span_naming_its_server_maps_to_the_registered_endpoint_it_called(engine, receiver):
    from planner.endpoints import add_endpoint
    from planner.logs.otel import server_base
    from planner.sources.endpoints import production_ttft
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
