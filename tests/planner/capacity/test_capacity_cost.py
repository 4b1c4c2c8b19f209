"""Serverless vs dedicated break-even: the seed's claim, the anchors' blended prices, hybrid and edge cases."""

import math

import pytest

from planner.capacity.cost import (
    HOURS_PER_MONTH,
    CostInputs,
    blended_usd_per_mtok,
    break_even,
    break_even_tokens_per_month,
    break_even_utilisation,
    capacity_tokens_per_hour,
    cost_per_mtok_at,
    hybrid_by_hour,
    monthly_cost_curve,
    summarize,
)
from planner.capacity.errors import CapacityError
from planner.capacity.specs import TokenMix, default_mix, serverless_prices

SEED_TPM = 720_000


def _inputs(**kw) -> CostInputs:
    base = dict(
        input_usd_per_mtok=0.212,
        cached_input_usd_per_mtok=0.212,
        output_usd_per_mtok=0.212,
        mix_uncached_input_tokens=1.0,
        mix_cached_input_tokens=0.0,
        mix_output_tokens=0.0,
        gpu_usd_per_hour=3.20,
        capacity_tokens_per_min=SEED_TPM,
    )
    base.update(kw)
    return CostInputs(**base)


def test_seed_claim_one_gpu_breaks_even_at_35_percent():
    # 720K tokens/min = 43.2M tokens/h; $3.20 / (0.212 × 43.2) = 0.349
    assert capacity_tokens_per_hour(SEED_TPM) == 43_200_000
    assert break_even_utilisation(3.20, 0.212, 43.2e6) == pytest.approx(3.20 / (0.212 * 43.2), rel=1e-12)
    assert round(break_even(_inputs()).break_even_utilisation, 2) == 0.35


def test_seed_claim_eight_gpu_node_needs_169_per_million():
    # The implied price P = H / (0.35 × 43.2M tokens/h): $25.60/h → $1.69/M
    be = break_even(
        _inputs(gpus_per_replica=8, input_usd_per_mtok=1.69, cached_input_usd_per_mtok=1.69, output_usd_per_mtok=1.69)
    )
    assert be.node_usd_per_hour == pytest.approx(25.60)
    assert round(be.break_even_utilisation, 2) == 0.35
    assert 25.60 / (0.35 * 43.2) == pytest.approx(1.693, abs=1e-3)


def test_copilot_mix_blended_prices_match_the_anchor_table():
    mix = default_mix()
    assert mix.cache_hit_fraction == pytest.approx(0.857, abs=1e-3)
    assert mix.input_output_ratio == pytest.approx(129, abs=0.5)
    by_key = {p.key: p for p in serverless_prices()}
    expected = {
        "fireworks-deepseek-v3": 0.33,
        "deepinfra-llama-3.1-70b": 0.23,
        "fireworks-glm-5.1": 0.45,
        "fireworks-gpt-oss-120b": 0.04,
        "deepseek-v4-pro": 0.07,
    }
    for key, usd in expected.items():
        p = by_key[key]
        got = blended_usd_per_mtok(mix, p.input_usd_per_mtok, p.effective_cached_usd_per_mtok, p.output_usd_per_mtok)
        assert round(got, 2) == usd, key


def test_blended_price_by_hand():
    mix = TokenMix(uncached_input_tokens=10, cached_input_tokens=80, output_tokens=10)
    # (10·1.0 + 80·0.1 + 10·4.0) / 100 = 0.58
    assert blended_usd_per_mtok(mix, 1.0, 0.1, 4.0) == pytest.approx(0.58)


def test_at_fireworks_deepseek_price_an_8_gpu_node_never_breaks_even():
    p = next(x for x in serverless_prices() if x.key == "fireworks-deepseek-v3")
    mix = default_mix()
    inputs = _inputs(
        gpus_per_replica=8,
        input_usd_per_mtok=p.input_usd_per_mtok,
        cached_input_usd_per_mtok=p.effective_cached_usd_per_mtok,
        output_usd_per_mtok=p.output_usd_per_mtok,
        mix_uncached_input_tokens=mix.uncached_input_tokens,
        mix_cached_input_tokens=mix.cached_input_tokens,
        mix_output_tokens=mix.output_tokens,
    )
    be = break_even(inputs)
    assert be.break_even_utilisation == pytest.approx(1.79, abs=0.01)
    assert be.serverless_always_cheaper
    assert "Serverless is cheaper at any utilisation" in be.verdict()
    assert "an 8-GPU replica at $25.60/h" in be.verdict()


