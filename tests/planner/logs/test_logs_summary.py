"""The log summary (planner.logs.summarize, DuckDB): every figure against an independent computation.

tests/support/log_summary_reference.py computes each figure in plain Python, request by request; the summary must give
the same for every shipped sample and for generated traffic across a daylight-saving change, in three zones.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from planner.logs import empty_frame, read_logs, summarize
from planner.logs.distribution import ecdf_points, histogram
from planner.logs.summary import busiest_hour_words, parse_workday
from tests.support.log_summary_reference import reference_summary, same

SAMPLES = Path(__file__).resolve().parents[3] / "assets" / "sample_logs"


def frame_at(times: list[dt.datetime], prompts=None, cached=None, models=None) -> pd.DataFrame:
    n = len(times)
    f = empty_frame().reindex(range(n))
    f["ts_ms"] = np.array([int(t.timestamp() * 1000) for t in times], dtype=np.int64)
    f["model"] = models or ["m"] * n
    f["prompt_tokens"] = np.asarray(prompts if prompts is not None else [100] * n, dtype=np.int64)
    f["cached_tokens"] = np.asarray(cached if cached is not None else [0] * n, dtype=np.int64)
    f["output_tokens"] = np.full(n, 10, dtype=np.int64)
    f["ttft_ms"] = np.nan
    f["duration_ms"] = np.nan
    f["source"] = "t"
    return f


def nearest_rank_reference(values, p):
    """Independent nearest-rank: the ceil(p·n)-th smallest value (numpy's inverted_cdf method)."""
    return float(np.percentile(np.asarray(values, dtype=float), p * 100, method="inverted_cdf"))


@pytest.mark.parametrize("tz", ["UTC", "Europe/Berlin", "America/St_Johns"])
def test_every_sample_gives_the_independent_summary(tz):
    for path in sorted(SAMPLES.iterdir()):
        if path.suffix not in (".jsonl", ".csv", ".json") or path.name == "gateway_custom_columns.csv":
            continue
        frame = read_logs([path], tz=tz).frame
        same(summarize(frame, tz=tz).to_dict(), reference_summary(frame, tz), path.name)


def generated_traffic(n: int = 5_000, seed: int = 7) -> pd.DataFrame:
    """2026-10-20 .. 2026-11-03 (Berlin leaves summer time on 25 October): bursts and quiet nights, missing timings,
    several models and an unnamed one."""
    rng = np.random.default_rng(seed)
    ts = np.sort(1792454400000 + rng.integers(0, 14 * 86_400_000, n))
    prompt = rng.integers(0, 40_000, n)
    return pd.DataFrame(
        {
            "ts_ms": ts,
            "model": rng.choice(["gpt-4.1", "claude-sonnet-4-5", "", "llama-3.3-70b"], n),
            "prompt_tokens": prompt,
            "cached_tokens": (prompt * rng.random(n) * (rng.random(n) < 0.6)).astype(np.int64),
            "output_tokens": rng.integers(0, 2_000, n),
            "ttft_ms": np.where(rng.random(n) < 0.3, np.nan, rng.gamma(2.0, 300.0, n)),
            "duration_ms": np.where(rng.random(n) < 0.2, np.nan, rng.gamma(2.0, 4000.0, n)),
            "source": "generated.csv",
        }
    )


def test_generated_traffic_across_a_clock_change_gives_the_independent_summary():
    frame = generated_traffic()
    for tz, workday in (("Europe/Berlin", "09:00-18:00"), ("Asia/Kolkata", "10:30-19:15"), ("UTC", "00:00-24:00")):
        got = summarize(frame, tz=tz, workday=workday).to_dict()
        same(got, reference_summary(frame, tz, workday), tz)


def test_prompt_percentiles_match_an_independent_computation():
    rng = np.random.default_rng(5)
    n = 5003
    prompts = rng.lognormal(8, 1, n).astype(int)
    start = dt.datetime(2026, 11, 16, tzinfo=dt.UTC)
    times = [start + dt.timedelta(seconds=int(s)) for s in np.sort(rng.uniform(0, 7 * 86400, n))]
    s = summarize(frame_at(times, prompts), tz="UTC")
    for key, p in (("p50", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99)):
        assert s.prompt[key].value == nearest_rank_reference(prompts, p)
        assert s.prompt[key].n == n
    assert s.prompt["max"].value == prompts.max()


def test_working_day_window_is_local_and_weekdays_only():
    berlin_9_30 = dt.datetime(2026, 11, 16, 8, 30, tzinfo=dt.UTC)  # Mon 09:30 in Berlin (UTC+1)
    times = [
        berlin_9_30,
        dt.datetime(2026, 11, 16, 7, 30, tzinfo=dt.UTC),  # Mon 08:30 Berlin: before the day
        dt.datetime(2026, 11, 16, 16, 59, tzinfo=dt.UTC),  # Mon 17:59 Berlin: inside
        dt.datetime(2026, 11, 16, 17, 0, tzinfo=dt.UTC),  # Mon 18:00 Berlin: the end is exclusive
        dt.datetime(2026, 11, 21, 10, 0, tzinfo=dt.UTC),  # Saturday
    ]
    s = summarize(frame_at(times, [1, 2, 3, 4, 5]), tz="Europe/Berlin", workday="09:00-18:00")
    assert s.prompt_workday["p50"].n == 2 and s.prompt_workday["max"].value == 3
    assert not s.prompt_workday["p95"].reliable  # n = 2 is far below 20: the page greys it
    with pytest.raises(ValueError, match="HH:MM-HH:MM"):
        parse_workday("9 to 5")
    with pytest.raises(ValueError, match="a start and a different end"):
        parse_workday("09:00-09:00")
    with pytest.raises(ValueError, match="unknown time zone"):
        summarize(frame_at(times), tz="Mars/Olympus")


def test_hourly_profile_averages_over_the_days_and_the_busiest_clock_hour_is_counted():
    start = dt.datetime(2026, 11, 16, tzinfo=dt.UTC)
    # Day 1: 360 requests 10:00–10:59 UTC; day 2: 36 requests 10:00–10:59 and one at 23:00.
    times = [start + dt.timedelta(hours=10, seconds=10 * i) for i in range(360)]
    times += [start + dt.timedelta(days=1, hours=10, seconds=100 * i) for i in range(36)]
    times += [start + dt.timedelta(days=1, hours=23)]
    s = summarize(frame_at(times), tz="UTC")
    prof = s.hourly
    assert list(prof.columns) == [
        "hour",
        "requests",
        "requests_per_s",
        "prompt_tokens",
        "cached_tokens",
        "output_tokens",
        "tokens_per_hour",
    ]
    assert prof.loc[10, "requests"] == pytest.approx((360 + 36) / 2)
    assert prof.loc[23, "requests"] == pytest.approx(0.5)
    assert prof.loc[10, "tokens_per_hour"] == pytest.approx(198 * 110)
    assert (s.peak_hour_requests, s.peak_hour_covered_s) == (360, 3600.0)
    assert s.peak_hour_start_ms == int((start + dt.timedelta(hours=10)).timestamp() * 1000)
    assert s.peak_hour_rate_per_s == pytest.approx(360 / 3600)
    # In Berlin the same traffic sits at 11:00, and the 23:00 UTC request falls on a third local day
    berlin = summarize(frame_at(times), tz="Europe/Berlin").hourly
    assert berlin.loc[11, "requests"] == pytest.approx(396 / 3) and berlin.loc[0, "requests"] == pytest.approx(1 / 3)


def test_a_log_shorter_than_an_hour_counts_its_busiest_clock_hour_and_says_it_is_short():
    """Issue 43: a 57-minute trace across two clock hours showed its whole-log mean as the "peak-hour arrival rate"
    of the "busiest clock hour". The summary counts the busiest local clock hour and says the log is short."""
    start = dt.datetime(2023, 11, 16, 18, 15, tzinfo=dt.UTC)
    # 18:15–18:59: one request every 10 s (270); 19:00–19:12: one every 20 s (37)
    times = [start + dt.timedelta(seconds=10 * i) for i in range(270)]
    times += [dt.datetime(2023, 11, 16, 19, 0, tzinfo=dt.UTC) + dt.timedelta(seconds=20 * i) for i in range(37)]
    s = summarize(frame_at(times), tz="UTC")
    assert s.peak_hour_requests == 270  # the 18:00 hour, not n = 307 nor the mean rate
    assert s.peak_hour_start_ms == int(dt.datetime(2023, 11, 16, 18, tzinfo=dt.UTC).timestamp() * 1000)
    assert s.peak_hour_covered_s == 45 * 60  # from the first arrival, 18:15, to 19:00
    assert s.span_s == 57 * 60
    assert s.mean_rate_per_s == pytest.approx(306 / (57 * 60))
    words = busiest_hour_words(s)
    assert words == "2023-11-16 18:00–19:00 UTC: 270 requests (the log spans 57 min, less than an hour)"
    # In Kolkata (+05:30) the local clock hours are UTC's half hours: 18:15–18:29 UTC (90 requests) is 23:45–23:59
    # local, 18:30–19:12 UTC (180 + 37) is 00:00–00:42 on the next local day
    kolkata = summarize(frame_at(times), tz="Asia/Kolkata")
    assert kolkata.peak_hour_requests == 180 + 37 and kolkata.peak_hour_covered_s == 42 * 60
    assert busiest_hour_words(kolkata).startswith("2023-11-17 00:00–01:00 Asia/Kolkata: 217 requests")


def test_the_hour_repeated_when_clocks_go_back_is_one_clock_hour_twice_as_long():
    # Berlin, 2026-10-25: 02:00–03:00 local happens twice (00:00–01:00 and 01:00–02:00 UTC)
    night = dt.datetime(2026, 10, 25, 0, 0, tzinfo=dt.UTC)
    times = [night + dt.timedelta(minutes=i) for i in range(120)]  # 120 requests in that local hour
    times += [night + dt.timedelta(hours=5, minutes=i) for i in range(100)]  # 100 in 06:00 local, a day's hour
    frame = frame_at(times)
    s = summarize(frame, tz="Europe/Berlin")
    assert (s.peak_hour_requests, s.peak_hour_start_ms) == (120, int(night.timestamp() * 1000))
    assert s.peak_hour_rate_per_s == pytest.approx(120 / 7200)  # its requests over its two hours
    same(s.to_dict(), reference_summary(frame, "Europe/Berlin"), "fall back")


def test_a_log_with_no_cached_tokens_has_an_unknown_cache_share_everywhere():
    """Issue 43: the per-model table said 0.0 % cached for a log with no cache column while the headline said "—":
    unknown is None in the summary (the headline, the per-model rows and `logs summarize` alike)."""
    t = dt.datetime(2026, 11, 16, tzinfo=dt.UTC)
    none = summarize(frame_at([t] * 4, prompts=[1000, 1000, 2000, 4000], models=["a", "a", "b", "b"]))
    assert none.cached == {"token_fraction": None, "request_fraction": None} and not none.cache_known
    assert [r["cached_token_fraction"] for r in none.tables["models"].records] == [None, None]
    some = summarize(
        frame_at([t] * 4, prompts=[1000, 1000, 2000, 4000], cached=[0, 500, 0, 0], models=["a", "a", "b", "b"])
    )
    assert some.cached == {"token_fraction": 500 / 8000, "request_fraction": 0.25}
    # a model with no hit in a log that records hits: a measured 0 %
    assert [r["cached_token_fraction"] for r in some.tables["models"].records] == [0.25, 0.0]


def test_cached_share_and_per_model():
    t = dt.datetime(2026, 11, 16, tzinfo=dt.UTC)
    f = frame_at([t] * 4, prompts=[1000, 1000, 2000, 4000], cached=[0, 500, 1500, 0], models=["a", "a", "b", "b"])
    s = summarize(f)
    assert s.cached["token_fraction"] == pytest.approx(2000 / 8000)
    assert s.cached["request_fraction"] == pytest.approx(0.5)
    pm = s.models.set_index("model")
    assert pm.loc["a", "n"] == 2 and pm.loc["b", "prompt_tokens_p95"] == 4000
    assert pm.loc["b", "cached_token_fraction"] == pytest.approx(1500 / 6000)


def test_histogram_ecdf_and_hour_percentiles_cover_every_value():
    rng = np.random.default_rng(3)
    values = rng.integers(1, 50_000, 100_000)
    h = histogram(values, bins=30)
    assert h["count"].sum() == values.size
    e = ecdf_points(values, max_points=500)
    assert len(e) <= 500 and e["fraction"].iloc[-1] == 1.0 and e["value"].iloc[-1] == values.max()
    assert e["value"].is_monotonic_increasing
    t = dt.datetime(2026, 11, 16, tzinfo=dt.UTC)
    ph = summarize(frame_at([t + dt.timedelta(minutes=i) for i in range(120)], prompts=list(range(120)))).prompt_by_hour
    assert ph.loc[0, "n"] == 60 and ph.loc[1, "p50"] == nearest_rank_reference(range(60, 120), 0.5)
    assert ph.loc[5, "n"] == 0 and pd.isna(ph.loc[5, "p50"])


def test_summary_of_a_frame_with_ttft_and_to_dict_is_json_ready():
    t = dt.datetime(2026, 11, 16, 9, tzinfo=dt.UTC)
    f = frame_at([t + dt.timedelta(minutes=i) for i in range(30)])
    f["ttft_ms"] = np.arange(30, dtype=float) * 10
    s = summarize(f)
    assert s.ttft["p95"].value == nearest_rank_reference(np.arange(30) * 10, 0.95) and s.ttft["p95"].n == 30
    d = s.to_dict()
    json.dumps(d, allow_nan=False)
    assert d["prompt_tokens"]["p95"] == {"value": 100.0, "n": 30, "reliable": True}
    assert d["cold_exposure"][0]["window_s"] == 10
    assert len(f) == 30 and list(f.columns) == list(frame_at([t]).columns)  # the frame handed in is left as it was


def test_an_overnight_working_day_belongs_to_the_weekday_it_starts_on():
    """--workday 22:00-06:00: a night shift from each weekday evening to the next morning. Monday 22:00 to Tuesday
    06:00 counts, and so does Friday night into Saturday; Sunday night into Monday does not (it starts on a Sunday)."""
    utc = lambda *a: dt.datetime(*a, tzinfo=dt.UTC)  # noqa: E731
    times = [
        utc(2026, 11, 16, 23, 0),  # Mon 23:00: inside (Monday's shift)
        utc(2026, 11, 17, 5, 59),  # Tue 05:59: inside (Monday's shift)
        utc(2026, 11, 17, 6, 0),  # Tue 06:00: the end is exclusive
        utc(2026, 11, 17, 21, 59),  # Tue 21:59: before Tuesday's shift
        utc(2026, 11, 21, 3, 0),  # Sat 03:00: inside (Friday's shift)
        utc(2026, 11, 21, 23, 0),  # Sat 23:00: Saturday starts no shift
        utc(2026, 11, 23, 2, 0),  # Mon 02:00: Sunday's night, not a working one
    ]
    s = summarize(frame_at(times, [10, 20, 30, 40, 50, 60, 70]), tz="UTC", workday="22:00-06:00")
    assert parse_workday("22:00-06:00") == (22 * 60, 6 * 60)
    assert s.prompt_workday["p50"].n == 3 and s.prompt_workday["max"].value == 50
    assert parse_workday("18:00-00:00") == (18 * 60, 24 * 60)  # the evening, to midnight
