"""The simulated endpoint in virtual time: its timing model measured exactly, whatever else the machine is doing.

Over real HTTP a client's figures carry the machine's scheduling: on a loaded machine the simulator's timers and
the client's reads run late, so a test or a calibration that compares them with the configured model can only
assert loose bands, and even those fail beside other work. Here nothing takes time but the waits the model
makes: `VirtualTimeLoop` is an asyncio event loop whose clock jumps to the next timer whenever nothing is ready,
and `ASGIStreamTransport` hands a request to the simulator's ASGI app in the same loop, streaming each frame the
app sends to the client as it is sent (httpx's own ASGITransport waits for the whole body). The probe engine, a
sweep or a calibration runs unchanged on an `httpx.AsyncClient` over that transport with `virtual_clock_ns` as its
clock, and measures the model: a 200 ms prefill is 200 ms to the nanosecond.

Real I/O still works on the loop (the probe's warm-up serves a canned stream on 127.0.0.1, the resolver runs in a
thread): while a socket other than the loop's own wake-up pipe is registered, or a thread started with
`run_in_executor` is running, the loop waits for it in real time and the virtual clock moves by the time waited.

    async def main():
        async with virtual_simulator(config) as sim:
            target = ProbeTarget(base_url=sim.url, model="m")
            return await probe_once(target, client=sim.client, clock_ns=virtual_clock_ns)

    sample = run_virtual(main())
"""

from __future__ import annotations

import asyncio
import contextlib
import selectors
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from concurrent.futures import Executor
from concurrent.futures import Future as ThreadFuture
from dataclasses import dataclass
from typing import Any, TypeVar, TypeVarTuple
from urllib.parse import unquote

import httpx
from starlette.types import ASGIApp, Message

from planner.simulator.app import build_app
from planner.simulator.config import SimulatorConfig
from planner.simulator.timing import SimEngine

__all__ = [
    "VIRTUAL_BASE_URL",
    "ASGIStreamTransport",
    "VirtualSimulator",
    "VirtualTimeLoop",
    "run_virtual",
    "virtual_client",
    "virtual_clock_ns",
    "virtual_simulator",
]

#: The base URL a probe of a virtual simulator is given: an IP (no resolver), and the discard port, so a client that
#: is not the virtual one is refused at once instead of reaching some server.
VIRTUAL_BASE_URL = "http://127.0.0.1:9/v1"

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


class _VirtualSelector(selectors.DefaultSelector):
    """Polls without blocking; when nothing is ready and only timers are left, moves the loop's clock to the next."""

    def __init__(self) -> None:
        super().__init__()
        self.loop: VirtualTimeLoop | None = None

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = super().select(0)
        if ready or timeout == 0:
            return ready
        loop = self.loop
        assert loop is not None
        if timeout is None or loop.real_io_pending():
            # Only real I/O or a thread can wake the loop: wait for it in real time (a hang is pytest-timeout's).
            ready = super().select(timeout)
            if not ready and timeout is not None:
                loop.advance(timeout)
            return ready
        loop.advance(timeout)
        return []


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An event loop on a virtual clock (seconds from 0): `time()` moves only when every task waits on a timer."""

    def __init__(self) -> None:
        selector = _VirtualSelector()
        super().__init__(selector)
        selector.loop = self
        self._virtual_now = 0.0
        self._threads = 0

    def time(self) -> float:
        return self._virtual_now

    def advance(self, seconds: float) -> None:
        """Move the clock on by `seconds` (the selector calls this when only timers are left)."""
        self._virtual_now += max(0.0, seconds)

    def real_io_pending(self) -> bool:
        """True while a thread runs for the loop or a socket other than the loop's wake-up pipe is registered."""
        if self._threads:
            return True
        own = self._ssock.fileno() if self._ssock is not None else -1  # type: ignore[attr-defined]
        return any(fd != own for fd in self._selector.get_map())  # type: ignore[attr-defined]

    def run_in_executor(self, executor: Executor | None, func: Callable[[*Ts], T], *args: *Ts) -> asyncio.Future[T]:
        fut = super().run_in_executor(executor, func, *args)
        self._threads += 1
        fut.add_done_callback(self._thread_done)
        return fut

    def _thread_done(self, _fut: asyncio.Future[Any] | ThreadFuture[Any]) -> None:
        self._threads -= 1


def run_virtual(main: Coroutine[Any, Any, T]) -> T:
    """Run `main` to completion on a fresh VirtualTimeLoop (as asyncio.run does on a real one)."""
    with asyncio.Runner(loop_factory=VirtualTimeLoop) as runner:
        return runner.run(main)


