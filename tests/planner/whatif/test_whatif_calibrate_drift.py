"""Calibration against engines whose speed moves (issue 45): the step model read back from a batching simulator with
known costs, rounds spread over the whole calibration, a fixed per-request time no speed change can land in, and a
speed spread pooled with every calibration of the endpoint on record (with a stated prior until there is one).

The simulator runs in virtual time (planner.simulator.virtual): what calibration reads is the simulator's model
exactly, whatever else the machine is doing."""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner.probes.fit import PrefillFit
from planner.probes.ttft import TtftSample
from planner.simulator import SimulatorConfig
from planner.spread import pooled_speed_sd_of, speed_sd_of
from planner.store import open_store
from planner.store.calibrations import calibration_history
from planner.store.endpoints import get_or_create_manual_endpoint
from planner.store.probes import insert_samples, sample_row
from planner.whatif.calibrate import Calibration
from planner.whatif.deployment import parse_deployment
from planner.whatif.drift import DRIFT_PRIOR_SD, next_run_spread
from planner.whatif.on_record import spread_on_record
from tests.support.calibration import calibrate_in_virtual_time

pytestmark = pytest.mark.timeout(300)

HOUR_MS = 3_600_000


def test_calibration_reads_back_a_batching_engines_step_costs_and_checks_them_under_load():
    # 15 ms a step, 0.5 ms a prompt token (2000 tokens/s), 10 ms a decode token (a lone request: 25 ms a token)
    cfg = SimulatorConfig(
        prefill_tokens_per_s=2000, decode_tokens_per_s=40, slots=8, base_overhead_ms=0, prefix_cache_tokens=0,
        ping_interval_s=0, batching=True, step_ms=15, max_batched_tokens=512, max_output_tokens=100_000, seed=1,
    )  # fmt: skip
    cal = calibrate_in_virtual_time(
        cfg, lengths=(100, 400), n=4, decode_tokens=32, concurrencies=(1, 2, 4), step_duration_s=2.0,
        engine="vllm", slots=8,
    )  # fmt: skip
    assert cal.step is not None
    assert cal.step.step_ms == pytest.approx(15.0, abs=0.1)
    assert cal.step.decode_token_ms == pytest.approx(10.0, abs=0.1)
    assert cal.step.itl_ms_by_running == pytest.approx({1: 25.0, 2: 35.0, 4: 55.0}, abs=0.1)
    dep = parse_deployment(cal.spec())
    assert dep.engine == "vllm" and dep.slots_per_replica == 8
    costs = dep.step_costs
    assert (costs.step_ms, costs.decode_token_ms) == pytest.approx((15.0, 10.0), abs=0.1)
    assert costs.prompt_token_ms == pytest.approx(0.5, rel=0.01)
    assert dep.rtt_ms.value == pytest.approx(0, abs=1)  # the intercept is one step: nothing is left for the network
    # prompts sent while 4 decodes run land on the step model, up to where in the step in flight they arrive
    assert cal.step.load == 4 and len(cal.step.residuals) >= 4
    assert cal.step.median_abs_residual is not None and cal.step.median_abs_residual < 0.2
    assert "step 15.0 ms + 10.00 ms a decode token" in cal.serving_model


def test_the_prefill_rounds_are_spread_over_the_whole_calibration():
    cfg = SimulatorConfig(slots=1, prefill_tokens_per_s=4000, decode_tokens_per_s=50, base_overhead_ms=0, seed=0)
    cal = calibrate_in_virtual_time(
        cfg, lengths=(100, 800), n=2, rounds=3, decode_tokens=16, concurrencies=(1, 2), step_duration_s=2.0
    )
    first, middle, last = cal.round_at_s
    assert first == 0
    # the middle round between a quarter and three quarters of the way, the last in the final quarter: three readings
    # of the engine minutes apart, not one reading and two back to back
    assert 0.25 * cal.wall_s < middle < 0.75 * cal.wall_s
    assert last > 0.75 * cal.wall_s and last - middle > 0.25 * cal.wall_s


