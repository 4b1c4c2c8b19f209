"""`ttft-planner calibrate`: the simulator with known slots and rates must be read back as a what-if spec."""

from __future__ import annotations

import json

from click.testing import CliRunner

from planner.cli import cli
from planner.simulator import SimulatorConfig, running_simulator
from planner.whatif.deployment import parse_deployment


def test_calibration_reads_back_the_simulators_slots_prefill_and_decode():
    cfg = SimulatorConfig(slots=2, prefill_tokens_per_s=4000, decode_tokens_per_s=50, base_overhead_ms=0,
                          prefix_cache_tokens=0, seed=0)
    with running_simulator(cfg) as url:
        r = CliRunner().invoke(cli, ["calibrate", "--base-url", url, "--model", "m", "--prompt-tokens", "100,800", "-n", "4",
                                     "--decode-tokens", "16", "--concurrency", "1,2,4", "--step-duration", "2", "--json"],
                               catch_exceptions=False)
    assert r.exit_code == 0, r.output
    cal = json.loads(r.output)
    assert cal["token_basis"] == "server-counted"  # the simulator reports usage
    assert 0.7 * 4000 <= cal["prefill_tokens_per_s"] <= 1.3 * 4000, cal
    # a loaded machine runs the simulator's per-token timers late (never early): the endpoint really decodes slower
    assert 0.5 * 50 <= cal["decode_tokens_per_s"] <= 1.1 * 50, cal
    assert cal["effective_slots"] == 2, cal
    assert cal["slowdown_at_max"] > 1.5  # four in flight on two slots: each waits for one ahead of it
    dep = parse_deployment(cal["spec"])
    assert dep.slots_per_replica == 2 and dep.replicas == 1
    assert abs(dep.prefill_tokens_per_s.value - cal["prefill_tokens_per_s"]) < 1


def test_an_unreachable_endpoint_is_a_clear_error():
    r = CliRunner().invoke(cli, ["calibrate", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "-n", "2",
                                 "--timeout", "2"])
    assert r.exit_code == 1 and "prefill stage: every request failed (refused" in r.output
