"""Summaries: percentiles against an independent computation, working-day window, traffic shape."""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
import pandas as pd
import pytest

from planner.logs import empty_frame
from planner.logs.summary import (
    cached_share,
    ecdf_points,
    histogram,
    hourly_profile,
    parse_workday,
    peak_hour_rate_per_s,
    per_hour_percentiles,
    per_model,
    summarize_logs,
    weekday_profile,
)


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


def test_prompt_percentiles_match_an_independent_computation():
    rng = np.random.default_rng(5)
    n = 5003
    prompts = rng.lognormal(8, 1, n).astype(int)
    start = dt.datetime(2026, 11, 16, tzinfo=dt.UTC)
    times = [start + dt.timedelta(seconds=int(s)) for s in np.sort(rng.uniform(0, 7 * 86400, n))]
    s = summarize_logs(frame_at(times, prompts), tz="UTC")
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
    s = summarize_logs(frame_at(times, [1, 2, 3, 4, 5]), tz="Europe/Berlin", workday="09:00-18:00")
    assert s.prompt_workday["p50"].n == 2 and s.prompt_workday["max"].value == 3
    assert not s.prompt_workday["p95"].reliable  # n = 2 is far below 20: the page greys it
    with pytest.raises(ValueError, match="HH:MM-HH:MM"):
        parse_workday("9 to 5")
    with pytest.raises(ValueError, match="start before it ends"):
        parse_workday("18:00-09:00")


def test_hourly_profile_averages_over_the_days_and_peak_hour_is_the_busiest_clock_hour():
    start = dt.datetime(2026, 11, 16, tzinfo=dt.UTC)
    # Day 1: 360 requests 10:00–10:59 UTC; day 2: 36 requests 10:00–10:59 and one at 23:00.
    times = [start + dt.timedelta(hours=10, seconds=10 * i) for i in range(360)]
    times += [start + dt.timedelta(days=1, hours=10, seconds=100 * i) for i in range(36)]
    times += [start + dt.timedelta(days=1, hours=23)]
    f = frame_at(times)
    prof = hourly_profile(f, "UTC")
    assert list(prof.columns) == [
        "hour",
        "requests",
        "requests_per_s",
        "prompt_tokens",
        "cached_tokens",
        "output_tokens",
        "tokens_per_hour",
    ]
    assert len(prof) == 24
    assert prof.loc[10, "requests"] == pytest.approx((360 + 36) / 2)
    assert prof.loc[10, "requests_per_s"] == pytest.approx(198 / 3600)
    assert prof.loc[23, "requests"] == pytest.approx(0.5)
    assert prof.loc[10, "tokens_per_hour"] == pytest.approx(198 * 110)
    assert peak_hour_rate_per_s(f, "UTC") == pytest.approx(360 / 3600)
    # In Berlin the same traffic sits at 11:00, and the 23:00 UTC request falls on a third local day
    berlin = hourly_profile(f, "Europe/Berlin")
    assert berlin.loc[11, "requests"] == pytest.approx(396 / 3) and berlin.loc[0, "requests"] == pytest.approx(1 / 3)


def test_weekday_profile_and_short_logs():
    start = dt.datetime(2026, 11, 16, 9, tzinfo=dt.UTC)  # Monday
    times = [start + dt.timedelta(days=d, minutes=m) for d in range(14) for m in range(3 if d % 7 < 5 else 1)]
    wd = weekday_profile(frame_at(times), "UTC")
    assert wd.loc[0, "requests"] == pytest.approx(3) and wd.loc[6, "requests"] == pytest.approx(1)
    # A 10-minute log: the rate over its span, not n / 3600
    short = frame_at([start + dt.timedelta(seconds=6 * i) for i in range(101)])
    assert peak_hour_rate_per_s(short) == pytest.approx(101 / 600)


def test_cached_share_and_per_model():
    t = dt.datetime(2026, 11, 16, tzinfo=dt.UTC)
    f = frame_at([t] * 4, prompts=[1000, 1000, 2000, 4000], cached=[0, 500, 1500, 0], models=["a", "a", "b", "b"])
    share = cached_share(f)
    assert share["token_fraction"] == pytest.approx(2000 / 8000)
    assert share["request_fraction"] == pytest.approx(0.5)
    pm = per_model(f).set_index("model")
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
    f = frame_at([t + dt.timedelta(minutes=i) for i in range(120)], prompts=list(range(120)))
    ph = per_hour_percentiles(f, "prompt_tokens", "UTC")
    assert ph.loc[0, "n"] == 60 and ph.loc[1, "p50"] == nearest_rank_reference(range(60, 120), 0.5)
    assert ph.loc[5, "n"] == 0 and ph.loc[5, "p50"] is None or math.isnan(ph.loc[5, "p50"])


def test_summary_of_a_frame_with_ttft_and_to_dict_is_json_ready():
    import json

    t = dt.datetime(2026, 11, 16, 9, tzinfo=dt.UTC)
    f = frame_at([t + dt.timedelta(minutes=i) for i in range(30)])
    f["ttft_ms"] = np.arange(30, dtype=float) * 10
    s = summarize_logs(f)
    assert s.ttft["p95"].value == nearest_rank_reference(np.arange(30) * 10, 0.95) and s.ttft["p95"].n == 30
    d = s.to_dict()
    json.dumps(d, allow_nan=False)
    assert d["prompt_tokens"]["p95"] == {"value": 100.0, "n": 30, "reliable": True}
    assert d["cold_exposure"][0]["window_s"] == 10


def test_local_hours_across_a_dst_change_and_a_half_hour_zone_match_the_zoneinfo_conversion():
    import datetime as dt
    from zoneinfo import ZoneInfo

    from planner.logs.summary import _Clock

    # Every 7 minutes across the EU autumn change and Newfoundland's (−03:30, changes at 05:30 UTC).
    start = int(dt.datetime(2026, 10, 24, 0, 0, tzinfo=dt.UTC).timestamp() * 1000)
    ts = np.arange(start, start + 10 * 86_400_000, 7 * 60_000, dtype=np.int64)
    frame = pd.DataFrame({"ts_ms": ts})
    for tz in ("Europe/Berlin", "America/St_Johns"):
        c = _Clock(frame, tz)
        want = [dt.datetime.fromtimestamp(t / 1000, ZoneInfo(tz)) for t in ts.tolist()]
        assert c.hour.tolist() == [w.hour for w in want]
        assert c.minute_of_day.tolist() == [w.hour * 60 + w.minute for w in want]
        assert c.dow.tolist() == [w.weekday() for w in want]
