"""Load sweeps against the built-in simulator: open-loop steps, percentiles with n, the knee, the store.

What a sweep measures (the knee moving with the slots, the queue behind one slot) is checked in virtual time
(planner.simulator.virtual): the schedule, the simulator and the probes share one clock that only the model's
waits move, so a loaded machine cannot push a figure across a band. `ttft-planner sweep` itself runs once over
real HTTP for its output and the store, asserting only what a loaded machine cannot change. The knee over real
HTTP is bench/bench_sweep.py's figure.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from planner.cli import cli
from planner.probes.ttft import ProbeTarget
from planner.simulator import SimulatorConfig, running_simulator
from planner.simulator.virtual import run_virtual, virtual_clock_ns, virtual_simulator
from planner.store import open_store
from planner.store.sweeps import load_sweep_runs, load_sweep_steps
from planner.sweep import SweepResult, SweepSpec, arrival_offsets_s, knee_of, queueing_p95_ms, run_sweep

# 400 prompt tokens at 4,000 tokens/s: 100 ms of prefill per request, so one slot serves ~10 requests/s.
SERVICE = dict(prefill_tokens_per_s=4000, decode_tokens_per_s=1000, base_overhead_ms=0, prefix_cache_tokens=0, seed=0)


def sweep_in_virtual_time(slots: int, mode: str, loads: tuple[float, ...], **spec) -> SweepResult:
    """run_sweep against a simulator with `slots`, everything on one virtual clock."""

    async def scenario() -> SweepResult:
        async with virtual_simulator(SimulatorConfig(slots=slots, **SERVICE)) as sim:
            target = ProbeTarget(base_url=sim.url, model="m", prompt_tokens=400, max_tokens=2)
            return await run_sweep(
                SweepSpec(target=target, mode=mode, loads=loads, **spec), client=sim.client, clock_ns=virtual_clock_ns
            )

    return run_virtual(scenario())


def test_the_knee_moves_with_the_simulators_slots():
    results = {
        slots: sweep_in_virtual_time(
            slots, "poisson", (2.0, 15.0), step_duration_s=2.0, target_p95_ms=500.0, stop_after_knee=False
        )
        for slots in (1, 4)
    }
    for r in results.values():
        assert [s.load for s in r.steps] == [2.0, 15.0]
        for s in r.steps:
            assert s.n_sent >= 1 and s.n_ok == s.n_sent and s.error_rate == 0.0
            assert s.ttft_p50_ms <= s.ttft_p95_ms <= s.ttft_p99_ms
            assert s.client_cpu_ms_per_request > 0
            assert s.send_lag_p95_ms == pytest.approx(0.0, abs=1e-3)  # on the virtual clock each leaves on time
    one, four = results[1], results[4]
    # 15 requests/s into one slot of ~10 requests/s: the queue grows for the whole step
    assert one.steps[1].ttft_p95_ms > 500 and one.over_load == 15.0
    assert one.steps[1].achieved_rps < 12
    assert {1: one.knee_load, 4: four.knee_load} == {1: 2.0, 4: 15.0}  # four slots carry the load one could not
    queueing = {
        slots: queueing_p95_ms([s.load for s in r.steps], [s.ttft_p95_ms for s in r.steps], 15.0).value
        for slots, r in results.items()
    }
    assert queueing[1] > 300 > queueing[4]  # the measured queueing segment at 15 requests/s


def test_closed_loop_concurrency_queues_behind_one_slot():
    r = sweep_in_virtual_time(1, "concurrency", (1.0, 4.0), step_duration_s=1.5)
    one, four = r.steps
    assert one.load == 1 and four.load == 4 and one.error_rate == four.error_rate == 0
    # four requests always in flight on one slot: each waits for the three ahead of it
    assert four.ttft_p50_ms > 2.5 * one.ttft_p50_ms
    assert four.achieved_rps < 1.5 * one.achieved_rps  # the slot, not the client, sets the throughput


def _cli_sweep(url: str, *args: str) -> list[dict]:
    """`ttft-planner sweep --json` of 400-token, 2-token requests: one dict per step, then the summary."""
    r = CliRunner().invoke(
        cli,
        ["sweep", "--base-url", url, "--model", "m", "--prompt-tokens", "400", "--max-tokens", "2", "--json", *args],
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.output
    return [json.loads(line) for line in r.output.strip().splitlines()]


def test_the_cli_prints_each_step_and_the_knee_and_stores_the_run(sqlite_store_url):
    """`ttft-planner sweep --json` over real HTTP, open loop with --store, then closed loop. Every request prefills
    for 100 ms on the server, so a 50 ms target is over at the first step whatever the machine's load: the knee is
    decided before the run."""
    with running_simulator(SimulatorConfig(slots=4, **SERVICE)) as url:
        out = _cli_sweep(
            url,
            *("--rates", "4,8", "--step-duration-s", "0.5", "--target-p95-ms", "50", "--all-steps"),
            *("--store", "--database-url", sqlite_store_url, "--vantage", "test lab"),
        )
        closed = _cli_sweep(url, "--concurrency", "1,2", "--step-duration-s", "0.3")
    steps, summary = out[:-1], out[-1]
    assert [s["type"] for s in steps] == ["step", "step"] and summary["type"] == "summary"
    assert [s["load"] for s in steps] == [4.0, 8.0]  # --all-steps: the step after the knee runs too
    for s in steps + closed[:-1]:
        assert s["n_sent"] >= 1 and s["n_ok"] == s["n_sent"] and s["error_rate"] == 0.0
        assert 100 <= s["ttft_p50_ms"] <= s["ttft_p95_ms"] <= s["ttft_p99_ms"]
        assert s["client_cpu_ms_per_request"] > 0
    assert (summary["knee_load"], summary["over_load"], summary["target_p95_ms"]) == (None, 4.0, 50.0)
    assert [s["load"] for s in closed[:-1]] == [1.0, 2.0] and closed[-1]["mode"] == "concurrency"

    eng = open_store(sqlite_store_url)
    runs = load_sweep_runs(eng)
    assert len(runs) == 1 and runs["id"].iloc[0] == summary["stored_run_id"]  # the closed loop was not stored
    run = runs.iloc[0]
    assert (run["vantage"], run["mode"], run["prompt_tokens"], run["over_load"]) == ("test lab", "poisson", 400, 4.0)
    assert run["knee_load"] is None or run["knee_load"] != run["knee_load"]  # no knee: NULL (NaN in the frame)
    stored = load_sweep_steps(eng, int(run["id"]))
    assert list(stored["load"]) == [4.0, 8.0] and list(stored["n_ok"]) == [s["n_ok"] for s in steps]
    assert "error_rate" in stored
    eng.dispose()


def test_schedules_and_knee():
    a = arrival_offsets_s("poisson", 50, 10, seed=7)
    assert a == arrival_offsets_s("poisson", 50, 10, seed=7) and 400 < len(a) < 600 and a == sorted(a)
    assert arrival_offsets_s("constant", 4, 1) == [0.0, 0.25, 0.5, 0.75]
    assert knee_of([1, 2, 4, 8], [100, 200, 900, 150], 500) == (2, 4)  # later steps ignored once over
    assert knee_of([1, 2], [100, 200], 500) == (2, None)
    assert knee_of([1, 2], [None, 200], 500) == (None, 1)
    q = queueing_p95_ms([1, 3], [100, 300], 2)
    assert q.value == 100 and q.unit == "ms" and q.source == "probe"
    with pytest.raises(ValueError, match="outside the swept range"):
        queueing_p95_ms([1, 3], [100, 300], 4)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--rates", "1,x"], "'x' is not a number"),
        (["--concurrency", "1.5"], "must be a whole number"),
        (["--rates", "1", "--concurrency", "2"], "exactly one of --rates"),
    ],
)
def test_bad_loads_are_named(args, message):
    r = CliRunner().invoke(cli, ["sweep", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", *args])
    assert r.exit_code == 2 and message in r.output
