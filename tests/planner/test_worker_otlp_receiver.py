"""The worker's opt-in OTLP receiver (`--otlp-port`): one port for every OpenTelemetry source, the bearer token
picking the source, read from each source's variable at each export (a source added while the worker runs is
received), in the worker's own loop; the real opentelemetry-sdk exporter sends the spans."""

from __future__ import annotations

import asyncio

from opentelemetry.sdk.trace.export import SpanExportResult

from planner.store.sources import SourceKind, add_source, load_source_requests
from tests.planner.test_sources_otlp import _emit
from tests.support.fake_clock import FakeClock
from tests.support.rtt_target import free_port
from tests.support.worker_driver import drive, until


def test_one_port_receives_each_sources_spans_by_its_token_and_refuses_others(sqlite_engine, monkeypatch):
    monkeypatch.setenv("AGENTS_OTLP_TOKEN_OF_THE_TEST", "token-a")
    monkeypatch.setenv("IDE_OTLP_TOKEN_OF_THE_TEST", "token-b")
    agents = add_source(sqlite_engine, "agents", SourceKind.OTLP, "AGENTS_OTLP_TOKEN_OF_THE_TEST")
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1/traces"

    async def body(worker):
        await until(lambda: worker.otlp is not None and worker.otlp.started, "the receiver listening")
        sent_a = await asyncio.to_thread(_emit, url, "token-a", 3)
        # a source added while the worker runs is received at once: tokens are looked up at each export
        ide = add_source(sqlite_engine, "ide", SourceKind.OTLP, "IDE_OTLP_TOKEN_OF_THE_TEST")
        sent_b = await asyncio.to_thread(_emit, url, "token-b", 2)
        refused = await asyncio.to_thread(_emit, url, "token-c", 2)
        return ide, sent_a, sent_b, refused

    ide, sent_a, sent_b, refused = drive(sqlite_engine, body, clock=FakeClock(), otlp_port=port)
    assert set(sent_a) == set(sent_b) == {SpanExportResult.SUCCESS}
    assert set(refused) == {SpanExportResult.FAILURE}
    assert len(load_source_requests(sqlite_engine, agents)) == 3
    assert len(load_source_requests(sqlite_engine, ide)) == 2


def test_a_source_whose_variable_is_unset_receives_nothing(sqlite_engine, monkeypatch):
    monkeypatch.delenv("UNSET_OTLP_TOKEN_OF_THE_TEST", raising=False)
    sid = add_source(sqlite_engine, "quiet", SourceKind.OTLP, "UNSET_OTLP_TOKEN_OF_THE_TEST")
    port = free_port()

    async def body(worker):
        await until(lambda: worker.otlp.started, "the receiver listening")
        return await asyncio.to_thread(_emit, f"http://127.0.0.1:{port}/v1/traces", "", 1)

    assert set(drive(sqlite_engine, body, clock=FakeClock(), otlp_port=port)) == {SpanExportResult.FAILURE}
    assert load_source_requests(sqlite_engine, sid) == []
