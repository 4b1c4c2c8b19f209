"""Segment 1 (planner.worksheet.segment_figures): the worst hour's p95 − the quietest hour's p50, each chosen on its own
over the hours with n ≥ 20 — they may be the same hour — and the reason, when it cannot be computed yet, counts the
samples the endpoint's own probe interval gives an hour."""

from __future__ import annotations

import pandas as pd
import pytest

from planner.worksheet.segment_figures import hours_to_fill_words, queueing_excess, queueing_segment, segment1_figure


def _hours(rows: list[tuple[int, int, float, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["hour", "n", "p50_ms", "p95_ms"])


def test_the_worst_p95_and_the_quietest_p50_in_the_same_hour_give_that_hours_spread():
    # Issue 44's hours: 06:00 holds both the largest p95 and the smallest p50.
    q = queueing_segment(_hours([(6, 30, 154.6, 164.1), (7, 30, 155.0, 159.5)]))
    assert q.value_ms == pytest.approx(9.5)  # 164.1 − 154.6, not 159.5 − 154.6 = 4.9
    assert (q.worst_hour, q.quiet_hour) == (6, 6)
    fig = segment1_figure(_hours([(6, 30, 154.6, 164.1), (7, 30, 155.0, 159.5)]), series="s", tz="UTC", window="")
    assert fig is not None and fig.value == pytest.approx(9.5)
    assert "worst and quietest hour 06:00: p95 164 ms − p50 155 ms" in fig.detail


def test_worst_and_quietest_in_different_hours():
    q = queueing_segment(_hours([(3, 25, 100.0, 180.0), (14, 25, 300.0, 700.0), (20, 10, 50.0, 9_000.0)]))
    # 20:00 has too few samples for a p95: neither its p50 nor its p95 counts.
    assert (q.worst_hour, q.quiet_hour, q.value_ms) == (14, 3, 600.0)
    fig = segment1_figure(_hours([(3, 25, 100.0, 180.0), (14, 25, 300.0, 700.0)]), series="s", tz="UTC", window="")
    assert "worst hour 14:00 p95 700 ms − quietest 03:00 p50 100 ms" in fig.detail


def test_segment_1_is_the_tallest_bar_of_the_excess_shape():
    hours = _hours([(1, 40, 120.0, 400.0), (2, 40, 110.0, 180.0), (9, 40, 150.0, 390.0)])
    excess, quiet = queueing_excess(hours)
    assert quiet == 2 and queueing_segment(hours).value_ms == excess["excess_p95_ms"].max() == 290.0


def test_the_reason_counts_the_endpoints_own_interval():
    thin = _hours([(5, 25, 100.0, 200.0), (6, 12, 100.0, 200.0)])
    assert "60 s interval" not in (queueing_segment(thin, 300.0).reason or "")
    assert "300 s interval a day of probing gives 12 samples in every hour" in queueing_segment(thin, 300.0).reason
    assert "reaches 20 after 2 days" in queueing_segment(thin, 300.0).reason
    assert "gives 60 samples in every hour." in queueing_segment(thin, 60.0).reason
    assert hours_to_fill_words(3600.0) == (
        "At this endpoint's 3600 s interval a day of probing gives 1 sample in every hour, "
        "so every hour reaches 20 after 20 days."
    )
    assert hours_to_fill_words(None) == "" and queueing_segment(thin).reason.endswith("Keep the worker running.")
