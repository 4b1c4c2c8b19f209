"""A Prometheus that answers what the real one never does: odd JSON, a drip, a body with no end. For the Prometheus
reader's tests and, case by case, for the shared hostile corpus.

`HOSTILE_ANSWERS` lists (case id, the endpoint that answers it, body): at "series" the label-set list a sync reads
first; at "query_range" every range query, after a normal series answer naming model m1. `hostile_prometheus()`
serves them all from one local uvicorn server in a thread: the base URL `{base}/case/{id}` is a Prometheus answering
case `id`, `{base}/drip` one that sends one byte of its answer every `DRIP_EVERY_S` and never ends, `{base}/huge`
one that streams HUGE_BYTES lazily, as fast as the reader takes them, until it hangs up (`yielded["huge"]` counts
the bytes it gave the socket), `{base}/ok` a normal one
with no requests in any hour.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from planner.simulator.runner import running_simulator

__all__ = ["DRIP_EVERY_S", "HOSTILE_ANSWERS", "HUGE_BYTES", "HostilePrometheus", "hostile_prometheus"]

DRIP_EVERY_S = 0.5
HUGE_BYTES = 400 << 20
_CHUNK = b" " * (1 << 20)
_DEEP = 50_000


def _ok(data: object) -> bytes:
    return json.dumps({"status": "success", "data": data}).encode()


def _matrix(values: object) -> bytes:
    return _ok({"resultType": "matrix", "result": [{"metric": {}, "values": values}]})


SERIES_OK = _ok([{"__name__": "vllm:time_to_first_token_seconds_count", "model_name": "m1"}])

HOSTILE_ANSWERS: list[tuple[str, str, bytes]] = [
    ("html page", "series", b"<html><body>502 Bad Gateway</body></html>"),
    ("empty body", "series", b""),
    ("invalid UTF-8", "series", b'\xff\xfe{"status": "success"}'),
    ("top-level list", "series", b"[1, 2, 3]"),
    ("top-level string", "series", b'"success"'),
    ("top-level null", "series", b"null"),
    ("status without data", "series", b'{"status": "success"}'),
    (
        "error with odd fields",
        "series",
        json.dumps({"status": "error", "errorType": {"a": [1]}, "error": ["x"]}).encode(),
    ),
    ("series an object", "series", _ok({"model_name": "m1"})),
    ("series of numbers", "series", _ok([1, 2])),
    ("label value a number", "series", _ok([{"model_name": 5}])),
    ("50k-deep JSON", "series", b"[" * _DEEP + b"]" * _DEEP),
    ("50k-deep data", "series", b'{"status": "success", "data": ' + b"[" * _DEEP + b"]" * _DEEP + b"}"),
    ("range data a list", "query_range", _ok([])),
    ("result a string", "query_range", _ok({"resultType": "matrix", "result": "abc"})),
    ("result of numbers", "query_range", _ok({"resultType": "matrix", "result": [1, 2]})),
    ("values an object", "query_range", _matrix({"a": 1})),
    ("sample not a pair", "query_range", _matrix([[3600]])),
    ("NaN sample time", "query_range", _matrix([[float("nan"), "1"]])),
    ("1e308 sample time", "query_range", _matrix([[1e308, "1"]])),
    ("string sample time", "query_range", _matrix([["abc", "1"]])),
    ("negative sample time", "query_range", _matrix([[-3600, "1"]])),
    ("value abc", "query_range", _matrix([[3600, "abc"]])),
    ("value a list", "query_range", _matrix([[3600, [1]]])),
    ("value 1e300", "query_range", _matrix([[3600, "1e300"]])),
    (
        "value a 400-digit integer",
        "query_range",
        b'{"status": "success", "data": {"resultType": "matrix", '
        b'"result": [{"metric": {}, "values": [[3600, ' + b"9" * 400 + b"]]}]}}",
    ),
    ("50k-deep range answer", "query_range", b'{"status": "success", "data": ' + b"[" * _DEEP + b"]" * _DEEP + b"}"),
]


@dataclass
class HostilePrometheus:
    """The running server: its base URL and the bytes each streaming route gave the socket."""

    base: str
    yielded: dict[str, int] = field(default_factory=lambda: {"huge": 0, "drip": 0})

    def case(self, case_id: str) -> str:
        """The base URL of a Prometheus answering `case_id` of HOSTILE_ANSWERS."""
        return f"{self.base}/case/{_slug(case_id)}"


def _slug(case_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", case_id)


def _app(server: HostilePrometheus) -> Starlette:
    bodies = {_slug(case_id): (where, body) for case_id, where, body in HOSTILE_ANSWERS}

    async def case(request: Request) -> Response:
        where, body = bodies[request.path_params["case"]]
        endpoint = request.path_params["endpoint"]
        if endpoint == "series" and where != "series":
            body = SERIES_OK
        return Response(body, media_type="application/json")

    async def drip(request: Request) -> StreamingResponse:
        async def body() -> AsyncIterator[bytes]:
            yield b'{"status": "success", "data": ['
            while True:  # never ends: one byte each DRIP_EVERY_S
                await asyncio.sleep(DRIP_EVERY_S)
                server.yielded["drip"] += 1
                yield b" "

        return StreamingResponse(body(), media_type="application/json")

    async def huge(request: Request) -> StreamingResponse:
        async def body() -> AsyncIterator[bytes]:
            yield b'{"status": "success", "data": ['
            while server.yielded["huge"] < HUGE_BYTES:
                if await request.is_disconnected():  # the reader stopped: what it did not take is never sent
                    return
                server.yielded["huge"] += len(_CHUNK)
                yield _CHUNK
            yield b"]}"

        return StreamingResponse(body(), media_type="application/json")

    async def ok(request: Request) -> Response:
        if request.path_params["endpoint"] == "series":
            return Response(SERIES_OK, media_type="application/json")
        return Response(_ok({"resultType": "matrix", "result": []}), media_type="application/json")

    return Starlette(
        routes=[
            Route("/case/{case}/api/v1/{endpoint}", case),
            Route("/drip/api/v1/{endpoint}", drip),
            Route("/huge/api/v1/{endpoint}", huge),
            Route("/ok/api/v1/{endpoint}", ok),
        ]
    )


@contextlib.contextmanager
def hostile_prometheus() -> Iterator[HostilePrometheus]:
    """The hostile Prometheus on a free local port, in a thread, for the block."""
    server = HostilePrometheus("")
    with running_simulator(app=_app(server)) as url:
        server.base = url.removesuffix("/v1")
        yield server
