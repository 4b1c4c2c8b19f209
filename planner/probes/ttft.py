"""One TTFT sample: a streaming request timed phase by phase.

Clock: `time.perf_counter_ns()`, started just before the first attempt (DNS
included). `dns_ms`, `connect_ms`, `tls_ms` are durations of those phases in
the final attempt; `headers_ms`, `first_event_ms`, `ttft_ms`,
`first_content_ms` and `total_ms` are offsets from that start, so after a 429
or a 503 they include the failed attempts and the Retry-After waits
(`retry_wait_ms` says how much of it was waiting; a cold reading counts from
the first send, as a user would).

Rules kept here: the host is resolved by the probe (timed, getaddrinfo in a
thread) and the request goes to that IP with the original Host header and TLS
SNI; bytes are read raw (`aiter_raw`) with `Accept-Encoding: identity`;
`trust_env=False` unless a proxy is configured (then it is used and recorded);
a fresh connection per sample unless `keep_alive` (the sample records whether
the connection was reused); a nonce at the start of the prompt unless `cached`.

Over 400 lines: the timed request is one state machine (connect, send, first byte, first event, retries) whose
timestamps must be read in one place to be comparable.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import socket
import ssl
import time
import urllib.request
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import httpx

from planner.endpoints.secrets_file import lookup_key
from planner.probes.errors import (
    RETRYABLE_CLASSES,
    MissingApiKey,
    ProbeFault,
    backoff_s,
    class_for_status,
    parse_retry_after,
    scrub,
)
from planner.probes.prompts import build_prompt, new_nonce
from planner.probes.protocols import (
    PROTOCOLS,
    Signer,
    build_request,
    default_auth,
    interpret,
    new_decoder,
    request_url,
    retry_after_s,
    stream_content_type,
)
from planner.probes.sse import SseLineTooLong

__all__ = [
    "PHASES_MS",
    "MissingApiKey",
    "ProbeTarget",
    "TtftSample",
    "parse_retry_after",
    "probe_once",
    "resolve_api_key",
]

#: TtftSample's phase timings in the order they happen, each in ms (dns/connect/tls are durations, the rest
#: offsets from send); total_ms, the end of the stream, follows them. probe_sample's columns have the same names.
PHASES_MS = ("dns_ms", "connect_ms", "tls_ms", "headers_ms", "first_event_ms", "ttft_ms", "first_content_ms")

_BODY_SNIPPET_BYTES = 2048

#: Reading caps (issue 15 item 1): a stream that sends this much without a token is given up on, so a
#: hostile or broken server costs bounded CPU. Real streams send a role event or two before the first token.
MAX_BYTES_BEFORE_TOKEN = 256 * 1024
MAX_EVENTS_BEFORE_TOKEN = 1000
_PARSE_SLICE_BYTES = 8192
#: After the first token the sample is decided once the stream ends or outgrows what max_tokens can explain.
BYTES_PER_TOKEN_CAP = 4096
EVENTS_PER_TOKEN_CAP = 8


async def _sliced_reads(
    reads: AsyncIterator[bytes], clock_ns: Callable[[], int]
) -> AsyncIterator[tuple[bytes, int, int]]:
    """(slice, read number, read time) for each ≤ 8 KB slice of each socket read, so the caps stop a flood
    after one slice rather than after a whole 64 KB read; every slice carries its read's timestamp."""
    read_no = 0
    async for chunk in reads:
        t = clock_ns()
        read_no += 1
        for i in range(0, len(chunk), _PARSE_SLICE_BYTES):
            yield chunk[i : i + _PARSE_SLICE_BYTES], read_no, t


def _after_token_caps(max_tokens: int) -> tuple[int, int]:
    """(bytes, events) read after which a stream that already gave its first token is no longer read."""
    return (1 << 20) + max_tokens * BYTES_PER_TOKEN_CAP, 256 + max_tokens * EVENTS_PER_TOKEN_CAP


@dataclass(frozen=True)
class ProbeTarget:
    """What to probe and how. `api_key_env` names the variable holding the key ("" = no key)."""

    base_url: str
    model: str
    protocol: str = "openai-chat"
    api_key_env: str = ""
    prompt_tokens: int = 1000
    max_tokens: int = 64
    timeout_s: float = 30.0
    cached: bool = False
    keep_alive: bool = False


