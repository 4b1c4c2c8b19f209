"""The what-if prediction interval: exact without spread, as wide as the speed spread says, and right as often as
its level says when runs really vary that way."""

from __future__ import annotations

import math

import numpy as np
import pytest

from planner.whatif.deployment import SpecError, parse_deployment
from planner.whatif.interval import predict
from planner.whatif.replay import replay
from planner.whatif.trace import Trace

ONE_SLOT = "dedicated:replicas=1,slots=1,prefill=1000,decode=100,usd_per_gpu_h=1"


def poisson_trace(n: int, rate_per_s: float, seed: int = 1) -> Trace:
    """n requests of 100–300 prompt tokens and 5 output tokens, Poisson arrivals."""
    rng = np.random.default_rng(seed)
    arrival = np.cumsum(rng.exponential(1000.0 / rate_per_s, n))
    return Trace(arrival, rng.integers(100, 301, n).astype(float), np.zeros(n), np.full(n, 5.0))


def nearest_rank(values: np.ndarray, p: float) -> float:
    ordered = np.sort(values)
    return float(ordered[max(1, math.ceil(p * len(ordered) - 1e-9)) - 1])


def test_without_a_speed_spread_the_centre_is_the_replay_and_only_the_trace_size_widens_it():
    dep, tr = parse_deployment(ONE_SLOT), poisson_trace(5000, 1.0)
    pred = predict(dep, tr)
    exact = replay(dep, tr).ttft_ms
    for key, p in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99)):
        band = pred.bands[key]
        assert band.value_ms == nearest_rank(exact, p)
        assert band.lo_ms <= band.value_ms <= band.hi_ms
    assert pred.bands["p50"].half_width_fraction < 0.05  # 5,000 requests pin the median down
    assert pred.driven_by == "trace" and pred.draws == 1


def test_a_speed_spread_widens_the_interval_by_the_spread_at_light_load():
    # At light load TTFT is the prefill alone, so it scales with the speed: the 80 % interval spans about
    # exp(±1.28 σ) of the centre.
    sd = 0.2
    dep = parse_deployment(ONE_SLOT + f",speed_sd={sd}")
    pred = predict(dep, poisson_trace(2000, 0.05))
    band = pred.bands["p50"]
    assert band.value_ms == nearest_rank(replay(parse_deployment(ONE_SLOT), poisson_trace(2000, 0.05)).ttft_ms, 0.5)
    assert band.hi_ms / band.value_ms == pytest.approx(math.exp(1.28 * sd), rel=0.06)
    assert band.value_ms / band.lo_ms == pytest.approx(math.exp(1.28 * sd), rel=0.06)
    assert pred.driven_by == "engine"


def test_the_interval_covers_runs_that_vary_as_the_spec_says_about_as_often_as_its_level():
    # 'Truth': each run happens at one speed drawn from the spread and each request jitters around it; the
    # prediction knows only the spread. The measured p50 and p95 of 60 such runs fall in the 80 % interval in
    # about 80 % of cases (binomial noise on 60 runs: 65–93 %).
    speed_sd, request_sd = 0.15, 0.1
    spec = ONE_SLOT + f",speed_sd={speed_sd},request_sd={request_sd}"
    tr = poisson_trace(300, 0.5, seed=3)  # utilisation ≈ 0.5 × 0.24 s ≈ 0.12 … mixed with queueing
    pred = predict(parse_deployment(spec), tr)
    rng = np.random.default_rng(42)
    inside = {"p50": 0, "p95": 0}
    runs = 60
    for _ in range(runs):
        slowdown = math.exp(speed_sd * rng.standard_normal()) * np.exp(request_sd * rng.standard_normal(tr.n))
        measured = replay(parse_deployment(ONE_SLOT), tr, slowdown=slowdown).ttft_ms
        for key, p in (("p50", 0.5), ("p95", 0.95)):
            inside[key] += pred.bands[key].contains(nearest_rank(measured, p))
    for key, hits in inside.items():
        assert 0.65 <= hits / runs <= 0.93, (key, hits)


def test_a_draw_too_slow_to_keep_up_leaves_the_top_of_the_interval_open():
    # 1 slot, 0.9 s per request every second: at 1.5× slower no schedule drains the queue within the wait limit.
    n = 4000
    tr = Trace(np.arange(n) * 1000.0, np.full(n, 900.0), np.zeros(n), np.ones(n))
    pred = predict(parse_deployment(ONE_SLOT + ",speed_sd=0.5"), tr, max_wait_s=60)
    assert math.isinf(pred.bands["p95"].hi_ms)
    assert math.isfinite(pred.bands["p95"].value_ms)


@pytest.mark.parametrize("value", ["-0.1", "3", "nan", "x"])
def test_a_speed_spread_out_of_range_is_refused_naming_the_key(value):
    with pytest.raises(SpecError, match="speed_sd"):
        parse_deployment(ONE_SLOT + f",speed_sd={value}")


def test_an_overflow_pool_inherits_the_speed_spread():
    dep = parse_deployment(ONE_SLOT + ",speed_sd=0.1,overflow_max=2,overflow_cold=5,overflow_window=60")
    assert dep.overflow is not None and dep.overflow.speed_sd.value == 0.1
