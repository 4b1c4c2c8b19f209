"""Server-side RTT probe: DNS (timed, once), repeated TCP connects, TLS handshake, one HTTPS TTFB.

A TCP connect costs exactly one round trip (SYN → SYN/ACK) on the real port, so
the minimum of repeated connects is the best estimate of the path RTT and the
median is the typical one.
The host is resolved once, timed apart, and every connect goes to that IP, so DNS
is never counted as network time. The first connect is dropped (it warms ARP,
route and conntrack state). Every timing is `time.perf_counter_ns()` around one
blocking socket call; the probe runs in a thread so the asyncio worker can await it.

Failures (unresolvable, refused, blocked port, unreachable, timeout, TLS, HTTP,
proxy) are values on the result with a class and a sentence, never exceptions:
a table of regions always fills, each row with its own reason.

Proxies: direct by default, even when HTTPS_PROXY is set in the environment. With
`proxy="http://host:port"`, the TCP connects go to the proxy (and the result says
so), and the TLS handshake and TTFB run through a CONNECT tunnel to the target.

Over 400 lines: one probe's phases (DNS, connects, TLS, TTFB, proxy) share a deadline and a failure vocabulary; each
phase is a small function.
"""

from __future__ import annotations

import asyncio
import errno
import os
import socket
import ssl
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from planner import settings
from planner.errors import PlannerError
from planner.inputs.urls import redact_url
from planner.percentiles import percentile
from planner.probes.errors import RTT_ERROR_CLASSES
from planner.probes.errors import ErrorClass as _E
from planner.probes.rtt_record import SampleRecord
from planner.regions.catalog import CatalogError, RttAddress, RttMethod, parse_target

__all__ = [
    "RTT_ERROR_CLASSES",
    "VANTAGE_ENV",
    "default_vantage",
    "RttResult",
    "RttStats",
    "probe_rtt",
    "probe_rtt_many",
    "probe_rtt_target",
    "rtt_stats",
]

_USER_AGENT = "ttft-planner-rtt/0.1"
VANTAGE_ENV = settings.VANTAGE.name


def default_vantage() -> str:
    """The label server-side samples carry: $TTFT_PLANNER_VANTAGE, else "" — the one default vantage, the same
    the worker uses, so the same server never shows up as two vantages (its host name and "")."""
    return settings.VANTAGE.raw() or ""


@dataclass(frozen=True)
class RttStats:
    """Statistics of kept TCP-connect RTTs, in ms; nearest-rank via planner.percentiles. spread = p90 − min."""

    n: int
    min_ms: float | None
    median_ms: float | None
    p90_ms: float | None

    @property
    def spread_ms(self) -> float | None:
        if self.min_ms is None or self.p90_ms is None:
            return None
        return self.p90_ms - self.min_ms


def rtt_stats(values_ms: Iterable[float]) -> RttStats:
    """min / median / p90 (nearest rank) and n of RTT values in ms (None/NaN dropped)."""
    vals = [float(v) for v in values_ms if v is not None and v == v]
    p50, p90 = percentile(vals, 0.5), percentile(vals, 0.9)
    return RttStats(n=len(vals), min_ms=min(vals) if vals else None, median_ms=p50.value, p90_ms=p90.value)