@dataclass
class TtftSample:
    """One probe outcome; field names equal ProbeSampleRow's measurement columns (times in ms).

    planner.store.probes.sample_row turns it into a stored row (the probe never imports the store)."""

    started_at_ms: int
    ok: bool = False
    error_class: str | None = None
    error_detail: str | None = None
    status_code: int | None = None
    http_version: str | None = None
    attempts: int = 0
    retry_wait_ms: float = 0.0
    conn_reused: bool = False
    remote_ip: str | None = None
    proxy: str | None = None
    dns_ms: float | None = None
    connect_ms: float | None = None
    tls_ms: float | None = None
    headers_ms: float | None = None
    first_event_ms: float | None = None
    ttft_ms: float | None = None
    first_content_ms: float | None = None
    total_ms: float | None = None
    output_tokens: int | None = None
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    prompt_tokens_requested: int | None = None
    buffered: bool = False
    cached_series: bool = False
    #: The server's own latency figure where the protocol reports one (Bedrock `metadata.metrics.latencyMs`),
    #: kept beside ours.
    server_latency_ms: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (JSON-ready)."""
        return asdict(self)


def resolve_api_key(target: ProbeTarget, secrets: Mapping[str, str] | None = None) -> str | None:
    """The API key named by target.api_key_env: from the environment, else from `secrets`, else from
    Streamlit's secrets files (planner.endpoints.secrets_file).

    Returns None when the target needs no key. Raises MissingApiKey (naming the
    variable, never a value) when it is set in none of those places.
    """
    name = target.api_key_env.strip()
    if not name:
        return None
    value = os.environ.get(name) or (secrets or {}).get(name) or lookup_key(name)
    if not value:
        raise MissingApiKey(name)
    return str(value)


_ssl_context: ssl.SSLContext | None = None


def _shared_ssl_context() -> ssl.SSLContext:
    # Building a context loads the CA bundle (tens of ms of CPU): do it once, not per sample.
    global _ssl_context
    if _ssl_context is None:
        _ssl_context = (
            httpx.create_ssl_context() if hasattr(httpx, "create_ssl_context") else ssl.create_default_context()
        )
    return _ssl_context


def _proxy_for(url: str) -> str | None:
    """The proxy the environment configures for `url` (HTTPS_PROXY etc., honouring NO_PROXY), or None."""
    parsed = httpx.URL(url)
    proxies = urllib.request.getproxies_environment()
    proxy = proxies.get(parsed.scheme) or proxies.get("all")
    if not proxy:
        return None
    if urllib.request.proxy_bypass_environment(parsed.host, proxies):  # type: ignore[attr-defined]  # not in typeshed
        return None
    return proxy


def _redact_proxy(proxy: str) -> str:
    """The proxy URL without credentials, cut to the store's 200 characters."""
    u = httpx.URL(proxy)
    return (str(u.copy_with(username=None, password=None)) if u.userinfo else proxy)[:200]


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


class _Attempt:
    """Timing state of one attempt; t0_ns is the sample's start (shared by all attempts)."""

    def __init__(self, t0_ns: int, clock_ns: Callable[[], int]) -> None:
        self.t0_ns = t0_ns
        self.clock_ns = clock_ns
        self.events: dict[str, int] = {}
        self.server_addr: str | None = None

    def ms(self, t_ns: int) -> float:
        return (t_ns - self.t0_ns) / 1e6

    def span_ms(self, start: str, end: str) -> float | None:
        a, b = self.events.get(start), self.events.get(end)
        return None if a is None or b is None else (b - a) / 1e6

    async def trace(self, name: str, info: dict[str, Any]) -> None:
        self.events.setdefault(name, self.clock_ns())
        if name == "connection.connect_tcp.complete":
            stream = info.get("return_value")
            try:
                addr = stream.get_extra_info("server_addr") if stream is not None else None
                if addr:
                    self.server_addr = str(addr[0])
            except Exception:  # noqa: BLE001 - diagnostics only
                pass


