"""Replicas × routing × a prefix cache per replica inside the what-if replay (issue 45): `routing=` in a dedicated
spec sends each request to a replica as `ttft-planner prefix` does, each replica keeps its own cache under the
engine's eviction rule, and the request queues on its own replica."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from planner.cli import cli
from planner.whatif.deployment import SpecError, parse_deployment
from planner.whatif.replay import replay
from planner.whatif.routing import attach_prefix, placement
from planner.whatif.trace import Trace, grow, read_trace

DEDICATED = "dedicated:replicas={n},slots=4,prefill=12000,decode=60,usd_per_gpu_h=3.2"
SESSIONS = {"alpha": 100, "beta": 200, "gamma": 300}


@pytest.fixture
def three_sessions(tmp_path):
    """Three sessions taking turns, six turns each, every turn resending its session's 2,048-token prompt (four
    512-token hashes), a minute apart: with one cache 15 of 18 prompts are fully cached (each session's first is
    not); round-robin over 2 replicas sends a session's turns to both, so 6 miss and 12 are."""
    rows = []
    for _turn in range(6):
        for session, base in SESSIONS.items():
            rows.append(
                {
                    "timestamp": len(rows) * 60_000,
                    "session_id": session,
                    "input_length": 2048,
                    "output_length": 20,
                    "hash_ids": [base, base + 1, base + 2, base + 3],
                }
            )
    path = tmp_path / "three_sessions.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _whatif(path, spec, *extra):
    got = CliRunner().invoke(cli, ["whatif", "--log", str(path), "--deployment", spec, *extra, "--json"])
    assert got.exit_code == 0, got.output
    return json.loads(got.output)["candidates"][0]


@pytest.mark.parametrize("routing", ["round-robin", "least-loaded", "session", "prefix"])
def test_the_three_session_trace_is_as_fully_cached_in_whatif_as_in_prefix(three_sessions, routing):
    args = ["prefix", str(three_sessions), "--model", "llama-3.1-8b", "--gpu", "H100", "--replicas", "1,2,3"]
    got = CliRunner().invoke(cli, [*args, "--routing", routing, "--json"])
    assert got.exit_code == 0, got.output
    by_replicas = {p["replicas"]: p for p in json.loads(got.output)["deployment"]}
    for n in (1, 2, 3):
        spec = DEDICATED.format(n=n) + f",routing={routing}"
        cache = _whatif(three_sessions, spec, "--kv-from-gpu", "llama-3.1-8b@H100")["prefix_cache"]
        assert (cache["fully_cached"], cache["requests"]) == (by_replicas[n]["fully_cached"], 18), (routing, n)
        assert cache["hit_rate"] == pytest.approx(by_replicas[n]["hit_rate"])
        assert (cache["routing"], cache["replicas"], cache["eviction"]) == (routing, n, "tail-first")
    # the known answers: one replica serves 15 of 18 from cache; round-robin on 2 splits each session: 12
    assert by_replicas[1]["fully_cached"] == 15
    assert by_replicas[2]["fully_cached"] == (12 if routing == "round-robin" else 15)


def test_without_routing_the_replay_keeps_one_queue_and_the_logs_cached_tokens(three_sessions):
    plain = _whatif(three_sessions, DEDICATED.format(n=2))
    assert plain["prefix_cache"] is None  # one FIFO queue over every slot, as before issue 45
    trace = attach_prefix(read_trace([three_sessions]), three_sessions, 16_384 * 512)
    one_queue = replay(parse_deployment(DEDICATED.format(n=2)), trace)
    round_robin = replay(parse_deployment(DEDICATED.format(n=2) + ",routing=round-robin"), trace)
    # round-robin misses 3 more prompts, each a whole 2,048-token prefill at 12,000 tokens/s: 171 ms
    assert np.count_nonzero(one_queue.prefill_ms) == 3 and np.count_nonzero(round_robin.prefill_ms) == 6
    assert round_robin.prefill_ms.max() == pytest.approx(2048 / 12_000 * 1000)
    text = CliRunner().invoke(
        cli, ["whatif", "--log", str(three_sessions), "--deployment", DEDICATED.format(n=2) + ",routing=round-robin"]
    )
    assert "round-robin routing over 2 replicas, each with its own prefix cache (tail-first): hit rate 66.7%, " in (
        text.output
    )
    assert "12/18 prompts fully cached" in text.output


def _trace(arrival_ms, prompt, output, cached=None):
    n = len(arrival_ms)
    return Trace(
        np.asarray(arrival_ms, dtype=float),
        np.asarray(prompt, dtype=float),
        np.zeros(n) if cached is None else np.asarray(cached, dtype=float),
        np.asarray(output, dtype=float),
    )


