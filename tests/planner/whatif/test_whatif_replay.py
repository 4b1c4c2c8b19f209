"""The what-if replay on hand-checked tiny traces, against Erlang C, and on traffic it cannot serve."""

from __future__ import annotations

import math

import numpy as np
import pytest

from planner.whatif.deployment import parse_deployment
from planner.whatif.replay import CannotKeepUp, replay
from planner.whatif.trace import Trace


def trace(arrival_ms, prompt, cached=None, output=None) -> Trace:
    n = len(arrival_ms)
    return Trace(
        np.asarray(arrival_ms, dtype=float),
        np.asarray(prompt, dtype=float),
        np.zeros(n) if cached is None else np.asarray(cached, dtype=float),
        np.zeros(n) if output is None else np.asarray(output, dtype=float),
    )


# 1 slot, prefill 1000 tokens/s (1 ms per token), decode 100 tokens/s (10 ms per token after the first), RTT 40 ms.
# A request with 101 output tokens holds its slot for prefill + 1 s.
ONE_SLOT = "dedicated:replicas=1,slots=1,prefill=1000,decode=100,usd_per_gpu_h=3.6,rtt=40"


def test_one_request_pays_rtt_and_prefill_of_uncached_tokens_only():
    r = replay(parse_deployment(ONE_SLOT), trace([0], [2000], cached=[500], output=[50]))
    assert r.ttft_ms.tolist() == [40 + 1500]
    assert (r.queue_ms[0], r.cold_ms[0], r.prefill_ms[0], r.network_ms[0]) == (0, 0, 1500, 40)


def test_one_request_on_a_cold_serverless_pool_waits_for_the_cold_start():
    dep = parse_deployment("serverless:window=60,cold=20,slots=8,max=1,prefill=1000,decode=100,rtt=40,usd_per_mtok=1")
    r = replay(dep, trace([0], [1000], output=[101]))
    assert r.ttft_ms.tolist() == [40 + 20_000 + 1000]
    assert r.cold_ms.tolist() == [20_000] and r.queue_ms.tolist() == [0]
    assert r.cold_starts == 1
    # Paid from the scale-up (t=0) to release: ready at 20 s, busy 1 s prefill + 1 s decode, then the 60 s window.
    assert r.serverless_gpu_hours == pytest.approx((20 + 2 + 60) / 3600)


def test_two_overlapping_requests_on_one_slot_queue_fifo():
    # A: 1000 tokens (1 s prefill) + 101 output (1 s decode) holds the slot 0..2000 ms; B arrives at 500 ms.
    r = replay(parse_deployment(ONE_SLOT), trace([0, 500], [1000, 300], output=[101, 10]))
    assert r.queue_ms.tolist() == [0, 1500]
    assert r.ttft_ms.tolist() == [40 + 1000, 40 + 1500 + 300]


def test_prompt_overhead_tokens_are_prefilled_and_hold_the_slot_for_the_next_request():
    # 30 template tokens on top of each prompt: A prefills 1030 tokens and holds the slot 0..2030 ms.
    dep = parse_deployment(ONE_SLOT + ",overhead_tokens=30")
    r = replay(dep, trace([0, 500], [1000, 300], output=[101, 10]))
    assert r.prefill_ms.tolist() == [1030, 330]
    assert r.queue_ms.tolist() == [0, 1530]
    assert r.ttft_ms.tolist() == [40 + 1030, 40 + 1530 + 330]


def test_two_overlapping_requests_on_two_slots_do_not_wait():
    dep = parse_deployment(ONE_SLOT.replace("slots=1", "slots=2"))
    r = replay(dep, trace([0, 500], [1000, 300], output=[101, 10]))
    assert r.queue_ms.tolist() == [0, 0]
    assert r.ttft_ms.tolist() == [1040, 340]


def test_a_cold_start_after_an_idle_gap_longer_than_the_window():
    dep = parse_deployment("serverless:window=60,cold=10,slots=4,max=1,prefill=1000,decode=100,usd_per_mtok=1")
    # A at 0 (cold, done at 10 s + 0.1 s); B at 30 s: idle 19.9 s < 60 s, warm; C at 200 s: idle > 60 s, cold again.
    r = replay(dep, trace([0, 30_000, 200_000], [100, 100, 100], output=[1, 1, 1]))
    assert r.cold_ms.tolist() == [10_000, 0, 10_000]
    assert r.ttft_ms.tolist() == [10_100, 100, 10_100]
    assert r.cold_starts == 2
    # Replica 1: 0 → B's end (30.1 s) + 60 s; replica 2: 200 s → 210.1 s + 60 s.
    assert r.serverless_gpu_hours * 3600 == pytest.approx(90.1 + 70.1)


def test_requests_arriving_during_a_cold_start_share_it_without_a_second_scale_up():
    dep = parse_deployment("serverless:window=60,cold=10,slots=2,max=4,prefill=1000,decode=100,usd_per_mtok=1")
    r = replay(dep, trace([0, 1000], [100, 100]))
    assert r.cold_ms.tolist() == [10_000, 9_000]
    assert r.cold_starts == 1


def test_a_full_replica_scales_out_up_to_max_and_then_queues():
    dep = parse_deployment("serverless:window=60,cold=1,slots=1,max=2,prefill=1000,decode=100,usd_per_mtok=1")
    # Each request holds its slot 10 s (1001 output tokens); three arrive at 0, 0.1 s, 0.2 s.
    r = replay(dep, trace([0, 100, 200], [0, 0, 0], output=[1001, 1001, 1001]))
    assert r.cold_starts == 2 and r.peak_replicas == 2
    # The second finds the first replica's only slot taken while it starts, so it starts a second one.
    assert r.cold_ms.tolist() == [1000, 1000, 0]
    # The third waits behind the first request (slot free at 1 s + 10 s): queueing, not a cold start.
    assert r.queue_ms.tolist() == [0, 0, 11_000 - 200]