async def _run_attempt(
    sample: TtftSample,
    target: ProbeTarget,
    client: httpx.AsyncClient,
    url: str,
    prompt: str,
    api_key: str | None,
    proxy: str | None,
    att: _Attempt,
    signer: Signer | None = None,
) -> None:
    """Send one request and fill `sample`; raises ProbeFault on any failure."""
    clock_ns = att.clock_ns
    parsed = httpx.URL(url)
    headers, body = build_request(target.protocol, target.model, prompt, target.max_tokens, api_key)
    content = json.dumps(body).encode()
    if signer is not None:  # SigV4 signs the original URL and these exact bytes, before Host/Connection are added
        signer("POST", url, headers, content)
    extensions: dict[str, Any] = {"trace": att.trace}
    send_url = parsed
    sample.dns_ms = None
    if proxy is None and not target.keep_alive:
        host = parsed.host
        if _is_ip(host):
            ip = host
            sample.dns_ms = 0.0
        else:
            port = parsed.port or (443 if parsed.scheme == "https" else 80)
            t = clock_ns()
            try:
                infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
            except (socket.gaierror, UnicodeError) as exc:
                raise ProbeFault("dns", f"cannot resolve {host}: {exc}") from None
            sample.dns_ms = (clock_ns() - t) / 1e6
            # IPv4 first when the name has both: "localhost" → ::1 would miss a server bound to 127.0.0.1.
            infos.sort(key=lambda i: i[0] != socket.AF_INET)
            ip = str(infos[0][4][0])
        send_url = parsed.copy_with(host=ip)
        headers["Host"] = parsed.netloc.decode("ascii")
        if parsed.scheme == "https":
            extensions["sni_hostname"] = host
    if not target.keep_alive:
        headers["Connection"] = "close"  # never leave this connection in a pool: the next sample connects afresh
    request = client.build_request("POST", send_url, headers=headers, content=content, extensions=extensions)
    try:
        response = await client.send(request, stream=True)
    except httpx.ConnectTimeout:
        raise ProbeFault("connect_timeout", f"no connection to {parsed.host} within {target.timeout_s:g} s") from None
    except httpx.ConnectError as exc:
        text = str(exc)
        if isinstance(exc.__cause__, ssl.SSLError) or "SSL" in text or "certificate" in text.lower():
            raise ProbeFault("tls", f"TLS failure with {parsed.host}: {text}") from None
        raise ProbeFault(
            "refused", f"cannot connect to {parsed.host}:{parsed.port or ''}: {text}".replace(":: ", ": ")
        ) from None
    except httpx.ReadTimeout:
        raise ProbeFault("read_timeout", f"no response headers within {target.timeout_s:g} s") from None
    except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
        raise ProbeFault("disconnect", f"the server closed the connection before responding: {exc}") from None
    except httpx.HTTPError as exc:
        raise ProbeFault("http_error", f"{type(exc).__name__}: {exc}") from None
    try:
        await _read_response(sample, target, response, att, url)
    finally:
        await response.aclose()


def _fill_connection(sample: TtftSample, att: _Attempt) -> None:
    """Connection facts from the trace: also for an attempt that failed before any response."""
    sample.conn_reused = (
        "connection.connect_tcp.started" not in att.events and "http11.send_request_headers.started" in att.events
    )
    sample.connect_ms = att.span_ms("connection.connect_tcp.started", "connection.connect_tcp.complete")
    sample.tls_ms = att.span_ms("connection.start_tls.started", "connection.start_tls.complete")
    if sample.remote_ip is None and att.server_addr:
        sample.remote_ip = att.server_addr