def virtual_clock_ns() -> int:
    """The running loop's clock in integer nanoseconds: probe_once's `clock_ns` seam in virtual time."""
    return round(asyncio.get_running_loop().time() * 1e9)


class _ResponseStream(httpx.AsyncByteStream):
    """The body messages of one ASGI response, each yielded as the app sends it; closing it disconnects."""

    def __init__(self, queue: asyncio.Queue[Message | BaseException | None], disconnected: asyncio.Event) -> None:
        self._queue = queue
        self._disconnected = disconnected
        self._done = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while not self._done:
            message = await self._queue.get()
            if message is None:
                self._done = True
                return
            if isinstance(message, BaseException):
                raise httpx.ReadError(f"the app failed mid-stream: {message!r}") from message
            if message.get("body"):
                yield message["body"]
            if not message.get("more_body", False):
                self._done = True

    async def aclose(self) -> None:
        self._disconnected.set()  # the app sees http.disconnect, as over a closed connection


class ASGIStreamTransport(httpx.AsyncBaseTransport):
    """An httpx transport that serves requests from an ASGI app in the same event loop, streaming the response.

    Each `http.response.body` message is one read on the client side (as one TCP write with TCP_NODELAY is), and
    the response's headers arrive when the app sends `http.response.start`, not when the body ends. Closing the
    response early sends the app `http.disconnect` (ASGI spec 2.3, as uvicorn's HTTP protocols do).
    """

    def __init__(self, app: ASGIApp, client: tuple[str, int] = ("127.0.0.1", 40000)) -> None:
        self.app = app
        self.client = client

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        url = request.url
        scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": request.method,
            "scheme": url.scheme,
            "path": unquote(url.path),
            "raw_path": url.raw_path.split(b"?", 1)[0],
            "query_string": url.query,
            "root_path": "",
            "headers": [(k.lower(), v) for k, v in request.headers.raw],
            "client": self.client,
            "server": (url.host, url.port or (443 if url.scheme == "https" else 80)),
        }
        queue: asyncio.Queue[Message | BaseException | None] = asyncio.Queue()
        disconnected = asyncio.Event()
        body_sent = False

        async def receive() -> Message:
            nonlocal body_sent
            if not body_sent:
                body_sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await disconnected.wait()
            return {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            if not disconnected.is_set():  # after a disconnect a send goes nowhere (uvicorn drops it too)
                queue.put_nowait(message)

        async def run() -> None:
            try:
                await self.app(scope, receive, send)
            except Exception as exc:  # noqa: BLE001 - handed to the reader, which raises it as a read error
                queue.put_nowait(exc)
            finally:
                queue.put_nowait(None)

        task = asyncio.get_running_loop().create_task(run())
        first = await queue.get()
        if first is None or isinstance(first, BaseException) or first.get("type") != "http.response.start":
            await task
            raise httpx.RemoteProtocolError(f"the app sent no response start: {first!r}", request=request)
        response = httpx.Response(
            first["status"],
            headers=[(k, v) for k, v in first.get("headers", [])],
            stream=_ResponseStream(queue, disconnected),
            extensions={"http_version": b"HTTP/1.1"},
            request=request,
        )
        response.extensions["asgi_task"] = task  # keeps the app's task referenced while the body streams
        return response


def virtual_client(app: ASGIApp, base_url: str = "") -> httpx.AsyncClient:
    """An AsyncClient whose requests go to `app` through ASGIStreamTransport (no sockets)."""
    return httpx.AsyncClient(transport=ASGIStreamTransport(app), base_url=base_url, trust_env=False)


@dataclass
class VirtualSimulator:
    """A simulated endpoint served in-process: probe `url` with `client`; `engine` holds its books (SimEngine)."""

    engine: SimEngine
    client: httpx.AsyncClient
    url: str = VIRTUAL_BASE_URL


@contextlib.asynccontextmanager
async def virtual_simulator(
    config: SimulatorConfig | None = None, *, wall_clock: Callable[[], float] = time.time
) -> AsyncIterator[VirtualSimulator]:
    """A simulator whose engine runs on the running loop's clock (virtual time on a VirtualTimeLoop)."""
    app = build_app(config, clock=asyncio.get_running_loop().time, wall_clock=wall_clock)
    async with virtual_client(app, base_url=VIRTUAL_BASE_URL.removesuffix("/v1")) as client:
        yield VirtualSimulator(app.state.engine, client)
