"""The Probes page's queries over a range older than retention: raw samples ∪ hourly rollups.

100 days of samples, retention applied with a 90-day window: over the whole range the page's summary and
hour-of-day percentiles agree with the percentiles of the original raw samples within the histogram's
stated bound (never below, at most ~12 % above), and n, failures and skipped slots are exact — on SQLite
and on the real local PostgreSQL."""

from __future__ import annotations

import datetime as dt
import random
from zoneinfo import ZoneInfo

import pytest

from planner.endpoints import add_endpoint
from planner.stats import percentile
from planner.store import probe_queries as pq
from planner.store import rollup_queries as rq
from planner.store.probes import insert_samples
from planner.store.rollups import apply_retention, bucket_index, bucket_upper_ms
from tests.support.probe_rows import slot_row

DAY = 86_400_000
HOUR = 3_600_000
NOW = 1_796_000_000_000 // HOUR * HOUR  # late Nov 2026: 100 days back crosses the end of US daylight saving
START = NOW - 100 * DAY
STEP = 15 * 60_000  # one sample every 15 minutes: 9,600 in 100 days, 400 per hour of day


def _seed(engine, *, step=STEP, low_ms=False, seed=7):
    ep = add_endpoint(engine, {"name": f"r{seed}", "base_url": "http://127.0.0.1:1/v1", "model": "m"})
    key = pq.SeriesKey(ep.id, ep.name, "")
    rng = random.Random(seed)
    rows = []
    for k in range((NOW - START) // step):
        t = START + k * step
        hour = (t // HOUR) % 24
        if k % 37 == 0:
            rows.append(slot_row(ep.id, t))
        elif k % 53 == 0:
            rows.append(slot_row(ep.id, t, kind="skipped"))
        else:
            # a time-of-day shape (busy 13–16 UTC) with a long tail; low_ms: 1–40 ms, where 1 ms cells hold many buckets
            ttft = (
                (1 + rng.expovariate(1 / 6))
                if low_ms
                else (180 + (400 if 13 <= hour <= 16 else 0) + rng.lognormvariate(4, 0.9))
            )
            rows.append(slot_row(ep.id, t, round(ttft, 3), kind="manual" if k % 11 == 0 else "scheduled"))
    insert_samples(engine, rows)
    return key, rows


def _model(rows, cutoff, p):
    """What the merge must give: raw values as they are,
    rolled-up ones at their bucket's upper edge, clamped to the max."""
    ok = [r for r in rows if r.ok]
    vals = sorted(r.ttft_ms if r.started_at_ms >= cutoff else bucket_upper_ms(bucket_index(r.ttft_ms)) for r in ok)
    return min(percentile(vals, p).value, max(r.ttft_ms for r in ok))


def _check_bound(got, exact):
    assert exact <= got <= exact * rq.ROLLUP_BOUND * (1 + 1e-9), (got, exact)


@pytest.mark.parametrize("low_ms", [False, True], ids=["hundreds-of-ms", "1-40-ms"])
def test_whole_range_summary_agrees_with_the_raw_samples_within_the_bound(engine, low_ms):
    key, rows = _seed(engine, low_ms=low_ms)
    before = pq.summary(engine, key, START, NOW)
    assert rq.summary(engine, key, START, NOW) == {**before, "n_rollup": 0, "rollup": None}  # nothing rolled up yet

    res = apply_retention(engine, NOW, 90)
    assert res.deleted_samples > 0
    cutoff = res.cutoff_ms
    s = rq.summary(engine, key, START, NOW)
    ok = [r.ttft_ms for r in rows if r.ok]
    assert s["n"] == len(ok) == before["n"]
    assert s["n_rollup"] == sum(1 for r in rows if r.ok and r.started_at_ms < cutoff)
    assert s["failed"] == sum(1 for r in rows if not r.ok and r.kind != "skipped") == before["failed"]
    assert s["skipped"] == sum(1 for r in rows if r.kind == "skipped") == before["skipped"]
    assert s["error_rate"] == pytest.approx(before["error_rate"])
    assert s["max_ms"] == pytest.approx(max(ok)) and s["min_ms"] == pytest.approx(min(ok))
    for p in (50, 90, 95, 99):
        exact = percentile(ok, p / 100).value
        assert exact == pytest.approx(before[f"p{p}_ms"])
        _check_bound(s[f"p{p}_ms"], exact)
        assert s[f"p{p}_ms"] == pytest.approx(_model(rows, cutoff, p / 100))
    cov = s["rollup"]
    assert cov["hours"] == (cutoff - START) // HOUR and cov["first_ms"] == START and cov["end_ms"] == cutoff
    assert cov["raw_first_ms"] >= cutoff and cov["n_ok"] == s["n_rollup"]
    # The plain raw-only query now misses the rolled-up part entirely: that is what the page must not show alone.
    assert pq.summary(engine, key, START, NOW)["n"] == len(ok) - s["n_rollup"]


@pytest.mark.parametrize("tz", ["UTC", "America/New_York"])
def test_whole_range_hour_of_day_agrees_with_the_raw_samples_within_the_bound(engine, tz):
    key, rows = _seed(engine)
    before = pq.hour_of_day(engine, key, START, NOW, tz)
    res = apply_retention(engine, NOW, 90)
    hod = rq.hour_of_day(engine, key, START, NOW, tz)
    assert list(hod["hour"]) == list(range(24))
    zone = ZoneInfo(tz)

    def local_hour(ms):
        return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).astimezone(zone).hour

    by_hour: dict[int, list] = {}
    for r in rows:
        by_hour.setdefault(local_hour(r.started_at_ms), []).append(r)
    for h in range(24):
        mine = by_hour[h]
        ok = [r.ttft_ms for r in mine if r.ok]
        failed = sum(1 for r in mine if not r.ok and r.kind != "skipped")
        row = hod.iloc[h]
        assert int(row["n"]) == len(ok) == int(before.iloc[h]["n"])
        assert int(row["failed"]) == failed and int(row["skipped"]) == sum(1 for r in mine if r.kind == "skipped")
        assert row["error_rate"] == pytest.approx(failed / (len(ok) + failed))
        assert int(row["n_rollup"]) == sum(1 for r in mine if r.ok and r.started_at_ms < res.cutoff_ms) > 0
        assert bool(row["reliable_p95"])
        for p in (50, 95):
            exact = percentile(ok, p / 100).value
            assert exact == pytest.approx(before.iloc[h][f"p{p}_ms"])
            _check_bound(float(row[f"p{p}_ms"]), exact)
    # The busy hours still stand out after the roll-up.
    busy = hod[hod["hour"].isin([14, 15])] if tz == "UTC" else hod[hod["hour"].isin([9, 10])]
    assert busy["p50_ms"].min() > 500 > hod[hod["hour"] == 3]["p50_ms"].iloc[0]


def test_ranges_wholly_raw_are_exact_and_wholly_rolled_up_are_bounded(engine):
    key, rows = _seed(engine)
    recent = (NOW - 10 * DAY, NOW)
    exact_before = pq.summary(engine, key, *recent)
    hod_before = pq.hour_of_day(engine, key, *recent, "UTC")
    res = apply_retention(engine, NOW, 90)
    # Inside retention: exactly the raw query, no rollup label.
    assert rq.summary(engine, key, *recent) == {**exact_before, "n_rollup": 0, "rollup": None}
    hod = rq.hour_of_day(engine, key, *recent, "UTC")
    assert (hod["n_rollup"] == 0).all()
    assert hod.drop(columns=["n_rollup"]).equals(hod_before)
    # Wholly before the oldest raw sample: everything from histograms, n still exact.
    old = (START + DAY, START + 5 * DAY)
    s = rq.summary(engine, key, *old)
    ok = [r.ttft_ms for r in rows if r.ok and old[0] <= r.started_at_ms < old[1]]
    assert s["n"] == s["n_rollup"] == len(ok) and s["rollup"]["hours"] == 4 * 24
    assert s["rollup"]["raw_first_ms"] >= res.cutoff_ms
    for p in (50, 95, 99):
        _check_bound(s[f"p{p}_ms"], percentile(ok, p / 100).value)
    # A range with nothing at all.
    empty = rq.summary(engine, key, START - 10 * DAY, START)
    assert empty["n"] == 0 and empty["p95_ms"] is None and empty["n_rollup"] == 0
