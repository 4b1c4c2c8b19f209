"""Eviction as the engines do it (issue 45): vLLM frees a finished request's blocks tail first, SGLang evicts radix-tree
leaves whole, and plain LRU (the old model) drops a prompt's first block before its last. Constructed traces whose
answers are worked out by hand in the comments, for each rule alone and for every routing policy × rule."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from planner.asset_files import assets_dir
from planner.cli import cli
from planner.kvcache.chains import PrefixRequest
from planner.kvcache.simulate import ServiceRates, engine_eviction, simulate
from planner.logs.prefix import Eviction, PrefixCache, eviction_for

RULES = ("lru", "tail-first", "radix-leaf")


def _hits(prompts, capacity, rule):
    cache = PrefixCache(capacity, 1, rule)
    return [cache.hit_blocks(p) for p in prompts]


def test_each_engine_has_its_stated_rule():
    assert eviction_for("vllm") is Eviction.TAIL_FIRST and eviction_for("SGLang") is Eviction.RADIX_LEAF
    assert engine_eviction("vllm") is Eviction.TAIL_FIRST and engine_eviction("llama.cpp") is None
    assert engine_eviction("sglang", "lru") is Eviction.LRU  # a stated override, to compare
    with pytest.raises(ValueError, match="one of vllm, sglang"):
        eviction_for("tgi")
    with pytest.raises(ValueError, match="llama.cpp keeps one sequence per slot"):
        engine_eviction("llama.cpp", "tail-first")
    assert "tail-first prefix cache of 8 blocks" in PrefixCache(8).label()  # the log reader's rule: vLLM's


def test_a_32_block_prompt_resent_into_a_31_block_cache_is_lost_under_lru_and_kept_tail_first():
    prompt = list(range(32))
    sent = [prompt] * 10
    # LRU: the request's first block is its least recently used, so block 0 goes; every later request then misses
    # at block 0 and re-caches the prompt in the same order: 0 of 320 blocks.
    assert _hits(sent, 31, "lru") == [0] * 10
    # tail-first: the blocks are freed 31, 30, …, 0, so block 31 goes and 0–30 stay: every later request reuses
    # 31 of its 32 blocks: 9 × 31 / 320 = 87.1875 %.
    assert _hits(sent, 31, "tail-first") == [0] + [31] * 9
    # radix-leaf: the first request keeps its leading 31 blocks (one leaf); later ones match all 31, which they
    # hold while served, so nothing can be evicted for block 31: the same 31 each.
    assert _hits(sent, 31, "radix-leaf") == [0] + [31] * 9


def test_a_32_block_cycle_of_four_prompts_keeps_seven_of_eight_tail_first_and_nothing_as_whole_leaves():
    # four unrelated 8-block prompts in turn, three rounds: 32 blocks cycling through a 31-block cache
    prompts = [[(p, b) for b in range(8)] for p in range(4)]
    sent = prompts * 3
    # LRU: each prompt's first block is the oldest in the cache when the cycle comes back to it: all misses.
    assert sum(_hits(sent, 31, "lru")) == 0
    # tail-first: the 32nd block evicts the first prompt's last block; from then on each prompt finds its first 7
    # and its missing 8th evicts the next prompt's last block: 2 rounds × 4 × 7 = 56 of 96 blocks (58.3 %).
    assert _hits(sent, 31, "tail-first") == [0] * 4 + [7] * 8
    # radix-leaf: each prompt is one leaf; making room for one block evicts the oldest prompt whole: all misses.
    assert sum(_hits(sent, 31, "radix-leaf")) == 0


def test_a_prompt_longer_than_the_cache_keeps_the_shared_prefix_tail_first_and_as_a_radix_leaf():
    # a shared system block, then three blocks of each session's own: 4 blocks into a 3-block cache
    sent = [["sys", *(f"{s}{i}" for i in range(3))] for s in "abc"]
    # LRU evicts each prompt's first block, the shared one: no later prompt finds it.
    assert _hits(sent, 3, "lru") == [0, 0, 0]
    # tail-first keeps sys, a0, a1 (a2 freed first); b and c reuse sys.
    assert _hits(sent, 3, "tail-first") == [0, 1, 1]
    # radix-leaf keeps the leading 3 blocks; b holds sys and evicts the leaf a0–a1 whole; c likewise.
    assert _hits(sent, 3, "radix-leaf") == [0, 1, 1]
    # the growing conversation of an agent fits whatever the rule when the cache holds it all
    turns = [["sys", *range(k)] for k in range(5)]
    assert {r: _hits(turns, 8, r) for r in RULES} == {r: [0, 1, 2, 3, 4] for r in RULES}


# Routing × eviction on two replicas of 3 one-token blocks each. Three sessions, in this order:
#   long x long y long x long y long x long y
# `long` resends a 4-block prompt (one block more than a replica holds); x and y each resend a 2-block prompt.
# What one replica does with what it is sent (block hits per request, worked by hand):
#   long alone (4 blocks, cap 3):  LRU 0 each (it evicts its own first block); tail-first and radix-leaf 3 after
#                                  the first (they keep l1–l3 and the request holds them).
#   x y x y … alone (2 + 2 in 3):  LRU 0; tail-first 0, 0, then 1 each (the missing block evicts the other
#                                  prompt's last); radix-leaf 0 (a leaf goes whole to make room for one block).
#   y alone:                       2 after the first, whatever the rule.
#   long x long long x long …:     LRU 0; tail-first long gets 1 after an x (x evicted l2, l3) and 3 after a long,
#                                  x 0; radix-leaf long 3 after a long, 0 after an x (x evicted it whole), x 0.
#   everything on one replica:     LRU 0; tail-first each long after the first finds l1 only (x or y took two
#                                  blocks): 5; radix-leaf 0 (x or y evicts the long leaf whole, and back).
LONG, X, Y = "long", "x", "y"  # session affinity (blake2b of the id, mod 2): long → 0, x → 0, y → 1
BLOCKS = {LONG: ("l1", "l2", "l3", "l4"), X: ("x1", "x2"), Y: ("y1", "y2")}
ORDER = [LONG, X, LONG, Y] * 3
RATES = {
    "idle": ServiceRates(prefill_ms_per_token=0.0, decode_ms_per_token=0.0),  # nothing in flight at any arrival
    "busy": ServiceRates(prefill_ms_per_token=0.0, decode_ms_per_token=1e9),  # everything stays in flight
}

MATRIX = {
    # round-robin: even requests (long) to replica 0, odd (x, y) to 1. tail-first 5 × 3 + 4 = 19; radix 15 + 0
    ("round-robin", "idle"): {"lru": 0, "tail-first": 19, "radix-leaf": 15},
    # least-loaded with idle replicas: all to replica 0 (ties to the lowest): tail-first 5, radix-leaf 0
    ("least-loaded", "idle"): {"lru": 0, "tail-first": 5, "radix-leaf": 0},
    # least-loaded with every request still in flight: the emptier replica, alternating: as round-robin
    ("least-loaded", "busy"): {"lru": 0, "tail-first": 19, "radix-leaf": 15},
    # session: long and x share replica 0, y alone on 1 (y: 2 × 2 = 4 whatever the rule). Replica 0 sees
    # long x long long x long long x long: tail-first 0+1+3+1+3+1 = 9, radix-leaf 0+0+3+0+3+0 = 6.
    ("session", "idle"): {"lru": 4, "tail-first": 9 + 4, "radix-leaf": 6 + 4},
    # prefix with every request in flight: long follows its cached prefix (or the tie-break) to replica 0, x and y
    # find nothing on 0 and go to the emptier replica 1: as round-robin
    ("prefix", "busy"): {"lru": 0, "tail-first": 19, "radix-leaf": 15},
    # prefix with idle replicas: replica 1 never holds a longer prefix, so every tie goes to 0: as least-loaded
    ("prefix", "idle"): {"lru": 0, "tail-first": 5, "radix-leaf": 0},
}


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize(("routing", "load"), list(MATRIX), ids=[f"{r}-{load}" for r, load in MATRIX])
def test_every_routing_policy_under_every_eviction_rule_on_a_constructed_trace(routing, load, rule):
    requests = [PrefixRequest(i * 1000, s, len(BLOCKS[s]), BLOCKS[s], output_tokens=1) for i, s in enumerate(ORDER)]
    run = simulate(
        requests, replicas=2, capacity_blocks=3, block_tokens=1, routing=routing, rates=RATES[load], eviction=rule
    )
    assert sum(run.cached_tokens) == MATRIX[(routing, load)][rule]
    assert run.eviction is Eviction(rule)


def test_the_prefix_command_states_the_engine_rule_and_its_regime_follows_it():
    sample = str(assets_dir() / "sample_logs" / "agent_sessions.jsonl")
    args = ["prefix", sample, "--model", "qwen2.5-coder-32b", "--gpu", "L40S", "--replicas", "2", "--json"]
    runs = {}
    for engine, override in (("vllm", None), ("sglang", None), ("vllm", "lru")):
        extra = ["--engine", engine] + (["--eviction", override] if override else [])
        got = CliRunner().invoke(cli, [*args, *extra])
        assert got.exit_code == 0, got.output
        runs[(engine, override)] = json.loads(got.output)
    vllm, sglang, lru = runs[("vllm", None)], runs[("sglang", None)], runs[("vllm", "lru")]
    assert (vllm["eviction"], sglang["eviction"], lru["eviction"]) == ("tail-first", "radix-leaf", "lru")
    assert vllm["sentence"].endswith("(each replica's cache frees a request's blocks tail first, as vLLM does).")
    assert sglang["sentence"].endswith("(each replica's cache evicts radix-tree leaves first, as SGLang does).")
    smallest = min(p["capacity_tokens"] for p in vllm["regime"])

    def rr_at_smallest(d):
        return next(p for p in d["regime"] if p["routing"] == "round-robin" and p["capacity_tokens"] == smallest)

    # under pressure (128 tokens a replica: shorter than every prompt) LRU drops each prompt's head and serves
    # nothing, where vLLM keeps the system prompt's first blocks
    assert rr_at_smallest(lru)["hit_rate"] == 0.0 < rr_at_smallest(vllm)["hit_rate"]
    assert all(p["eviction"] == "tail-first" for p in vllm["regime"])
    bad = CliRunner().invoke(cli, [*args, "--engine", "llama.cpp", "--eviction", "lru"])
    assert bad.exit_code == 2 and "llama.cpp keeps one sequence per slot" in bad.output
