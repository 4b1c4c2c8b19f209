"""Trace-driven cold-start exposure against hand-made traces and against e^(−λW) on a long Poisson trace."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from planner.logs import summarize
from planner.logs.exposure import cold_in_p95, poisson_cold_fraction, trace_cold_fraction

S = 1000.0  # ms per second


def cold_fraction_curve(arrival_ms, windows_s) -> pd.DataFrame:
    """The cold-start curve the log summary gives (planner.logs.summarize) for these arrivals."""
    n = len(arrival_ms)
    frame = pd.DataFrame(
        {
            "ts_ms": np.asarray(arrival_ms, dtype=np.int64),
            "model": "m",
            "prompt_tokens": 1,
            "cached_tokens": 0,
            "output_tokens": 1,
            "ttft_ms": np.full(n, np.nan),
            "duration_ms": np.full(n, np.nan),
        }
    )
    return summarize(frame, windows_s=tuple(windows_s)).cold


def test_hand_made_trace_without_service_time():
    arrivals = np.array([0, 10, 20, 100, 105, 400]) * S  # gaps 10, 10, 80, 5, 295 s
    assert trace_cold_fraction(arrivals, 60) == pytest.approx(3 / 6)  # first + 80 s + 295 s gaps
    assert trace_cold_fraction(arrivals, 300) == pytest.approx(1 / 6)  # only the first
    assert trace_cold_fraction(arrivals, 5) == pytest.approx(5 / 6)  # a gap of exactly W is still warm
    assert trace_cold_fraction(arrivals[::-1].copy(), 60) == pytest.approx(3 / 6)  # order does not matter


def test_service_time_counts_from_when_the_replica_went_idle():
    arrivals = np.array([0, 70, 200]) * S
    # idle gaps from the previous finish: 70−50 = 20 s, 200−(70+50) = 80 s
    assert trace_cold_fraction(arrivals, 60, service_ms=50 * S) == pytest.approx(2 / 3)
    assert trace_cold_fraction(arrivals, 60, service_ms=0.0) == pytest.approx(3 / 3)
    # overlapping requests: the replica is busy until the longest one finishes
    arrivals = np.array([0, 1, 100]) * S
    service = np.array([150, 1, 1]) * S
    assert trace_cold_fraction(arrivals, 10, service_ms=service) == pytest.approx(1 / 3)


def test_single_request_is_cold_and_empty_trace_is_an_error():
    assert trace_cold_fraction(np.array([5.0]), 600) == 1.0
    with pytest.raises(ValueError, match="at least one arrival"):
        trace_cold_fraction(np.array([]), 60)


def test_long_poisson_trace_matches_e_to_the_minus_lambda_w():
    rng = np.random.default_rng(2026)
    rate_per_s = 1 / 60  # one request a minute
    gaps_s = rng.exponential(1 / rate_per_s, size=200_000)
    arrivals = np.cumsum(gaps_s) * S
    for window_s in (30, 60, 300):
        expected = poisson_cold_fraction(rate_per_s, window_s)
        assert trace_cold_fraction(arrivals, window_s) == pytest.approx(expected, abs=0.005)
    # the reference's worked examples: 1 req/min → 37% cold at W = 60 s, 0.7% at 300 s
    assert poisson_cold_fraction(rate_per_s, 60) == pytest.approx(0.368, abs=0.001)
    assert poisson_cold_fraction(rate_per_s, 300) == pytest.approx(0.0067, abs=0.0001)
    curve = cold_fraction_curve(arrivals, [30, 60, 300])
    assert list(curve.columns) == ["window_s", "trace_cold_fraction", "poisson_cold_fraction"]
    assert np.allclose(curve["trace_cold_fraction"], curve["poisson_cold_fraction"], atol=0.005)


def test_curve_is_non_increasing_in_the_window_and_flags_the_p95():
    arrivals = np.cumsum(np.random.default_rng(1).exponential(120, size=5000)) * S
    curve = cold_fraction_curve(arrivals, [10, 60, 600, 3600])
    assert (np.diff(curve["trace_cold_fraction"]) <= 0).all()
    assert cold_in_p95(0.051) and not cold_in_p95(0.05)
    assert pd.isna(cold_fraction_curve(np.array([1.0]), [60])["poisson_cold_fraction"][0])


def test_summary_curve_equals_the_replay_for_any_window_with_ties_and_service_times():
    # The summary takes gaps between blocks of the shortest window's length (planner.logs.summary_sql._cold): requests
    # sharing an instant, a gap of exactly a window, windows under a millisecond and a zero window all replay as the
    # request-by-request reference does.
    rng = np.random.default_rng(43)
    arrivals = 1_780_000_000_000 + np.sort(rng.integers(0, 21_600, 4_000)) * S  # whole seconds: shared instants
    arrivals[10:13] = arrivals[9] + np.array([10, 20, 30]) * S  # gaps of exactly 10 s
    arrivals = np.sort(arrivals)
    service = np.where(rng.random(arrivals.size) < 0.3, np.nan, rng.gamma(1.5, 2_000.0, arrivals.size))
    frame = pd.DataFrame(
        {
            "ts_ms": arrivals.astype(np.int64),
            "model": "m",
            "prompt_tokens": 1,
            "cached_tokens": 0,
            "output_tokens": 1,
            "ttft_ms": np.full(arrivals.size, np.nan),
            "duration_ms": service,
        }
    )
    for windows in ((0.0, 0.0005, 1.0, 10.0), (0.0015, 2.5), (7.3, 60.0, 600.0)):
        got = summarize(frame, windows_s=windows).cold["trace_cold_fraction"].tolist()
        assert got == [trace_cold_fraction(arrivals, w, service_ms=service) for w in windows], windows
        no_service = frame.assign(duration_ms=np.nan)
        got = summarize(no_service, windows_s=windows).cold["trace_cold_fraction"].tolist()
        assert got == [trace_cold_fraction(arrivals, w) for w in windows], windows
