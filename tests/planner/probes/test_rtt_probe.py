"""Server-side RTT probe against real local servers: figures, statistics, and every failure class."""

from __future__ import annotations

import socket
import ssl
import threading

import pytest

from planner.probes.rtt import RTT_ERROR_CLASSES, probe_rtt_many, probe_rtt_target, rtt_stats
from tests.support.rtt_target import serve_in_thread
from tests.support.servers import full_backlog, self_signed_cert


@pytest.fixture(scope="module")
def target():
    server = serve_in_thread()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def tls_target(tmp_path_factory):
    cert, key = self_signed_cert(tmp_path_factory.mktemp("tls"), "localhost")
    server = serve_in_thread(certfile=cert, keyfile=key)
    yield server, cert
    server.stop()


def test_stats_are_nearest_rank_with_spread():
    s = rtt_stats([40.0, 41.0, 43.0, 40.5, 60.0, 42.0, 41.5, 40.2, 44.0, 45.0, None])
    assert s.n == 10
    assert s.min_ms == 40.0
    assert s.median_ms == 41.5  # 5th of 10 sorted values: no interpolation
    assert s.p90_ms == 45.0  # 9th of 10
    assert s.spread_ms == pytest.approx(5.0)
    assert rtt_stats([]).median_ms is None


def test_http_target_gives_n_connects_first_dropped_and_a_ttfb(target):
    r = probe_rtt_target(f"{target.base_url}/ping", region_id="local", n=12, vantage="ci")
    assert r.ok, r.error_detail
    assert len(r.connect_ms) == 12 and r.dropped_first_ms is not None
    assert r.remote_ip == "127.0.0.1" and r.dns_ms is not None
    assert r.ttfb_ms is not None and r.http_status == 200
    assert r.tls_ms is None  # plain http: no handshake to time
    methods = [rec.method for rec in r.records()]
    assert methods.count("tcp-connect") == 12 and "dns" in methods and "https-ttfb" in methods
    assert all(rec.vantage == "ci" and rec.side == "server" for rec in r.records())


def test_tls_handshake_is_timed_with_a_trusted_certificate(tls_target):
    server, cert = tls_target
    ctx = ssl.create_default_context(cafile=str(cert))
    r = probe_rtt_target(f"https://localhost:{server.port}/ping", n=3, ssl_context=ctx)
    assert r.ok, r.error_detail
    assert r.tls_ms is not None and r.tls_ms > 0 and r.tls_version.startswith("TLS")
    assert r.http_status == 200


def test_untrusted_certificate_is_a_tls_failure_with_the_connects_kept(tls_target):
    server, _ = tls_target
    r = probe_rtt_target(f"https://localhost:{server.port}/ping", n=3)
    assert r.error_class == "tls" and "certificate" in r.error_detail
    assert len(r.connect_ms) == 3  # the RTT figure survives a TLS failure
    assert [rec.error_class for rec in r.records() if rec.error_class] == ["tls"]


def test_refused_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound but not listening: the kernel answers RST
        r = probe_rtt_target(f"127.0.0.1:{port}", n=3)
    assert r.error_class == "refused" and f"127.0.0.1:{port}" in r.error_detail


def test_unresolvable_host():
    r = probe_rtt_target("https://no-such-host.invalid/ping", n=3)
    assert r.error_class == "unresolvable" and "no-such-host.invalid" in r.error_detail
    assert r.records()[-1].method == "dns"


def test_port_that_drops_syn_is_a_blocked_port():
    with full_backlog() as port:  # never accepted, backlog full: the kernel drops further SYNs
        r = probe_rtt_target(f"127.0.0.1:{port}", n=3, timeout_s=0.5)
    assert r.error_class == "blocked-port" and "firewall" in r.error_detail
    assert r.connect_ms == []