@dataclass
class RttResult:
    """What one probe of one target measured. Times in ms; `connect_ms` excludes the dropped first connect."""

    region_id: str
    target: str
    vantage: str = ""
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    started_at_ms: int = 0
    remote_ip: str | None = None
    dns_ms: float | None = None
    dropped_first_ms: float | None = None
    connect_ms: list[float] = field(default_factory=list)
    connect_at_ms: list[int] = field(default_factory=list)
    tls_ms: float | None = None
    tls_version: str | None = None
    ttfb_ms: float | None = None
    http_status: int | None = None
    proxy: str | None = None  # set when the TCP figures are to this proxy, not to the target
    error_class: str | None = None
    error_phase: str | None = None  # a server RttMethod (dns | tcp-connect | tls | https-ttfb), or "proxy"
    error_detail: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error_class is None

    @property
    def stats(self) -> RttStats:
        return rtt_stats(self.connect_ms)

    def records(self) -> list[SampleRecord]:
        """The result as raw sample rows (side='server'): dns, each kept connect, tls, ttfb, and any failure."""
        common: dict[str, Any] = dict(  # the SampleRecord fields every row shares
            region_id=self.region_id,
            target=self.target,
            side="server",
            vantage=self.vantage,
            run_id=self.run_id,
            remote_ip=self.remote_ip,
            proxy=self.proxy,
        )
        out: list[SampleRecord] = []
        if self.dns_ms is not None:
            out.append(
                SampleRecord(method=RttMethod.DNS, rtt_ms=self.dns_ms, measured_at_ms=self.started_at_ms, **common)
            )
        for v, at in zip(self.connect_ms, self.connect_at_ms, strict=True):
            out.append(SampleRecord(method=RttMethod.TCP_CONNECT, rtt_ms=v, measured_at_ms=at, **common))
        end_ms = self.connect_at_ms[-1] if self.connect_at_ms else self.started_at_ms
        if self.tls_ms is not None:
            out.append(SampleRecord(method=RttMethod.TLS, rtt_ms=self.tls_ms, measured_at_ms=end_ms, **common))
        if self.ttfb_ms is not None:
            out.append(SampleRecord(method=RttMethod.HTTPS_TTFB, rtt_ms=self.ttfb_ms, measured_at_ms=end_ms, **common))
        if self.error_class is not None:
            # the phase that failed names its method; a failed proxy (or no phase) is a failed TCP connect
            phase = self.error_phase
            method = RttMethod.TCP_CONNECT if phase in (None, "", "proxy") else RttMethod(phase)
            out.append(
                SampleRecord(
                    method=method,
                    rtt_ms=None,
                    measured_at_ms=end_ms,
                    error_class=self.error_class,
                    error_detail=self.error_detail,
                    **common,
                )
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        s = self.stats
        return {
            "region_id": self.region_id,
            "target": self.target,
            "vantage": self.vantage,
            "remote_ip": self.remote_ip,
            "proxy": self.proxy,
            "dns_ms": self.dns_ms,
            "tcp_connect_ms": {
                "n": s.n,
                "min": s.min_ms,
                "median": s.median_ms,
                "p90": s.p90_ms,
                "spread": s.spread_ms,
                "dropped_first": self.dropped_first_ms,
                "samples": self.connect_ms,
            },
            "tls_ms": self.tls_ms,
            "tls_version": self.tls_version,
            "ttfb_ms": self.ttfb_ms,
            "http_status": self.http_status,
            "error_class": self.error_class,
            "error_phase": self.error_phase,
            "error_detail": self.error_detail,
            "notes": self.notes,
            "started_at_ms": self.started_at_ms,
        }


class _Fail(PlannerError):
    def __init__(self, error_class: str, phase: str, detail: str) -> None:
        super().__init__(detail)
        self.error_class, self.phase, self.detail = error_class, phase, detail


def _ms_since(t0_ns: int) -> float:
    return (time.perf_counter_ns() - t0_ns) / 1e6


def _now_ms() -> int:
    return int(time.time() * 1000)


def _classify_connect(exc: OSError, where: str, timeout_s: float) -> _Fail:
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return _Fail(
            _E.BLOCKED_PORT,
            RttMethod.TCP_CONNECT,
            f"no answer to TCP SYN from {where} within {timeout_s:g} s: a firewall drops the port, or the host is down",
        )
    if isinstance(exc, ConnectionRefusedError) or exc.errno == errno.ECONNREFUSED:
        return _Fail(_E.REFUSED, RttMethod.TCP_CONNECT, f"{where} refused the connection: nothing listens on that port")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return _Fail(
            _E.BLOCKED_PORT, RttMethod.TCP_CONNECT, f"a firewall rejected the connection to {where} ({exc.strerror})"
        )
    if exc.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EADDRNOTAVAIL):
        return _Fail(_E.UNREACHABLE, RttMethod.TCP_CONNECT, f"no route to {where} ({exc.strerror})")
    return _Fail(_E.ERROR, RttMethod.TCP_CONNECT, f"connecting to {where}: {exc}")


def _resolve(host: str, port: int, timeout_s: float) -> tuple[tuple[Any, ...], int, float]:
    """(sockaddr, family, dns_ms); raises _Fail('unresolvable')."""
    t0 = time.perf_counter_ns()
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError) as exc:
        raise _Fail(
            _E.UNRESOLVABLE, RttMethod.DNS, f"{host!r} did not resolve: {getattr(exc, 'strerror', None) or exc}"
        ) from None
    dns_ms = _ms_since(t0)
    if not infos:
        raise _Fail(_E.UNRESOLVABLE, RttMethod.DNS, f"{host!r} resolved to no address")
    family, _, _, _, sockaddr = infos[0]
    return sockaddr, family, dns_ms


def _connect(sockaddr: tuple[Any, ...], family: int, timeout_s: float, where: str) -> tuple[socket.socket, float]:
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.settimeout(timeout_s)
    t0 = time.perf_counter_ns()
    try:
        sock.connect(sockaddr)
    except OSError as exc:
        sock.close()
        raise _classify_connect(exc, where, timeout_s) from None
    return sock, _ms_since(t0)


