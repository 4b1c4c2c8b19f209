"""The simulated endpoint's continuous-batching mode and speed drift, measured in virtual time over its HTTP API.

The batching simulator serves the scheduler planner.whatif.steps replays (planner.simulator.batching), so a trace
sent to it for real and the replay of the same trace give the same TTFT per request; drift makes the same prompt
slower or faster from one period to the next by the drawn factor."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from planner.probes.ttft import ProbeTarget, probe_once
from planner.simulator import SimulatorConfig
from planner.simulator.virtual import run_virtual, virtual_clock_ns, virtual_simulator
from planner.whatif.deployment import parse_deployment
from planner.whatif.proof import measure_trace
from planner.whatif.replay import replay
from planner.whatif.trace import Trace

pytestmark = pytest.mark.timeout(120)

BATCHING = dict(
    prefill_tokens_per_s=2000.0,
    decode_tokens_per_s=40.0,
    slots=8,
    base_overhead_ms=0.0,
    prefix_cache_tokens=0,
    ping_interval_s=0.0,
    batching=True,
    step_ms=15.0,
    max_batched_tokens=512,
    max_output_tokens=4000,
    seed=1,
)


def _trace(n: int, gap_ms: float, seed: int = 0) -> Trace:
    rng = np.random.default_rng(seed)
    arrival = 1_764_460_800_000 + np.cumsum(rng.exponential(gap_ms, n))
    return Trace(arrival, rng.integers(20, 600, n).astype(float), np.zeros(n), rng.integers(1, 120, n).astype(float))


@pytest.mark.parametrize("gap_ms", [1500.0, 400.0], ids=["light", "overloaded"])
def test_a_trace_sent_to_the_batching_simulator_takes_what_the_step_replay_predicts(gap_ms):
    trace = _trace(120, gap_ms)

    async def main():
        async with virtual_simulator(SimulatorConfig(**BATCHING)) as sim:
            return await measure_trace(trace, sim.url, 1.0, client=sim.client, clock_ns=virtual_clock_ns)

    samples = run_virtual(main())
    assert all(s.ok for s in samples)
    measured = np.array([s.ttft_ms for s in samples])
    dep = parse_deployment(
        "dedicated:engine=vllm,replicas=1,slots=8,prefill=2000,decode=40,step_ms=15,max_num_batched_tokens=512,"
        "usd_per_gpu_h=0"
    )
    rep = replay(dep, trace)
    assert np.abs(rep.ttft_ms - measured).max() < 0.01  # ms: the same scheduler, step for step
    assert rep.first_step_decodes.max() >= 2  # new prompts shared their steps with running decodes: not trivial


def test_the_speed_drifts_by_the_drawn_factor_from_one_period_to_the_next():
    config = SimulatorConfig(
        prefill_tokens_per_s=1000.0, base_overhead_ms=0.0, prefix_cache_tokens=0, ping_interval_s=0.0, seed=7,
        speed_drift_sd=0.3, speed_drift_period_s=60.0,
    )  # fmt: skip

    async def main():
        async with virtual_simulator(config) as sim:
            target = ProbeTarget(base_url=sim.url, model="m", prompt_tokens=500, max_tokens=1)
            first = await probe_once(target, client=sim.client, clock_ns=virtual_clock_ns)
            await __import__("asyncio").sleep(60.0)
            second = await probe_once(target, client=sim.client, clock_ns=virtual_clock_ns)
            return first, second

    first, second = run_virtual(main())
    factors = [math.exp(0.3 * random.Random(f"7:{k}").gauss(0.0, 1.0)) for k in (0, 1)]
    tokens = first.prompt_tokens
    assert first.ttft_ms == pytest.approx(tokens * factors[0], rel=1e-6)
    assert second.ttft_ms == pytest.approx(tokens * factors[1], rel=1e-6)
    assert abs(factors[1] / factors[0] - 1) > 0.05  # the two periods really ran at different speeds
