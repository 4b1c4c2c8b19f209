"""`ttft-planner calibrate`: the simulator with known slots and rates must be read back as a what-if spec.

What calibration reads back (prefill and decode rates, slots, the slot time beyond prefill) is checked in virtual
time (planner.simulator.virtual), where the simulator's model is all there is to measure: the figures come back
exact, whatever else the machine is doing. The command itself runs once over real HTTP for its JSON, asserting
only what a loaded machine cannot change. The read-back over real HTTP is bench/bench_simulator.py's figure.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import replace

import pytest
from click.testing import CliRunner

from planner.cli import cli
from planner.probes.fit import PrefillFit
from planner.simulator import SimulatorConfig, running_simulator
from planner.spread import speed_sd_of
from planner.whatif.calibrate import Calibration
from planner.whatif.deployment import parse_deployment
from tests.support.calibration import calibrate_in_virtual_time


def test_calibration_reads_back_the_simulators_slots_prefill_and_decode():
    cfg = SimulatorConfig(
        slots=2, prefill_tokens_per_s=4000, decode_tokens_per_s=50, base_overhead_ms=0, prefix_cache_tokens=0, seed=0
    )
    cal = calibrate_in_virtual_time(
        cfg, lengths=(100, 800), n=4, decode_tokens=16, concurrencies=(1, 2, 4), step_duration_s=1.0
    )
    assert cal.token_basis == "server-counted"  # the simulator reports usage
    assert cal.prefill.prefill_tokens_per_s == pytest.approx(4000), cal
    assert cal.decode_tokens_per_s == pytest.approx(50), cal
    assert cal.effective_slots == 2, cal
    assert cal.slowdown_at_max == pytest.approx(2.0)  # four in flight on two slots: each waits for one ahead of it
    dep = parse_deployment(cal.spec())
    assert dep.slots_per_replica == 2 and dep.replicas == 1
    assert abs(dep.prefill_tokens_per_s.value - cal.prefill.prefill_tokens_per_s) < 1


def test_the_cli_prints_the_calibration_as_json_with_a_spec_that_parses(tmp_path):
    """`ttft-planner calibrate --json` over real HTTP, with the shortest steps it takes: the figures a loaded
    machine can move are not asserted here (they are above, in virtual time), their wiring into the spec is."""
    cfg = SimulatorConfig(
        slots=2, prefill_tokens_per_s=4000, decode_tokens_per_s=200, base_overhead_ms=0, prefix_cache_tokens=0, seed=0
    )
    with running_simulator(cfg) as url:
        r = CliRunner().invoke(
            cli,
            [
                "calibrate",
                "--base-url",
                url,
                "--model",
                "m",
                "--prompt-tokens",
                "100,800",
                "-n",
                "2",
                "--decode-tokens",
                "8",
                "--concurrency",
                "1,2",
                "--step-duration-s",
                "0.5",
                "--database-url",
                f"sqlite:///{tmp_path / 'store.db'}",
                "--json",
            ],
            catch_exceptions=False,
        )
    assert r.exit_code == 0, r.output
    cal = json.loads(r.output)
    assert cal["token_basis"] == "server-counted"  # the simulator reports usage
    assert set(cal["throughput_by_concurrency"]) == set(cal["latency_ms_by_concurrency"]) == {"1", "2"}
    assert cal["prefill_tokens_per_s"] > 0 and cal["decode_tokens_per_s"] > 0 and cal["wall_s"] > 0
    dep = parse_deployment(cal["spec"])
    assert dep.slots_per_replica == cal["effective_slots"] and dep.replicas == 1
    assert abs(dep.prefill_tokens_per_s.value - cal["prefill_tokens_per_s"]) < 1
    assert dep.decode_tokens_per_s.value == pytest.approx(cal["decode_tokens_per_s"], abs=0.05)
    assert len(cal["round_prefill_tokens_per_s"]) == 3  # the default rounds, each with its own rate
    assert dep.speed_sd.value == pytest.approx(min(cal["speed_sd"], 2.0), abs=5e-4)
    assert dep.request_sd.value == pytest.approx(min(cal["request_sd"], 2.0), abs=5e-4)
    assert "slot" in cal["serving_model"]


def test_an_unreachable_endpoint_is_a_clear_error():
    r = CliRunner().invoke(
        cli, ["calibrate", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "-n", "2", "--timeout-s", "2"]
    )
    assert r.exit_code == 1 and "prefill stage: every request failed (refused" in r.output


def _cal(intercept_ms: float, overhead_tokens: float) -> Calibration:
    fit = PrefillFit(
        intercept_ms=intercept_ms, slope_ms_per_token=12.5, r2=0.999, slope_se_ms_per_token=0.1, n=8, lengths=(64, 512)
    )
    return Calibration(
        prefill=fit,
        token_basis="server-counted",
        decode_tokens_per_s=40.0,
        throughput_by_concurrency={1: 1.0, 2: 1.0},
        latency_ms_by_concurrency={1: 1000.0, 2: 2000.0},
        wall_s=60.0,
        prompt_overhead_tokens=overhead_tokens,
    )


def test_the_template_tokens_the_server_adds_become_overhead_tokens_and_the_intercept_its_rtt():
    dep = parse_deployment(_cal(intercept_ms=15, overhead_tokens=34).spec())
    assert dep.prompt_overhead_tokens.value == 34 and dep.rtt_ms.value == 15
    assert dep.prefill_tokens_per_s.value == 80 and dep.slots_per_replica == 1


def test_a_negative_intercept_comes_off_the_overhead_tokens_so_ttft_at_every_length_is_kept():
    # -50 ms at 12.5 ms per token: four counted tokens were not prefilled (the template head reused from cache)
    dep = parse_deployment(_cal(intercept_ms=-50, overhead_tokens=34).spec())
    assert dep.rtt_ms.value == 0 and dep.prompt_overhead_tokens.value == 30


def test_server_time_that_holds_the_slot_beyond_prefill_moves_from_rtt_to_overhead_tokens():
    # 480 ms of intercept, 400 of it seen as slot time at saturation: 80 ms stays rtt, 400 ms = 32 tokens at 80/s
    cal = _cal(intercept_ms=480, overhead_tokens=25)
    dep = parse_deployment(Calibration(**{**cal.__dict__, "fixed_hold_ms": 400.0}).spec())
    assert dep.rtt_ms.value == 80 and dep.prompt_overhead_tokens.value == 25 + 32
    # a lone request's TTFT is unchanged: rtt + (prompt + overhead) ÷ rate == intercept + (prompt + 25) ÷ rate
    assert dep.rtt_ms.value + (100 + 57) * 12.5 == 480 + (100 + 25) * 12.5


def test_admission_time_that_holds_the_slot_is_measured_at_saturation_and_kept_out_of_rtt():
    # the simulator spends 200 ms per request in its slot before prefill: a queue behind it waits for that too
    cfg = SimulatorConfig(
        slots=1, prefill_tokens_per_s=4000, decode_tokens_per_s=50, base_overhead_ms=200, prefix_cache_tokens=0, seed=0
    )
    cal = calibrate_in_virtual_time(
        cfg, lengths=(100, 800), n=3, decode_tokens=16, concurrencies=(1, 2), step_duration_s=1.0
    )
    assert cal.prefill.intercept_ms == pytest.approx(200.0), cal  # a lone request sees it as fixed time …
    assert cal.fixed_hold_ms == pytest.approx(200.0), cal  # … which saturation shows to be slot time
    dep = parse_deployment(cal.spec())
    assert dep.rtt_ms.value == 0, cal.spec()  # the 200 ms moved out of rtt …
    held_ms = dep.prompt_overhead_tokens.value * 1000 / dep.prefill_tokens_per_s.value
    assert held_ms == pytest.approx(200.0), cal.spec()  # … into slot time


def test_an_engine_at_one_speed_gives_rounds_that_agree_and_no_spread():
    cfg = SimulatorConfig(
        slots=1, prefill_tokens_per_s=4000, decode_tokens_per_s=50, base_overhead_ms=0, prefix_cache_tokens=0, seed=0
    )
    cal = calibrate_in_virtual_time(
        cfg, lengths=(100, 800), n=2, rounds=4, decode_tokens=8, concurrencies=(1, 2), step_duration_s=1.0
    )
    assert cal.round_prefill_tokens_per_s == pytest.approx((4000,) * 4)
    assert cal.speed_sd == pytest.approx(0, abs=1e-6) and cal.request_sd == pytest.approx(0, abs=1e-6)
    assert cal.rounds_disagree is None
    dep = parse_deployment(cal.spec())
    assert dep.speed_sd.value == 0 and dep.request_sd.value == 0


def test_the_speed_spread_is_the_rounds_log_sd_widened_for_few_rounds():
    rates = (80.0, 100.0, 120.0)
    logs = [math.log(r) for r in rates]
    sd = statistics.stdev(logs)
    # two degrees of freedom: t(0.9) = 1.886 against z = 1.2816, and the next run's own draw: √(1 + 1/3)
    assert speed_sd_of(rates) == pytest.approx(sd * 1.886 / 1.2816 * math.sqrt(4 / 3))
    assert speed_sd_of((100.0,)) == 0.0
    cal = replace(_cal(0, 0), round_prefill_tokens_per_s=rates, request_sd=0.05)
    assert cal.rounds_disagree == pytest.approx(0.5)  # 120 against 80: more than 25 %, so it is reported
    dep = parse_deployment(cal.spec())
    assert dep.speed_sd.value == pytest.approx(speed_sd_of(rates), abs=5e-4) and dep.request_sd.value == 0.05
    assert replace(cal, round_prefill_tokens_per_s=(100.0, 110.0)).rounds_disagree is None
