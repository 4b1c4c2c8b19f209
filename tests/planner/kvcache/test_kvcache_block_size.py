"""A hash_ids trace's block size is the trace's (issue 45): `--block-tokens 16` on Mooncake's 512-token hashes reads
each hash as 32 engine blocks, a multiple groups hashes, and any other size is refused with the reason."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from planner.cli import cli
from planner.kvcache.chains import BlockSizeError, engine_blocks, read_prefix_trace
from planner.kvcache.simulate import reuse_ceiling


@pytest.fixture
def resent(tmp_path):
    """Six requests resending one 1,536-token prompt: three 512-token hashes each, so 5 of 6 prompts are repeats."""
    rows = [{"timestamp": i * 1000, "input_length": 1536, "output_length": 10, "hash_ids": [1, 2, 3]} for i in range(6)]
    path = tmp_path / "mooncake.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_an_engine_block_that_divides_the_trace_block_keeps_the_reuse_ceiling(resent):
    trace = read_prefix_trace(resent)
    assert (trace.block_tokens, trace.trace_block_tokens) == (512, 512)
    assert reuse_ceiling(trace.requests, 512)[0] == pytest.approx(5 / 6)  # 83.3 %
    # read each hash as 16 tokens (the old reading) and only 3 × 16 of 1,536 tokens repeat: 2.6 %. Read as 32
    # blocks of 16 it is 83.3 % again, as it must be: the same prompts, cut finer.
    fine = read_prefix_trace(resent, block_tokens=16)
    assert fine.block_tokens == 16 and len(fine.requests[0].blocks) == 96
    assert reuse_ceiling(fine.requests, 16)[0] == pytest.approx(5 / 6)
    assert fine.source == "hash_ids of 512-token blocks, each read as 32 16-token engine blocks"
    coarse = read_prefix_trace(resent, block_tokens=1024)  # two hashes a block: one full block of 1,024 tokens
    assert [len(r.blocks) for r in coarse.requests] == [1] * 6
    assert reuse_ceiling(coarse.requests, 1024)[0] == pytest.approx(5 * 1024 / (6 * 1536))


def test_a_partial_last_hash_gives_its_full_engine_blocks_and_sub_blocks_never_collide():
    # 1,100 tokens: two full 512-token hashes and 76 tokens of a third: 68 full 16-token blocks (64 + 4)
    got = engine_blocks((7, 8, 9), 1100, 512, 16)
    assert (
        len(got) == 1100 // 16 == 68
        and got[:2] == (7 * 32, 7 * 32 + 1)
        and got[64:] == tuple(9 * 32 + j for j in range(4))
    )
    assert len(set(engine_blocks((0, 1, -1), 1536, 512, 16))) == 96  # (hash, j) → hash × k + j is one to one


def test_a_block_size_the_hashes_were_not_made_at_is_refused_with_the_reason(resent):
    with pytest.raises(BlockSizeError, match="each hash stands for 512 tokens, so the engine's block must divide 512"):
        read_prefix_trace(resent, block_tokens=48)
    got = CliRunner().invoke(cli, ["prefix", str(resent), "--block-tokens", "48"])
    assert got.exit_code == 2 and "Invalid value for --block-tokens" in got.output and "Traceback" not in got.output
    # the trace's own size, when a trace states another one (its README): 256-token hashes read at 16
    stated = CliRunner().invoke(
        cli, ["prefix", str(resent), "--trace-block-tokens", "256", "--block-tokens", "16", "--json"]
    )
    assert stated.exit_code == 0, stated.output
    d = json.loads(stated.output)
    assert (d["block_tokens"], d["trace_block_tokens"]) == (16, 256)
    assert d["reuse_ceiling"] == pytest.approx(5 * 3 * 256 / (6 * 1536))  # 3 hashes of 256 tokens each repeat
    text = CliRunner().invoke(cli, ["prefix", str(resent), "--block-tokens", "16"])
    assert "reuse ceiling: 83.3% of prompt tokens" in text.output
