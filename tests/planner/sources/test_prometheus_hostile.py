"""The Prometheus reader against a hostile Prometheus (a real local HTTP server): every odd answer is one line naming
the server and what was wrong; a drip ends at the deadline; an endless body stops at the cap, unread past it."""

from __future__ import annotations

import threading

import pytest

from planner.sources.prometheus import HOUR_MS, PrometheusError, models, ttft_by_hour
from tests.support.prometheus_hostile import HOSTILE_ANSWERS, HUGE_BYTES, hostile_prometheus
from tests.support.servers import full_backlog

NOW_MS = 486_111 * 3_600_000  # on an hour: three hours back is three hours
JOIN_GUARD_S = 120.0  # a hang guard, not a speed check


@pytest.fixture(scope="module")
def prom():
    with hostile_prometheus() as server:
        yield server


def _refusal(call) -> str:
    """The message of the PrometheusError `call()` raises (any other exception fails the test with its traceback)."""
    with pytest.raises(PrometheusError) as caught:
        call()
    return str(caught.value)


@pytest.mark.parametrize(("case_id", "where", "body"), HOSTILE_ANSWERS, ids=[c[0] for c in HOSTILE_ANSWERS])
def test_an_odd_answer_is_one_line_naming_the_server(prom, case_id, where, body):
    url = prom.case(case_id)
    said = _refusal(lambda: ttft_by_hour(url, NOW_MS - 3 * HOUR_MS, NOW_MS, model="m1"))
    assert said.startswith(f"Prometheus at {url} ") and "\n" not in said and len(said) < 400, said
    assert "Traceback" not in said and "RecursionError" not in said


def test_a_normal_answer_with_no_requests_is_hours_of_none(prom):
    hours = ttft_by_hour(f"{prom.base}/ok", NOW_MS - 3 * HOUR_MS, NOW_MS, model="m1")
    assert len(hours) == 3 and all(h.requests == 0 and h.p95_ms is None for h in hours)


def _returns(call) -> list[str]:
    """Run `call` (expected to raise PrometheusError) in a thread; its message, once it returned within the guard."""
    said: list[str] = []

    def run() -> None:
        said.append(_refusal(call))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(JOIN_GUARD_S)
    assert not thread.is_alive(), "the read did not return: a drip held it past its deadline"
    assert said, "the read ended with an exception other than PrometheusError"
    return said


def test_a_dripping_prometheus_fails_at_the_deadline(prom):
    url = f"{prom.base}/drip"
    [said] = _returns(lambda: ttft_by_hour(url, NOW_MS - HOUR_MS, NOW_MS, deadline_s=2.0))
    assert said.startswith(f"Prometheus at {url} did not finish its answer within 2 s"), said
    [said] = _returns(lambda: models(url, deadline_s=2.0))
    assert "within 2 s" in said


def test_an_endless_answer_stops_at_the_cap_unread_past_it(prom):
    url = f"{prom.base}/huge"
    cap = 4 << 20
    [said] = _returns(lambda: ttft_by_hour(url, NOW_MS - HOUR_MS, NOW_MS, max_bytes=cap))
    assert said == f"Prometheus at {url} answered more than 4 MiB, the cap on one answer: stopped reading"
    # what the server gave the socket: the cap and what the kernel's buffers took, nowhere near all of it
    assert prom.yielded["huge"] < HUGE_BYTES // 8, prom.yielded


def test_a_black_holed_prometheus_fails_at_the_connect_timeout():
    with full_backlog() as port:  # never accepted, the queue full: every SYN dropped
        url = f"http://127.0.0.1:{port}"
        [said] = _returns(lambda: ttft_by_hour(url, NOW_MS - HOUR_MS, NOW_MS, deadline_s=2.0))
    assert said.startswith(f"Prometheus at {url} cannot be reached"), said
