"""`ttft-planner capacity cost | weights | gpu-fit | prefill | warm-pool`: --json outputs and usage errors."""

import json

import pytest
from click.testing import CliRunner

from planner.cli import cli

#: `weights` of a 70B-parameter checkpoint in FP8 (its flags after).
WEIGHTS_70B_FP8 = ("weights", "--params-b", "70", "--dtype", "fp8")


def run(*args: str, code: int = 0) -> dict | str:
    """`ttft-planner capacity ARGS…`: its output, parsed when --json was asked for."""
    result = CliRunner().invoke(cli, ["capacity", *args])
    assert result.exit_code == code, result.output
    if "--json" in args and code == 0:
        return json.loads(result.output)
    return result.output


def test_cost_reproduces_the_seed_break_even():
    out = run(
        "cost",
        "--gpu-usd-per-hour",
        "3.20",
        "--gpus-per-replica",
        "1",
        "--capacity-tokens-per-min",
        "720000",
        "--blended-usd-per-mtok",
        "0.212",
        "--json",
    )
    assert round(out["break_even_utilisation"], 2) == 0.35
    assert out["gpus_per_replica"] == 1 and out["capacity_tokens_per_hour"] == 43_200_000
    assert "cached prompt tokens included" in out["token_definition"]
    assert out["serverless_always_cheaper"] is False


def test_cost_with_presets_and_traffic():
    out = run(
        "cost",
        "--gpu-price",
        "seed-h200",
        "--gpus-per-replica",
        "8",
        "--price",
        "fireworks-deepseek-v3",
        "--tokens-per-hour",
        "20e6",
        "--json",
    )
    assert out["break_even_utilisation"] == pytest.approx(1.79, abs=0.01)
    assert out["serverless_always_cheaper"] is True
    assert out["traffic"]["cheapest"] == "serverless"
    assert "Fireworks" in out["price"] and "seed" in out["gpu_price"].lower()


def test_cost_text_states_node_and_verdict():
    text = run(
        "cost", "--gpu-usd-per-hour", "3.20", "--capacity-tokens-per-min", "720000", "--blended-usd-per-mtok", "0.212"
    )
    assert "1 GPU(s)" in text and "0.35 (35%)" in text and "Dedicated is cheaper above 35%" in text


def test_cost_usage_errors_exit_2_with_a_message():
    out = run(
        "cost", "--gpu-usd-per-hour", "3.2", "--capacity-tokens-per-min", "0", "--blended-usd-per-mtok", "0.2", code=2
    )
    assert "capacity" in out and "greater than 0" in out
    out = run("cost", "--gpu-price", "nope", "--capacity-tokens-per-min", "1", "--blended-usd-per-mtok", "0.2", code=2)
    assert "unknown GPU-hour preset 'nope'" in out and "seed-h200" in out
    out = run("cost", "--gpu-usd-per-hour", "3.2", "--capacity-tokens-per-min", "1", code=2)
    assert "--blended-usd-per-mtok" in out


def test_weights_json_projection():
    out = run(*WEIGHTS_70B_FP8, "--load-row", "s3-streamer-c32", "--load-row", "gp3-safetensors", "--json")
    row = out["projection"][0]
    assert row["checkpoint_gb"] == 70
    secs = list(row["load_s"].values())
    assert round(secs[0]) == 23 and round(secs[1]) == 224
    assert "constant-rate estimate" in out["label"]


def test_weights_from_a_cold_reading_and_bad_row():
    out = run(
        *WEIGHTS_70B_FP8,
        "--cold-ms",
        "36400",
        "--warm-ms",
        "400",
        "--cold-checkpoint-gb",
        "16",
        "--engine-startup-s",
        "20",
        "--json",
    )
    assert out["rates"][0]["gb_per_s"] == pytest.approx(1.0)
    assert out["projection"][0]["load_s"]["team cold reading"] == pytest.approx(70 + 20)
    assert "unknown loader row" in run("weights", "--load-row", "floppy", code=2)


