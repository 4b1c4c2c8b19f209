"""The worksheet arithmetic, including the seed article's worked numbers."""

import math

import pytest

from planner.worksheet.budget import (
    BudgetError,
    Worksheet,
    cold_start_share,
    compute,
    compute_worksheet,
    inter_token_ms,
    stream_duration_s,
    verdict_text,
)
from planner.worksheet.provenance import Figure, Source


def test_prefill_budget_is_target_minus_the_other_three():
    r = compute(500, 60, 0, 80)
    assert r.prefill_budget_ms == 360
    assert verdict_text(r)[0] == "ok"


def test_negative_budget_names_the_segment_that_ate_it():
    r = compute(200, 30, 0, 250)
    assert r.prefill_budget_ms == -80
    assert r.culprit_segment == "network_ms"
    level, sentence = verdict_text(r)
    assert level == "error"
    assert "no model choice can fix" in sentence
    assert "Network" in sentence and "250 ms" in sentence


def test_cold_start_in_the_p95_blows_an_inline_budget():
    r = compute(200, 20, 2000, 40)
    assert r.culprit_segment == "cold_ms"
    assert "Weight loading" in verdict_text(r)[1]


def test_only_uncached_tokens_cost_prefill():
    r = compute(500, 60, 0, 80, prefill_tokens_per_s=12000, prompt_tokens_p95=4000, cache_hit_fraction=0.5)
    assert r.uncached_prompt_tokens == 2000
    assert r.prefill_needed_ms == pytest.approx(2000 / 12000 * 1000)
    assert r.prompt_fits
    # largest p95 prompt: 0.36 s × 12000 tok/s / (1 − 0.5)
    assert r.max_prompt_tokens_p95 == pytest.approx(8640)


def test_prompt_that_does_not_fit_gives_a_warning_with_the_largest_prompt():
    r = compute(200, 60, 0, 80, prefill_tokens_per_s=12000, prompt_tokens_p95=4000, cache_hit_fraction=0.5)
    assert not r.prompt_fits
    level, sentence = verdict_text(r)
    assert level == "warn"
    # every number quotes the quantity it names: budget 60 ms × 12,000 tok/s = 720 uncached tokens,
    # which is a 720 / (1 − 0.5) = 1,440-token p95 prompt at a 50 % cache-hit rate
    budget_ms = 200 - 60 - 0 - 80
    uncached_max = budget_ms / 1000 * 12000
    assert f"uncached part of the p95 prompt to {uncached_max:,.0f} tokens" in sentence
    assert f"a {uncached_max / 0.5:,.0f}-token p95 prompt at a 50% cache-hit rate" in sentence
    assert f"p95 prompt's {4000 * 0.5:,.0f} uncached tokens need {2000 / 12000 * 1000:,.0f} ms" in sentence


def test_without_caching_the_shrink_advice_quotes_the_whole_prompt():
    r = compute(200, 60, 0, 80, prefill_tokens_per_s=12000, prompt_tokens_p95=4000, cache_hit_fraction=0.0)
    sentence = verdict_text(r)[1]
    assert "Shrink the p95 prompt to 720 tokens (none of it is cached)" in sentence


def test_fully_cached_prompt_fits_any_length():
    r = compute(500, 0, 0, 0, prefill_tokens_per_s=1000, prompt_tokens_p95=10**6, cache_hit_fraction=1.0)
    assert r.prefill_needed_ms == 0 and math.isinf(r.max_prompt_tokens_p95)


def test_negative_budget_leaves_room_for_no_prompt():
    r = compute(100, 50, 0, 80, prefill_tokens_per_s=1000, prompt_tokens_p95=10)
    assert r.max_prompt_tokens_p95 == 0 and not r.prompt_fits


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"target_ms": -5, "queue_ms": 0, "cold_ms": 0, "network_ms": 0}, "target cannot be negative"),
        ({"target_ms": 0, "queue_ms": 0, "cold_ms": 0, "network_ms": 0}, "target must be greater than 0"),
        ({"target_ms": "abc", "queue_ms": 0, "cold_ms": 0, "network_ms": 0}, "target must be a number"),
        ({"target_ms": 500, "queue_ms": float("nan"), "cold_ms": 0, "network_ms": 0}, "queueing must be a number"),
        ({"target_ms": 500, "queue_ms": 0, "cold_ms": -1, "network_ms": 0}, "weight loading cannot be negative"),
        (
            {
                "target_ms": 500,
                "queue_ms": 0,
                "cold_ms": 0,
                "network_ms": 0,
                "prefill_tokens_per_s": 0,
                "prompt_tokens_p95": 10,
            },
            "prefill rate must be greater than 0",
        ),
        ({"target_ms": 500, "queue_ms": 0, "cold_ms": 0, "network_ms": 0, "cache_hit_fraction": 1.5}, "cache-hit rate"),
    ],
)
def test_bad_input_is_a_clear_error(kwargs, fragment):
    with pytest.raises(BudgetError, match=fragment):
        compute(**kwargs)


def test_seed_article_streaming_numbers():
    # "At 43 tok/s, each token after the first arrives about 23 ms apart"
    assert inter_token_ms(43) == pytest.approx(23.26, abs=0.01)
    # "A 400-token code block finishes streaming in roughly 9.3 seconds"
    assert stream_duration_s(400, 43) == pytest.approx(9.30, abs=0.01)
    # "add a 2-second cold start ... the response takes about 22% longer"
    assert cold_start_share(2.0, stream_duration_s(400, 43)) == pytest.approx(0.215, abs=0.005)


def test_worksheet_round_trips_through_a_dict_with_provenance():
    measured = Figure(
        42.0, "ms", Source.RTT, detail="aws:eu-central-1 from Berlin", n=30, measured_at_ms=1_700_000_000_000
    )
    ws = Worksheet(name="Berlin → Frankfurt", interaction="inline").with_figure("network_ms", measured)
    again = Worksheet.from_dict(ws.to_dict())
    assert again == ws
    assert again.network_ms.describe().startswith("rtt · aws:eu-central-1 from Berlin · n=30")
    assert compute_worksheet(again).target_ms == 200


def test_a_typed_edit_overrides_a_measured_figure():
    measured = Figure(42.0, "ms", Source.RTT, n=30)
    assert measured.with_value(42.0) is measured
    edited = measured.with_value(50.0)
    assert edited.source == Source.TYPED and edited.describe() == "entered by hand"


def test_malformed_worksheet_record_is_rejected_with_the_reason():
    with pytest.raises(BudgetError, match="malformed"):
        Worksheet.from_dict({"queue_ms": {"value": "x", "unit": "ms"}})
