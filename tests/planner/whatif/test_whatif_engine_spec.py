"""`engine=` in a deployment spec: the engine profiles' defaults, each knob's bounds (planner.inputs.validate rules),
and the mistakes a user makes worded as one line naming the key."""

from __future__ import annotations

import pytest

from planner.whatif.deployment import KEY_RULES, SpecError, parse_deployment
from planner.whatif.engines import BATCHING_ENGINES, profile

BASE = "dedicated:replicas=2,prefill=12000,decode=50,usd_per_gpu_h=3.2"


@pytest.mark.parametrize("engine", BATCHING_ENGINES)
def test_a_batching_engine_takes_its_profile_defaults_for_the_knobs_left_out(engine):
    d = parse_deployment(f"{BASE},engine={engine}")
    p = profile(engine)
    assert d.batching and d.engine == engine
    assert (d.slots_per_replica, d.max_num_batched_tokens, d.chunked_prefill, d.mixed, d.block_size) == (
        p.slots,
        p.max_num_batched_tokens,
        p.chunked_prefill,
        p.mixed,
        p.block_size,
    )
    # a lone request decodes at the spec's rate: fixed cost + one decode token = 1000 / decode ms
    c = d.step_costs
    assert c.step_ms + c.decode_token_ms == pytest.approx(20.0)
    assert c.step_ms == pytest.approx(p.fixed_share * 20.0)
    assert c.prompt_token_ms == pytest.approx(1000 / 12000)


def test_knobs_in_the_spec_win_over_the_profile():
    d = parse_deployment(
        f"{BASE},engine=vllm,slots=64,max_num_batched_tokens=2048,chunked_prefill=0,mixed=0,block_size=32,"
        "kv_blocks=5000,step_ms=12"
    )
    assert (d.slots_per_replica, d.max_num_batched_tokens, d.chunked_prefill, d.mixed) == (64, 2048, 0, 0)
    assert (d.block_size, d.kv_blocks, d.step_ms.value) == (32, 5000, 12)
    assert d.step_costs.decode_token_ms == pytest.approx(8.0)


def test_the_slot_model_stays_the_default():
    d = parse_deployment(f"{BASE},slots=8")
    assert d.engine == "slots" and not d.batching


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("engine=tgi", "engine must be one of slots, vllm, sglang, llama.cpp, got 'tgi'"),
        ("engine=vllm,max_num_batched_tokens=0", "max_num_batched_tokens must be a whole number from 1 to 1,048,576"),
        ("engine=vllm,max_num_batched_tokens=1e9", "max_num_batched_tokens must be a whole number"),
        ("engine=vllm,chunked_prefill=2", "chunked_prefill must be a whole number from 0 to 1"),
        ("engine=vllm,mixed=-1", "mixed must be a whole number from 0 to 1"),
        ("engine=vllm,block_size=0", "block_size must be a whole number from 1 to 65,536"),
        ("engine=vllm,kv_blocks=-3", "kv_blocks must be a whole number from 0 to 100,000,000"),
        ("engine=vllm,step_ms=-1", "step_ms must be a number from 0 to 600,000 ms"),
        ("engine=vllm,step_ms=30", "step_ms 30 is longer than a lone request's decode step (20 ms"),
        ("engine=vllm,slots=5000", "slots must be a whole number from 1 to 4,096"),
        ("slots=8,max_num_batched_tokens=512", "max_num_batched_tokens applies to a batching engine"),
        ("slots=8,step_ms=5", "step_ms applies to a batching engine"),
        (
            "engine=vllm,overflow_max=2,overflow_cold=20,overflow_window=60",
            "an overflow pool behind engine=vllm needs overflow_slots=",
        ),
    ],
)
def test_bad_engine_specs_are_one_line_naming_the_key(extra, message):
    with pytest.raises(SpecError) as err:
        parse_deployment(f"{BASE},{extra}")
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_serverless_pool_refuses_an_engine():
    with pytest.raises(SpecError, match="engine= applies to dedicated replicas"):
        parse_deployment("serverless:window=300,cold=20,slots=8,max=4,prefill=12000,decode=60,engine=vllm")


def test_every_knob_has_its_rule():
    for key in ("max_num_batched_tokens", "chunked_prefill", "mixed", "block_size", "kv_blocks", "step_ms"):
        assert KEY_RULES[key].problem(KEY_RULES[key].hi) is None
        assert KEY_RULES[key].problem(KEY_RULES[key].hi * 2 + 1) is not None
