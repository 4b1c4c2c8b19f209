"""SLO alerts end to end: real probes of a local endpoint whose latency we turn up and down, a local webhook
receiver and a local SMTP server (aiosmtpd) — exactly one firing and one resolved notification on each — and a
failed delivery retried with backoff.

Each evaluation is given its time (`evaluate_all(engine, now_ms)`, as the worker's tick gives it), placed from the
stored samples' own timestamps: the for-duration passes and the slow samples leave the window without the test
waiting for either, and the verdicts do not depend on how fast the machine probes.
"""

from __future__ import annotations

import json
import time

import pytest

from planner.alerts.evaluate import deliver_due, evaluate_all
from planner.alerts.rules import AlertState
from planner.store import alerts as store
from planner.store.probe_queries import series_bounds, series_keys
from tests.support.alerts import Receiver, alert_receivers, run_cli, slow_endpoint_with_rule
from tests.support.servers import Script, ScriptedServer, Step, chat_chunk, sse, usage_chunk


@pytest.fixture
def receivers(monkeypatch):
    with alert_receivers(monkeypatch) as pair:
        monkeypatch.setenv("TTFT_PLANNER_PUBLIC_URL", "https://ttft.example.com")
        yield pair


def _script(delay_s: float) -> Script:
    return Script(
        steps=[
            Step(sse(chat_chunk({"role": "assistant", "content": ""}))),
            Step(sse(chat_chunk({"content": "w0"})), delay_s=delay_s, content=True),
            Step(sse(usage_chunk(60, 1)) + b"data: [DONE]\n\n"),
        ]
    )


def _cli(db_url: str, *args: str):
    out = run_cli(db_url, *args)
    assert out.returncode == 0, out.stderr
    return out


# The rule: p95 over 1,000 ms for 2 minutes of a 10-minute window, from 3 samples. The slow endpoint holds its first
# token 1.1 s on the server (a sleep never ends early: its samples are over the threshold on any machine); the fast
# one 10 ms, far under the 900 ms clear level.
THRESHOLD_MS, SLOW_S, FAST_S, WINDOW_MS, FOR_MS = 1000, 1.1, 0.01, 600_000, 120_000


def test_slow_endpoint_fires_once_and_resolves_once_on_webhook_and_email(sqlite_store_url, sqlite_engine, receivers):
    hook, mailbox = receivers
    engine, db_url = sqlite_engine, sqlite_store_url
    delay = {"s": FAST_S}
    _cli(
        db_url,
        "alerts",
        "add",
        "chat-p95",
        "--threshold",
        str(THRESHOLD_MS),
        "--window-min",
        str(WINDOW_MS / 60_000),
        "--for-min",
        str(FOR_MS / 60_000),
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

        def probe(n: int) -> int:
            """Probe n times (stored), sequentially; the newest stored sample's start (ms)."""
            _cli(
                db_url,
                "probe",
                "--base-url",
                srv.url,
                "--model",
                "m",
                "-n",
                str(n),
                "--interval-s",
                "0.05",
                "--prompt-tokens",
                "40",
                "--max-tokens",
                "1",
                "--store",
            )
            (key,) = series_keys(engine)
            return series_bounds(engine, key)[1]

        def evaluate(now_ms: int) -> list[tuple[str, str, str]]:
            return evaluate_all(engine, now_ms).transitions

        t = probe(3) + 1
        assert evaluate(t) == [] and hook.bodies == []
        delay["s"] = SLOW_S  # the endpoint slows down: p95 well over the target
        slow_started = probe(1)
        t = slow_started + 1
        assert evaluate(t) == []  # a breach, but not yet held for the for-duration
        assert [s.state for s in store.series_states(engine).values()] == [AlertState.PENDING]
        assert evaluate(t + FOR_MS - 1) == []  # not quite held
        fired = evaluate(t + FOR_MS)  # held for the for-duration
        assert [tr for _, _, tr in fired] == ["firing"], fired
        assert evaluate(t + FOR_MS + 30_000) == []  # still firing: no second notification
        out = _cli(db_url, "alerts", "evaluate", "--json")  # the CLI's pass, now: the slow sample is in its window
        assert json.loads(out.stdout)["transitions"] == []

        delay["s"] = FAST_S
        probe(3)  # each starts after the slow request's 1.1 s on the server
        resolved = evaluate(slow_started + WINDOW_MS + 1)  # the slow sample has left the window; the fast ones fill it
        assert [tr for _, _, tr in resolved] == ["resolved"], resolved

    texts = [b["text"] for b in hook.bodies]
    assert len(texts) == 2 and texts[0].startswith("[FIRING] chat-p95: p95 TTFT") and "n=4" in texts[0]
    assert texts[1].startswith("[RESOLVED] chat-p95") and "https://ttft.example.com/probes" in texts[1]
    assert len(mailbox.messages) == 2
    assert "FIRING" in mailbox.messages[0] and "oncall@example.com" in mailbox.messages[0]
    assert "RESOLVED" in mailbox.messages[1]
    history = _cli(db_url, "alerts", "history").stdout
    assert history.count("[FIRING]") == 1 and history.count("[RESOLVED]") == 1
    # the webhook's URL (its token) is in no stored row and no message
    dump = "\n".join(str(r) for r in store.deliveries(engine).to_dict("records")) + history
    assert "secret-token" not in dump and "TEAM_HOOK" in dump


def test_a_failed_delivery_is_kept_and_retried_after_its_backoff(sqlite_engine, monkeypatch):
    hook = Receiver(fail_first=1)
    monkeypatch.setenv("TEAM_HOOK", hook.url)
    try:
        engine = sqlite_engine
        now_ms = int(time.time() * 1000)
        slow_endpoint_with_rule(engine, now_ms)
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


def test_each_vantage_evaluates_only_its_own_series(sqlite_engine, monkeypatch):
    hook = Receiver()
    monkeypatch.setenv("TEAM_HOOK", hook.url)
    try:
        engine = sqlite_engine
        now_ms = int(time.time() * 1000)
        slow_endpoint_with_rule(engine, now_ms)
        other = evaluate_all(engine, now_ms, vantage="eu-central")  # another vantage's worker: not its series
        assert (other.series, other.transitions, hook.posts) == (0, [], 0)
        own = evaluate_all(engine, now_ms, vantage="")
        assert [t for _, _, t in own.transitions] == ["firing"] and own.delivered == 1
        assert deliver_due(engine, now_ms + 60_000, vantage="eu-central").delivered == 0
        assert hook.posts == 1
    finally:
        hook.close()
