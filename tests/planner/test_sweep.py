"""`ttft-planner sweep` against the built-in simulator: open-loop steps, percentiles with n, the knee, the store."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from planner.cli import cli
from planner.simulator import SimulatorConfig, running_simulator
from planner.store import open_store
from planner.store.sweeps import load_sweep_runs, load_sweep_steps
from planner.sweep import arrival_offsets_s, knee_of, queueing_p95_ms

# 400 prompt tokens at 4,000 tokens/s: 100 ms of prefill per request, so one slot serves ~10 requests/s.
SERVICE = dict(prefill_tokens_per_s=4000, decode_tokens_per_s=1000, base_overhead_ms=0, prefix_cache_tokens=0, seed=0)


def _sweep(url: str, *extra: str) -> list[dict]:
    r = CliRunner().invoke(
        cli,
        [
            "sweep",
            "--base-url",
            url,
            "--model",
            "m",
            "--rates",
            "2,15",
            "--step-duration",
            "2",
            "--prompt-tokens",
            "400",
            "--max-tokens",
            "2",
            "--target-p95-ms",
            "500",
            "--all-steps",
            "--json",
            *extra,
        ],
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.output
    return [json.loads(line) for line in r.output.strip().splitlines()]


def test_the_knee_moves_with_the_simulators_slots(tmp_path):
    db = f"sqlite:///{tmp_path / 'sweep.db'}"
    knees, queueing = {}, {}
    for slots in (1, 4):
        with running_simulator(SimulatorConfig(slots=slots, **SERVICE)) as url:
            out = _sweep(url, "--store", "--database-url", db, "--vantage", "test lab")
        steps, summary = out[:-1], out[-1]
        assert [s["load"] for s in steps] == [2.0, 15.0]
        for s in steps:
            assert s["n_sent"] >= 1 and s["n_ok"] == s["n_sent"] and s["error_rate"] == 0.0
            assert s["ttft_p50_ms"] <= s["ttft_p95_ms"] <= s["ttft_p99_ms"]
            assert s["client_cpu_ms_per_request"] > 0
        knees[slots] = summary["knee_load"]
        queueing[slots] = queueing_p95_ms([s["load"] for s in steps], [s["ttft_p95_ms"] for s in steps], 15.0).value
        if slots == 1:  # 15 requests/s into one slot of ~10 requests/s: the queue grows for the whole step
            assert steps[1]["ttft_p95_ms"] > 500 and summary["over_load"] == 15.0
            assert steps[1]["achieved_rps"] < 12
    assert knees == {1: 2.0, 4: 15.0}  # four slots carry the load one slot could not
    assert queueing[1] > 300 > queueing[4]  # the measured queueing segment at 15 requests/s

    eng = open_store(db)
    runs = load_sweep_runs(eng)
    assert len(runs) == 2 and set(runs["vantage"]) == {"test lab"} and set(runs["mode"]) == {"poisson"}
    assert sorted(runs["knee_load"]) == [2.0, 15.0] and (runs["prompt_tokens"] == 400).all()
    steps = load_sweep_steps(eng, int(runs["id"].iloc[0]))
    assert list(steps["load"]) == [2.0, 15.0] and "error_rate" in steps
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


def test_closed_loop_concurrency_queues_behind_one_slot():
    with running_simulator(SimulatorConfig(slots=1, **SERVICE)) as url:
        r = CliRunner().invoke(
            cli,
            [
                "sweep",
                "--base-url",
                url,
                "--model",
                "m",
                "--concurrency",
                "1,4",
                "--step-duration",
                "1.5",
                "--prompt-tokens",
                "400",
                "--max-tokens",
                "2",
                "--json",
            ],
            catch_exceptions=False,
        )
    assert r.exit_code == 0, r.output
    one, four = [json.loads(line) for line in r.output.strip().splitlines()][:2]
    assert one["load"] == 1 and four["load"] == 4 and one["error_rate"] == four["error_rate"] == 0
    # four requests always in flight on one slot: each waits for the three ahead of it
    assert four["ttft_p50_ms"] > 2.5 * one["ttft_p50_ms"]
    assert four["achieved_rps"] < 1.5 * one["achieved_rps"]  # the slot, not the client, sets the throughput