def test_a_routed_request_queues_on_its_own_replica_not_on_the_first_free_slot():
    # two replicas of one slot; decode 1,000 tokens/s. A holds replica 0 for 10 s, B replica 1 for 1 s. C at t = 2 s:
    # one queue gives it replica 1 (free since 1 s): no wait; round-robin sends it to replica 0: it waits until 10 s.
    trace = _trace([0, 100, 2_000], [0, 0, 0], [10_001, 1_001, 2])
    spec = "dedicated:replicas=2,slots=1,prefill=1000,decode=1000,usd_per_gpu_h=1"
    pooled = replay(parse_deployment(spec), trace)
    routed = replay(parse_deployment(spec + ",routing=round-robin"), trace)
    assert pooled.queue_ms.tolist() == [0, 0, 0]
    assert routed.queue_ms.tolist() == [0, 0, 8_000]
    # least-loaded sees A and B in flight (its service time, as `prefix` counts it) and C finds replica 1 idle again
    assert replay(parse_deployment(spec + ",routing=least-loaded"), trace).queue_ms.tolist() == [0, 0, 0]


def test_the_engine_decides_the_rule_and_a_batching_engine_takes_the_routers_replicas(three_sessions):
    trace = attach_prefix(read_trace([three_sessions]), three_sessions, 16_384 * 512)
    rules = {}
    for engine in ("slots", "vllm", "sglang", "llama.cpp"):
        dep = parse_deployment(DEDICATED.format(n=2) + f",routing=session,engine={engine}")
        rules[engine] = placement(dep, trace).rule
        rep = replay(dep, trace)
        assert rep.n == 18 and np.isfinite(rep.ttft_ms).all()
    assert rules == {
        "slots": "tail-first",
        "vllm": "tail-first",
        "sglang": "radix-leaf",
        "llama.cpp": "llama.cpp slots",
    }
    lru = parse_deployment(DEDICATED.format(n=1) + ",routing=session,engine=sglang,eviction=lru")
    assert placement(lru, trace).rule == "lru"
    # a batching engine's own KV cache sizes the replica's prefix cache: 64 blocks of 16 tokens = 2 hash blocks,
    # less than one prompt's 4, so the three sessions taking turns evict each other: nothing is reused; 512 blocks of
    # 16 (16 hash blocks) hold all three prompts: 15 of 18 fully cached
    for kv_blocks, held, fully in ((64, 2, 0), (512, 16, 15)):
        spec = DEDICATED.format(n=1) + f",routing=session,engine=vllm,kv_blocks={kv_blocks},block_size=16"
        placed = placement(parse_deployment(spec), trace)
        assert (placed.capacity_blocks, placed.fully_cached) == (held, fully)


def test_the_identity_follows_growth_and_a_log_without_it_keeps_its_cached_tokens(three_sessions):
    trace = attach_prefix(read_trace([three_sessions]), three_sessions, 1_000 * 512)
    grown = grow(trace, 2.0)
    assert len(grown.prefix.blocks) == grown.n == 36
    assert {b[0] // 100 * 100 for b in grown.prefix.blocks} == set(SESSIONS.values())
    assert all(b[0] == SESSIONS[s] for b, s in zip(grown.prefix.blocks, grown.prefix.sessions, strict=True))
    logged = _trace([0, 1_000, 2_000], [1_000, 1_000, 1_000], [1, 1, 1], cached=[0, 600, 900])
    placed = placement(parse_deployment(DEDICATED.format(n=2) + ",routing=session"), logged)
    assert placed.rule == "logged" and placed.cached_tokens.tolist() == [0, 600, 900]
    assert placed.replica_of.tolist() == [0, 0, 0]  # no sessions: least-loaded, every replica idle: the first


def test_routing_keys_are_checked_with_a_reason(tmp_path, three_sessions):
    base = DEDICATED.format(n=2)
    cases = {
        base + ",routing=random": "routing must be one of round-robin, least-loaded, session, prefix, got 'random'",
        base + ",eviction=lru": "eviction= needs routing=",
        base + ",routing=session,engine=llama.cpp,eviction=lru": "llama.cpp keeps one sequence per slot",
        base + ",routing=session,overflow_max=2,overflow_cold=20,overflow_window=300": "routing= with an overflow",
        "serverless:window=300,cold=20,slots=8,max=4,prefill=12000,decode=60,routing=session": (
            "routing= applies to dedicated replicas"
        ),
    }
    for spec, says in cases.items():
        with pytest.raises(SpecError, match=says.replace("(", r"\(")):
            parse_deployment(spec)
    other = tmp_path / "other.jsonl"
    other.write_text(three_sessions.read_text() + three_sessions.read_text().splitlines()[0] + "\n")
    got = CliRunner().invoke(
        cli, ["whatif", "--log", str(three_sessions), "--log", str(other), "--deployment", base + ",routing=session"]
    )
    assert (
        got.exit_code == 2
        and "routing= reads each request's prefix identity from one log file; 2 were given" in got.output
    )
