"""The prefill slope fit: TTFT = a + b·tokens, with a quality the user can trust or not."""

from __future__ import annotations

import random

import pytest

from planner.probes.fit import fit_prefill
from planner.worksheet.provenance import Source


def test_recovers_a_known_line_and_its_rate():
    pts = [(L, 40.0 + 0.25 * L) for L in (256, 1024, 4096) for _ in range(5)]
    fit = fit_prefill(pts)
    assert fit.slope_ms_per_token == pytest.approx(0.25)
    assert fit.intercept_ms == pytest.approx(40.0)
    assert fit.ms_per_1k_tokens == pytest.approx(250.0)
    assert fit.prefill_tokens_per_s == pytest.approx(4000.0)
    assert fit.r2 == pytest.approx(1.0) and fit.quality == "good"
    assert fit.lengths == (256, 1024, 4096) and fit.n == 15


def test_noisy_points_lower_the_quality():
    rng = random.Random(1)
    tight = fit_prefill([(L, 40 + 0.25 * L + rng.gauss(0, 5)) for L in (256, 4096) for _ in range(10)])
    noisy = fit_prefill([(L, 40 + 0.25 * L + rng.gauss(0, 900)) for L in (256, 4096) for _ in range(10)])
    assert tight.quality == "good"
    assert noisy.quality in ("fair", "poor") and noisy.r2 < tight.r2


def test_flat_or_falling_ttft_is_unusable_and_has_no_rate():
    fit = fit_prefill([(256, 100.0), (4096, 90.0), (256, 101.0), (4096, 91.0)])
    assert fit.quality == "unusable" and fit.prefill_tokens_per_s is None
    with pytest.raises(ValueError, match="not positive"):
        fit.to_figure()


def test_needs_two_lengths():
    with pytest.raises(ValueError, match="two or more prompt lengths"):
        fit_prefill([(1000, 200.0), (1000, 210.0)])


def test_figure_for_the_worksheet_carries_provenance():
    fig = fit_prefill([(256, 100.0), (4096, 1060.0), (256, 101.0), (4096, 1059.0)]).to_figure(detail="sim-local")
    assert fig.unit == "tokens/s" and fig.source == Source.PROBE and fig.n == 4
    assert fig.value == pytest.approx(4000, rel=0.01)
    assert "256, 4096" in fig.window


def test_one_request_slowed_by_a_neighbour_tilts_least_squares_but_not_the_robust_fit():
    # 12.5 ms a token and 30 ms fixed, four requests at each of two lengths (server counts vary by a nonce token);
    # the first request waited 3 s behind someone else's burst.
    points = [(L + k % 2, 30 + 12.5 * (L + k % 2)) for L in (64, 512) for k in range(4)]
    points[0] = (points[0][0], points[0][1] + 3000)
    ols, robust = fit_prefill(points), fit_prefill(points, robust=True)
    assert abs(ols.intercept_ms - 30) > 300  # the least-squares line is pulled a second up at the short length
    assert robust.slope_ms_per_token == pytest.approx(12.5, rel=0.01)
    assert robust.intercept_ms == pytest.approx(30, abs=5)