def _connect_tunnel(sock: socket.socket, target: RttAddress, proxy: str, timeout_s: float) -> None:
    req = (
        f"CONNECT {target.host}:{target.port} HTTP/1.1\r\nHost: {target.host}:{target.port}\r\n"
        f"User-Agent: {_USER_AGENT}\r\n\r\n"
    ).encode()
    try:
        sock.sendall(req)
        buf = b""
        while b"\r\n\r\n" not in buf and len(buf) < 16384:
            chunk = sock.recv(4096)
            if not chunk:
                break
            buf += chunk
    except TimeoutError:
        raise _Fail(_E.PROXY, "proxy", f"proxy {proxy} did not answer CONNECT within {timeout_s:g} s") from None
    except OSError as exc:
        raise _Fail(_E.PROXY, "proxy", f"proxy {proxy} failed: {exc}") from None
    status = buf.split(b"\r\n", 1)[0].decode("latin-1", "replace")
    parts = status.split()
    if len(parts) < 2 or parts[1] != "200":
        raise _Fail(
            _E.PROXY, "proxy", f"proxy {proxy} refused CONNECT to {target.host}:{target.port}: {status or 'no answer'}"
        )


def _tls(
    sock: socket.socket, target: RttAddress, ctx: ssl.SSLContext, timeout_s: float
) -> tuple[ssl.SSLSocket, float, str]:
    tls = ctx.wrap_socket(sock, server_hostname=target.host, do_handshake_on_connect=False)
    t0 = time.perf_counter_ns()
    try:
        tls.do_handshake()
    except TimeoutError:
        tls.close()
        raise _Fail(
            _E.TIMEOUT, RttMethod.TLS, f"TLS handshake with {target.host} did not finish within {timeout_s:g} s"
        ) from None
    except ssl.SSLCertVerificationError as exc:
        tls.close()
        raise _Fail(
            _E.TLS, RttMethod.TLS, f"certificate of {target.host} failed verification: {exc.verify_message or exc}"
        ) from None
    except (ssl.SSLError, ConnectionError, OSError) as exc:
        tls.close()
        raise _Fail(_E.TLS, RttMethod.TLS, f"TLS handshake with {target.host}:{target.port} failed: {exc}") from None
    return tls, _ms_since(t0), tls.version() or ""


def _ttfb(sock: socket.socket, target: RttAddress, timeout_s: float) -> tuple[float, int | None]:
    host = f"[{target.host}]" if ":" in target.host else target.host
    default = 443 if target.is_tls else 80
    host_hdr = host if target.port == default else f"{host}:{target.port}"
    req = (
        f"GET {target.path} HTTP/1.1\r\nHost: {host_hdr}\r\nUser-Agent: {_USER_AGENT}\r\n"
        f"Accept: */*\r\nAccept-Encoding: identity\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n"
    ).encode()
    try:
        t0 = time.perf_counter_ns()
        sock.sendall(req)
        first = sock.recv(1)
        ttfb = _ms_since(t0)
        if not first:
            raise _Fail(_E.HTTP, RttMethod.HTTPS_TTFB, f"{target} closed the connection without answering the request")
        head = first + sock.recv(64)
    except TimeoutError:
        raise _Fail(
            _E.TIMEOUT, RttMethod.HTTPS_TTFB, f"no response byte from {target} within {timeout_s:g} s"
        ) from None
    except ssl.SSLError as exc:
        raise _Fail(_E.TLS, RttMethod.HTTPS_TTFB, f"TLS error while waiting for {target}: {exc}") from None
    except OSError as exc:
        raise _Fail(_E.HTTP, RttMethod.HTTPS_TTFB, f"connection to {target} failed during the request: {exc}") from None
    if not head.startswith(b"HTTP/"):
        raise _Fail(_E.HTTP, RttMethod.HTTPS_TTFB, f"{target} answered, but not with HTTP (first bytes {head[:12]!r})")
    try:
        status = int(head.split(b" ", 2)[1])
    except (IndexError, ValueError):
        status = None
    return ttfb, status


def _proxy_addr(proxy: str) -> tuple[str, int]:
    parts = urlsplit(proxy)
    if parts.scheme != "http" or not parts.hostname:
        raise CatalogError(f"proxy {redact_url(proxy)!r}: give an http://host:port proxy URL (CONNECT tunnels)")
    return parts.hostname, parts.port or 8080


