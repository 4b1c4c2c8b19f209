"""Alert receivers that accept and never answer (a webhook and an SMTP server, both real black-hole sockets) cost an
alert pass its deadline and nothing more: the lease holder renews its lease on schedule while every send hangs (its
deliveries run on a thread of their own), a pass returns by its deadline however long each send would wait, and
what it did not deliver is retried on a later pass, with its error recorded.

Ordered by events (connections the black holes accepted and still hold open, the lease row, delivery rows), never by
a measured time; the waits' timeouts only guard against a hang.
"""

from __future__ import annotations

import threading

import pytest
import sqlalchemy as sa
from aiosmtpd.controller import Controller

from planner.alerts.deliver import PARALLEL_SENDS, deliver_due
from planner.alerts.evaluate import evaluate_all
from planner.alerts.notify import BACKOFF_S
from planner.alerts.rules import AlertKind, Rule
from planner.store import alerts as store
from planner.store import leases
from planner.store.endpoints import EndpointRow
from tests.support.alerts import Mailbox, Receiver, slow_endpoint_with_rule
from tests.support.black_hole import BlackHole
from tests.support.fake_clock import FakeClock
from tests.support.rtt_target import free_port
from tests.support.worker_driver import HANG_GUARD_S, drive, until

NOW_MS = 1_800_000_000_000
RULES = 3  # each with a webhook and an e-mail: six deliveries, as in the report


def _receivers(monkeypatch, web_url: str, smtp_port: int) -> None:
    monkeypatch.setenv("TEAM_HOOK", web_url)
    monkeypatch.setenv("TTFT_PLANNER_SMTP_HOST", "127.0.0.1")
    monkeypatch.setenv("TTFT_PLANNER_SMTP_PORT", str(smtp_port))


def _firing_rules(engine, now_ms: int) -> None:
    """Endpoint slow-b breaching, and RULES p95 rules over it (thresholds apart: not twins) that fire at once, each
    notifying by webhook and by e-mail."""
    slow_endpoint_with_rule(engine, now_ms, name="p95 0", email_to="oncall@example.com")
    for i in range(1, RULES):
        store.add_rule(
            engine,
            Rule(
                name=f"p95 {i}",
                kind=AlertKind.P95_OVER,
                threshold=500 + i,
                window_s=900,
                for_s=0,
                min_n=20,
                webhook_env="TEAM_HOOK",
                email_to="oncall@example.com",
            ),
            now_ms,
        )
    with engine.begin() as conn:  # the worker evaluates the stored samples; it need not probe anything
        conn.execute(sa.update(EndpointRow).values(enabled=False))


def _deliveries(engine) -> list[dict]:
    return store.deliveries(engine).to_dict("records")


def _errors(engine) -> list[str] | None:
    """Every delivery's last error, once each one has one (else None)."""
    rows = _deliveries(engine)
    errors = [str(r["last_error"] or "") for r in rows]
    return errors if len(rows) == 2 * RULES and all(errors) else None


