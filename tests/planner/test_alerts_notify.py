"""SLO alerts end to end: real probes of a local endpoint whose latency we turn up and down, a local webhook
receiver and a local SMTP server (aiosmtpd) — exactly one firing and one resolved notification on each — and a
failed delivery retried with backoff."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from aiosmtpd.controller import Controller

from planner.alerts.evaluate import deliver_due, evaluate_all
from planner.alerts.rules import AlertKind, AlertState, Rule
from planner.store import alerts as store
from planner.store import open_store
from tests.support.compare_seed import seed_endpoint
from tests.support.rtt_target import free_port
from tests.support.servers import Script, ScriptedServer, Step, chat_chunk, sse, usage_chunk

ROOT = Path(__file__).resolve().parents[2]


class Receiver:
    """A local webhook receiver: records each JSON body; answers 500 to the first `fail_first` posts."""

    def __init__(self, fail_first: int = 0) -> None:
        self.bodies: list[dict] = []
        self.posts = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                outer.posts += 1
                failing = outer.posts <= fail_first
                if not failing:
                    outer.bodies.append(json.loads(body))
                self.send_response(500 if failing else 200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/hooks/T000/B000/secret-token"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class Mailbox:
    def __init__(self) -> None:
        self.messages: list[str] = []

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 - aiosmtpd's hook name
        self.messages.append(envelope.content.decode("utf-8", "replace"))
        return "250 OK"


@pytest.fixture
def receivers(monkeypatch):
    hook, mailbox = Receiver(), Mailbox()
    smtp = Controller(mailbox, hostname="127.0.0.1", port=free_port())
    smtp.start()
    monkeypatch.setenv("TEAM_HOOK", hook.url)
    monkeypatch.setenv("TTFT_PLANNER_SMTP_HOST", "127.0.0.1")
    monkeypatch.setenv("TTFT_PLANNER_SMTP_PORT", str(smtp.port))
    monkeypatch.setenv("TTFT_PLANNER_PUBLIC_URL", "https://ttft.example.com")
    yield hook, mailbox
    smtp.stop()
    hook.close()


def _script(delay_s: float) -> Script:
    return Script(
        steps=[
            Step(sse(chat_chunk({"role": "assistant", "content": ""}))),
            Step(sse(chat_chunk({"content": "w0"})), delay_s=delay_s, content=True),
            Step(sse(usage_chunk(60, 1)) + b"data: [DONE]\n\n"),
        ]
    )


def _cli(db_url: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TTFT_PLANNER_DATABASE_URL": db_url}
    out = subprocess.run(
        [sys.executable, "-c", "from planner.cli import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    return out


def test_slow_endpoint_fires_once_and_resolves_once_on_webhook_and_email(tmp_path, receivers):
    hook, mailbox = receivers
    db_url = f"sqlite:///{tmp_path / 'alerts.db'}"
    engine = open_store(db_url)
    delay = {"s": 0.01}
    window_s = 6.0
    _cli(
        db_url,
        "alerts",
        "add",
        "chat-p95",
        "--threshold",
        "200",
        "--window-min",
        str(window_s / 60),
        "--for-min",
        str(1 / 60),
        "--min-n",
        "3",
        "--webhook-env",
        "TEAM_HOOK",
        "--webhook-format",
        "slack",
        "--email",
        "oncall@example.com",
    )

    with ScriptedServer(lambda i, req: _script(delay["s"])) as srv:

        def probe(n: int) -> None:
            _cli(
                db_url,
                "probe",
                "--base-url",
                srv.url,
                "--model",
                "m",
                "-n",
                str(n),
                "--interval",
                "0.05",
                "--prompt-tokens",
                "40",
                "--max-tokens",
                "1",
                "--store",
            )

        def evaluate() -> list[tuple[str, str, str]]:
            return evaluate_all(engine, int(time.time() * 1000)).transitions

        probe(4)
        assert evaluate() == [] and hook.bodies == []
        delay["s"] = 0.35  # the endpoint slows down: p95 well over the 200 ms target
        probe(4)
        assert evaluate() == []  # a breach, but not yet held for the for-duration
        assert [s.state for s in store.series_states(engine).values()] == [AlertState.PENDING]
        time.sleep(1.1)
        probe(3)
        fired = evaluate()
        assert [t for _, _, t in fired] == ["firing"], fired
        assert evaluate() == []  # still firing: no second notification
        out = _cli(db_url, "alerts", "evaluate", "--json")  # the CLI's pass sees the same state
        assert json.loads(out.stdout)["transitions"] == []

        delay["s"] = 0.01
        time.sleep(window_s)  # the slow samples leave the window
        probe(4)
        resolved = evaluate()
        assert [t for _, _, t in resolved] == ["resolved"], resolved

    texts = [b["text"] for b in hook.bodies]
    assert len(texts) == 2 and texts[0].startswith("[FIRING] chat-p95: p95 TTFT") and "n=" in texts[0]
    assert texts[1].startswith("[RESOLVED] chat-p95") and "https://ttft.example.com/probes" in texts[1]
    assert len(mailbox.messages) == 2
    assert "FIRING" in mailbox.messages[0] and "oncall@example.com" in mailbox.messages[0]
    assert "RESOLVED" in mailbox.messages[1]
    history = _cli(db_url, "alerts", "history").stdout
    assert history.count("[FIRING]") == 1 and history.count("[RESOLVED]") == 1
    # the webhook's URL (its token) is in no stored row and no message
    dump = "\n".join(str(r) for r in store.deliveries(engine).to_dict("records")) + history
    assert "secret-token" not in dump and "TEAM_HOOK" in dump


def test_a_failed_delivery_is_kept_and_retried_after_its_backoff(tmp_path, monkeypatch):
    hook = Receiver(fail_first=1)
    monkeypatch.setenv("TEAM_HOOK", hook.url)
    try:
        engine = open_store(f"sqlite:///{tmp_path / 'retry.db'}")
        now_ms = int(time.time() * 1000)
        seed_endpoint(engine, "slow-b", median_ms=900, n=30, start_ms=now_ms - 600_000, span_ms=590_000, vantage="")
        store.add_rule(
            engine,
            Rule(
                name="p95",
                kind=AlertKind.P95_OVER,
                threshold=500,
                window_s=900,
                for_s=0,
                min_n=20,
                webhook_env="TEAM_HOOK",
            ),
            now_ms,
        )
        first = evaluate_all(engine, now_ms)
        assert [t for _, _, t in first.transitions] == ["firing"]
        assert first.delivered == 0 and "answered HTTP 500" in first.failed[0]
        row = store.deliveries(engine).iloc[0]
        assert row["attempts"] == 1 and row["delivered_at_ms"] is None and "HTTP 500" in row["last_error"]
        assert deliver_due(engine, now_ms + 10_000).delivered == 0  # backoff not over: no second post
        assert hook.posts == 1
        assert deliver_due(engine, now_ms + 31_000).delivered == 1
        row = store.deliveries(engine).iloc[0]
        assert row["attempts"] == 2 and row["delivered_at_ms"] == now_ms + 31_000 and row["last_error"] == ""
        assert len(hook.bodies) == 1 and hook.bodies[0]["status"] == "firing" and hook.bodies[0]["n"] == 30
    finally:
        hook.close()


def test_each_vantage_evaluates_only_its_own_series(tmp_path, monkeypatch):
    hook = Receiver()
    monkeypatch.setenv("TEAM_HOOK", hook.url)
    try:
        engine = open_store(f"sqlite:///{tmp_path / 'vantage.db'}")
        now_ms = int(time.time() * 1000)
        seed_endpoint(engine, "slow-b", median_ms=900, n=30, start_ms=now_ms - 600_000, span_ms=590_000, vantage="")
        store.add_rule(
            engine,
            Rule(
                name="p95",
                kind=AlertKind.P95_OVER,
                threshold=500,
                window_s=900,
                for_s=0,
                min_n=20,
                webhook_env="TEAM_HOOK",
            ),
            now_ms,
        )
        other = evaluate_all(engine, now_ms, vantage="eu-central")  # another vantage's worker: not its series
        assert (other.series, other.transitions, hook.posts) == (0, [], 0)
        own = evaluate_all(engine, now_ms, vantage="")
        assert [t for _, _, t in own.transitions] == ["firing"] and own.delivered == 1
        assert deliver_due(engine, now_ms + 60_000, vantage="eu-central").delivered == 0
        assert hook.posts == 1
    finally:
        hook.close()
