"""The sentence a lead forwards (planner.whatif.regime): what the p95 waits for, and what one replica more does."""

from __future__ import annotations

import re

import numpy as np

from planner.whatif.deployment import parse_deployment
from planner.whatif.results import compare
from planner.whatif.trace import Trace


def _trace(n: int, gap_ms: float, prompt: tuple[int, int], output: tuple[int, int], seed: int = 0) -> Trace:
    rng = np.random.default_rng(seed)
    return Trace(
        1_764_460_800_000 + np.cumsum(rng.exponential(gap_ms, n)),
        rng.integers(*prompt, n).astype(float),
        np.zeros(n),
        rng.integers(*output, n).astype(float),
    )


def _regime(spec: str, trace: Trace) -> str:
    (c,) = compare(trace, [parse_deployment(spec)]).candidates
    assert c.ok, c.message
    return c.regime


def test_short_prompts_among_long_generations_are_decode_bound_and_a_second_replica_is_weighed():
    # 19 ms a step, 1 ms per decode token in it, 0.1 ms per prompt token: a 20-token prompt costs ~21 ms of its
    # own, and three requests a second of 200 output tokens keep ~30 decodes running beside it.
    spec = "dedicated:engine=vllm,replicas=1,slots=64,prefill=10000,decode=50,step_ms=19,usd_per_gpu_h=1"
    text = _regime(spec, _trace(1500, 333, (10, 30), (150, 250)))
    m = re.match(r"decode-bound: new requests wait on (\d+) running decodes", text)
    assert m and int(m.group(1)) >= 5, text
    assert re.search(r"; a second replica (halves p95|takes p95 from)", text), text


def test_too_few_running_sequences_is_capacity_bound():
    spec = "dedicated:engine=vllm,replicas=1,slots=2,prefill=10000,decode=50,step_ms=19,usd_per_gpu_h=1"
    text = _regime(spec, _trace(300, 1500, (10, 30), (150, 250)))
    assert text.startswith("capacity-bound: new requests wait") and "one of the 2 running sequences" in text, text
    assert "a second replica halves p95" in text, text


def test_the_slot_model_names_its_largest_segment():
    spec = "dedicated:replicas=1,slots=1,prefill=10000,decode=50,usd_per_gpu_h=1"
    text = _regime(spec, _trace(300, 1500, (10, 30), (20, 60)))
    assert text.startswith("queue-bound: the slowest 5 % wait"), text


def test_the_command_prints_each_candidates_regime_and_documents_every_engines_knobs(tmp_path):
    import json

    from click.testing import CliRunner

    from planner.cli import cli
    from planner.whatif.engines import profiles

    rng = np.random.default_rng(1)
    log = tmp_path / "team.jsonl"
    rows = [
        {"ts_ms": int(1_764_460_800_000 + t), "prompt_tokens": int(rng.integers(10, 30)), "output_tokens": 200}
        for t in np.cumsum(rng.exponential(333, 600))
    ]
    log.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    spec = "dedicated:name=vllm 1x,engine=vllm,replicas=1,slots=64,prefill=10000,decode=50,step_ms=19,usd_per_gpu_h=1"
    res = CliRunner().invoke(cli, ["whatif", "--log", str(log), "--deployment", spec])
    assert res.exit_code == 0, res.output
    assert re.search(r"^vllm 1x: decode-bound: new requests wait on \d+ running decodes", res.output, re.M), res.output
    res = CliRunner().invoke(cli, ["whatif", "--log", str(log), "--deployment", spec, "--json"])
    assert json.loads(res.output)["candidates"][0]["regime"].startswith("decode-bound")
    text = " ".join(CliRunner().invoke(cli, ["whatif", "--help"]).output.split())
    p = profiles()
    vllm = "vllm continuous batching: each step carries every running decode, then prompt chunks up to "
    assert vllm + f"max_num_batched_tokens={p['vllm'].max_num_batched_tokens}" in text
    assert f"slots={p['vllm'].slots} sequences, block_size={p['vllm'].block_size}" in text
    assert f"a step with prompt work carries no decodes (mixed={p['sglang'].mixed})" in text
    llama = p["llama.cpp"]
    assert f"llama.cpp --parallel slots={llama.slots}, max_num_batched_tokens={llama.max_num_batched_tokens}" in text
    for knob in ("max_num_batched_tokens", "chunked_prefill", "mixed", "block_size", "kv_blocks", "step_ms"):
        assert knob in text
