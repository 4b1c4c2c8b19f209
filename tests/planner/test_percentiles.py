"""Nearest-rank percentiles, checked against numpy's independent 'inverted_cdf' method."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.percentiles import ecdf, min_n_for, percentile, summarize


def test_p95_of_20_samples_is_the_19th_value():
    values = list(range(1, 21))  # 1..20
    assert percentile(values, 0.95).value == 19
    assert percentile(values, 0.95).n == 20
    # so a single cold outlier never shows in a 20-sample p95
    assert percentile([*range(1, 20), 45_000], 0.95).value == 19


def test_reliability_thresholds():
    assert min_n_for(0.95) == 20 and min_n_for(0.99) == 100 and min_n_for(0.5) == 2
    assert not percentile(range(19), 0.95).reliable
    assert percentile(range(20), 0.95).reliable
    assert not percentile(range(99), 0.99).reliable


def test_empty_and_nan_values():
    assert percentile([], 0.5).value is None and percentile([], 0.5).n == 0
    assert percentile([float("nan"), 3.0, None], 0.5).value == 3.0


def test_summarize_has_max_and_labels():
    s = summarize([5, 1, 3])
    assert s["max"].value == 5 and s["p50"].value == 3 and set(s) == {"p50", "p90", "p95", "p99", "max"}


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), min_size=1, max_size=300),
    st.sampled_from([0.5, 0.9, 0.95, 0.99, 0.25]),
)
def test_matches_numpy_inverted_cdf(values, p):
    assert percentile(values, p).value == pytest.approx(float(np.percentile(values, p * 100, method="inverted_cdf")))


def test_ecdf_is_monotone_and_ends_at_one():
    xs, ys = ecdf([3, 1, 2])
    assert xs == [1, 2, 3] and ys[-1] == 1.0 and ys == sorted(ys)