def test_gpu_fit_json_and_no_fit():
    out = run(
        "gpu-fit", "--model", "llama-3.1-70b", "--gpu", "H100", "--weight-dtype", "fp8", "--sequences", "8", "--json"
    )
    f = out["fits"][0]
    assert f["kv_bytes_per_token"] == 320 * 1024 and f["tp_gpus"] == 4 and f["fits"] is True
    out = run(
        "gpu-fit",
        "--params-b",
        "1000",
        "--layers",
        "126",
        "--kv-heads",
        "8",
        "--head-dim",
        "128",
        "--gpu",
        "L4",
        "--json",
    )
    assert out["fits"][0]["fits"] is False and "does not fit" in out["fits"][0]["message"]


def test_prefill_json_worked_example():
    out = run(
        "prefill",
        "--params-b",
        "8",
        "--layers",
        "32",
        "--kv-heads",
        "8",
        "--head-dim",
        "128",
        "--d-model",
        "4096",
        "--gpu",
        "H100",
        "--prompt-tokens",
        "8192",
        "--json",
    )
    assert round(out["estimate"]["time_s"], 2) == 0.30
    assert out["source"].startswith("model")
    assert [r["target_ms"] for r in out["largest_prompts"]] == [200, 500, 1000]
    out = run("prefill", "--slope-ms-per-1k", "50", "--queue-ms", "60", "--network-ms", "80", "--json")
    assert out["prefill_tokens_per_s"] == pytest.approx(20_000)
    assert out["largest_prompts"][0]["max_prompt_tokens_p95"] == pytest.approx(1200)
    assert "no FP8" in run("prefill", "--model", "llama-3.1-8b", "--gpu", "A100-80GB", "--dtype", "fp8", code=2)
    assert "needs --d-model" in run(
        "prefill", "--params-b", "8", "--layers", "32", "--kv-heads", "8", "--head-dim", "128", code=2
    )


def test_warm_pool_json_textbook():
    out = run("warm-pool", "--arrivals-per-hour", "30", "--service-s", "300", "--slots", "4", "--json")
    assert round(out["wait_probability"], 2) == 0.32
    assert out["queue_wait_p95_s"] == pytest.approx(371.2, abs=0.1)
    out = run(
        "warm-pool",
        "--arrivals-per-hour",
        "30",
        "--service-s",
        "300",
        "--target-wait-s",
        "0",
        "--slots-per-replica",
        "4",
        "--json",
    )
    assert out["min_slots"] == 6 and out["min_replicas"] == 2


def test_warm_pool_overload_and_tradeoff():
    out = run("warm-pool", "--arrivals-per-hour", "30", "--service-s", "300", "--slots", "2", "--json")
    assert out["queue"]["stable"] is False and out["queue_wait_p95_s"] is None  # inf → null: valid JSON
    out = run(
        "warm-pool",
        "--arrivals-per-hour",
        "60",
        "--service-s",
        "1",
        "--slots",
        "1",
        "--cold-start-s",
        "45",
        "--warm-p95-ms",
        "400",
        "--replica-usd-per-hour",
        "3.2",
        "--json",
    )
    by_w = {r["window_s"]: r for r in out["tradeoff"]}
    assert by_w[60]["cold_in_p95"] is True and by_w[300]["cold_in_p95"] is False
    assert "--service-s" in run("warm-pool", "--arrivals-per-hour", "30", "--service-s", "0", "--slots", "1", code=2)


def test_help_has_examples():
    for cmd in ("cost", "weights", "gpu-fit", "prefill", "warm-pool"):
        assert "Examples:" in run(cmd, "--help") and f"ttft-planner capacity {cmd}" in run(cmd, "--help")


def test_a_mix_with_more_cached_than_prompt_tokens_is_a_usage_error():
    from click.testing import CliRunner

    from planner.cli import cli

    out = CliRunner().invoke(
        cli,
        [
            "capacity",
            "cost",
            "--gpu-usd-per-hour",
            "3.2",
            "--capacity-tokens-per-min",
            "720000",
            "--mix",
            "10",
            "20",
            "1",
        ],
    )
    assert out.exit_code == 2 and "--mix" in out.output and "exceed prompt tokens" in out.output