@pytest.mark.parametrize("seed", [0, 2, 3])
def test_a_speed_change_between_the_rounds_and_saturation_does_not_land_in_the_fixed_time(seed):
    # The engine spends 40 ms per request in its slot before prefill (not compute: it never drifts), and its compute
    # speed is redrawn every 5 s (±30 %): the rounds and the saturation stage see different speeds.
    cfg = SimulatorConfig(
        slots=1, prefill_tokens_per_s=4000, decode_tokens_per_s=50, base_overhead_ms=40, prefix_cache_tokens=0,
        seed=seed, speed_drift_sd=0.3, speed_drift_period_s=5.0,
    )  # fmt: skip
    cal = calibrate_in_virtual_time(
        cfg, lengths=(100, 800), n=3, decode_tokens=16, concurrencies=(1, 2), step_duration_s=1.0
    )
    assert cal.fixed_hold_ms == pytest.approx(40.0, abs=0.5)
    (l0, h0), (l1, h1) = sorted(cal.hold_ms_by_tokens.items())
    saturation_rate = 1000 * (l1 - l0) / (h1 - h0)
    rounds_rate = cal.prefill.prefill_tokens_per_s
    assert abs(saturation_rate / rounds_rate - 1) > 0.1  # the speed did move between them
    # reading the fixed time at the rounds' rate, as before, puts that move into it
    at_rounds_rate = h0 - (l0 + cal.prompt_overhead_tokens) * 1000 / rounds_rate
    assert abs(at_rounds_rate - 40.0) > 3


def test_one_calibration_alone_carries_its_rounds_and_the_stated_prior():
    s = next_run_spread([(0, [100.0, 110.0, 95.0])])
    assert s.prior_sd == DRIFT_PRIOR_SD == 0.15
    assert s.measured_sd == pytest.approx(speed_sd_of([100.0, 110.0, 95.0]))
    assert s.speed_sd == pytest.approx(0.15)  # the rounds agree to ±5 %: the prior is the floor
    assert "at least a prior of ±15%" in s.describe()
    wide = next_run_spread([(0, [100.0, 140.0, 70.0])])
    assert wide.speed_sd == pytest.approx(speed_sd_of([100.0, 140.0, 70.0]))  # rounds wider than the prior …
    assert wide.speed_sd > 0.15 and wide.prior_sd == 0.15  # … stand for the drift themselves


