"""`ttft-planner whatif` end to end on real files: table, JSON, busiest day, growth and bad input (exit 2)."""

from __future__ import annotations

import json

import numpy as np
from click.testing import CliRunner

from planner.cli import cli

DAY0_MS = 1_764_460_800_000  # 2025-11-30 00:00 UTC
SLS = "serverless:name=sls,window=3600,cold=20,slots=8,max=2,prefill=12000,decode=60,rtt=40,usd_per_mtok=0.3"
DED = "dedicated:name=ded,replicas=1,slots=8,prefill=12000,decode=60,usd_per_gpu_h=3.2,rtt=40"


def write_log(path, days: int = 2) -> None:
    rng = np.random.default_rng(5)
    lines = []
    for d in range(days):
        k = 300 * (d + 1)  # the last day is the busiest
        for t in np.sort(rng.uniform(8, 18, k)):
            p = int(rng.integers(500, 6000))
            lines.append(
                json.dumps(
                    {
                        "ts_ms": int(DAY0_MS + d * 86_400_000 + t * 3_600_000),
                        "model": "m",
                        "prompt_tokens": p,
                        "cached_tokens": p // 2,
                        "output_tokens": 40,
                    }
                )
            )
    path.write_text("\n".join(lines) + "\n")


def test_json_output_has_every_candidate_and_the_cheapest(tmp_path):
    log = tmp_path / "team.jsonl"
    write_log(log)
    res = CliRunner().invoke(cli, ["whatif", "--log", str(log), "--deployment", SLS, "--deployment", DED, "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["n_requests"] == 900 and out["interaction"] == "chat" and out["target_p95_ms"] == 500
    names = [c["name"] for c in out["candidates"]]
    assert names == ["sls", "ded"]
    sls = out["candidates"][0]
    assert sls["ok"] and sls["p95_ms"] < 500 and {h["hour"] for h in sls["hourly"]} <= set(range(8, 18))
    assert out["cheapest_meeting_target"] in names


def test_busiest_day_and_growth_change_what_is_replayed(tmp_path):
    log = tmp_path / "team.jsonl"
    write_log(log)
    res = CliRunner().invoke(
        cli, ["whatif", "--log", str(log), "--deployment", SLS, "--busiest-day", "--growth", "2", "--json"]
    )
    out = json.loads(res.output)
    assert out["busiest_day"] == "2025-12-01"
    assert out["n_requests"] == 1200  # 600 requests that day, doubled


def test_the_table_marks_the_cheapest_and_says_when_a_candidate_cannot_keep_up(tmp_path):
    log = tmp_path / "team.jsonl"
    write_log(log, days=1)
    tiny = "dedicated:name=tiny,replicas=1,slots=1,prefill=10,decode=1,usd_per_gpu_h=0.1"
    res = CliRunner().invoke(cli, ["whatif", "--log", str(log), "--deployment", SLS, "--deployment", tiny])
    assert res.exit_code == 0, res.output
    assert "CHEAPEST" in next(line for line in res.output.splitlines() if line.startswith("sls"))
    assert "can never keep up" in next(line for line in res.output.splitlines() if line.startswith("tiny"))


def test_a_log_without_timestamps_exits_2_and_says_so(tmp_path):
    log = tmp_path / "no-times.jsonl"
    log.write_text('{"prompt_tokens": 100, "output_tokens": 5}\n')
    res = CliRunner().invoke(cli, ["whatif", "--log", str(log), "--deployment", SLS])
    assert res.exit_code == 2
    assert (
        "no-times.jsonl: cannot read the log as a request trace: each request needs an arrival timestamp" in res.output
    )
    assert "no time column" in res.output and "(output_tokens, prompt_tokens)" in res.output


def test_a_bad_deployment_spec_exits_2_naming_the_key(tmp_path):
    log = tmp_path / "team.jsonl"
    write_log(log, days=1)
    res = CliRunner().invoke(cli, ["whatif", "--log", str(log), "--deployment", SLS.replace("slots=8", "slots=many")])
    assert res.exit_code == 2
    assert "slots must be a whole number, got 'many'" in res.output


def test_a_calibrated_speed_spread_gives_each_percentile_an_interval_in_json_and_text(tmp_path):
    log = tmp_path / "team.jsonl"
    write_log(log)
    spread = DED.replace("name=ded", "name=spread") + ",speed_sd=0.2,request_sd=0.05"
    res = CliRunner().invoke(cli, ["whatif", "--log", str(log), "--deployment", DED, "--deployment", spread, "--json"])
    assert res.exit_code == 0, res.output
    fixed, varied = json.loads(res.output)["candidates"]
    for c in (fixed, varied):
        band = c["interval"]["p95"]
        assert band["lo_ms"] <= band["value_ms"] == c["p95_ms"] <= band["hi_ms"]
        assert all(h["p95_lo_ms"] <= h["p95_ms"] <= h["p95_hi_ms"] for h in c["hourly"] if h["p95_reliable"])
    width = {c["name"]: c["interval"]["p50"]["hi_ms"] - c["interval"]["p50"]["lo_ms"] for c in (fixed, varied)}
    assert width["spread"] > 3 * width["ded"]  # the speed spread, not 900 requests, sets its width
    assert (fixed["interval"]["driven_by"], varied["interval"]["driven_by"]) == ("trace", "engine")
    assert varied["p95_ms"] == fixed["p95_ms"]  # the point prediction is the spec's speed either way

    text = CliRunner().invoke(cli, ["whatif", "--log", str(log), "--deployment", spread, "--interval-level", "0.9"])
    assert text.exit_code == 0, text.output
    assert "spread: p50" in text.output and "(90% interval" in text.output
    assert "its width set by the engine's speed spread" in text.output
