"""Load levels for the real-engine what-if check: tokens and time scaled together, the utilisation hit exactly."""

from __future__ import annotations

import numpy as np
import pytest

from planner.whatif.deployment import parse_deployment
from planner.whatif.levels import at_utilisation, cap_gaps, scale_tokens, utilisation
from planner.whatif.replay import replay
from planner.whatif.trace import Trace

DEP = parse_deployment("dedicated:replicas=1,slots=2,prefill=1000,decode=50,usd_per_gpu_h=0")


def _trace(n: int = 300, seed: int = 1) -> Trace:
    rng = np.random.default_rng(seed)
    arrival = 1_764_460_800_000 + np.cumsum(rng.exponential(2000, n))  # bursty production-like gaps
    return Trace(arrival, np.round(rng.lognormal(7.5, 1.0, n)), np.zeros(n), np.round(rng.lognormal(3, 0.8, n)) + 1)


def test_tokens_shrink_by_one_factor_to_the_wanted_mean_service():
    t = _trace()
    small = scale_tokens(t, DEP, mean_service_s=0.3)
    hold = np.maximum(small.prompt_tokens, 0) / 1000 + (small.output_tokens - 1) / 50
    assert hold.mean() == pytest.approx(0.3, rel=0.05)
    assert small.n == t.n and (small.prompt_tokens >= 8).all() and (small.output_tokens >= 1).all()
    big = t.prompt_tokens > 5000
    assert (small.prompt_tokens[big] > small.prompt_tokens[~big].max() * 0.5).all()  # long prompts stay long


@pytest.mark.parametrize("rho", [0.3, 0.6, 0.85])
def test_each_level_has_the_wanted_utilisation_and_queues_more_as_it_rises(rho):
    t = scale_tokens(_trace(), DEP, 0.3)
    level = at_utilisation(t, DEP, rho)
    assert utilisation(level, DEP) == pytest.approx(rho)
    assert level.n == t.n and np.all(np.diff(level.arrival_ms) >= 0)
    p95 = {r: np.percentile(replay(DEP, at_utilisation(t, DEP, r)).queue_ms, 95) for r in (0.3, rho)}
    assert p95[rho] >= p95[0.3]


def test_a_single_request_has_no_utilisation():
    with pytest.raises(ValueError, match="two or more requests"):
        utilisation(_trace(1), DEP)


def test_lulls_between_stitched_windows_are_cut_and_bursts_kept():
    t = Trace(np.array([0.0, 10.0, 20.0, 200_000.0, 200_005.0]), np.full(5, 100.0), np.zeros(5), np.full(5, 5.0))
    capped = cap_gaps(t, 3000)
    assert np.diff(capped.arrival_ms).tolist() == [10.0, 10.0, 3000.0, 5.0]
    assert "1 gaps over 3 s" in capped.source
    # the capped slice reaches a utilisation on its busy part, not on the lull
    assert utilisation(capped, DEP) > 30 * utilisation(t, DEP)


def test_prompt_overhead_tokens_count_in_the_service_time_that_sets_a_level():
    with_overhead = parse_deployment(
        "dedicated:replicas=1,slots=2,prefill=1000,decode=50,usd_per_gpu_h=0,overhead_tokens=100"
    )
    t = _trace()
    assert utilisation(t, with_overhead) > utilisation(t, DEP)
    small = scale_tokens(t, with_overhead, mean_service_s=0.3)
    hold = (small.prompt_tokens + 100) / 1000 + (small.output_tokens - 1) / 50
    assert hold.mean() == pytest.approx(0.3, rel=0.05)
