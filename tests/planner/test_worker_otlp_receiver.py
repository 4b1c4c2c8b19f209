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


def test_a_port_taken_is_a_task_failure_and_the_receiver_listens_once_it_is_free(sqlite_engine, monkeypatch):
    import socket

    monkeypatch.setenv("AGENTS_OTLP_TOKEN_OF_THE_TEST", "token-a")
    sid = add_source(sqlite_engine, "agents", SourceKind.OTLP, "AGENTS_OTLP_TOKEN_OF_THE_TEST")
    squatter = socket.socket()
    squatter.bind(("127.0.0.1", 0))
    squatter.listen()
    port = squatter.getsockname()[1]

    async def body(worker):
        await until(lambda: worker.task_failures, "the receiver's failure recorded")
        failure = worker.task_failures[0]
        squatter.close()  # the port is free: the supervisor's next start listens
        await until(lambda: worker.otlp.started, "the receiver listening after its restart")
        sent = await asyncio.to_thread(_emit, f"http://127.0.0.1:{port}/v1/traces", "token-a", 2)
        return failure, sent, worker.stopping

    failure, sent, stopping = drive(sqlite_engine, body, clock=FakeClock(), otlp_port=port)
    assert failure["task"] == "otlp receiver" and "could not listen" in failure["error"]
    assert set(sent) == {SpanExportResult.SUCCESS} and not stopping
    assert len(load_source_requests(sqlite_engine, sid)) == 2