def test_min_replicas_stay_warm_across_any_gap():
    dep = parse_deployment("serverless:window=60,cold=10,slots=1,max=1,min=1,prefill=1000,decode=100,usd_per_mtok=1")
    r = replay(dep, trace([0, 3_600_000], [100, 100]))
    assert r.cold_ms.tolist() == [0, 0] and r.cold_starts == 0


def test_a_queue_builds_in_a_burst_and_drains_after_it():
    # Five 1-s requests every 0.5 s on one slot: waits grow by 0.5 s each; a request at 10 s finds the slot idle.
    r = replay(parse_deployment(ONE_SLOT), trace([0, 500, 1000, 1500, 2000, 10_000], [0] * 6, output=[101] * 6))
    assert r.queue_ms.tolist() == [0, 500, 1000, 1500, 2000, 0]


def test_dedicated_overflow_sends_requests_that_find_no_free_slot_to_the_serverless_pool():
    dep = parse_deployment(
        "dedicated:replicas=1,slots=1,prefill=1000,decode=100,usd_per_gpu_h=3.6,rtt=40,"
        "overflow_max=2,overflow_cold=5,overflow_window=30,overflow_usd_per_mtok=1,overflow_rtt=90"
    )
    r = replay(dep, trace([0, 500, 5000], [1000, 1000, 1000], output=[101, 101, 101]))
    assert r.overflow.tolist() == [False, True, False]
    assert r.cold_ms.tolist() == [0, 5000, 0]
    assert r.ttft_ms.tolist() == [1040, 90 + 5000 + 1000, 1040]
    assert r.serverless_tokens == 1101


def _erlang_c(c: int, a: float) -> float:
    top = a**c / math.factorial(c) * c / (c - a)
    return top / (sum(a**k / math.factorial(k) for k in range(c)) + top)


def test_long_poisson_trace_with_exponential_service_agrees_with_erlang_c():
    rng = np.random.default_rng(7)
    n, lam_per_s, mean_service_s, c = 300_000, 3.0, 1.0, 4
    arrival_ms = np.cumsum(rng.exponential(1000 / lam_per_s, n))
    # Service is all decode: output tokens after the first at 1000 tokens/s, exponential with mean 1 s.
    output = 1 + rng.exponential(mean_service_s * 1000, n)
    dep = parse_deployment(f"dedicated:replicas=1,slots={c},prefill=1000,decode=1000,usd_per_gpu_h=1")
    r = replay(dep, Trace(arrival_ms, np.zeros(n), np.zeros(n), output))
    wait_s = r.queue_ms[n // 10 :] / 1000  # drop the warm-up from an empty system
    a = lam_per_s * mean_service_s
    cw = _erlang_c(c, a)
    drain = c / mean_service_s - lam_per_s
    assert cw == pytest.approx(0.5094, abs=1e-3)  # M/M/4 at a = 3
    assert (wait_s > 0).mean() == pytest.approx(cw, rel=0.05)
    assert wait_s.mean() == pytest.approx(cw / drain, rel=0.07)
    p95_closed = math.log(cw / 0.05) / drain
    assert np.sort(wait_s)[math.ceil(0.95 * len(wait_s)) - 1] == pytest.approx(p95_closed, rel=0.07)


def test_a_deployment_that_can_never_keep_up_says_so_instead_of_replaying():
    # 10 requests/s of 1-s work on 2 slots for 2 h: the queue only grows.
    n = 72_000
    t = trace(np.arange(n) * 100.0, [0] * n, output=[101] * n)
    with pytest.raises(CannotKeepUp, match=r"can never keep up: the trace needs 10\.0 slots busy .* at most 2 slots"):
        replay(parse_deployment(ONE_SLOT.replace("slots=1", "slots=2")), t)


def test_a_burst_the_deployment_cannot_drain_within_the_wait_limit_names_when():
    # Over a whole day the load is light, but 5000 1-s requests arrive within one second at 12:00 UTC.
    day0 = 1_764_460_800_000  # 2025-11-30 00:00 UTC
    burst = day0 + 12 * 3_600_000 + np.arange(5000) * 0.2
    t = trace(np.concatenate([[day0], burst, [day0 + 86_000_000]]), [0] * 5002, output=[101] * 5002)
    with pytest.raises(CannotKeepUp, match=r"arriving at 2025-11-30 12:00 UTC would wait .*limit 600 s"):
        replay(parse_deployment(ONE_SLOT), t, max_wait_s=600)


def test_cold_starts_of_one_replica_agree_with_the_logs_pages_trace_driven_exposure():
    from planner.logs.exposure import trace_cold_fraction

    rng = np.random.default_rng(3)
    n = 5000
    arrival_ms = np.cumsum(rng.exponential(120_000, n))  # one request every 2 min on average
    output = 1 + rng.integers(0, 3000, n)  # up to 30 s of decode at 100 tokens/s
    t = trace(arrival_ms, np.zeros(n), output=output)
    for window_s in (60, 300, 900):
        # Enough slots that nothing queues and a zero-second load: the cold count is the exposure alone.
        dep = parse_deployment(f"serverless:window={window_s},cold=0,slots=1000,max=1,prefill=1000,decode=100")
        r = replay(dep, t)
        hold_ms = (output - 1) * 10.0
        assert r.cold_starts / n == pytest.approx(trace_cold_fraction(arrival_ms, window_s, hold_ms), abs=1e-12)
        assert 1 < r.cold_starts < n  # neither trivial case
