"""Prediction vs measurement: the replay's per-hour TTFT against the real simulated endpoint driven by the same trace."""

from __future__ import annotations

import numpy as np
import pytest

from planner.whatif.deployment import parse_deployment
from planner.whatif.proof import prove, simulator_config_for
from planner.whatif.trace import Trace

DAY0_MS = 1_764_460_800_000  # 2025-11-30 00:00 UTC


def two_hour_trace(seed: int = 3) -> Trace:
    """Hour 0: 60 requests in 40 min, a 15-min gap (past the 600 s window: a cold start), 10 more.
    Hour 1: 140 requests (queueing on 2 slots). Prompts 300–3000 tokens, all new; 1–3 output tokens
    (decoded at 1 token/s: few, long timer sleeps on the endpoint, so their lateness stays small)."""
    rng = np.random.default_rng(seed)
    minutes = np.concatenate([
        np.sort(rng.uniform(0, 40, 60)), np.sort(rng.uniform(55, 60, 10)), np.sort(rng.uniform(60, 120, 140)),
    ])
    n = len(minutes)
    return Trace(DAY0_MS + minutes * 60_000, rng.integers(300, 3000, n).astype(float), np.zeros(n),
                 rng.integers(1, 4, n).astype(float))


# Slow prefill (100 tokens/s) keeps each TTFT tens of simulated seconds, so at 240× compression the real
# times (~100 ms) stay well above the loopback's few milliseconds of timer and scheduling noise.
PROOF_SPEC = "serverless:name=proof,window=600,cold=30,slots=2,max=1,prefill=100,decode=1,usd_per_mtok=0.3"


def test_predicted_p95_matches_the_simulated_endpoint_per_hour():
    result = prove(parse_deployment(PROOF_SPEC), two_hour_trace(), speedup=240)
    assert result.n_failed == 0, result.failures
    assert [(h.hour, h.n) for h in result.hours] == [(0, 70), (1, 140)]
    # The first request and the one after the 15-minute gap find the endpoint cold, in both.
    assert result.predicted_cold_starts == 2
    assert result.endpoint_cold_starts == 2
    why = (result.table(), f"endpoint decode overrun {result.decode_overrun}")
    for h in result.hours:
        assert abs(h.p95_error_fraction) <= 0.10, why
        assert h.predicted_p50.value == pytest.approx(h.measured_p50.value, rel=0.10), why
    assert result.within(0.10)


def test_shapes_the_single_replica_simulator_cannot_play_are_refused():
    with pytest.raises(ValueError, match="one replica; use max=1"):
        simulator_config_for(parse_deployment(PROOF_SPEC.replace("max=1", "max=3")), speedup=10)
    dedicated = parse_deployment("dedicated:replicas=2,slots=4,prefill=100,decode=4,usd_per_gpu_h=3")
    assert simulator_config_for(dedicated, speedup=10).slots == 8
