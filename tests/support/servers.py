"""Local test servers for the probe: exact bytes, exact timing, ground truth.

`ScriptedServer` is a plain-socket HTTP/1.1 server (TCP_NODELAY on every
accepted socket, one thread per connection). Each request gets a `Script`: a
status line and headers, then body steps, each step ONE `sendall` (one TCP
write) after its own delay, then an ending: a clean chunked end, an abrupt
close (a disconnect mid-stream) or a stall. It records every request and the
`perf_counter_ns()` just before it writes the first step marked `content`: the
ground truth a probe's TTFT is checked against (same clock: CLOCK_MONOTONIC).

Helpers build OpenAI/Anthropic frames, so tests read like the stream they send.
"""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = [
    "RecordedRequest",
    "StartClock",
    "self_signed_cert",
    "Script",
    "ScriptedServer",
    "Step",
    "anthropic_event",
    "chat_chunk",
    "completion_chunk",
    "sse",
    "usage_chunk",
]


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
    one repeating), or a function (request index, RecordedRequest) → Script.
    """

    def __init__(
        self,
        scripts: Script | list[Script] | Callable[[int, RecordedRequest], Script],
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self._scripts = scripts
        self._ssl = ssl_context
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
        try:
            self._sock.close()
        except OSError:
            pass

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
        if script.chunked:
            head.append("Transfer-Encoding: chunked")
        else:
            head.append(f"Content-Length: {sum(len(s.data) for s in script.steps)}")
        conn.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        if not script.chunked:
            conn.sendall(b"".join(s.data for s in script.steps))
            return True
        for step in script.steps:
            if step.delay_s and self._stop.wait(step.delay_s):
                return False
            frame = f"{len(step.data):x}\r\n".encode() + step.data + b"\r\n" if step.data else b""
            if step.content and self.first_content_ns[i] is None:
                self.first_content_ns[i] = time.perf_counter_ns()  # stamped as the write starts
            if frame:
                conn.sendall(frame)
        if script.end == "disconnect":
            conn.shutdown(socket.SHUT_RDWR)
            return False
        if script.end == "stall":
            self._stop.wait(60)
            return False
        conn.sendall(b"0\r\n\r\n")
        return True