async def _read_response(
    sample: TtftSample, target: ProbeTarget, response: httpx.Response, att: _Attempt, url: str
) -> None:
    clock_ns = att.clock_ns
    t_headers = (
        att.events.get("http11.receive_response_headers.complete")
        or att.events.get("http2.receive_response_headers.complete")
        or clock_ns()
    )
    sample.headers_ms = att.ms(t_headers)
    sample.status_code = response.status_code
    sample.http_version = response.http_version
    _fill_connection(sample, att)
    stream = response.extensions.get("network_stream")
    try:
        addr = stream.get_extra_info("server_addr") if stream is not None else None
        sample.remote_ip = str(addr[0]) if addr else att.server_addr
    except Exception:  # noqa: BLE001 - diagnostics only
        sample.remote_ip = att.server_addr
    status = response.status_code
    if status >= 400:
        snippet = await _body_snippet(response)
        cls = class_for_status(status)
        raise ProbeFault(
            cls,
            f"HTTP {status} from {url}: {snippet}",
            status_code=status,
            retry_after_s=retry_after_s(target.protocol, response.headers, snippet),
        )
    ctype = response.headers.get("content-type", "")
    if stream_content_type(target.protocol) not in ctype.lower():
        snippet = await _body_snippet(response)
        raise ProbeFault(
            "not_sse",
            f"HTTP {status} with content-type {ctype or '(none)'!r}, not an event stream "
            f"(did the server ignore stream=true?): {snippet}",
            status_code=status,
        )
    parser = new_decoder(target.protocol)
    token_events = 0
    token_reads: set[int] = set()
    first_token_ns = last_token_ns = None
    usage_prompt = usage_output = usage_cached = None
    read_no = 0
    events = 0
    cap_bytes, cap_events = _after_token_caps(target.max_tokens)
    try:
        async for chunk, read_no, t in _sliced_reads(response.aiter_raw(), clock_ns):
            try:
                parsed = parser.feed(chunk)
            except SseLineTooLong as exc:
                if first_token_ns is None:
                    raise ProbeFault(
                        "no_content", f"no token before {exc}; stopped reading", status_code=status
                    ) from None
                break
            for ev in parsed:
                events += 1
                if first_token_ns is None and events > MAX_EVENTS_BEFORE_TOKEN:
                    raise ProbeFault(
                        "no_content",
                        f"no token in the first {MAX_EVENTS_BEFORE_TOKEN} events "
                        f"({parser.bytes_seen} bytes); stopped reading",
                        status_code=status,
                    )
                try:
                    info = interpret(target.protocol, ev)
                except RecursionError:  # JSON nested thousands deep: a broken or hostile server, not a crash
                    raise ProbeFault(
                        "bad_json",
                        f"an event's JSON is nested too deeply ({len(ev.data)} bytes); stopped reading",
                        status_code=status,
                    ) from None
                if info.prompt_tokens is not None:
                    usage_prompt = info.prompt_tokens
                if info.output_tokens is not None:
                    usage_output = info.output_tokens
                if info.cached_tokens is not None:
                    usage_cached = info.cached_tokens
                if info.server_latency_ms is not None:
                    sample.server_latency_ms = info.server_latency_ms
                if (info.is_first_event or info.is_token) and sample.first_event_ms is None:
                    sample.first_event_ms = att.ms(t)
                if info.is_token:
                    token_events += 1
                    token_reads.add(read_no)
                    if first_token_ns is None:
                        first_token_ns = t
                        sample.ttft_ms = att.ms(t)
                    last_token_ns = t
                if info.is_visible and sample.first_content_ms is None:
                    sample.first_content_ms = att.ms(t)
            if first_token_ns is None and parser.bytes_seen > MAX_BYTES_BEFORE_TOKEN:
                raise ProbeFault(
                    "no_content",
                    f"no token in the first {parser.bytes_seen} bytes (cap {MAX_BYTES_BEFORE_TOKEN}); stopped reading",
                    status_code=status,
                )
            if first_token_ns is not None and (parser.bytes_seen > cap_bytes or events > cap_events):
                break  # the sample is decided: more bytes than max_tokens explains are not read
    except httpx.ReadTimeout:
        where = "mid-stream" if sample.ttft_ms is not None else "before the first token"
        raise ProbeFault("read_timeout", f"the stream stalled {where} for more than {target.timeout_s:g} s") from None
    except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
        raise ProbeFault(
            "disconnect", f"the connection closed mid-stream after {token_events} token events: {exc}"
        ) from None
    sample.total_ms = att.ms(clock_ns())
    if hasattr(parser, "close") and first_token_ns is None:
        parser.close()  # a binary stream cut off inside a frame is a corrupt frame, not an empty stream
    sample.prompt_tokens, sample.cached_tokens = usage_prompt, usage_cached
    sample.output_tokens = usage_output if usage_output is not None else token_events
    if first_token_ns is None:
        raise ProbeFault(
            "no_content",
            f"the stream ended after {parser.bytes_seen} bytes without a content, reasoning or tool-call token",
            status_code=status,
        )
    # Buffered: a proxy or server that holds the stream delivers every token in one read,
    # or the tokens' spread is a sliver of the time it took to get the first one.
    if token_events >= 4 and last_token_ns is not None:
        spread_ns = last_token_ns - first_token_ns
        sample.buffered = len(token_reads) == 1 or spread_ns < 0.02 * (last_token_ns - att.t0_ns)


async def _body_snippet(response: httpx.Response) -> str:
    data = b""
    try:
        async for chunk in response.aiter_raw():
            data += chunk
            if len(data) >= _BODY_SNIPPET_BYTES:
                break
    except httpx.HTTPError:
        pass
    return data[:_BODY_SNIPPET_BYTES].decode("utf-8", errors="replace").strip() or "(empty body)"