def test_calibrations_over_an_hour_replace_the_prior_with_the_drift_between_them():
    record = [(0, [100.0, 101.0]), (HOUR_MS // 2, [80.0, 81.0]), (HOUR_MS, [120.0, 119.0])]
    s = next_run_spread(record)
    assert s.prior_sd == 0 and s.calibrations == 3 and s.span_s == 3600
    # pooled as one group: the 80 → 120 between calibrations is in it, not only each one's ±1 %
    assert s.speed_sd == pytest.approx(speed_sd_of([100.0, 101.0, 80.0, 81.0, 120.0, 119.0]))
    assert s.speed_sd > 0.2  # against ±1 % within each calibration
    assert next_run_spread(record[:2]).prior_sd == 0.15  # two calibrations half an hour apart: not history yet


def test_probe_slopes_on_two_days_are_history_and_pooled_about_their_own_level():
    s = next_run_spread([(0, [1000.0, 1010.0])], probe_daily_rates=[50.0, 60.0, 55.0])
    assert s.prior_sd == 0 and s.probe_days == 3
    assert s.speed_sd == pytest.approx(pooled_speed_sd_of([[1000.0, 1010.0], [50.0, 60.0, 55.0]]))
    assert s.speed_sd < 0.25  # the two kinds' different levels (1000 against 55 tokens/s) are not spread


def _cal(rates: tuple[float, ...]) -> Calibration:
    fit = PrefillFit(intercept_ms=20, slope_ms_per_token=10.0, r2=0.99, slope_se_ms_per_token=0.1, n=8, lengths=(64,))
    return Calibration(
        prefill=fit,
        token_basis="server-counted",
        decode_tokens_per_s=40.0,
        throughput_by_concurrency={1: 1.0},
        latency_ms_by_concurrency={1: 1000.0},
        wall_s=60.0,
        round_prefill_tokens_per_s=rates,
    )


def test_the_user_path_keeps_each_calibration_and_pools_the_record_into_the_spec(tmp_path):
    engine = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    url, model = "http://gpu-box:8000/v1", "llama"
    first, spec1 = spread_on_record(engine, url, model, _cal((100.0, 102.0, 98.0)), at_ms=0)
    assert first.calibrations == 1 and first.prior_sd == 0.15
    assert parse_deployment(spec1).speed_sd.value == pytest.approx(first.speed_sd, abs=5e-4)
    spread_on_record(engine, url + "/", model, _cal((70.0, 71.0, 69.0)), at_ms=HOUR_MS // 2)
    third, spec3 = spread_on_record(engine, url, model, _cal((130.0, 131.0, 129.0)), at_ms=HOUR_MS)
    assert [at for at, _ in calibration_history(engine, url, model)] == [0, HOUR_MS // 2, HOUR_MS]
    assert third.calibrations == 3 and third.prior_sd == 0  # the record now holds an hour of drift
    assert third.speed_sd == pytest.approx(speed_sd_of([100, 102, 98, 70, 71, 69, 130, 131, 129]))
    assert parse_deployment(spec3).speed_sd.value == pytest.approx(third.speed_sd, abs=5e-4)
    # another model at the same URL has a record of its own
    other, _ = spread_on_record(engine, url, "other", _cal((100.0, 101.0)), at_ms=HOUR_MS)
    assert other.calibrations == 1
    engine.dispose()


def test_the_endpoints_probe_history_is_pooled_too(tmp_path):
    engine = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    url, model = "http://gpu-box:8000/v1", "llama"
    ep = get_or_create_manual_endpoint(engine, url, model, "openai-chat")
    rows = []
    for day, ms_per_token in enumerate((2.0, 2.5)):  # 500 and 400 tokens/s on two days
        for i, tokens in enumerate((100, 1000)):
            at = 1_764_460_800_000 + day * 86_400_000 + i * 60_000
            s = TtftSample(started_at_ms=at, ok=True, ttft_ms=50 + ms_per_token * tokens, prompt_tokens=tokens)
            rows.append(sample_row(s, ep.id, "test", "scheduled", at))
    insert_samples(engine, rows)
    spread, _spec = spread_on_record(engine, url, model, _cal((100.0, 101.0)), at_ms=0)
    assert spread.probe_days == 2 and spread.prior_sd == 0
    assert spread.speed_sd == pytest.approx(pooled_speed_sd_of([[100.0, 101.0], [500.0, 400.0]]), rel=1e-3)
    engine.dispose()


def test_a_calibration_without_a_slope_stores_nothing(tmp_path):
    engine = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    flat = replace(_cal((100.0,)), prefill=replace(_cal(()).prefill, slope_ms_per_token=0.0))
    with pytest.raises(ValueError, match="no positive slope"):
        spread_on_record(engine, "http://x/v1", "m", flat, at_ms=0)
    assert calibration_history(engine, "http://x/v1", "m") == []
    engine.dispose()


def test_the_command_measures_the_step_model_and_pools_its_record(tmp_path):
    """`calibrate --engine vllm --json` over real HTTP against the batching simulator, twice into one store: the
    wiring (engine, step fit, the record pooled), not figures a loaded machine can move (those are above)."""
    import json

    from click.testing import CliRunner

    from planner.cli import cli
    from planner.simulator import running_simulator

    cfg = SimulatorConfig(
        prefill_tokens_per_s=4000, decode_tokens_per_s=100, slots=4, base_overhead_ms=0, prefix_cache_tokens=0,
        ping_interval_s=0, batching=True, step_ms=5, max_output_tokens=100_000, seed=0,
    )  # fmt: skip
    store = f"sqlite:///{tmp_path / 'store.db'}"
    args = ["calibrate", "--prompt-tokens", "50,400", "-n", "2", "--decode-tokens", "16", "--concurrency", "1,2"]
    args += ["--step-duration-s", "0.5", "--engine", "vllm", "--slots", "4", "--database-url", store, "--json"]
    with running_simulator(cfg) as url:
        runs = [CliRunner().invoke(cli, [*args, "--base-url", url, "--model", "m"]) for _ in range(2)]
    for r in runs:
        assert r.exit_code == 0, r.output
    first, second = (json.loads(r.output) for r in runs)
    dep = parse_deployment(second["spec"])
    assert dep.engine == "vllm" and dep.slots_per_replica == 4 and dep.step_ms is not None
    assert second["step"]["itl_ms_by_running"].keys() == {"1", "2"} and second["engine"] == "vllm"
    assert first["speed_spread"]["calibrations"] == 1 and second["speed_spread"]["calibrations"] == 2
    assert dep.speed_sd.value == pytest.approx(second["speed_sd"], abs=5e-4) and second["speed_sd"] >= 0.15
    assert len(second["round_at_s"]) == 3 and second["round_at_s"][0] < second["round_at_s"][1]
