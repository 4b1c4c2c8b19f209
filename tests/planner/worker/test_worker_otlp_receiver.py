"""The worker's opt-in OTLP receiver (`--otlp-port`): one port for every OpenTelemetry source, the bearer token
picking the source, read from each source's variable at each export (a source added while the worker runs is
received), in the worker's own loop; the real opentelemetry-sdk exporter sends the spans."""

from __future__ import annotations

import asyncio

from opentelemetry.sdk.trace.export import SpanExportResult

from planner.store.sources import SourceKind, add_source, load_source_requests
from tests.planner.sources.test_sources_otlp import _emit
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


def test_an_export_while_the_store_is_locked_is_retried_by_the_sdk_and_stored_whole(sqlite_store_url, monkeypatch):
    """The store write-locked by another program: the receiver answers the SDK's 50-span export 503 with Retry-After
    (a 500 the SDK would drop), nothing half-stored; the SDK sends it again and, the lock released, 50 of 50 are
    stored once."""
    import contextlib
    import logging
    import threading

    from planner.store import database, open_store
    from tests.planner.sources.test_sources_otlp import _export_once, _finished_spans
    from tests.support.store_lock import sqlite_write_lock

    monkeypatch.setattr(database, "SQLITE_BUSY_TIMEOUT_MS", 200)  # a locked write fails after 0.2 s, not 5 s
    monkeypatch.setenv("AGENTS_OTLP_TOKEN_OF_THE_TEST", "s3cret-token")  # _export_once's token
    engine = open_store(sqlite_store_url)
    sid = add_source(engine, "agents", SourceKind.OTLP, "AGENTS_OTLP_TOKEN_OF_THE_TEST")
    port = free_port()
    spans = _finished_spans(50)
    answered = threading.Event()  # the SDK logs each retryable answer before it waits to send again

    class Retrying(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "retrying" in record.getMessage():
                answered.set()

    sdk_log = logging.getLogger("opentelemetry.exporter.otlp.proto.http.trace_exporter")
    handler = Retrying(logging.WARNING)
    sdk_log.addHandler(handler)

    async def body(worker):
        await until(lambda: worker.otlp.started, "the receiver listening")
        with contextlib.ExitStack() as stack:
            release = await asyncio.to_thread(stack.enter_context, sqlite_write_lock(sqlite_store_url))
            url = f"http://127.0.0.1:{port}/v1/traces"
            export = asyncio.ensure_future(asyncio.to_thread(_export_once, url, spans, 600.0))
            await until(lambda: answered.is_set() or export.done(), "the receiver's answer to the locked export")
            stored_while_locked = len(load_source_requests(engine, sid))
            release.set()
            result = await export
        return stored_while_locked, result

    try:
        stored_while_locked, result = drive(engine, body, clock=FakeClock(), otlp_port=port)
    finally:
        sdk_log.removeHandler(handler)
    assert stored_while_locked == 0 and answered.is_set()
    assert result is SpanExportResult.SUCCESS
    rows = load_source_requests(engine, sid)
    assert len(rows) == 50 and len({r["request_id"] for r in rows}) == 50
    engine.dispose()
