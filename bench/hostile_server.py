"""Eleven misbehaving streaming endpoints and one honest one, on one port (issue 15 item 1).

Path /<kind>/v1/chat/completions picks the behaviour; /healthy/... sends its first token exactly
TRUTH_TTFT_MS after the request and three more 5 ms apart. Raw asyncio with TCP_NODELAY: every byte
goes out when written. Used by bench/bench_worker_hostile.py and tests/planner/worker/test_worker_isolation.py.

    python bench/hostile_server.py PORT
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys

TRUTH_TTFT_MS = 50.0
JUNK_BYTES = 100 * 1024 * 1024

_SSE_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n"
)


def _token(text: str) -> bytes:
    return b"data: " + json.dumps({"choices": [{"delta": {"content": text}}]}).encode() + b"\n\n"


_EMPTY = b'data: {"choices":[{"delta":{}}]}\n\n'

#: The eleven kinds: what each sends after (or instead of) the SSE headers.
KINDS = {
    "flood-empty": "100 MB of SSE events without a token",
    "flood-comments": "100 MB of ': ping' comment lines",
    "long-line": "100 MB on one line without a line end",
    "invalid-utf8": "100 MB of invalid UTF-8 data lines",
    "trickle": "one byte every 5 ms, never a token",
    "nested-json": "events whose data is JSON nested 50,000 deep",
    "huge-event": "one event of 100 MB of data lines",
    "html-body": "200 OK text/html, 100 MB body",
    "error-body": "500 with a 100 MB body",
    "token-then-junk": "one token, then 100 MB of junk events",
    "crlf-flood": "100 MB of bare CR line ends",
}


async def _send_junk(writer: asyncio.StreamWriter, piece: bytes, total: int = JUNK_BYTES) -> None:
    chunk = piece * max(1, 65536 // len(piece))
    sent = 0
    while sent < total:
        writer.write(chunk)
        sent += len(chunk)
        await writer.drain()


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    t0 = asyncio.get_running_loop().time()
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        if length:
            await reader.readexactly(length)
        path = head.split(b" ")[1].decode()
        kind = path.strip("/").split("/")[0]
        if kind == "healthy":
            writer.write(_SSE_HEAD + b'data: {"choices":[{"delta":{"role":"assistant"}}]}\n\n')
            await writer.drain()
            await asyncio.sleep(max(0.0, TRUTH_TTFT_MS / 1000 - (asyncio.get_running_loop().time() - t0)))
            for i in range(4):
                writer.write(_token(f"t{i}"))
                await writer.drain()
                await asyncio.sleep(0.005)
            writer.write(b"data: [DONE]\n\n")
        elif kind == "html-body":
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\nconnection: close\r\n\r\n")
            await _send_junk(writer, b"<p>" + b"x" * 200 + b"</p>\n")
        elif kind == "error-body":
            writer.write(b"HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n")
            await _send_junk(writer, b"error " * 50 + b"\n")
        else:
            writer.write(_SSE_HEAD)
            if kind == "flood-empty":
                await _send_junk(writer, _EMPTY)
            elif kind == "flood-comments":
                await _send_junk(writer, b": ping\n")
            elif kind == "long-line":
                await _send_junk(writer, b"data: " + b"x" * 4096)
            elif kind == "invalid-utf8":
                await _send_junk(writer, b"data: \xff\xfe\xc3\x28\xa0\xa1" * 40 + b"\n\n")
            elif kind == "trickle":
                for _ in range(100_000):
                    writer.write(b":")
                    await writer.drain()
                    await asyncio.sleep(0.005)
            elif kind == "nested-json":
                ev = b"data: " + b"[" * 50_000 + b"]" * 50_000 + b"\n\n"
                await _send_junk(writer, ev, 20 * 1024 * 1024)
            elif kind == "huge-event":
                await _send_junk(writer, b"data: " + b"y" * 1000 + b"\n")
            elif kind == "token-then-junk":
                writer.write(_token("hi"))
                await _send_junk(writer, _EMPTY)
            elif kind == "crlf-flood":
                await _send_junk(writer, b"\r")
        await writer.drain()
    except (ConnectionError, RuntimeError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
        pass
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except (ConnectionError, OSError):
            pass


async def serve(port: int) -> None:
    server = await asyncio.start_server(_handle, "127.0.0.1", port, backlog=512)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    asyncio.run(serve(int(sys.argv[1])))