def test_capacity_excluding_cached_tokens_scales_to_billed_tokens():
    mix = TokenMix(10, 80, 10)
    # 1,000 computed tokens/min → 60K/h computed → ×(100/20) = 300K billed tokens/h
    assert capacity_tokens_per_hour(1000, counts_cached=False, mix=mix) == pytest.approx(300_000)
    be_in = break_even(_inputs(mix_uncached_input_tokens=10, mix_cached_input_tokens=80, mix_output_tokens=10))
    be_out = break_even(
        _inputs(
            mix_uncached_input_tokens=10, mix_cached_input_tokens=80, mix_output_tokens=10, capacity_counts_cached=False
        )
    )
    assert be_out.break_even_utilisation == pytest.approx(be_in.break_even_utilisation / 5)


def test_break_even_volume_and_cost_per_mtok():
    assert break_even_tokens_per_month(3.20, 0.212) == pytest.approx(3.20 * HOURS_PER_MONTH / 0.212 * 1e6)
    # at u* the dedicated cost per 1M tokens equals the serverless price
    u = break_even_utilisation(3.20, 0.212, 43.2e6)
    assert cost_per_mtok_at(3.20, 43.2e6, u) == pytest.approx(0.212)
    assert cost_per_mtok_at(3.20, 43.2e6, 1.0) == pytest.approx(3.20 / 43.2)


def test_monthly_curve_crosses_at_break_even():
    curve = monthly_cost_curve(_inputs())
    be = break_even(_inputs())
    cheaper_dedicated = curve[curve["dedicated_usd_per_month"] < curve["serverless_usd_per_month"]]
    assert cheaper_dedicated["utilisation"].min() == pytest.approx(0.35)
    assert curve["dedicated_usd_per_month"].iloc[0] == pytest.approx(3.20 * 730)
    assert curve["serverless_usd_per_month"].iloc[-1] == pytest.approx(43.2 * 730 * be.blended_usd_per_mtok)


def test_hybrid_uses_dedicated_base_and_serverless_overflow():
    # 12 quiet hours at 10M tokens/h, 12 busy hours at 100M tokens/h; one replica = 43.2M/h
    profile = (10e6,) * 12 + (100e6,) * 12
    inputs = _inputs(hourly_tokens=profile, max_replicas=4)
    hourly = hybrid_by_hour(inputs, 1)
    assert hourly["dedicated_tokens"].iloc[0] == 10e6 and hourly["overflow_tokens"].iloc[0] == 0
    assert hourly["overflow_tokens"].iloc[23] == pytest.approx(100e6 - 43.2e6)
    s = summarize(inputs)
    assert s.replicas_for_peak == 3  # ceil(100 / 43.2)
    assert s.serverless_usd_per_month == pytest.approx((12 * 10 + 12 * 100) * 0.212 * 730 / 24)
    assert s.dedicated_usd_per_month == pytest.approx(3 * 3.20 * 730)
    assert s.hybrid_usd_per_month <= min(s.serverless_usd_per_month, s.dedicated_usd_per_month) + 1e-6
    # the hybrid base picked is the cheapest of every base tried
    for n in range(0, 5):
        assert s.hybrid_usd_per_month <= float(hybrid_by_hour(inputs, n)["total_usd"].sum()) * 730 / 24 + 1e-6


def test_zero_traffic_is_a_clear_result_not_nan():
    s = summarize(_inputs())
    assert s.monthly_tokens == 0 and s.serverless_usd_per_month == 0
    assert s.dedicated_usd_per_mtok is None
    assert any("No traffic" in n for n in s.notes)
    assert s.cheapest == "serverless"  # a hybrid of 0 dedicated replicas is serverless itself, never "hybrid"


