"""Local test servers for the probe: exact bytes, exact timing, ground truth.

`ScriptedServer` is a plain-socket HTTP/1.1 server (TCP_NODELAY on every
accepted socket, one thread per connection). Each request gets a `Script`: a
status line and headers, then body steps, each step ONE `sendall` (one TCP
write) after its own delay, then an ending: a clean chunked end, an abrupt
close (a disconnect mid-stream) or a stall. It records every request and the
`perf_counter_ns()` just before it writes the first step marked `content`: the
ground truth (same clock: CLOCK_MONOTONIC) that bench/ measures a probe's TTFT against and that tests use as
a lower bound only (a client cannot read a write before it starts; how soon after is load-dependent).

Stepwise mode (`ScriptedServer(script, stepwise=True)`, probed with `probe_stepwise`) checks WHICH write a
probe stamped each phase at, with no wall clock, so a loaded machine cannot change the answer:

- The server numbers every write it makes (a "unit": the headers of request i, each step k, the end) in
  `units`, appending the unit's number just BEFORE writing its bytes. `StepClock`, the probe's `clock_ns`,
  reads that number: a stamp taken after reading bytes of unit u is at least u (the number came first).
- Before each write after the headers, the server waits until the probe has TAKEN everything written so far:
  `StepTransport` (the probe's httpx transport) reports the headers as taken when the response object is
  returned (after the probe stamped headers_ms), and body bytes only when the probe asks for the NEXT chunk
  (`_TakenStream`), i.e. after its stamp of this one. So the number cannot move past u while the probe
  handles unit u's bytes: the stamp is exactly u, however slow the client or fast the server.
- Each socket read therefore holds one unit's bytes only (the next is not written yet), as on a stream whose
  writes are far apart; a probe that closes the response early releases the server (`aclose`).

`StepClock.stamps(sample)` names the unit each phase was stamped at, e.g. {"headers": "headers",
"first_event": 0, "ttft": 1, "first_content": 1, "total": "end"}: the role chunk was the first event and
step 1 the first token. Timing figures (how close a stamp is to the server's write) live in
bench/bench_probe_accuracy.py and bench/bench_protocol_accuracy.py.

Helpers build OpenAI/Anthropic frames, so tests read like the stream they send.
"""

from __future__ import annotations

import asyncio
import json
import select
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import httpx

from planner.probes.ttft import ProbeTarget, TtftSample, probe_once

__all__ = [
    "RecordedRequest",
    "RecordingSleep",
    "StartClock",
    "StepClock",
    "StepTransport",
    "self_signed_cert",
    "Script",
    "ScriptedServer",
    "Step",
    "anthropic_event",
    "chat_chunk",
    "completion_chunk",
    "full_backlog",
    "probe_stepwise",
    "sse",
    "usage_chunk",
]

#: Response header naming the request index in stepwise mode, so the client side can report what it took.
STEP_HEADER = "x-scripted-request"
#: How long a stepwise server waits for the probe to take a write: only a guard against a hang.
_TAKE_WAIT_S = 60.0


def self_signed_cert(directory, host: str = "localhost") -> tuple[str, str]:
    """(cert.pem, key.pem) of a one-day self-signed certificate for `host`, made with the openssl CLI."""
    cert, key = f"{directory}/cert.pem", f"{directory}/key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            f"/CN={host}",
            "-addext",
            f"subjectAltName=DNS:{host}",
            "-keyout",
            key,
            "-out",
            cert,
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert, key


class StartClock:
    """A perf_counter_ns clock for probe_once's `clock_ns` seam
    that remembers its first reading (the sample's start)."""

    def __init__(self) -> None:
        self.start_ns: int | None = None

    def __call__(self) -> int:
        t = time.perf_counter_ns()
        if self.start_ns is None:
            self.start_ns = t
        return t


