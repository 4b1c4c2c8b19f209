"""Two alert evaluators at once — a vantage's worker and a hand-run `ttft-planner alerts evaluate` — each on its own
engine over one store, on SQLite and on PostgreSQL: an event is delivered exactly once, every send attempt is counted
exactly once, and one transition makes one event.

Every pass is given its time (the `now_ms` evaluate_all and deliver_due take, as the worker's tick gives it); the
threads are ordered by events and a barrier, never by sleeping, and no assertion reads a clock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

import pytest

from planner.alerts.evaluate import PassResult, deliver_due, evaluate_all
from planner.alerts.notify import BACKOFF_S, MAX_ATTEMPTS, SEND_LEASE_S
from planner.store import alerts as store
from planner.store import open_store
from tests.support.alerts import Receiver, slow_endpoint_with_rule

T = TypeVar("T")
NOW_MS = 1_800_000_000_000  # the passes' clock: any instant works, the seeded samples are placed from it
LEASE_MS = int(SEND_LEASE_S * 1000)
HANG_S = 60.0  # a hang guard for waits on other threads, never a measurement


@pytest.fixture
def engines(store_url):
    """Two engines on one migrated store (SQLite file, PostgreSQL database): two evaluators' connections."""
    a, b = open_store(store_url), open_store(store_url)
    yield a, b
    a.dispose()
    b.dispose()


def race(fn: Callable[..., T], *engines) -> list[T]:
    """Run fn(engine) for each engine on its own thread, all let go at once by a barrier; their results in order."""
    barrier = threading.Barrier(len(engines))
    results: list = [None] * len(engines)
    errors: list[BaseException] = []

    def run(i: int, engine) -> None:
        try:
            barrier.wait(HANG_S)
            results[i] = fn(engine)
        except BaseException as exc:  # noqa: BLE001 - re-raised on the test's thread below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i, e)) for i, e in enumerate(engines)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(HANG_S)
    assert not any(t.is_alive() for t in threads), "a racing evaluator hung"
    if errors:
        raise errors[0]
    return results


def _one_delivery(engine) -> dict:
    (row,) = store.deliveries(engine).to_dict("records")
    return row


def test_an_event_being_sent_by_one_evaluator_is_not_sent_again_by_another(engines, monkeypatch):
    a, b = engines
    hook = Receiver(hold_first=True, hang_s=HANG_S)
    monkeypatch.setenv("TEAM_HOOK", hook.url)
    try:
        slow_endpoint_with_rule(a, NOW_MS)
        assert [t for *_, t in evaluate_all(a, NOW_MS, deliver=False).transitions] == ["firing"]
        worker: dict[str, PassResult] = {}
        sending = threading.Thread(target=lambda: worker.setdefault("pass", deliver_due(a, NOW_MS)))
        sending.start()
        assert hook.holding.wait(HANG_S), "the worker's post never arrived"
        by_hand = deliver_due(b, NOW_MS)  # `alerts evaluate` run while the worker's post is in flight
        hook.release.set()
        sending.join(HANG_S)
        assert (by_hand.delivered, by_hand.failed) == (0, [])
        assert worker["pass"].delivered == 1
        assert hook.posts == 1 and hook.bodies[0]["status"] == "firing"
        row = _one_delivery(b)
        assert (row["attempts"], row["delivered_at_ms"], row["last_error"]) == (1, NOW_MS, "")
    finally:
        hook.close()


def test_of_two_evaluators_that_read_one_due_delivery_exactly_one_claims_it(engines):
    a, b = engines
    slow_endpoint_with_rule(a, NOW_MS)
    evaluate_all(a, NOW_MS, deliver=False)
    ((seen_a, _),) = store.due_deliveries(a, NOW_MS)
    ((seen_b, _),) = store.due_deliveries(b, NOW_MS)  # both read it due, before either claims it
    claims = race(
        lambda e: store.claim_delivery(e, seen_a if e is a else seen_b, now_ms=NOW_MS, lease_ms=LEASE_MS), a, b
    )
    assert sorted(claims, key=lambda c: c is None) == [1, None]  # one wins, its attempt counted once
    assert _one_delivery(a)["attempts"] == 1
    winner = a if claims[0] == 1 else b

    # Held while its claimer sends; if that evaluator dies mid-send, another retries it once the lease is over.
    assert store.due_deliveries(b, NOW_MS + LEASE_MS - 1) == []
    ((again, _),) = store.due_deliveries(b, NOW_MS + LEASE_MS)
    assert store.claim_delivery(b, again, now_ms=NOW_MS + LEASE_MS, lease_ms=LEASE_MS) == 2
    # the first claimer's late outcome does not overwrite the retry's
    assert not store.finish_delivery(winner, int(seen_a.id or 0), 1, now_ms=NOW_MS, error="", next_attempt_at_ms=None)
    assert store.finish_delivery(b, int(again.id or 0), 2, now_ms=NOW_MS + LEASE_MS, error="", next_attempt_at_ms=None)
    row = _one_delivery(a)
    assert (row["attempts"], row["delivered_at_ms"], row["next_attempt_at_ms"]) == (2, NOW_MS + LEASE_MS, None)


def test_two_evaluators_retrying_a_failing_delivery_count_every_attempt_once(engines, monkeypatch):
    a, b = engines
    hook = Receiver(fail_first=10**6)  # answers HTTP 500 to every post
    monkeypatch.setenv("TEAM_HOOK", hook.url)
    try:
        slow_endpoint_with_rule(a, NOW_MS)
        evaluate_all(a, NOW_MS, deliver=False)
        at_ms = NOW_MS
        for attempt in range(1, MAX_ATTEMPTS + 1):  # both evaluators run every pass, at the moment it is due
            passes = race(lambda e, t=at_ms: deliver_due(e, t), a, b)
            assert sorted(len(p.failed) for p in passes) == [0, 1], [p.failed for p in passes]
            assert hook.posts == attempt and _one_delivery(a)["attempts"] == attempt
            if attempt < MAX_ATTEMPTS:
                at_ms += int(BACKOFF_S[attempt - 1] * 1000)
        row = _one_delivery(b)
        assert row["next_attempt_at_ms"] is None and "answered HTTP 500" in row["last_error"]  # given up
        assert any("(given up)" in f for p in passes for f in p.failed)
        race(lambda e: deliver_due(e, at_ms + 86_400_000), a, b)
        assert hook.posts == MAX_ATTEMPTS and _one_delivery(a)["attempts"] == MAX_ATTEMPTS
    finally:
        hook.close()


def test_two_evaluators_stepping_the_same_series_at_once_notify_one_transition(engines, monkeypatch):
    a, b = engines
    hook = Receiver()
    monkeypatch.setenv("TEAM_HOOK", hook.url)
    try:
        slow_endpoint_with_rule(a, NOW_MS)
        passes = race(lambda e: evaluate_all(e, NOW_MS), a, b)
        assert sum(len(p.transitions) for p in passes) == 1
        assert sum(p.delivered for p in passes) == 1
        assert hook.posts == 1 and [body["status"] for body in hook.bodies] == ["firing"]
        assert list(store.alert_history(a)["transition"]) == ["firing"]
        assert _one_delivery(b)["attempts"] == 1
    finally:
        hook.close()
