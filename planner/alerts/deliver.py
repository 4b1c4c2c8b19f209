"""Sending the alert deliveries that are due: one pass, all its sends together within one deadline.

A pass reads the due deliveries and sends them side by side: at most PARALLEL_SENDS at once, on daemon threads (a
stop never waits for a receiver), each network step of a send within min(send timeout, deadline). It returns when
every send has ended or when its deadline (real seconds: network waits are real) has passed, whichever comes first,
so a webhook or an SMTP server that accepts and never answers costs a pass its deadline, not a timeout per delivery
one after another. At the deadline, what has not started is left due and unclaimed for the next pass; a send still
under way ends on its own thread (within its step timeout) and records its own outcome, its claim keeping every other
pass off it meanwhile.

Delivery is at least once: every failure, of whatever kind, is stored with its one-line reason and retried with
backoff (planner.alerts.notify.BACKOFF_S) on later passes until MAX_ATTEMPTS. A delivery is claimed before it is sent
(planner.store.alerts.claim_delivery), so two passes at once (the worker's and `ttft-planner alerts evaluate`) never
send one twice.
"""

from __future__ import annotations

import functools
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from sqlalchemy.engine import Engine

from planner.alerts.notify import (
    BACKOFF_S,
    MAX_ATTEMPTS,
    SEND_LEASE_S,
    TIMEOUT_S,
    DeliveryError,
    Notice,
    send,
    shown_target,
)
from planner.alerts.rules import Transition, judged
from planner.store import alerts as store
from planner.store.alerts import AlertDeliveryRow
from planner.store.probe_queries import series_keys

__all__ = ["PARALLEL_SENDS", "PASS_DEADLINE_S", "PassResult", "deliver_due"]

#: How long one pass's sends may take together (s): under the worker's 30 s between passes, and room for two rounds
#: of sends that each time out (TIMEOUT_S).
PASS_DEADLINE_S = 25.0
#: Sends of one pass under way at once.
PARALLEL_SENDS = 4


@dataclass
class PassResult:
    """What one pass did: series evaluated, transitions, deliveries sent and failed, and the sends its deadline cut
    off (still under way, or not started: retried on a later pass)."""

    series: int = 0
    transitions: list[tuple[str, str, str]] = field(default_factory=list)  # (rule, where: series_where, transition)
    delivered: int = 0
    failed: list[str] = field(default_factory=list)
    unfinished: int = 0


def _due(engine: Engine, now_ms: int, vantage: str | None) -> list[tuple[AlertDeliveryRow, Notice]]:
    """The due deliveries this pass sends (of `vantage`'s series when given, and of every production rule's), each
    with its notice."""
    rules = {r.id: r for r in store.load_rules(engine)}
    names = {k.endpoint_id: k.endpoint_name for k in series_keys(engine)}
    out = []
    for d, e in store.due_deliveries(engine, now_ms):
        rule = rules.get(e.rule_id)
        if rule is None:
            continue
        if vantage is not None and e.vantage != vantage and not rule.kind.production:
            continue
        notice = Notice(
            judged(rule), Transition(e.transition), names.get(e.endpoint_id, "?"), e.vantage, e.value, e.n, e.at_ms
        )
        out.append((d, notice))
    return out


_SENT, _TAKEN = "sent", "taken"  # _deliver_one's outcomes besides a failure's line


def _deliver_one(engine: Engine, d: AlertDeliveryRow, notice: Notice, now_ms: int, timeout_s: float) -> str:
    """Claim, send and record one delivery: _SENT, _TAKEN (another pass is sending it or has sent it), else the
    failure's line. Never raises."""
    try:
        return _claim_send_record(engine, d, notice, now_ms, timeout_s)
    except Exception as exc:  # noqa: BLE001 - the store failed claiming or recording it: retried on a later pass
        line = (str(exc).splitlines() or [""])[0][:200]
        return f"{d.channel} {shown_target(d.channel, d.target)}: not recorded: {type(exc).__name__}: {line}"


def _claim_send_record(engine: Engine, d: AlertDeliveryRow, notice: Notice, now_ms: int, timeout_s: float) -> str:
    attempt = store.claim_delivery(engine, d, now_ms=now_ms, lease_ms=int(SEND_LEASE_S * 1000))
    if attempt is None:
        return _TAKEN
    try:
        send(d.channel, d.target, notice, timeout_s=timeout_s)
    except DeliveryError as exc:
        retry = attempt < MAX_ATTEMPTS
        wait_s = BACKOFF_S[min(attempt - 1, len(BACKOFF_S) - 1)]
        store.finish_delivery(
            engine,
            int(d.id or 0),
            attempt,
            now_ms=now_ms,
            error=str(exc),
            next_attempt_at_ms=now_ms + int(wait_s * 1000) if retry else None,
        )
        return f"{d.channel} {shown_target(d.channel, d.target)}: {exc}" + ("" if retry else " (given up)")
    store.finish_delivery(engine, int(d.id or 0), attempt, now_ms=now_ms, error="", next_attempt_at_ms=None)
    return _SENT


def deliver_due(
    engine: Engine,
    now_ms: int,
    result: PassResult | None = None,
    *,
    vantage: str | None = None,
    deadline_s: float = PASS_DEADLINE_S,
    send_timeout_s: float = TIMEOUT_S,
) -> PassResult:
    """Send every delivery that is due (of `vantage`'s series when given, and of every production rule's), side by
    side, returning within `deadline_s` (real s) however the receivers behave; each network step of a send waits at
    most min(send_timeout_s, deadline_s). A failure is stored with its reason and retried after a backoff; what the
    deadline cut off is counted in `unfinished`. Raises the store's errors from reading what is due."""
    result = result or PassResult()
    due = _due(engine, now_ms, vantage)
    if not due:
        return result
    step_s = min(send_timeout_s, deadline_s)
    jobs = [functools.partial(_deliver_one, engine, d, notice, now_ms, step_s) for d, notice in due]
    outcomes, result.unfinished = _run_within(jobs, PARALLEL_SENDS, deadline_s)
    for outcome in outcomes:
        if outcome == _SENT:
            result.delivered += 1
        elif outcome != _TAKEN:
            result.failed.append(outcome)
    return result


def _run_within(jobs: Sequence[Callable[[], str]], parallel: int, deadline_s: float) -> tuple[list[str], int]:
    """Run `jobs` (each never raises) on up to `parallel` daemon threads until all have ended or `deadline_s` (real s)
    has passed: the outcomes of those that ended, and how many did not (a job not started by then never starts)."""
    queue, outcomes = deque(jobs), []
    lock, all_done = threading.Lock(), threading.Event()
    closed = False

    def run() -> None:
        while True:
            with lock:
                if closed or not queue:
                    return
                job = queue.popleft()
            outcome = job()
            with lock:
                if not closed:
                    outcomes.append(outcome)
                    if len(outcomes) == len(jobs):
                        all_done.set()

    for _ in range(min(parallel, len(jobs))):
        threading.Thread(target=run, name="alert-send", daemon=True).start()
    all_done.wait(deadline_s)
    with lock:
        closed = True
        return list(outcomes), len(jobs) - len(outcomes)
