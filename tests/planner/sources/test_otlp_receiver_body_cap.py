"""The OTLP receiver's byte cap holds while the body streams in: a body over MAX_BODY_BYTES is answered 413 once the
cap is passed (the receiver never reads 800 MB to refuse 16), and a Content-Length over the cap is answered at
once, before any of the body is sent. Measured by what the receiver's app took from the server (an ASGI wrapper
counting the body bytes handed to it), on a real local uvicorn server."""

from __future__ import annotations

import gzip
import http.client
import json
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from planner.simulator import running_simulator
from planner.sources.otlp import MAX_BODY_BYTES, receiver_app
from planner.store.sources import SourceKind, add_source, load_source_requests

TOKEN = "s3cret-token"
CHUNK = 1 << 20
HANG_GUARD_S = 120.0  # a hang guard, not a speed check


class _CountingBody:
    """An ASGI app around `app` that counts the request body bytes `app` takes from the server."""

    def __init__(self, app) -> None:
        self.app = app
        self.taken = 0

    async def __call__(self, scope, receive, send) -> None:
        async def counted():
            message = await receive()
            if message["type"] == "http.request":
                self.taken += len(message.get("body", b""))
            return message

        await self.app(scope, counted, send)


@pytest.fixture
def counted(sqlite_engine):
    source = add_source(sqlite_engine, "agents", SourceKind.OTLP, "OTLP_TOKEN_OF_THE_TEST")
    app = _CountingBody(receiver_app(sqlite_engine, source, TOKEN))
    with running_simulator(app=app) as base:
        yield app, f"{base}/traces", source


@pytest.mark.parametrize("content_type", ["application/json", "application/x-protobuf"])
def test_a_streamed_body_over_the_cap_is_refused_without_reading_the_rest(sqlite_engine, counted, content_type):
    app, url, source = counted
    sent = {"bytes": 0}

    def body() -> Iterator[bytes]:  # 4x the cap, chunked (no Content-Length): only the stream says how long
        for _ in range(4 * MAX_BODY_BYTES // CHUNK):
            sent["bytes"] += CHUNK
            yield b" " * CHUNK

    headers = {"Authorization": f"Bearer {TOKEN}", "content-type": content_type}
    got = httpx.post(url, content=body(), headers=headers, timeout=HANG_GUARD_S)
    assert got.status_code == 413 and "over 16 MB" in got.json()["message"]
    assert MAX_BODY_BYTES < app.taken <= MAX_BODY_BYTES + CHUNK  # the cap and one chunk, not the 64 MB sent
    assert load_source_requests(sqlite_engine, source) == []


def test_a_content_length_over_the_cap_is_refused_before_the_body_is_sent(counted):
    app, url, _ = counted
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=HANG_GUARD_S)
    try:
        conn.putrequest("POST", parts.path)
        for name, value in {
            "Authorization": f"Bearer {TOKEN}",
            "Content-Type": "application/json",
            "Content-Length": str(800 << 20),
        }.items():
            conn.putheader(name, value)
        conn.endheaders()  # and not one byte of the 800 MB it announces: a receiver waiting for them would hang
        got = conn.getresponse()
        status, message = got.status, json.loads(got.read())["message"]
    finally:
        conn.close()
    assert status == 413 and "Content-Length 838860800" in message
    assert app.taken == 0


def _pb_field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field, by hand."""
    size, out = len(payload), bytearray()
    while True:
        byte, size = size & 0x7F, size >> 7
        out.append(byte | (0x80 if size else 0))
        if not size:
            break
    return bytes([number << 3 | 2]) + bytes(out) + payload


def _empty_spans_protobuf(n: int) -> bytes:
    """An ExportTraceServiceRequest of n empty spans: 2 bytes each on the wire."""
    return _pb_field(1, _pb_field(2, b"\x12\x00" * n))


def _empty_objects_json(n: int) -> bytes:
    """A trace export of n empty span objects: 3 bytes each."""
    return b'{"resourceSpans":[{"scopeSpans":[{"spans":[' + b"{}," * (n - 1) + b"{}]}]}]}"


def test_a_small_body_of_millions_of_values_is_refused_before_it_is_parsed(counted):
    from planner.sources.otlp_body import MAX_JSON_VALUES, MAX_PROTOBUF_MESSAGES

    _, url, _ = counted
    auth = {"Authorization": f"Bearer {TOKEN}"}
    pb = httpx.post(
        url,
        content=_empty_spans_protobuf(MAX_PROTOBUF_MESSAGES + 2),  # 2 MB
        headers={**auth, "content-type": "application/x-protobuf"},
        timeout=HANG_GUARD_S,
    )
    assert pb.status_code == 413 and "over 1,000,000 messages" in pb.json()["message"]
    zipped = gzip.compress(_empty_objects_json(MAX_JSON_VALUES + 1), 1)  # 6 MB unzipped, 30 kB sent
    js = httpx.post(
        url,
        content=zipped,
        headers={**auth, "content-type": "application/json", "content-encoding": "gzip"},
        timeout=HANG_GUARD_S,
    )
    assert js.status_code == 413 and "over 2,000,000 JSON values" in js.json()["message"]


_PEAK_RSS_CHILD = """
import gzip, sys
sys.path.insert(0, {root!r})
from tests.planner.sources.test_otlp_receiver_body_cap import _empty_objects_json, _empty_spans_protobuf
from planner.sources.otlp_body import MAX_BODY_BYTES, MAX_PROTOBUF_MESSAGES, MAX_UNZIPPED_BYTES, OtlpTooLarge, decode
from planner.sources.otlp_spans import request_rows
bombs = [
    (_empty_spans_protobuf(MAX_BODY_BYTES // 2 - 16), "application/x-protobuf", ""),  # 8M empty spans
    (gzip.compress(_empty_objects_json(MAX_UNZIPPED_BYTES // 3 - 16), 1), "application/json", "gzip"),  # 22M
    (_empty_spans_protobuf(MAX_PROTOBUF_MESSAGES - 16), "application/x-protobuf", ""),  # the most it parses
]
for body, kind, encoding in bombs:
    try:
        request_rows(decode(body, kind, encoding), 0)
    except OtlpTooLarge:
        pass
    del body
# VmHWM: this process's own peak (ru_maxrss would carry the parent's peak across fork and exec: a pytest worker's)
print(int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) // 1024)
"""
PEAK_RSS_BOUND_MB = 800  # measured: 416 MB (VmHWM) (before the value caps, 16 MB of empty protobuf spans took 2.2 GB)


def test_the_worst_bodies_within_the_caps_cost_a_bounded_peak_memory():
    """In a child process: the receiver's decoding of 8 million empty spans in 16 MB of protobuf, 22 million empty
    objects in a 64 MB gzip JSON body (both refused before parsing) and the largest protobuf export it parses."""
    import subprocess
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[3])
    child = subprocess.run(
        [sys.executable, "-c", _PEAK_RSS_CHILD.format(root=root)],
        capture_output=True,
        text=True,
        timeout=600,  # a hang guard, not a speed check
        cwd=root,
    )
    assert child.returncode == 0, child.stderr[-2000:]
    assert int(child.stdout.split()[-1]) < PEAK_RSS_BOUND_MB
