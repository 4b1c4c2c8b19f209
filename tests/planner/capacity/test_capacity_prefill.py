"""Prefill: the anchors' worked examples, cache hits, largest prompt per interaction, measured slopes."""

import dataclasses
import math

import pytest

from planner.capacity.errors import CapacityError
from planner.capacity.prefill import estimate, largest_prompts, max_prompt_tokens, prefill_flops, rate_from_slope
from planner.capacity.specs import gpus, models
from planner.worksheet.interactions import interactions

M = {m.key: m for m in models()}
G = {g.key: g for g in gpus()}
# The anchors' worked examples use round 8B / 70B parameter counts.
M8 = dataclasses.replace(M["llama-3.1-8b"], params_b=8.0)
M70 = dataclasses.replace(M["llama-3.1-70b"], params_b=70.0)


def test_worked_example_8b_8k_on_h100():
    # (2·8e9·8192 + 2·32·8192²·4096) / (989e12 · 0.5) = 0.30 s
    e = estimate(M8, G["H100"], 8192, dtype="bf16", mfu=0.5)
    assert e.time_s == pytest.approx((2 * 8e9 * 8192 + 2 * 32 * 8192**2 * 4096) / (989e12 * 0.5))
    assert round(e.time_s, 2) == 0.30
    assert round(estimate(M8, G["H200"], 8192, dtype="fp8", mfu=0.5).time_s, 2) == 0.15


def test_worked_example_long_prompts_and_attention_share():
    e = estimate(M8, G["H100"], 32_768)
    assert round(e.time_s, 2) == 1.63
    linear, attention = prefill_flops(M8, 32_768)
    assert attention / linear == pytest.approx(0.54, abs=0.01)  # "attention adds 54%"
    assert estimate(M70, G["H100"], 32_768).time_s == pytest.approx(12.2, abs=0.1)
    assert estimate(M70, G["H100"], 32_768, dtype="fp8").time_s == pytest.approx(6.1, abs=0.05)


def test_more_gpus_divide_the_time():
    one = estimate(M70, G["H100"], 8192).time_s
    assert estimate(M70, G["H100"], 8192, gpus=4).time_s == pytest.approx(one / 4)


def test_only_uncached_tokens_are_computed():
    full = prefill_flops(M8, 8192)
    half = prefill_flops(M8, 8192, cache_hit_fraction=0.5)
    assert half[0] == pytest.approx(full[0] / 2)
    assert half[1] == pytest.approx(full[1] * 0.75)  # L² − (L/2)²
    e = estimate(M8, G["H100"], 8192, cache_hit_fraction=0.5)
    assert e.uncached_tokens == 4096
    assert e.tokens_per_s == pytest.approx(4096 / e.time_s)


def test_max_prompt_inverts_the_model():
    t_ms = estimate(M70, G["H200"], 6000, dtype="fp8", cache_hit_fraction=0.3).time_s * 1000
    assert max_prompt_tokens(M70, G["H200"], t_ms, dtype="fp8", cache_hit_fraction=0.3) == pytest.approx(6000)
    assert max_prompt_tokens(M70, G["H200"], -5) == 0
    assert math.isinf(max_prompt_tokens(M70, G["H200"], 100, cache_hit_fraction=1.0))


def test_largest_prompt_per_interaction_with_a_measured_rate():
    # 45 ms per 1K tokens → 22,222 tokens/s; budgets 200/500/1000 − 140 ms
    rate = rate_from_slope(45)
    assert rate == pytest.approx(1e6 / 45)
    t = largest_prompts(interactions(), queue_ms=60, cold_ms=0, network_ms=80, rate_tokens_per_s=rate)
    assert list(t["prefill_budget_ms"]) == [60, 360, 860]
    assert t["max_prompt_tokens_p95"].iloc[0] == pytest.approx(0.060 * rate)


def test_largest_prompt_with_no_budget_left():
    t = largest_prompts(interactions(), queue_ms=150, cold_ms=0, network_ms=80, model=M8, gpu=G["H100"])
    inline = t.iloc[0]
    assert inline["prefill_budget_ms"] < 0 and inline["max_prompt_tokens_p95"] == 0 and not inline["fits"]


def test_fp8_on_a_gpu_without_fp8_and_bad_inputs():
    with pytest.raises(CapacityError, match="no FP8"):
        estimate(M8, G["A100-80GB"], 1000, dtype="fp8")
    with pytest.raises(CapacityError, match="MFU"):
        estimate(M8, G["H100"], 1000, mfu=0)
    with pytest.raises(CapacityError, match="slope"):
        rate_from_slope(0)
    with pytest.raises(CapacityError, match="cache-hit"):
        estimate(M8, G["H100"], 1000, cache_hit_fraction=1.2)
    with pytest.raises(CapacityError, match="rate or a model"):
        largest_prompts(interactions(), queue_ms=0, cold_ms=0, network_ms=0)