class RecordingSleep:
    """probe_once's retry `sleep` seam: records each wait and yields without waiting it out."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        await asyncio.sleep(0)  # yields to the loop once; no time passes


@contextmanager
def full_backlog() -> Iterator[int]:
    """A port on 127.0.0.1 whose listener never accepts and whose accept queue is full, so the kernel drops
    every further SYN: a connect to it times out.

    The queue is full once one connection waits in it (listen(0)); select() reporting the listener readable is
    that event, so no sleep is needed."""
    with socket.socket() as lst:
        lst.bind(("127.0.0.1", 0))
        lst.listen(0)
        with socket.create_connection(lst.getsockname()):
            readable, _, _ = select.select([lst], [], [], _TAKE_WAIT_S)
            assert readable, "the filler connection never reached the accept queue"
            yield lst.getsockname()[1]


def sse(obj: object, *, space: bool = True, event: str | None = None) -> bytes:
    """One SSE frame: `data: <json>` (or `data:<json>` with space=False), blank line."""
    data = obj if isinstance(obj, str) else json.dumps(obj)
    head = f"event: {event}\n" if event else ""
    return f"{head}data:{' ' if space else ''}{data}\n\n".encode()


def chat_chunk(delta: dict | None = None, finish: str | None = None, **extra) -> dict:
    """An OpenAI chat.completion.chunk with one choice."""
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "model": "test",
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}],
        **extra,
    }


def completion_chunk(text: str, finish: str | None = None) -> dict:
    return {
        "id": "cmpl-test",
        "object": "text_completion",
        "model": "test",
        "choices": [{"index": 0, "text": text, "finish_reason": finish}],
    }


def usage_chunk(prompt: int, completion: int, cached: int | None = None) -> dict:
    """The usage-only final chunk (`choices: []`) that stream_options.include_usage produces."""
    usage: dict = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    return {"id": "chatcmpl-test", "object": "chat.completion.chunk", "model": "test", "choices": [], "usage": usage}


def anthropic_event(kind: str, **payload) -> bytes:
    return sse({"type": kind, **payload}, event=kind)


@dataclass
class Step:
    """Write `data` as one TCP write after sleeping `delay_s`; `content` marks the ground-truth first content."""

    data: bytes
    delay_s: float = 0.0
    content: bool = False


@dataclass
class Script:
    """What to answer one request with.

    end: "complete" (terminating chunk), "disconnect" (close without it: a broken stream),
    or "stall" (send nothing more until the server stops). chunked=False sends a
    Content-Length body (all steps joined) — used for JSON/HTML bodies.
    """

    steps: list[Step] = field(default_factory=list)
    status: int = 200
    reason: str = "OK"
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "text/event-stream"})
    header_delay_s: float = 0.0
    end: str = "complete"
    chunked: bool = True


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    received_ns: int
    connection_no: int

    def json(self) -> dict:
        return json.loads(self.body)


class ScriptedServer:
    """Serve scripts on 127.0.0.1:<free port>. Use as a context manager; `.url` is "http://127.0.0.1:PORT/v1".

    `scripts` is one Script for every request, a list (request i gets scripts[i], the last
    one repeating), or a function (request index, RecordedRequest) → Script. `stepwise`: write each unit only
    once the probe has taken the previous one, numbering them in `units` (module docstring).
    """

    def __init__(
        self,
        scripts: Script | list[Script] | Callable[[int, RecordedRequest], Script],
        ssl_context: ssl.SSLContext | None = None,
        *,
        stepwise: bool = False,
    ) -> None:
        self._scripts = scripts
        self._ssl = ssl_context
        self.stepwise = stepwise
        #: unit number → (request index, "headers" | step index | "end"), appended just before each write;
        #: number 0 is "nothing written yet"
        self.units: list[tuple[int, int | str]] = [(-1, "before")]
        self._sent: dict[int, int] = {}  # request → body bytes written (stepwise)
        self._taken: dict[int, int] = {}  # request → body bytes the probe has taken
        self._headers_taken: set[int] = set()
        self._released: set[int] = set()  # requests whose response the probe closed: stop waiting for it
        self._took = threading.Condition()
        self.sni_names: list[str | None] = []  # server name each TLS client asked for
        self.requests: list[RecordedRequest] = []
        self.first_content_ns: list[int | None] = []
        self.connections = 0
        self.accepted_ns: dict[int, int] = {}  # connection number → perf_counter_ns() when accept() returned
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self.port = self._sock.getsockname()[1]
        self.url = f"{'https' if ssl_context else 'http'}://127.0.0.1:{self.port}/v1"
        if ssl_context is not None:
            ssl_context.sni_callback = lambda sock, name, ctx: self.sni_names.append(name)
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> ScriptedServer:
        t = threading.Thread(target=self._accept_loop, daemon=True)
        t.start()
        self._threads.append(t)
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        with self._took:
            self._took.notify_all()
        try:
            self._sock.close()
        except OSError:
            pass

    # ---- stepwise mode: the client side (StepTransport) reports what the probe has taken ----

    def took_headers(self, i: int) -> None:
        with self._took:
            self._headers_taken.add(i)
            self._took.notify_all()

    def took_body(self, i: int, nbytes: int) -> None:
        with self._took:
            self._taken[i] = self._taken.get(i, 0) + nbytes
            self._took.notify_all()

    def released(self, i: int) -> None:
        with self._took:
            self._released.add(i)
            self._took.notify_all()

    def _turn(self, i: int, unit: int | str) -> None:
        """Stepwise: wait until the probe took all of request i written so far, then number the next write."""
        if not self.stepwise:
            return
        with self._took:
            if unit != "headers":
                taken = self._took.wait_for(
                    lambda: (
                        self._stop.is_set()
                        or i in self._released
                        or (i in self._headers_taken and self._taken.get(i, 0) >= self._sent.get(i, 0))
                    ),
                    timeout=_TAKE_WAIT_S,
                )
                assert taken, f"the probe never took request {i}'s bytes before unit {unit!r}"
            self.units.append((i, unit))

    def _write(self, conn: socket.socket, i: int, data: bytes, body_bytes: int) -> None:
        conn.sendall(data)
        with self._took:
            self._sent[i] = self._sent.get(i, 0) + body_bytes

    def server_ttft_ms(self, i: int) -> float | None:
        """Request i's TTFT on the server's clock: its connection's accept() to the first content write.

        The truth for a client that opens a fresh connection per request (as the probe does): it
        starts its clock just before connecting, so the two differ only by the connect and the read.
        """
        first = self.first_content_ns[i]
        accepted = self.accepted_ns.get(self.requests[i].connection_no)
        return None if first is None or accepted is None else (first - accepted) / 1e6

    def _script_for(self, i: int, req: RecordedRequest) -> Script:
        s = self._scripts
        if isinstance(s, Script):
            return s
        if isinstance(s, list):
            return s[min(i, len(s) - 1)]
        return s(i, req)

    def _accept_loop(self) -> None:
        try:
            self._sock.settimeout(0.2)
        except OSError:  # the server was stopped before this thread started
            return
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
                accepted_ns = time.perf_counter_ns()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self.connections += 1
                n = self.connections
                self.accepted_ns[n] = accepted_ns
            t = threading.Thread(target=self._serve, args=(conn, n), daemon=True)
            t.start()

    def _read_request(self, conn: socket.socket, buf: bytearray, conn_no: int) -> RecordedRequest | None:
        while b"\r\n\r\n" not in buf:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            buf += chunk
        received_ns = time.perf_counter_ns()
        head, _, rest = bytes(buf).partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        length = int(headers.get("content-length", "0"))
        body = bytearray(rest)
        while len(body) < length:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            body += chunk
        buf[:] = body[length:]
        return RecordedRequest(method, path, headers, bytes(body[:length]), received_ns, conn_no)

    def _serve(self, conn: socket.socket, conn_no: int) -> None:
        buf = bytearray()
        try:
            if self._ssl is not None:
                try:
                    conn = self._ssl.wrap_socket(conn, server_side=True)
                except (ssl.SSLError, OSError):
                    return  # the client refused our certificate: its side records the TLS failure
            while not self._stop.is_set():
                req = self._read_request(conn, buf, conn_no)
                if req is None:
                    return
                with self._lock:
                    i = len(self.requests)
                    self.requests.append(req)
                    self.first_content_ns.append(None)
                script = self._script_for(i, req)
                if not self._answer(conn, script, i):
                    return
                if req.headers.get("connection", "").lower() == "close":
                    return
        except OSError:
            return
        finally:
            try:
                conn.close()
            except OSError:
                pass

    def _answer(self, conn: socket.socket, script: Script, i: int) -> bool:
        """Write the response; False when the connection must be closed afterwards."""
        if script.header_delay_s:
            if self._stop.wait(script.header_delay_s):
                return False
        head = [f"HTTP/1.1 {script.status} {script.reason}"]
        head += [f"{k}: {v}" for k, v in script.headers.items()]
        if self.stepwise:
            head.append(f"{STEP_HEADER}: {i}")
        if script.chunked:
            head.append("Transfer-Encoding: chunked")
        else:
            head.append(f"Content-Length: {sum(len(s.data) for s in script.steps)}")
        self._turn(i, "headers")
        self._write(conn, i, ("\r\n".join(head) + "\r\n\r\n").encode("latin-1"), 0)
        if not script.chunked:
            body = b"".join(s.data for s in script.steps)
            if body:
                self._turn(i, 0)
                self._write(conn, i, body, len(body))
            return True
        for k, step in enumerate(script.steps):
            if step.delay_s and self._stop.wait(step.delay_s):
                return False
            if not step.data:
                continue
            self._turn(i, k)
            if step.content and self.first_content_ns[i] is None:
                self.first_content_ns[i] = time.perf_counter_ns()  # stamped as the write starts
            self._write(conn, i, f"{len(step.data):x}\r\n".encode() + step.data + b"\r\n", len(step.data))
        if script.end == "stall":
            self._stop.wait(60)
            return False
        self._turn(i, "end")
        if script.end == "disconnect":
            conn.shutdown(socket.SHUT_RDWR)
            return False
        conn.sendall(b"0\r\n\r\n")
        return True


class _TakenStream(httpx.AsyncByteStream):
    """A response body that reports each chunk to the stepwise server only when the probe asks for the next
    one (or closes the response): by then the probe has stamped it."""

    def __init__(self, inner: httpx.AsyncByteStream, server: ScriptedServer, i: int) -> None:
        self._inner, self._server, self._i = inner, server, i

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            yield chunk
            self._server.took_body(self._i, len(chunk))

    async def aclose(self) -> None:
        self._server.released(self._i)
        await self._inner.aclose()


class StepTransport(httpx.AsyncBaseTransport):
    """httpx's own transport, reporting to a stepwise ScriptedServer what the probe has taken (module docstring)."""

    def __init__(self, server: ScriptedServer) -> None:
        self._server = server
        self._inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._inner.handle_async_request(request)
        i = int(response.headers[STEP_HEADER])  # KeyError: the server is not stepwise
        assert isinstance(response.stream, httpx.AsyncByteStream)
        self._server.took_headers(i)  # the probe stamped headers_ms before this returned
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_TakenStream(response.stream, self._server, i),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


