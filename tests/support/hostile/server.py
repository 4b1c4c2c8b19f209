"""The hostile HTTP server: one local uvicorn server in a thread answering, per registered key, what no real server
does. `serve(Answer(...))` registers an answer and returns its base URL (`http://127.0.0.1:PORT/<key>`); any path
under it, GET or POST, gets the answer.

An Answer is a status, headers and a body (bytes, or a function of the path under the key, so one base URL can answer
each API path its own way), sent at once; or a stream: `drip` (the head, then one byte every DRIP_EVERY_S, never
ending), `huge` (the head, then `filler` repeated lazily to HUGE_BYTES: never built in memory, and not a byte more
once the client went away). `echo` answers with the credential the request carried (its Bearer token or x-api-key)
in one of the corpus's encodings, in place of `{echo}` in the body.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from planner.simulator.runner import running_simulator
from tests.support.hostile.corpus import HUGE_BYTES

__all__ = ["DRIP_EVERY_S", "Answer", "HostileServer", "echoed", "hostile_server"]

DRIP_EVERY_S = 0.3
_CHUNK = 1 << 20


def echoed(secret: str, form: str) -> str:
    """`secret` written the way a server echoes it in `form` (corpus.py's echo cases)."""
    if form == "as sent":
        return secret
    if form == "JSON-escaped":
        return json.dumps(secret)[1:-1].replace("/", "\\/")  # PHP's json_encode writes / as \/
    if form == "as \\u escapes":
        return "".join(f"\\u{ord(c):04x}" for c in secret)
    if form == "URL-encoded":
        return quote(secret, safe="")
    if form == "base64":
        return base64.b64encode(secret.encode()).decode()
    if form == "Basic base64 user:key":
        return base64.b64encode(f"user:{secret}".encode()).decode()
    raise ValueError(f"no echo form {form!r}")


@dataclass
class Answer:
    """What the server answers at one key (module docstring)."""

    body: bytes | Callable[[str], bytes] = b""
    status: int = 200
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    stream: str = ""  # "" | "drip" | "huge"
    filler: bytes = b" "
    echo: str | None = None


def _credential(request: Request) -> str:
    auth = request.headers.get("authorization", "")
    return auth.removeprefix("Bearer ").strip() or request.headers.get("x-api-key", "")


class HostileServer:
    """The registry of answers behind the running server; `yielded[key]` counts the bytes a huge answer gave."""

    def __init__(self) -> None:
        self.base = ""
        self._answers: dict[str, Answer] = {}
        self._keys = itertools.count()
        self._lock = threading.Lock()
        self.yielded: dict[str, int] = {}

    def serve(self, answer: Answer) -> str:
        """Register `answer`; the base URL that answers it."""
        with self._lock:
            key = f"k{next(self._keys)}"
            self._answers[key] = answer
        return f"{self.base}/{key}"

    def app(self) -> Starlette:
        async def answer(request: Request) -> Response:
            key, path = request.path_params["key"], request.path_params["path"]
            found = self._answers.get(key)
            if found is None:
                return Response(b"no such key", status_code=404)
            await request.body()  # the client's request read whole (it is ours: small)
            body = found.body(path) if callable(found.body) else found.body
            if found.echo is not None:
                body = body.replace(b"{echo}", echoed(_credential(request), found.echo).encode())
            headers = {"content-type": found.content_type, **found.headers}
            if found.stream == "drip":
                return StreamingResponse(self._drip(body), status_code=found.status, headers=headers)
            if found.stream == "huge":
                stream = self._huge(request, key, body, found.filler)
                return StreamingResponse(stream, status_code=found.status, headers=headers)
            return Response(body, status_code=found.status, headers=headers)

        methods = ["GET", "POST"]
        return Starlette(routes=[Route("/{key}/{path:path}", answer, methods=methods)])

    @staticmethod
    async def _drip(head: bytes) -> AsyncIterator[bytes]:
        yield head
        while True:  # never ends: one byte every DRIP_EVERY_S until the client goes away
            await asyncio.sleep(DRIP_EVERY_S)
            yield b" "

    async def _huge(self, request: Request, key: str, head: bytes, filler: bytes) -> AsyncIterator[bytes]:
        chunk = filler * max(1, _CHUNK // max(1, len(filler)))
        self.yielded[key] = len(head)
        yield head
        while self.yielded[key] < HUGE_BYTES:
            if await request.is_disconnected():  # the reader stopped: what it did not take is never made
                return
            self.yielded[key] += len(chunk)
            yield chunk


@contextlib.contextmanager
def hostile_server() -> Iterator[HostileServer]:
    """The hostile server on a free local port, in a thread, for the block."""
    server = HostileServer()
    with running_simulator(app=server.app()) as url:
        server.base = url.removesuffix("/v1")
        yield server
