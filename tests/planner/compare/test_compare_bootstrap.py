"""Bootstrap intervals on the p95 and on the difference of two endpoints' p95s (constructed data)."""

import numpy as np
import pytest

from planner.compare.bootstrap import CANNOT_TELL, Bootstraps, bootstrap_difference, bootstrap_percentile
from planner.percentiles import percentile


def _lognormal(median_ms: float, n: int, seed: int, sigma: float = 0.25) -> np.ndarray:
    return median_ms * np.exp(np.random.default_rng(seed).normal(0.0, sigma, n))


def test_p95_point_is_the_nearest_rank_p95_and_inside_its_interval():
    x = _lognormal(300, 200, seed=1)
    ci = bootstrap_percentile(x, 0.95)
    assert ci.point_ms == percentile(x.tolist(), 0.95).value
    assert ci.low_ms <= ci.point_ms <= ci.high_ms
    assert ci.n == 200 and ci.reliable
    # Interval ends are observed values (nearest rank of resampled nearest-rank p95s).
    assert ci.low_ms in set(x.tolist()) and ci.high_ms in set(x.tolist())


def test_same_seed_same_interval_and_more_samples_narrow_it():
    small, large = _lognormal(300, 100, seed=2), _lognormal(300, 3000, seed=2)
    a, b = bootstrap_percentile(small, seed=7), bootstrap_percentile(small, seed=7)
    assert (a.low_ms, a.high_ms) == (b.low_ms, b.high_ms)
    wide = bootstrap_percentile(small).high_ms - bootstrap_percentile(small).low_ms
    narrow = bootstrap_percentile(large).high_ms - bootstrap_percentile(large).low_ms
    assert narrow < wide / 2


def test_two_endpoints_that_differ_clearly_are_told_apart():
    a, b = _lognormal(300, 150, seed=3), _lognormal(600, 150, seed=4)
    d = bootstrap_difference(a, b, a="fast", b="slow")
    assert d.low_ms > 0 and d.distinguishable
    assert d.verdict == "fast is faster" and d.faster == "fast"
    assert d.low_ms <= d.point_ms <= d.high_ms
    swapped = bootstrap_difference(b, a, a="slow", b="fast")
    assert swapped.verdict == "fast is faster" and swapped.high_ms < 0
    assert "fast is faster" in d.statement() and "CI" in d.statement()


def test_two_endpoints_from_one_distribution_cannot_yet_be_told_apart():
    a, c = _lognormal(300, 150, seed=5), _lognormal(300, 150, seed=6)
    d = bootstrap_difference(a, c, a="A", b="C")
    assert d.low_ms <= 0 <= d.high_ms
    assert d.verdict == CANNOT_TELL and not d.distinguishable and d.faster is None
    assert "cannot yet tell A and C apart" in d.statement()


def test_too_few_samples_never_claims_a_winner():
    a, b = _lognormal(300, 12, seed=8), _lognormal(900, 12, seed=9)
    d = bootstrap_difference(a, b, a="A", b="B")
    assert d.verdict == "too few samples" and not d.distinguishable
    assert "need n ≥ 20" in d.statement()
    empty = bootstrap_difference([], b, a="A", b="B")
    assert empty.point_ms is None and "too few samples" in empty.statement()


def test_nan_values_are_dropped_and_large_samples_stay_cheap():
    x = np.concatenate([_lognormal(300, 50_000, seed=10), [np.nan] * 5])
    ci = bootstrap_percentile(x, 0.95, n_boot=200)
    assert ci.n == 50_000
    assert ci.high_ms - ci.low_ms < 10  # 50k samples pin the p95 to a few ms


@pytest.mark.parametrize("kwargs", [{"confidence": 1.0}, {"confidence": 0.0}, {"n_boot": 10}])
def test_bad_parameters_are_rejected_with_a_message(kwargs):
    with pytest.raises(ValueError, match="confidence|n_boot"):
        bootstrap_percentile([1.0, 2.0, 3.0], **kwargs)


def test_shared_bootstraps_give_the_same_answers_as_the_one_off_functions():
    a, b = _lognormal(300, 120, seed=12), _lognormal(360, 140, seed=13)
    boots = Bootstraps({"a": a, "b": b}, n_boot=500)
    assert boots.difference("a", "b") == bootstrap_difference(a, b, a="a", b="b", n_boot=500)
    assert boots.interval("b") == bootstrap_percentile(b, n_boot=500, stream="b")
    # An endpoint's interval does not depend on which other endpoints are compared with it.
    assert Bootstraps({"b": b, "z": a}, n_boot=500).interval("b") == boots.interval("b")
