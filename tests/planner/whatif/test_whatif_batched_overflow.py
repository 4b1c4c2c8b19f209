"""A dedicated batching engine overflowing to a serverless pool (issue 45): a request that finds its replica full
(every running sequence taken) goes to the overflow pool — cold start, its rates and price — instead of queueing; a
serverless pool refuses engine= with the reason."""

from __future__ import annotations

import numpy as np
import pytest

from planner.whatif.deployment import SpecError, parse_deployment
from planner.whatif.interval import predict
from planner.whatif.replay import replay
from planner.whatif.trace import Trace

# one replica running one sequence; a step 10 ms + 1 ms a prompt token, a lone decode step 20 ms; the overflow pool
# starts a replica in 2 s and serves a slot at the same rates, $1 a million tokens
SPEC = (
    "dedicated:name=d,engine=vllm,replicas=1,slots=1,prefill=1000,decode=50,step_ms=10,usd_per_gpu_h=2,"
    "overflow_slots=1,overflow_max=2,overflow_cold=2,overflow_window=60,overflow_usd_per_mtok=1"
)


def _trace() -> Trace:
    """A at 0 (100 prompt tokens, 51 output: decoding until 1,110 ms), B at 100 ms, C at 1,500 ms (each the same)."""
    return Trace(np.array([0.0, 100.0, 1_500.0]), np.full(3, 100.0), np.zeros(3), np.full(3, 51.0))


def test_a_request_finding_its_replica_full_goes_to_the_overflow_pool():
    rep = replay(parse_deployment(SPEC), _trace())
    # A: one step of 100 prompt tokens (110 ms). B arrives while A decodes: the replica's one sequence is taken, so
    # B goes to the overflow pool: a 2 s cold start, then 100 tokens at 1,000 tokens/s. C finds the replica idle.
    assert rep.overflow.tolist() == [False, True, False]
    assert rep.ttft_ms.tolist() == pytest.approx([110.0, 2_100.0, 110.0])
    assert rep.cold_ms.tolist() == pytest.approx([0.0, 2_000.0, 0.0])
    assert rep.cold_starts == 1 and rep.serverless_tokens == 151.0
    # without the pool B queues on the replica until A's last token (1,110 ms), then its own step
    queued = replay(parse_deployment(SPEC.split(",overflow_")[0]), _trace())
    assert queued.overflow.tolist() == [False, False, False]
    assert queued.ttft_ms[1] == pytest.approx(1_110.0 + 110.0 - 100.0)
    # the interval replays the same mechanics at every drawn speed
    assert predict(parse_deployment(SPEC + ",speed_sd=0.2"), _trace()).bands["p95"].hi_ms >= 2_100.0


def test_an_engine_on_a_serverless_pool_and_a_pool_without_its_slots_are_refused_with_the_reason():
    with pytest.raises(SpecError, match="the step model has no autoscaler; give the pool's concurrency as slots="):
        parse_deployment("serverless:window=300,cold=20,slots=8,max=4,prefill=12000,decode=60,engine=vllm")
    with pytest.raises(SpecError, match="an overflow pool behind engine=vllm needs overflow_slots="):
        parse_deployment(SPEC.replace("overflow_slots=1,", ""))


def test_the_regime_names_the_overflow_cold_start():
    from planner.whatif.regime import regime_sentence

    dep = parse_deployment(SPEC)
    said = regime_sentence(dep, replay(dep, _trace()), _trace(), 3600)
    assert said.startswith(
        "cold-start-bound: 100% of the slowest 5 % find their replica full, go to the overflow pool and wait 2,000 ms"
    ), said
