"""Load levels for the real-engine what-if check: tokens and time scaled together, the utilisation hit exactly."""

from __future__ import annotations

import numpy as np
import pytest

from planner.whatif.deployment import parse_deployment
from planner.whatif.levels import at_utilisation, scale_tokens, utilisation
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
    hold = (np.maximum(small.prompt_tokens, 0) / 1000 + (small.output_tokens - 1) / 50)
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
