"""Warm pool: Erlang C against the textbook example, quantiles, minimum slots, the keep-warm trade-off."""

import math

import numpy as np
import pytest

from planner.capacity.errors import CapacityError
from planner.capacity.warmpool import (
    erlang_c,
    keep_warm_tradeoff,
    min_slots_for_target,
    queue_wait,
    queue_wait_quantile_s,
    trace_idle_seconds,
    wait_exceeds_probability,
)


def test_erlang_c_textbook_example():
    # λ = 30/h, E[S] = 5 min → a = 2.5 Erlangs
    assert round(erlang_c(4, 2.5), 2) == 0.32
    assert round(erlang_c(5, 2.5), 2) == 0.13
    assert round(erlang_c(6, 2.5), 3) == 0.047


def test_erlang_c_closed_form_by_hand():
    # c = 2, a = 1: C = (a²/2! · 2/(2−1)) / (1 + a + a²/2! · 2) = 1/3
    assert erlang_c(2, 1.0) == pytest.approx(1 / 3)
    assert erlang_c(1, 0.5) == pytest.approx(0.5)  # M/M/1: C = ρ
    assert 0 < erlang_c(2000, 1900.0) < 1  # large pools stay finite


def test_queue_wait_quantile_by_hand():
    # c = 4: cμ − λ = 4/300 − 30/3600 = 0.005 /s; p95 = ln(C/0.05)/0.005
    c = erlang_c(4, 2.5)
    q = queue_wait_quantile_s(0.95, 4, 30 / 3600, 300)
    assert q == pytest.approx(math.log(c / 0.05) / 0.005)
    assert wait_exceeds_probability(q, 4, 30 / 3600, 300) == pytest.approx(0.05)
    assert wait_exceeds_probability(0, 4, 30 / 3600, 300) == pytest.approx(c)
    # when fewer than 5% wait at all, the p95 wait is 0
    assert queue_wait_quantile_s(0.95, 6, 30 / 3600, 300) == 0


def test_queue_wait_result_and_the_minimum_pool():
    qw = queue_wait(30, 300, 4)
    assert qw.stable and round(qw.wait_probability, 2) == 0.32
    assert qw.mean_wait_s == pytest.approx(qw.wait_probability / 0.005)
    assert "32.0% of requests wait" in qw.message
    # < 10% waiting needs 6 slots; a queue-wait p95 of 0 s needs 6 (C = 0.047 < 0.05)
    assert min_slots_for_target(30, 300, 0.0) == 6
    assert min_slots_for_target(30, 300, 120) == 5


def test_overload_and_zero_traffic_are_messages_not_nan():
    over = queue_wait(30, 300, 2)
    assert not over.stable and math.isinf(over.wait_quantile_s) and over.wait_probability == 1.0
    assert "Overloaded" in over.message and "more than 2 slots" in over.message
    idle = queue_wait(0, 300, 2)
    assert idle.wait_probability == 0 and idle.wait_quantile_s == 0 and "No traffic" in idle.message
    assert min_slots_for_target(0, 300, 1) == 0
    with pytest.raises(CapacityError, match="service time"):
        queue_wait(30, 0, 2)
    with pytest.raises(CapacityError, match="slots"):
        queue_wait(30, 300, 0)
    with pytest.raises(CapacityError, match="no traffic"):
        keep_warm_tradeoff(node_usd_per_hour=3.2, warm_ttft_p95_ms=400, cold_start_ms=45_000, arrivals_per_hour=0)


def test_trace_idle_seconds_by_hand():
    # arrivals at 0, 10 s, 200 s; 2 s service; W = 60 s:
    # idle 8 s (2→10), then min(188, 60) = 60 s (12→200), then a full window after the last: 60 s
    assert trace_idle_seconds([0, 10_000, 200_000], 60, service_ms=2_000) == pytest.approx(128)


def test_poisson_tradeoff_matches_closed_forms():
    # 1 request/min, W = 60 s → e^(−1) = 37% cold: in the p95; W = 300 s → 0.7%: not
    t = keep_warm_tradeoff(
        node_usd_per_hour=3.20,
        warm_ttft_p95_ms=400,
        cold_start_ms=45_000,
        arrivals_per_hour=60,
        windows_s=(60, 300),
        gpus_per_replica=1,
    )
    w60, w300, always = t.iloc[0], t.iloc[1], t.iloc[2]
    assert w60["cold_fraction"] == pytest.approx(math.exp(-1))
    assert w60["cold_in_p95"] and w60["p95_ttft_ms"] == 45_400
    assert w300["cold_fraction"] == pytest.approx(math.exp(-5)) and w300["p95_ttft_ms"] == 400
    # service ≪ gap: warm fraction = 1 − e^(−λW)
    assert w60["warm_hours_per_day"] == pytest.approx(24 * (1 - math.exp(-1)))
    assert w60["keep_warm_usd_per_month"] == pytest.approx((1 - math.exp(-1)) * 3.20 * 730)
    assert always["keep_warm_usd_per_month"] == pytest.approx(3.20 * 730) and always["cold_fraction"] == 0
    assert w60["keep_warm_usd_per_month"] < w300["keep_warm_usd_per_month"] < always["keep_warm_usd_per_month"]


def test_trace_tradeoff_uses_the_logs_trace_function():
    # requests every 120 s for a day: W = 60 s → every request cold; W = 300 s → only the first
    arrivals = np.arange(0, 86_400_000, 120_000, dtype=float)
    t = keep_warm_tradeoff(
        node_usd_per_hour=2.0, warm_ttft_p95_ms=300, cold_start_ms=30_000, arrival_ms=arrivals, windows_s=(60, 300)
    )
    assert t.iloc[0]["cold_fraction"] == 1.0 and t.iloc[0]["cold_in_p95"]
    assert t.iloc[1]["cold_fraction"] == pytest.approx(1 / len(arrivals))
    # warm 60 s of every 120 s with W = 60 → about 12 h a day; always warm with W = 300
    assert t.iloc[0]["warm_hours_per_day"] == pytest.approx(12, abs=0.1)
    assert t.iloc[1]["warm_hours_per_day"] == pytest.approx(24, abs=0.1)
    with pytest.raises(CapacityError, match="at least two requests"):
        keep_warm_tradeoff(node_usd_per_hour=2.0, warm_ttft_p95_ms=300, cold_start_ms=30_000, arrival_ms=[5.0])
