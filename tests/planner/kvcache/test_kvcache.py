"""Prefix reuse under memory pressure: block hashing of chat logs, KV capacity against hand figures, and each routing
policy on constructed traces whose answer is known."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from planner.asset_files import assets_dir
from planner.capacity import specs as P
from planner.capacity.errors import CapacityError
from planner.cli import cli
from planner.kvcache.capacity import kv_capacity
from planner.kvcache.chains import PrefixRequest, PrefixTrace, PrefixTraceError, chain_tokens, read_prefix_trace
from planner.kvcache.regime import knee, regime, sentence
from planner.kvcache.simulate import Routing, ServiceRates, reuse_ceiling, simulate

MODELS = {m.key: m for m in P.models()}
GPUS = {g.key: g for g in P.gpus()}


def _chat(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_growing_conversation_shares_the_blocks_of_its_earlier_turn_and_nothing_past_them(tmp_path):
    system = {"role": "system", "content": "s" * 200}
    first = [system, {"role": "user", "content": "u" * 300}]
    second = first + [{"role": "assistant", "content": "a" * 150}, {"role": "user", "content": "v" * 90}]
    other = [{"role": "system", "content": "t" * 200}, {"role": "user", "content": "u" * 300}]
    trace = read_prefix_trace(
        _chat(
            tmp_path / "chat.jsonl",
            [
                {"timestamp": "2026-11-16T09:00:00Z", "metadata": {"session_id": "a"}, "messages": first},
                {"timestamp": "2026-11-16T09:01:00Z", "metadata": {"session_id": "a"}, "messages": second},
                {"timestamp": "2026-11-16T09:02:00Z", "session_id": "b", "messages": other},
            ],
        )
    )
    a1, a2, b = trace.requests
    assert trace.approximate and trace.block_tokens == 16 and "estimate" in trace.source
    # the text of the first turn is 200 + 1 + 300 characters (messages joined by a line break): 7 full 64-character
    # blocks; the second turn repeats them and differs inside the 8th
    assert len("\n".join(m["content"] for m in first)) == 501
    assert len(a1.blocks) == 501 // 64 == 7
    assert a2.blocks[:7] == a1.blocks and len(a2.blocks) == (501 + 1 + 150 + 1 + 90) // 64
    assert (a1.session, a2.session, b.session) == ("a", "a", "b")
    assert not set(b.blocks) & set(a1.blocks)  # another system prompt: nothing shared, the same later text included
    assert a1.prompt_tokens == 126  # ⌈501 / 4⌉, planner.logs.tokenize's estimate


def test_token_blocks_chain_the_prefix_so_equal_blocks_after_a_difference_do_not_match():
    same = [7] * 16
    x = chain_tokens([1] * 16 + same + [9] * 5, 16)
    y = chain_tokens([2] * 16 + same, 16)
    assert len(x) == 2 and len(y) == 2  # the partial last block of x is not hashed
    assert x[0] != y[0] and x[1] != y[1]  # the second blocks hold the same tokens, but after different prefixes
    assert chain_tokens([1] * 16 + same, 16) == x


def test_a_record_without_prompt_identity_is_named_by_file_and_line(tmp_path):
    path = _chat(
        tmp_path / "t.jsonl",
        [{"timestamp": 0, "messages": [{"role": "user", "content": "hi"}]}, {"timestamp": 1, "x": 1}],
    )
    trace = read_prefix_trace(path)  # the line is rejected, named, and the rest read (issue 42 item 17)
    assert len(trace.requests) == 1 and trace.n_rejected == 1
    assert str(trace.rejected[0]) == "t.jsonl:2: no hash_ids, messages or prompt text to tell the prefix by"
    only = _chat(tmp_path / "only.jsonl", [{"timestamp": 1, "x": 1}])
    with pytest.raises(PrefixTraceError, match=r"only\.jsonl:1: no hash_ids, messages or prompt text"):
        read_prefix_trace(only)


def test_kv_capacity_of_two_real_models_against_the_hand_figures():
    # Memory in GiB, as vLLM counts it (issue 45). Llama 3.1 8B on one H100 (80 GiB): 0.9 × 80 = 72 GiB usable =
    # 77,309,411,328 B; bf16 weights 8.03 B × 2 = 16,060,000,000 B (14.96 GiB); KV = 2 × 32 layers × 8 KV heads × 128
    # × 2 bytes = 131,072 B a token → (77,309,411,328 − 16,060,000,000) / 131,072 = 467,295.9. (In decimal GB, the
    # old reading, it was (72 − 16.06) × 10⁹ / 131,072 = 426,788: 9.5 % fewer tokens than the engine holds.)
    c = kv_capacity(MODELS["llama-3.1-8b"], GPUS["H100"])
    assert (c.gpus_per_replica, c.kv_bytes_per_token, c.tokens, c.blocks) == (1, 131_072, 467_295, 467_295 // 16)
    assert c.tokens == (72 * 2**30 - 16_060_000_000) // 131_072
    assert "72.0 GiB usable − 15.0 GiB weights − 0.0 GiB reserve = 467,295 tokens" in c.label()
    # Llama 3.1 70B, fp8 weights (70.6 × 10⁹ B) on 2 × H100 = 144 GiB usable; KV 2 × 80 × 8 × 128 × 2 = 327,680 B a
    # token → (144 × 2³⁰ − 70.6 × 10⁹) / 327,680 = 256,405.1; fp8 KV halves the bytes: 512,810.2
    c = kv_capacity(MODELS["llama-3.1-70b"], GPUS["H100"], gpus_per_replica=2, weight_dtype="fp8")
    assert (c.kv_bytes_per_token, c.tokens) == (327_680, 256_405)
    c8 = kv_capacity(MODELS["llama-3.1-70b"], GPUS["H100"], gpus_per_replica=2, weight_dtype="fp8", kv_dtype="fp8")
    assert c8.tokens == 512_810
    # bf16 weights (141.2 × 10⁹ B) leave 13.4 × 10⁹ B on 2 × H100: the fewest GPUs is 2, with 40,950 tokens
    assert kv_capacity(MODELS["llama-3.1-70b"], GPUS["H100"]).tokens == (144 * 2**30 - 141_200_000_000) // 327_680
    with pytest.raises(CapacityError, match="leaves no KV room on 1× H100"):
        kv_capacity(MODELS["llama-3.1-70b"], GPUS["H100"], gpus_per_replica=1)


def _session(name: str, turns: int, first_ts_ms: int = 0, gap_ms: int = 60_000, tag: int = 0) -> list[PrefixRequest]:
    """A conversation whose turn k resends turns 1..k-1 and adds one block: blocks (s,1), (s,1)(s,2), …"""
    return [
        PrefixRequest(first_ts_ms + k * gap_ms, name, (k + 1) * 10, tuple(hash((name, tag, j)) for j in range(k + 1)))
        for k in range(turns)
    ]


def _run(requests, routing, replicas=2, capacity=100):
    return simulate(requests, replicas=replicas, capacity_blocks=capacity, block_tokens=10, routing=routing)


def test_round_robin_splits_a_conversation_and_session_affinity_keeps_it_together():
    conv = _session("a", 4)  # prompts 10, 20, 30, 40 tokens
    rr = _run(conv, Routing.ROUND_ROBIN)
    # turns go to replicas 0, 1, 0, 1: turn 3 finds turn 1's block on replica 0, turn 4 turn 2's two on replica 1
    assert rr.replica_of == (0, 1, 0, 1) and rr.cached_tokens == (0, 0, 10, 20)
    aff = _run(conv, Routing.SESSION)
    assert len(set(aff.replica_of)) == 1 and aff.cached_tokens == (0, 10, 20, 30)
    assert aff.hit_rate == pytest.approx(60 / 100) and rr.hit_rate == pytest.approx(30 / 100)


def test_prefix_aware_routing_follows_the_longest_cached_prefix_and_least_loaded_the_idle_replica():
    a, b = _session("a", 3), _session("b", 3)
    mixed = sorted(a + b, key=lambda r: r.ts_ms)  # a1 b1 a2 b2 a3 b3: a pair at each minute
    pre = _run(mixed, Routing.PREFIX)
    # a1 and b1 find nothing anywhere: least-loaded (a1's 1 ms of prefill still running when b1 arrives) splits them
    assert pre.replica_of[:2] == (0, 1)
    assert pre.replica_of[2:] == (0, 1, 0, 1) and pre.cached_tokens == (0, 0, 10, 10, 20, 20)
    # service 0 ms (no prefill time, no output): every replica is idle at every arrival, so least-loaded is replica 0
    idle = simulate(
        mixed,
        replicas=2,
        capacity_blocks=100,
        block_tokens=10,
        routing=Routing.LEAST_LOADED,
        rates=ServiceRates(prefill_ms_per_token=0.0, decode_ms_per_token=0.0),
    )
    assert set(idle.replica_of) == {0}
    # a second of prefill per token keeps a1 busy when b1 arrives: b1 goes to replica 1
    busy = simulate(
        mixed[:2],
        replicas=2,
        capacity_blocks=100,
        block_tokens=10,
        routing=Routing.LEAST_LOADED,
        rates=ServiceRates(prefill_ms_per_token=1000.0),
    )
    assert busy.replica_of == (0, 1)


def test_lru_pressure_evicts_the_least_recently_used_blocks_per_replica():
    x = [
        PrefixRequest(0, None, 20, ("p", "q")),
        PrefixRequest(1, None, 20, ("p", "r")),  # hits p; caching r evicts q (p was just used)
        PrefixRequest(2, None, 20, ("p", "q")),  # hits p again, q is gone
    ]
    run = _run(x, Routing.ROUND_ROBIN, replicas=1, capacity=2)
    assert run.cached_tokens == (0, 10, 10)
    roomy = _run(x, Routing.ROUND_ROBIN, replicas=1, capacity=3)
    assert roomy.cached_tokens == (0, 10, 20)


def test_reuse_ceiling_counts_repeats_across_and_within_sessions():
    shared = ("sys",)
    reqs = [
        PrefixRequest(0, "a", 20, (*shared, "a1")),
        PrefixRequest(1, "b", 20, (*shared, "b1")),  # repeats the system block of session a: across, not within
        PrefixRequest(2, "a", 30, (*shared, "a1", "a2")),  # repeats two blocks of its own session
    ]
    across, within = reuse_ceiling(reqs, block_tokens=10)
    assert across == pytest.approx((0 + 10 + 20) / 70) and within == pytest.approx((0 + 0 + 20) / 70)


def test_the_regime_finds_the_knee_and_the_sentence_says_a_replica_does_not_help_until_routing_changes():
    convs = [r for s in range(3) for r in _session(f"s{s}", 6, first_ts_ms=s, tag=s)]  # odd: round-robin splits
    convs.sort(key=lambda r: r.ts_ms)
    trace = PrefixTrace(tuple(convs), 10, "constructed", approximate=False)
    sweep = regime(trace, [20, 40, 80, 160, 320], [2], [Routing.SESSION])
    rates = [p.hit_rate for p in sweep]
    assert rates == sorted(rates) and rates[0] < rates[-1]  # pressure erodes reuse, and capacity lifts it
    assert knee(sweep) == next(p.capacity_tokens for p in sweep if p.hit_rate >= 0.95 * rates[-1])
    at = {(p.routing, p.replicas): p for p in regime(trace, [320], [2, 3], list(Routing))}
    said = sentence(at, "2 replicas of 1× H100", 2)
    rr, aff = at[("round-robin", 2)], at[("session", 2)]
    assert aff.hit_rate > rr.hit_rate + 0.01
    assert said.startswith(f"On 2 replicas of 1× H100 with round-robin routing your hit rate is {rr.hit_rate:.0%}")
    assert "a third replica" in said


def test_the_command_prints_the_library_figures_for_the_agent_sessions_sample():
    sample = assets_dir() / "sample_logs" / "agent_sessions.jsonl"
    args = ["prefix", str(sample), "--model", "qwen2.5-coder-32b", "--gpu", "L40S", "--replicas", "2", "--json"]
    got = CliRunner().invoke(cli, args)
    assert got.exit_code == 0, got.output
    d = json.loads(got.output)
    trace = read_prefix_trace(sample)
    cap = kv_capacity(MODELS["qwen2.5-coder-32b"], GPUS["L40S"], block_tokens=trace.block_tokens)
    assert d["requests"] == len(trace.requests) == 60 and d["sessions"] == 10
    assert d["kv_capacity"]["tokens"] == cap.tokens
    assert d["reuse_ceiling"] == pytest.approx(reuse_ceiling(trace.requests, trace.block_tokens)[0])
    rr = next(p for p in d["deployment"] if p["routing"] == "round-robin")
    run = simulate(trace.requests, replicas=2, capacity_blocks=cap.tokens // 16, block_tokens=16)
    assert rr["hit_rate"] == pytest.approx(run.hit_rate)
    assert d["sentence"].startswith("On 2 replicas of 2× L40S 48GB (Qwen2.5-Coder 32B) with round-robin routing")
    bad = CliRunner().invoke(cli, ["prefix", str(sample), "--model", "llama-3.1-405b", "--gpu", "L4"])
    assert bad.exit_code == 2 and "leaves no KV room" in bad.output


def test_whatif_sizes_the_prefix_cache_from_the_deployment_as_the_same_number_of_blocks_typed():
    sample = str(assets_dir() / "sample_logs" / "mooncake_conversation.jsonl")
    spec = "dedicated:replicas=1,slots=8,prefill=12000,decode=60,usd_per_gpu_h=3.2,gpus=4,rtt=40"
    base = ["whatif", "--log", sample, "--deployment", spec, "--json"]
    blocks = kv_capacity(MODELS["llama-3.1-70b"], GPUS["H100"], gpus_per_replica=4, block_tokens=512).blocks
    assert blocks == (288 * 2**30 - 141_200_000_000) // 327_680 // 512  # 288 GiB − 141.2 × 10⁹ B, in 512-token blocks
    from_gpu = CliRunner().invoke(cli, [*base, "--kv-from-gpu", "llama-3.1-70b@H100:4"])
    typed = CliRunner().invoke(cli, [*base, "--prefix-cache-blocks", str(blocks)])
    assert from_gpu.exit_code == 0 and typed.exit_code == 0, from_gpu.output + typed.output
    a, b = json.loads(from_gpu.output), json.loads(typed.output)
    assert a["candidates"] == b["candidates"] and f"tail-first prefix cache of {blocks:,} blocks" in " ".join(
        a["notes"]
    )
    assert "4× H100" in a["kv_capacity"]
    both = CliRunner().invoke(cli, [*base, "--kv-from-gpu", "llama-3.1-70b@H100:4", "--prefix-cache-blocks", "9"])
    assert both.exit_code == 2 and "not both" in both.output
    tight = CliRunner().invoke(cli, [*base, "--kv-from-gpu", "llama-3.1-70b@H100:1"])
    assert tight.exit_code == 2 and "leaves no KV room" in tight.output


def test_the_llama_cpp_engine_keeps_one_sequence_per_slot():
    a = [PrefixRequest(0, "a", 10, (1,)), PrefixRequest(2, "a", 20, (1, 2))]
    b = [PrefixRequest(1, "b", 10, (7,)), PrefixRequest(3, "b", 20, (7, 8))]
    mixed = sorted(a + b, key=lambda r: r.ts_ms)  # a1 b1 a2 b2

    def run(slots: int) -> tuple[int, ...]:
        got = simulate(mixed, replicas=1, capacity_blocks=40, block_tokens=10, engine="llama.cpp", slots=slots)
        return got.cached_tokens

    # two slots: a1 and b1 each take an empty slot; a2 and b2 find their first turn on their own slot by similarity
    assert run(2) == (0, 0, 10, 10)
    # one slot keeps only the last prompt: b1 replaced a1, a2 replaced b1
    assert run(1) == (0, 0, 0, 0)
    # the block cache keeps both conversations' blocks whatever the order
    assert simulate(mixed, replicas=1, capacity_blocks=40, block_tokens=10).cached_tokens == (0, 0, 10, 10)


def test_the_command_replays_the_llama_cpp_engine_when_asked():
    sample = assets_dir() / "sample_logs" / "agent_sessions.jsonl"
    args = ["prefix", str(sample), "--model", "qwen2.5-coder-32b", "--gpu", "L40S", "--replicas", "2", "--json"]
    got = CliRunner().invoke(cli, [*args, "--engine", "llama.cpp", "--slots", "4", "--routing", "session"])
    assert got.exit_code == 0, got.output
    d = json.loads(got.output)
    trace = read_prefix_trace(sample)
    cap = kv_capacity(MODELS["qwen2.5-coder-32b"], GPUS["L40S"], block_tokens=trace.block_tokens)
    run = simulate(
        trace.requests,
        replicas=2,
        capacity_blocks=cap.blocks,
        block_tokens=16,
        routing="session",
        engine="llama.cpp",
        slots=4,
    )
    assert d["engine"] == "llama.cpp, 4 slots a replica"
    assert d["deployment"][0]["hit_rate"] == pytest.approx(run.hit_rate)
    blocks = simulate(trace.requests, replicas=2, capacity_blocks=cap.blocks, block_tokens=16, routing="session")
    assert run.hit_rate < blocks.hit_rate  # one slot per prompt keeps less than a block cache of the same memory
