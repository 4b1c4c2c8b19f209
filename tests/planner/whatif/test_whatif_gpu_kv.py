"""`whatif --kv-from-gpu MODEL@GPU:N` fills a batching candidate's kv_blocks from planner.kvcache.capacity's KV
capacity (GiB, as the engine sizes it), so requests wait for KV blocks as they would on that GPU (issue 45)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from planner.cli import cli

VLLM = "dedicated:name=vllm,engine=vllm,replicas=1,prefill=10000,decode=50,usd_per_gpu_h=3"
# Llama 3.1 8B on one H100 80 GB: 0.9 × 80 GiB = 77,309,411,328 bytes, less 8.03 B params × 2 bytes of weights
# = 61,249,411,328 bytes of KV at 2 × 32 layers × 8 KV heads × 128 × 2 bytes = 131,072 bytes a token:
# 467,295 tokens, 29,205 blocks of vLLM's 16.
BLOCKS = 29_205


def _long_prompts(tmp_path):
    """Six requests 100 ms apart, 100,000 prompt tokens (unique hashes: nothing cached) and 2,000 output tokens each:
    a request holds 6,376 blocks of 16 until its last token, so 4 fit in 29,205 and the 5th waits for the 1st."""
    rows = [
        {
            "timestamp": i * 100,
            "input_length": 100_000,
            "output_length": 2_000,
            "hash_ids": list(range(i * 1_000, i * 1_000 + 196)),
        }
        for i in range(6)
    ]
    path = tmp_path / "long.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _whatif(path, *extra):
    got = CliRunner().invoke(cli, ["whatif", "--log", str(path), "--deployment", VLLM, *extra, "--json"])
    assert got.exit_code == 0, got.output
    return json.loads(got.stdout)


def test_the_gpu_fills_kv_blocks_and_requests_wait_for_them(tmp_path):
    path = _long_prompts(tmp_path)
    on_gpu = _whatif(path, "--kv-from-gpu", "llama-3.1-8b@H100:1")
    assert on_gpu["kv_blocks"] == {"vllm": BLOCKS}
    unlimited = _whatif(path)
    assert unlimited["kv_blocks"] == {}
    # Without KV blocks the six prompts only queue for the step's token budget: p95 (the 6th) 61 s. On the H100 the
    # 5th and 6th wait for the 1st to finish its 2,000 tokens: 112 s.
    assert round(unlimited["candidates"][0]["p95_ms"] / 1000) == 61
    assert round(on_gpu["candidates"][0]["p95_ms"] / 1000) == 112
    text = CliRunner().invoke(
        cli, ["whatif", "--log", str(path), "--deployment", VLLM, "--kv-from-gpu", "llama-3.1-8b@H100:1"]
    )
    assert f"vllm: kv_blocks={BLOCKS:,} (467,295 tokens ÷ block_size 16)" in text.output


def test_a_specs_own_kv_blocks_and_the_slot_model_are_kept(tmp_path):
    path = _long_prompts(tmp_path)
    slots = "dedicated:name=slots,replicas=1,slots=8,prefill=10000,decode=50,usd_per_gpu_h=3"
    got = CliRunner().invoke(
        cli,
        [
            "whatif",
            "--log",
            str(path),
            "--deployment",
            VLLM.replace("name=vllm", "name=own") + ",kv_blocks=50000",
            "--deployment",
            slots,
            "--kv-from-gpu",
            "llama-3.1-8b@H100:1",
            "--json",
        ],
    )
    assert got.exit_code == 0, got.output
    assert json.loads(got.stdout)["kv_blocks"] == {}