def test_the_lease_is_renewed_on_schedule_while_every_alert_delivery_hangs(sqlite_engine, monkeypatch):
    engine, clock = sqlite_engine, FakeClock()
    ttl_ms, alerts_every_ms = 3_000_000, 30_000
    start = clock.ms

    def lease_row() -> dict:
        return next(r for r in leases.current(engine) if r["vantage"] == "")

    with BlackHole() as web, BlackHole() as smtp:
        _receivers(monkeypatch, web.url, smtp.port)

        async def body(worker):
            # Sends that would wait longer than this test (a step timeout and a pass deadline past any hang guard):
            # only the worker's design can keep its housekeeping going now.
            worker.team.send_timeout_s = worker.team.delivery_deadline_s = 10 * HANG_GUARD_S
            await until(lambda: lease_row()["renewed_at_ms"] == start and lease_row(), "lease row", in_thread=True)
            _firing_rules(engine, start)
            clock.advance(alerts_every_ms)  # the next alert pass: six deliveries, four sent at once, all hanging
            await until(lambda: web.accepted + smtp.accepted >= PARALLEL_SENDS, "the sends reaching the black holes")
            clock.advance_to(start + ttl_ms // 3)  # the lease's renewal is due
            renewed = await until(
                lambda: (r := lease_row())["renewed_at_ms"] == clock.ms and r, "the lease's renewal", in_thread=True
            )
            hanging = web.open_now() + smtp.open_now()
            in_flight = [r for r in _deliveries(engine) if r["attempts"] == 1 and not r["last_error"]]
            return renewed, hanging, in_flight

        renewed, hanging, in_flight = drive(engine, body, clock=clock, lease_ttl_s=ttl_ms / 1000)
        assert renewed["holder"] and renewed["expires_at_ms"] == clock.ms + ttl_ms
        # renewed while every send was still waiting on a receiver that never answers
        assert hanging == PARALLEL_SENDS and len(in_flight) == PARALLEL_SENDS
    # the receivers gone, each send fails, and each delivery keeps its error for the retry
    errors = _wait(lambda: _errors(engine), "every delivery's error", lambda: _deliveries(engine))
    assert all("webhook TEAM_HOOK" in e or "SMTP 127.0.0.1" in e for e in errors), errors
    assert not any("secret-token" in e for e in errors)


def _settled(engine) -> list[dict] | None:
    """The deliveries once every one that was claimed (attempt 1) has its error and none other has one, else None."""
    rows = _deliveries(engine)
    return rows if all(bool(r["last_error"]) == (r["attempts"] == 1) for r in rows) else None


def _wait(pred, what: str, seen=lambda: None):
    """pred()'s first truthy value; AssertionError (with what `seen()` says) after the hang guard."""
    done = threading.Event()
    got: list = []

    def poll() -> None:
        while not done.wait(0.02):
            if value := pred():
                got.append(value)
                return

    t = threading.Thread(target=poll, daemon=True)
    t.start()
    t.join(HANG_GUARD_S)
    done.set()
    assert got, f"no {what} within {HANG_GUARD_S:g} s (a hang guard): {seen()}"
    return got[0]


@pytest.fixture
def mailbox():
    box = Mailbox()
    smtp = Controller(box, hostname="127.0.0.1", port=free_port())
    smtp.start()
    yield box, smtp.port
    smtp.stop()


def test_a_pass_returns_by_its_deadline_and_what_it_did_not_deliver_is_retried(sqlite_engine, monkeypatch, mailbox):
    engine = sqlite_engine
    with BlackHole() as web, BlackHole() as smtp:
        _receivers(monkeypatch, web.url, smtp.port)
        _firing_rules(engine, NOW_MS)
        assert len(evaluate_all(engine, NOW_MS, deliver=False).transitions) == RULES
        passes: list = []
        # each send would wait far past the hang guard; the pass's deadline is what ends it
        sending = threading.Thread(
            target=lambda: passes.append(deliver_due(engine, NOW_MS, deadline_s=1.0, send_timeout_s=100 * HANG_GUARD_S))
        )
        sending.start()
        sending.join(HANG_GUARD_S)
        assert passes, "the pass did not return by its deadline"
        (first,) = passes
        # Nothing delivered; every delivery either failed within the pass (its send's step timed out: the deadline
        # caps each step) or was cut off by the deadline, still under way or never started.
        assert first.delivered == 0 and len(first.failed) + first.unfinished == 2 * RULES
        assert all(f.startswith(("webhook TEAM_HOOK: ", "email oncall@example.com: SMTP ")) for f in first.failed)
    # The receivers gone, every send that started ends with its error recorded (retried after the backoff); one
    # never started is still due, untouched. A later pass with answering receivers delivers all six.
    rows = _wait(lambda: _settled(engine), "every started send's error", lambda: _deliveries(engine))
    assert PARALLEL_SENDS <= sum(r["attempts"] for r in rows) <= 2 * RULES
    assert not any("secret-token" in r["last_error"] for r in rows)
    hook, (box, smtp_port) = Receiver(), mailbox
    try:
        _receivers(monkeypatch, hook.url, smtp_port)
        later = deliver_due(engine, NOW_MS + int(BACKOFF_S[0] * 1000))
        assert (later.delivered, later.failed, later.unfinished) == (2 * RULES, [], 0)
        assert len(hook.bodies) == RULES and len(box.messages) == RULES
        assert all(r["delivered_at_ms"] is not None for r in _deliveries(engine))
    finally:
        hook.close()