def probe_rtt_target(
    target: str | RttAddress,
    *,
    region_id: str | None = None,
    n: int = 10,
    vantage: str = "",
    timeout_s: float = 3.0,
    proxy: str | None = None,
    ssl_context: ssl.SSLContext | None = None,
    do_ttfb: bool = True,
) -> RttResult:
    """Measure one target (blocking): DNS once, n + 1 TCP connects (first dropped), TLS, one TTFB.

    target: a URL (https://host/path: connects + TLS + TTFB; http://…: connects + TTFB) or host:port
    (connects only). n: connects kept (≥ 1; 10 by default). timeout_s: per socket operation.
    proxy: http://host:port to measure through a CONNECT proxy; the TCP figures are then to the
    proxy, and the result's `proxy` and `notes` say so. Never raises for network failures: the
    result carries error_class (see RTT_ERROR_CLASSES), error_phase and error_detail, plus every
    figure measured before the failure. Raises ValueError for n < 1 or timeout_s <= 0.
    """
    if n < 1:
        raise ValueError(f"n must be at least 1 connect, got {n}")
    if not timeout_s > 0:
        raise ValueError(f"timeout must be > 0 s, got {timeout_s}")
    res = RttResult(region_id=region_id or str(target), target=str(target), vantage=vantage, started_at_ms=_now_ms())
    try:
        pt = target if isinstance(target, RttAddress) else parse_target(target)
    except CatalogError as exc:
        res.error_class, res.error_phase, res.error_detail = _E.BAD_TARGET, RttMethod.DNS, str(exc)
        return res
    res.target = str(pt)
    if proxy is None and any(os.environ.get(k) for k in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        res.notes.append(
            "direct path: the HTTPS_PROXY/ALL_PROXY environment variables are ignored unless --proxy is given"
        )
    try:
        if proxy:
            try:
                phost, pport = _proxy_addr(proxy)
            except CatalogError as exc:
                raise _Fail(_E.PROXY, "proxy", str(exc)) from None
            res.proxy = f"http://{phost}:{pport}"
            res.notes.append(f"TCP connect figures are to the proxy {res.proxy}, not to {pt.host}")
            sockaddr, family, res.dns_ms = _resolve(phost, pport, timeout_s)
            where = f"proxy {phost}:{pport}"
        else:
            sockaddr, family, res.dns_ms = _resolve(pt.host, pt.port, timeout_s)
            where = f"{pt.host}:{pt.port}"
        res.remote_ip = str(sockaddr[0])
        for i in range(n + 1):
            sock, ms = _connect(sockaddr, family, timeout_s, where)
            sock.close()
            if i == 0:
                res.dropped_first_ms = ms
            else:
                res.connect_ms.append(ms)
                res.connect_at_ms.append(_now_ms())
        if pt.scheme == "tcp" or not do_ttfb and not pt.is_tls:
            return res
        sock, _ = _connect(sockaddr, family, timeout_s, where)
        try:
            if proxy:
                _connect_tunnel(sock, pt, res.proxy or proxy, timeout_s)
            if pt.is_tls:
                ctx = ssl_context or ssl.create_default_context()
                sock, res.tls_ms, res.tls_version = _tls(sock, pt, ctx, timeout_s)
            if do_ttfb:
                res.ttfb_ms, res.http_status = _ttfb(sock, pt, timeout_s)
        finally:
            sock.close()
    except _Fail as f:
        res.error_class, res.error_phase, res.error_detail = f.error_class, f.phase, f.detail
    return res


def probe_rtt_many(
    targets: Sequence[tuple[str, str]],
    *,
    n: int = 10,
    vantage: str = "",
    timeout_s: float = 3.0,
    proxy: str | None = None,
    ssl_context: ssl.SSLContext | None = None,
    concurrency: int = 4,
    on_result: Callable[[RttResult], None] | None = None,
) -> list[RttResult]:
    """Probe several (region_id, target) pairs, `concurrency` at a time; results in input order.

    Each target's own connects stay sequential (one in flight per target). A failing target
    yields a result with its error class; it never stops the others.
    """

    def one(pair: tuple[str, str]) -> RttResult:
        r = probe_rtt_target(
            pair[1], region_id=pair[0], n=n, vantage=vantage, timeout_s=timeout_s, proxy=proxy, ssl_context=ssl_context
        )
        if on_result is not None:
            on_result(r)
        return r

    if not targets:
        return []
    with ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(targets))), thread_name_prefix="rtt") as pool:
        return list(pool.map(one, targets))


async def probe_rtt(target: str, **kwargs: Any) -> RttResult:
    """Async wrapper of probe_rtt_target (runs it in a thread); same arguments and result."""
    return await asyncio.to_thread(probe_rtt_target, target, **kwargs)