def test_silent_server_is_a_timeout_after_connecting():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    port = listener.getsockname()[1]
    accepted = []
    stop = threading.Event()

    def accept_and_say_nothing():
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                pass

    t = threading.Thread(target=accept_and_say_nothing, daemon=True)
    t.start()
    try:
        r = probe_rtt_target(f"http://127.0.0.1:{port}/ping", n=3, timeout_s=0.5)
    finally:
        stop.set()
        t.join()
        for c in accepted:
            c.close()
        listener.close()
    assert r.error_class == "timeout" and r.error_phase == "https-ttfb"
    assert len(r.connect_ms) == 3


def test_https_to_a_plain_http_port_is_a_tls_failure(target):
    r = probe_rtt_target(f"https://127.0.0.1:{target.port}/ping", n=2)
    assert r.error_class == "tls"


def test_one_failing_target_does_not_stop_the_table(target):
    results = probe_rtt_many(
        [("bad", "https://no-such-host.invalid/"), ("good", f"{target.base_url}/ping"), ("junk", "not a target")],
        n=3,
        concurrency=3,
    )
    by_id = {r.region_id: r for r in results}
    assert [r.region_id for r in results] == ["bad", "good", "junk"]
    assert by_id["bad"].error_class == "unresolvable"
    assert by_id["good"].ok and by_id["good"].stats.n == 3
    assert by_id["junk"].error_class == "bad-target"
    assert set(RTT_ERROR_CLASSES) >= {r.error_class for r in results if r.error_class}


def test_proxy_figures_say_they_are_to_the_proxy(target):
    # A minimal CONNECT proxy (the real thing: a TCP relay), to check labelling and the tunnelled TTFB.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    pport = listener.getsockname()[1]
    tunnels = []

    def pipe(a, b):
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def handle(c):
        try:
            head = c.recv(4096)  # a bare TCP connect (the RTT samples) closes at once: b"", nothing to relay
        except OSError:
            head = b""
        if not head.startswith(b"CONNECT "):
            c.close()
            return
        host, port = head.split()[1].decode().rsplit(":", 1)
        up = socket.create_connection((host, int(port)))
        c.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        tunnels.append((c, up))
        threading.Thread(target=pipe, args=(c, up), daemon=True).start()
        pipe(up, c)

    def serve():
        while True:
            try:
                c, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=handle, args=(c,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    try:
        r = probe_rtt_target(f"{target.base_url}/ping", n=3, proxy=f"http://127.0.0.1:{pport}")
    finally:
        listener.close()
    assert r.ok, r.error_detail
    assert r.proxy == f"http://127.0.0.1:{pport}"
    assert any("proxy" in n for n in r.notes)
    assert r.http_status == 200  # the request went through the tunnel to the target
    assert all(rec.proxy == r.proxy for rec in r.records())


def test_browser_payload_becomes_browser_rows_and_junk_is_rejected_with_reasons():
    from planner.probes.rtt_browser import records_from_browser

    payload = {
        "run_id": "r1",
        "samples": [
            {
                "region_id": "a",
                "url": "https://a/ping",
                "method": "resource-timing",
                "rtt_ms": 21.5,
                "error_class": None,
                "measured_at_ms": 5,
            },
            {
                "region_id": "b",
                "url": "https://b/ping",
                "method": "fetch-performance-now",
                "rtt_ms": None,
                "error_class": "blocked",
                "error_detail": "mixed content",
                "measured_at_ms": 6,
            },
            {"region_id": "c", "method": "eval", "rtt_ms": 1},
            {"region_id": "d", "method": "resource-timing", "rtt_ms": -3},
            {"method": "resource-timing", "rtt_ms": 3},
        ],
    }
    records, rejected = records_from_browser(payload, vantage="Berlin office")
    assert [(r.region_id, r.side, r.vantage, r.run_id) for r in records] == [
        ("a", "browser", "Berlin office", "r1"),
        ("b", "browser", "Berlin office", "r1"),
    ]
    assert records[1].error_class == "blocked" and records[1].rtt_ms is None
    assert len(rejected) == 3 and "#3" in rejected[0] and "not a browser method" in rejected[0]