class StepClock:
    """probe_once's `clock_ns` for a stepwise ScriptedServer: the number of the unit the server last began to
    write, as whole milliseconds, so each of the sample's phases names the write it was stamped at."""

    PHASES = ("headers", "first_event", "ttft", "first_content", "total")

    def __init__(self, server: ScriptedServer) -> None:
        self._server = server
        self.start: int | None = None

    def __call__(self) -> int:
        n = len(self._server.units) - 1
        if self.start is None:
            self.start = n
        return n * 1_000_000

    def unit(self, ms: float | None) -> tuple[int, int | str] | None:
        """(request index, "headers" | step index | "end") of the write a phase of `ms` was stamped at."""
        if ms is None:
            return None
        assert self.start is not None and ms == round(ms), ms
        return self._server.units[self.start + round(ms)]

    def at(self, ms: float | None) -> int | str | None:
        """The step (index into the script's steps, "headers" or "end") a phase of `ms` was stamped at."""
        u = self.unit(ms)
        return None if u is None else u[1]

    def stamps(self, sample: TtftSample) -> dict[str, int | str | None]:
        """Each phase of `sample` → the step it was stamped at (None: the phase did not happen)."""
        return {p: self.at(getattr(sample, f"{p}_ms")) for p in self.PHASES}


async def probe_stepwise(server: ScriptedServer, target: ProbeTarget, **kwargs) -> tuple[TtftSample, StepClock]:
    """probe_once against a stepwise server, on a StepClock (kwargs go to probe_once: max_attempts, sleep, …)."""
    assert server.stepwise, "probe_stepwise needs ScriptedServer(..., stepwise=True)"
    clock = StepClock(server)
    transport = StepTransport(server)
    async with httpx.AsyncClient(transport=transport, trust_env=False, timeout=target.timeout_s) as client:
        return await probe_once(target, client=client, clock_ns=clock, **kwargs), clock
