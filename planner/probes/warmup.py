"""Warm the probe engine up before the first timed sample, without touching the target.

A fresh process pays for lazy work on its first request: httpx/httpcore import
anyio's asyncio backend, `h11` and httpcore's HTTP/1.1 connection on the first
connect; asyncio starts its default thread pool on the first `getaddrinfo`;
the first SSE parse and JSON decode run cold; the first https probe reads the
CA bundle. Inside the timed region that cost 10–13 ms on the first sample of
every CLI run (issue 14), and blocked a worker's loop at start-up. `warm_up()`
pays it up front: it serves one canned stream of the target's protocol from a
throwaway server on 127.0.0.1 and probes it through the same code path
(`probe_once`, resolving "localhost" so the resolver thread starts too). The
target never sees the warm-up request.

Call it inside the event loop that will run the samples (the thread pool and
the loop's own state belong to that loop).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

__all__ = ["warm_up"]


def _canned_stream(protocol: str) -> bytes:
    """A complete HTTP/1.1 SSE response: role event, two tokens, usage, end."""
    if protocol == "anthropic":
        events = [
            ("message_start", {"type": "message_start", "message": {"usage": {"input_tokens": 3, "output_tokens": 0}}}),
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            ),
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "a"}},
            ),
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "b"}},
            ),
            ("message_delta", {"type": "message_delta", "usage": {"output_tokens": 2}}),
            ("message_stop", {"type": "message_stop"}),
        ]
        body = "".join(f"event: {k}\ndata: {json.dumps(v)}\n\n" for k, v in events)
    else:

        def chunk(delta: dict[str, Any], text: str | None = None) -> str:
            choice = {"index": 0, "delta": delta, "finish_reason": None}
            if text is not None:
                choice["text"] = text
            return "data: " + json.dumps({"choices": [choice]}) + "\n\n"

        usage = {
            "choices": [],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 0}},
        }
        body = (
            chunk({"role": "assistant", "content": ""})
            + chunk({"content": "a"}, "a")
            + chunk({"content": "b"}, "b")
            + "data: "
            + json.dumps(usage)
            + "\n\ndata: [DONE]\n\n"
        )
    data = body.encode()
    head = (
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n"
        f"Content-Length: {len(data)}\r\n\r\n"
    ).encode()
    return head + data


async def warm_up(protocol: str = "openai-chat", keep_alive: bool = False) -> bool:
    """Run one untimed probe against a canned local stream; True when it succeeded.

    Never raises for a network fault (a machine without loopback just skips the
    warm-up); raises ValueError for an unknown protocol, as probe_once does.
    """
    from planner.probes.ttft import ProbeTarget, _shared_ssl_context, probe_once

    _shared_ssl_context()  # the CA bundle, read once per process: not inside the first https sample
    response = _canned_stream(protocol)

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            if length:
                await reader.readexactly(length)
            writer.write(response)
            await writer.drain()
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            writer.close()

    try:
        server = await asyncio.start_server(serve, "127.0.0.1", 0)
    except OSError:
        return False
    port = server.sockets[0].getsockname()[1]

    def local_target(host: str, pooled: bool) -> ProbeTarget:
        """The canned stream at `host`, probed once on a fresh connection or (`pooled`) a kept-alive one."""
        return ProbeTarget(
            base_url=f"http://{host}:{port}/v1",
            model="warm-up",
            protocol=protocol,
            prompt_tokens=16,
            max_tokens=2,
            timeout_s=5.0,
            keep_alive=pooled,
        )

    try:
        sample = await probe_once(local_target("localhost", pooled=False), max_attempts=1)
        if keep_alive:  # the pooled-client path the CLI uses with --keep-alive
            import httpx

            async with httpx.AsyncClient(trust_env=False, timeout=httpx.Timeout(5.0)) as client:
                await probe_once(local_target("127.0.0.1", pooled=True), client=client, max_attempts=1)
        return sample.ok
    finally:
        server.close()
        await server.wait_closed()