def test_a_hybrid_without_a_dedicated_replica_is_never_called_cheapest():
    # light traffic (0.1–2.8M tokens/h): a replica would idle, so the best hybrid keeps none; summed hour by hour,
    # its cost comes out a rounding error below serverless's, which once made it "cheapest"
    light = (0.49, 2.56, 2.31, 0.84, 1.54, 1.4, 1.99, 2.39, 0.37, 0.18, 2.52, 1.36)
    light += (2.31, 0.11, 1.39, 2.19, 0.76, 2.84, 2.71, 0.19, 0.17, 1.67, 2.82, 1.21)
    s = summarize(_inputs(hourly_tokens=tuple(v * 1e6 for v in light), max_replicas=4))
    assert s.hybrid_base_replicas == 0
    assert s.hybrid_usd_per_month == pytest.approx(s.serverless_usd_per_month)
    assert s.cheapest == "serverless"
    with pytest.raises(CapacityError, match="no traffic"):
        cost_per_mtok_at(3.20, 43.2e6, 0.0)


def test_break_even_exactly_one_says_serverless_wins_in_practice():
    # H = P × C/1e6 exactly: $4.32/h, $0.1/M, 43.2M tokens/h
    be = break_even(
        _inputs(gpu_usd_per_hour=4.32, input_usd_per_mtok=0.1, cached_input_usd_per_mtok=0.1, output_usd_per_mtok=0.1)
    )
    assert be.break_even_utilisation == pytest.approx(1.0)
    assert be.serverless_always_cheaper
    assert "only at 100% utilisation" in be.verdict()


def test_capacity_zero_and_other_bad_inputs_name_the_field():
    with pytest.raises(CapacityError, match="capacity"):
        break_even(_inputs(capacity_tokens_per_min=0))
    with pytest.raises(CapacityError, match="GPUs per replica"):
        break_even(_inputs(gpus_per_replica=0))
    with pytest.raises(CapacityError, match="input price"):
        break_even(_inputs(input_usd_per_mtok=-1))
    with pytest.raises(CapacityError, match="token mix is empty"):
        break_even(_inputs(mix_uncached_input_tokens=0))
    with pytest.raises(CapacityError, match="hour 3"):
        summarize(_inputs(hourly_tokens=(0, 0, 0, math.nan) + (0,) * 20))
    with pytest.raises(CapacityError, match="exceed prompt"):
        TokenMix.from_totals(10, 20, 1)


def test_free_serverless_price_never_breaks_even():
    be = break_even(_inputs(input_usd_per_mtok=0, cached_input_usd_per_mtok=0, output_usd_per_mtok=0))
    assert math.isinf(be.break_even_utilisation)
    assert "never breaks even" in be.verdict()


def test_cost_inputs_round_trip_as_a_plain_dict():
    inputs = _inputs(hourly_tokens=tuple(float(h) * 1e6 for h in range(24)), growth_factor=1.5, price_label="x")
    d = inputs.to_dict()
    import json

    assert CostInputs.from_dict(json.loads(json.dumps(d))) == inputs
    assert inputs.monthly_tokens == pytest.approx(sum(range(24)) * 1e6 * 1.5 * 730 / 24)
    with pytest.raises(CapacityError, match="malformed"):
        CostInputs.from_dict({"gpu_usd_per_hour": 1})


def test_cost_inputs_from_a_token_mix_keep_its_three_volumes():
    mix = TokenMix.from_totals(1_000, 800, 10)
    inputs = CostInputs.from_mix(
        mix,
        input_usd_per_mtok=0.56,
        cached_input_usd_per_mtok=0.28,
        output_usd_per_mtok=1.68,
        gpu_usd_per_hour=3.20,
        capacity_tokens_per_min=SEED_TPM,
    )
    assert (inputs.mix_uncached_input_tokens, inputs.mix_cached_input_tokens, inputs.mix_output_tokens) == (
        mix.uncached_input_tokens,
        mix.cached_input_tokens,
        mix.output_tokens,
    )
    assert inputs.mix == mix