async def probe_once(
    target: ProbeTarget,
    *,
    client: httpx.AsyncClient | None = None,
    api_key: str | None = None,
    max_attempts: int = 3,
    max_retry_wait_s: float = 30.0,
    sleep: Callable[[float], Any] = asyncio.sleep,
    clock_ns: Callable[[], int] = time.perf_counter_ns,
) -> TtftSample:
    """Send one streaming request to `target` and time it; never raises for network or server faults.

    Every failure is a sample with ok=False and an error_class from
    planner.probes.errors.ERROR_CLASSES. 429 and 5xx are retried up to
    `max_attempts` in all, waiting Retry-After (either RFC 9110 form) or an
    exponential backoff (0.5 s, 1 s, …), each wait capped at `max_retry_wait_s`;
    401/403 stop at once. A buffered stream is ok=True with buffered=True.

    `client`: a caller's AsyncClient (its transport and pool are used; with
    keep_alive its pooled connection may be reused). Without one, a fresh client
    with trust_env=False (or the environment's proxy, recorded) is made and closed.
    `api_key`: the key itself; when None and target.api_key_env is set it is
    resolved from the environment (raises MissingApiKey). `sleep` and `clock_ns`
    are seams for tests and benchmarks (clock_ns's first call is the sample's start).
    Raises ValueError for an unknown protocol.
    """
    if target.protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {target.protocol!r}; expected one of {', '.join(PROTOCOLS)}")
    if api_key is None and target.api_key_env:
        api_key = resolve_api_key(target)
    url = request_url(target.protocol, target.base_url, target.model)
    proxy = _proxy_for(url)
    sample = TtftSample(
        started_at_ms=int(time.time() * 1000),
        prompt_tokens_requested=target.prompt_tokens,
        cached_series=target.cached,
        proxy=_redact_proxy(proxy) if proxy else None,
    )
    try:  # a cloud's default credentials (Vertex ADC, the AWS chain), looked up before the clock starts
        api_key, signer = default_auth(target.protocol, url, api_key)
    except MissingApiKey as exc:
        sample.error_class, sample.error_detail = "auth", scrub(str(exc), None)
        return sample
    prompt = build_prompt(target.prompt_tokens, None if target.cached else new_nonce())
    own = client is None
    if client is None:
        timeout = httpx.Timeout(target.timeout_s)
        client = httpx.AsyncClient(
            trust_env=False,
            proxy=proxy,
            timeout=timeout,
            verify=_shared_ssl_context(),
            limits=httpx.Limits(max_keepalive_connections=0),
        )
    try:
        t0 = clock_ns()
        for attempt in range(1, max(1, max_attempts) + 1):
            sample.attempts = attempt
            for name in (
                *PHASES_MS,
                "total_ms",
                "output_tokens",
                "prompt_tokens",
                "cached_tokens",
                "status_code",
                "remote_ip",
                "server_latency_ms",
            ):
                setattr(sample, name, None)
            att = _Attempt(t0, clock_ns)
            try:
                try:
                    async with asyncio.timeout(target.timeout_s):
                        await _run_attempt(sample, target, client, url, prompt, api_key, proxy, att, signer)
                finally:
                    _fill_connection(sample, att)
            except TimeoutError:
                connected = "connection.connect_tcp.complete" in att.events or sample.headers_ms is not None
                fault = ProbeFault(
                    "read_timeout" if connected else "connect_timeout",
                    f"no complete response within {target.timeout_s:g} s"
                    + (" (stalled mid-stream)" if sample.ttft_ms is not None else ""),
                )
            except ProbeFault as exc:
                fault = exc
            except (httpx.HTTPError, OSError) as exc:  # anything the transport raised outside the cases above
                fault = ProbeFault("http_error", f"{type(exc).__name__}: {exc}")
            else:
                sample.ok, sample.error_class, sample.error_detail = True, None, None
                break
            sample.ok = False
            sample.error_class = fault.error_class
            sample.error_detail = scrub(fault.detail, api_key)
            if fault.status_code is not None:
                sample.status_code = fault.status_code
            if fault.error_class in RETRYABLE_CLASSES and attempt < max_attempts:
                wait_s = fault.retry_after_s if fault.retry_after_s is not None else backoff_s(attempt)
                wait_s = max(0.0, min(wait_s, max_retry_wait_s))
                sample.retry_wait_ms += wait_s * 1000.0
                await sleep(wait_s)
                continue
            break
        if sample.total_ms is None:
            sample.total_ms = (clock_ns() - t0) / 1e6
    finally:
        if own:
            await client.aclose()
    return sample
