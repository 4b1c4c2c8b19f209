"""Every error class: a sample with ok=False and a reason, never an exception, never a key in sight."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from datetime import UTC, datetime

import pytest

from planner.probes.errors import ERROR_CLASSES, MissingApiKey
from planner.probes.ttft import ProbeTarget, TtftSample, parse_retry_after, probe_once, resolve_api_key
from tests.support.servers import (
    RecordingSleep,
    Script,
    ScriptedServer,
    Step,
    anthropic_event,
    chat_chunk,
    full_backlog,
    sse,
)

KEY_ENV = "TTFT_TEST_PROBE_KEY"
KEY = "sk-test-SECRET-0123456789abcdef"
DONE = b"data: [DONE]\n\n"
OK_STREAM = Script(steps=[Step(sse(chat_chunk({"content": "x"})) + DONE, content=True)])


def run(url: str, *, sleep=None, max_attempts: int = 1, max_retry_wait_s: float = 30.0, **kw) -> TtftSample:
    target = ProbeTarget(base_url=url, model="m", prompt_tokens=kw.pop("prompt_tokens", 20), **kw)
    return asyncio.run(
        probe_once(
            target,
            api_key=kw.get("api_key"),
            max_attempts=max_attempts,
            max_retry_wait_s=max_retry_wait_s,
            sleep=sleep or RecordingSleep(),
        )
    )


def error_script(status: int, body: bytes = b'{"error":{"message":"nope"}}', **headers) -> Script:
    return Script(
        status=status,
        reason="X",
        headers={"Content-Type": "application/json", **headers},
        steps=[Step(body)],
        chunked=False,
    )


def assert_failed(s: TtftSample, cls: str) -> None:
    assert not s.ok, s
    assert s.error_class == cls, (s.error_class, s.error_detail)
    assert cls in ERROR_CLASSES
    assert s.error_detail
    assert s.ttft_ms is None or cls in ("disconnect", "read_timeout")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_connection_refused():
    s = run(f"http://127.0.0.1:{free_port()}/v1")
    assert_failed(s, "refused")
    assert s.total_ms is not None and s.attempts == 1


def test_dns_failure_is_timed_and_classified():
    s = run("http://no-such-host.invalid/v1")
    assert_failed(s, "dns")
    assert "no-such-host.invalid" in s.error_detail


def test_connect_timeout_when_the_server_never_accepts():
    with full_backlog() as port:  # the accept queue is full: our SYN is dropped
        s = run(f"http://127.0.0.1:{port}/v1", timeout_s=0.4)
    assert_failed(s, "connect_timeout")
    assert s.connect_ms is None and s.headers_ms is None


def test_read_timeout_before_headers():
    # Headers after 60 s (the server's stop cuts that short): had the 0.4 s timeout not fired, headers with an
    # empty body would have ended in no_content, not read_timeout.
    with ScriptedServer(Script(header_delay_s=60, steps=[])) as srv:
        s = run(srv.url, timeout_s=0.4)
    assert_failed(s, "read_timeout")
    assert s.headers_ms is None and s.total_ms >= 400  # a timeout never fires early
    assert s.connect_ms is not None and not s.conn_reused and s.remote_ip == "127.0.0.1"  # it got that far


def test_stall_mid_stream_is_a_read_timeout_after_the_first_token():
    script = Script(steps=[Step(sse(chat_chunk({"content": "x"})), content=True)], end="stall")
    with ScriptedServer(script) as srv:
        s = run(srv.url, timeout_s=0.5)
    assert_failed(s, "read_timeout")
    assert s.ttft_ms is not None  # the stall came after the first token
    assert "mid-stream" in s.error_detail


def test_tls_failure_when_the_server_does_not_speak_tls():
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(4)

    def answer_in_plain_http() -> None:
        conn, _ = lst.accept()
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
        conn.close()

    t = threading.Thread(target=answer_in_plain_http, daemon=True)
    t.start()
    try:
        s = run(f"https://127.0.0.1:{lst.getsockname()[1]}/v1", timeout_s=5)
    finally:
        lst.close()
    assert_failed(s, "tls")
    # the TCP connect completed and is kept (also on failure); the handshake never did
    assert s.connect_ms is not None and s.remote_ip == "127.0.0.1"
    assert s.tls_ms is None and s.headers_ms is None and s.status_code is None


def test_auth_failure_is_not_retried_and_never_shows_the_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    echo = json.dumps({"error": {"message": f"Incorrect API key provided: {KEY}"}}).encode()
    sleep = RecordingSleep()
    with ScriptedServer(error_script(401, echo)) as srv:
        s = run(srv.url, api_key_env=KEY_ENV, max_attempts=3, sleep=sleep)
        sent = srv.requests[0].headers["authorization"]
    assert_failed(s, "auth")
    assert s.attempts == 1 and sleep.waits == [] and s.status_code == 401
    assert sent == f"Bearer {KEY}"  # the key went to the server, and only there
    assert KEY not in json.dumps(s.to_dict())
    assert "***" in s.error_detail


def test_anthropic_sends_the_key_as_x_api_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    with ScriptedServer(error_script(403)) as srv:
        s = run(srv.url, protocol="anthropic", api_key_env=KEY_ENV)
        headers = srv.requests[0].headers
    assert_failed(s, "auth")
    assert headers["x-api-key"] == KEY and "authorization" not in headers


def test_missing_key_names_the_variable_only(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    target = ProbeTarget(base_url="http://127.0.0.1:9/v1", model="m", api_key_env=KEY_ENV)
    with pytest.raises(MissingApiKey, match=KEY_ENV):
        resolve_api_key(target)
    with pytest.raises(MissingApiKey):
        asyncio.run(probe_once(target))
    assert resolve_api_key(target, secrets={KEY_ENV: KEY}) == KEY


def test_not_found():
    with ScriptedServer(error_script(404)) as srv:
        s = run(srv.url)
    assert_failed(s, "not_found")
    assert s.status_code == 404


def test_429_is_retried_after_retry_after_seconds_then_succeeds():
    sleep = RecordingSleep()
    with ScriptedServer([error_script(429, **{"Retry-After": "2"}), OK_STREAM]) as srv:
        s = run(srv.url, max_attempts=3, sleep=sleep)
    assert s.ok and s.attempts == 2
    assert sleep.waits == [2.0] and s.retry_wait_ms == 2000.0


def test_503_with_http_date_retry_after_waits_for_that_date_within_the_cap():
    # The date form is read (not the 0.5 s backoff) and the wait it asks for is capped; how many seconds a date
    # means from a given now is parse_retry_after's test below, on an injected now rather than this machine's clock.
    sleep = RecordingSleep()
    date = "Thu, 31 Dec 2099 23:59:59 GMT"
    with ScriptedServer([error_script(503, **{"Retry-After": date}), OK_STREAM]) as srv:
        s = run(srv.url, max_attempts=2, sleep=sleep, max_retry_wait_s=30.0)
    assert s.ok and s.attempts == 2
    assert sleep.waits == [30.0] and s.retry_wait_ms == 30000.0


def test_retry_after_is_capped_and_persistent_429_ends_rate_limited():
    sleep = RecordingSleep()
    with ScriptedServer(error_script(429, **{"Retry-After": "120"})) as srv:
        s = run(srv.url, max_attempts=3, max_retry_wait_s=4.0, sleep=sleep)
        assert len(srv.requests) == 3
    assert_failed(s, "rate_limited")
    assert sleep.waits == [4.0, 4.0] and s.attempts == 3 and s.status_code == 429


def test_5xx_without_retry_after_backs_off_exponentially():
    sleep = RecordingSleep()
    with ScriptedServer(error_script(502, b"<html>bad gateway</html>")) as srv:
        s = run(srv.url, max_attempts=3, sleep=sleep)
    assert_failed(s, "server_error")
    assert sleep.waits == [0.5, 1.0]
    assert "bad gateway" in s.error_detail


def test_retry_after_parsing_both_rfc9110_forms():
    now = datetime(2026, 11, 30, 3, 0, 0, tzinfo=UTC)
    assert parse_retry_after("17", now) == 17.0
    assert parse_retry_after("Mon, 30 Nov 2026 03:00:30 GMT", now) == 30.0
    assert parse_retry_after("Monday, 30-Nov-26 03:00:10 GMT", now) == 10.0  # obsolete RFC 850 form
    assert parse_retry_after("Mon, 30 Nov 2026 02:00:00 GMT", now) == 0.0  # in the past: go now
    assert parse_retry_after("soon", now) is None and parse_retry_after(None) is None


def test_disconnect_mid_stream():
    script = Script(
        steps=[
            Step(sse(chat_chunk({"content": "x"})), content=True),
            Step(b'data: {"choices":[{"delta":{"con', delay_s=0.02),
        ],
        end="disconnect",
    )
    with ScriptedServer(script) as srv:
        s = run(srv.url)
    assert_failed(s, "disconnect")
    assert s.ttft_ms is not None


def test_malformed_json_in_an_event():
    with ScriptedServer(Script(steps=[Step(b'data: {"choices": [oops\n\n'), Step(DONE)])) as srv:
        s = run(srv.url)
    assert_failed(s, "bad_json")
    assert "oops" in s.error_detail


def test_a_json_body_instead_of_a_stream_is_not_sse():
    body = json.dumps({"choices": [{"message": {"content": "all at once"}}]}).encode()
    script = Script(headers={"Content-Type": "application/json"}, steps=[Step(body)], chunked=False)
    with ScriptedServer(script) as srv:
        s = run(srv.url)
    assert_failed(s, "not_sse")
    assert s.status_code == 200 and "application/json" in s.error_detail


def test_other_4xx_is_an_http_error():
    with ScriptedServer(error_script(400, b'{"error":{"message":"max_tokens too large"}}')) as srv:
        s = run(srv.url, max_attempts=3)
    assert_failed(s, "http_error")
    assert s.attempts == 1 and "max_tokens too large" in s.error_detail


def test_error_event_inside_the_stream_is_a_server_error():
    script = Script(
        steps=[
            Step(anthropic_event("message_start", message={"usage": {"input_tokens": 5}})),
            Step(anthropic_event("error", error={"type": "overloaded_error", "message": "Overloaded"})),
        ]
    )
    with ScriptedServer(script) as srv:
        s = run(srv.url, protocol="anthropic")
    assert_failed(s, "server_error")
    assert "overloaded" in s.error_detail.lower()


def test_unknown_protocol_is_a_programmer_error():
    with pytest.raises(ValueError, match="protocol"):
        asyncio.run(probe_once(ProbeTarget(base_url="http://127.0.0.1:9/v1", model="m", protocol="grpc")))


def test_a_configured_proxy_is_used_and_recorded_without_its_password(monkeypatch):
    with ScriptedServer(OK_STREAM) as proxy:
        monkeypatch.setenv("HTTP_PROXY", f"http://probe-user:proxy-pass@127.0.0.1:{proxy.port}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        s = run("http://llm.upstream.invalid/v1")  # resolved by the proxy, not by us
        req = proxy.requests[0]
    assert s.ok, s.error_detail
    assert req.path == "http://llm.upstream.invalid/v1/chat/completions"  # absolute-form: it went via the proxy
    assert s.proxy == f"http://127.0.0.1:{proxy.port}" and "proxy-pass" not in json.dumps(s.to_dict())
    assert s.dns_ms is None
