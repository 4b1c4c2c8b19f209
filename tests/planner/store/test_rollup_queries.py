"""The Probes page's queries over a range older than retention: raw samples ∪ hourly rollups.

100 days of samples, retention applied with a 90-day window: over the whole range the page's summary and
hour-of-day percentiles agree with the percentiles of the original raw samples within the histogram's
stated bound (never below, at most ~12 % above), and n, failures and skipped slots are exact — on SQLite
and on the real local PostgreSQL.

The two series (hundreds of ms, and 1–40 ms) are seeded once per back end and retention applied once; what the
queries answered before retention is kept for the tests to compare with (seeding 19,200 samples per test was
most of this module's time)."""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass
from zoneinfo import ZoneInfo

import pandas as pd
import pytest

from planner.endpoints.registry import add_endpoint
from planner.percentiles import percentile
from planner.store import probe_queries as pq
from planner.store import rollup_queries as rq
from planner.store.probes import ProbeSampleRow, insert_samples
from planner.store.rollups import RetentionResult, apply_retention, bucket_index, bucket_upper_ms
from tests.support.probe_rows import STORE_BACKENDS, module_engine, slot_row

pytestmark = pytest.mark.xdist_group("test_rollup_queries")

DAY = 86_400_000
HOUR = 3_600_000
NOW = 1_796_000_000_000 // HOUR * HOUR  # late Nov 2026: 100 days back crosses the end of US daylight saving
START = NOW - 100 * DAY
STEP = 15 * 60_000  # one sample every 15 minutes: 9,600 in 100 days, 400 per hour of day
RECENT = (NOW - 10 * DAY, NOW)  # wholly inside retention
TZS = ["UTC", "America/New_York"]


def _seed(engine, name, *, step=STEP, low_ms=False, seed=7):
    ep = add_endpoint(engine, {"name": name, "base_url": "http://127.0.0.1:1/v1", "model": "m"})
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
    assert insert_samples(engine, rows) == len(rows)
    return key, rows


@dataclass
class Series:
    """One seeded series: its key, the rows stored, and what the raw-only and merged queries answered before
    retention (summary over the whole range, rq.summary too, hour_of_day per zone, and over RECENT)."""

    key: pq.SeriesKey
    rows: list[ProbeSampleRow]
    summary: dict
    rq_summary: dict
    hour_of_day: dict[str, pd.DataFrame]
    recent_summary: dict
    recent_hour_of_day: pd.DataFrame


@dataclass
class Seeded:
    engine: object
    series: dict[str, Series]  # "hundreds-of-ms", "1-40-ms"
    retention: RetentionResult


@pytest.fixture(scope="module", params=STORE_BACKENDS)
def seeded(request, tmp_path_factory):
    """Both series on one store of each back end, read before and after one apply_retention(NOW, 90 days)."""
    with module_engine(request, tmp_path_factory) as engine:
        series = {}
        for label, low_ms in (("hundreds-of-ms", False), ("1-40-ms", True)):
            key, rows = _seed(engine, label, low_ms=low_ms)
            series[label] = Series(
                key,
                rows,
                pq.summary(engine, key, START, NOW),
                rq.summary(engine, key, START, NOW),
                {tz: pq.hour_of_day(engine, key, START, NOW, tz) for tz in TZS},
                pq.summary(engine, key, *RECENT),
                pq.hour_of_day(engine, key, *RECENT, "UTC"),
            )
        yield Seeded(engine, series, apply_retention(engine, NOW, 90))


def _model(rows, cutoff, p):
    """What the merge must give: raw values as they are,
    rolled-up ones at their bucket's upper edge, clamped to the max."""
    ok = [r for r in rows if r.ok]
    vals = sorted(r.ttft_ms if r.started_at_ms >= cutoff else bucket_upper_ms(bucket_index(r.ttft_ms)) for r in ok)
    return min(percentile(vals, p).value, max(r.ttft_ms for r in ok))


def _check_bound(got, exact):
    assert exact <= got <= exact * rq.ROLLUP_BOUND * (1 + 1e-9), (got, exact)


def test_retention_deletes_every_sample_before_the_cutoff_of_both_series(seeded):
    res = seeded.retention
    assert res.cutoff_ms == (NOW - 90 * DAY) // HOUR * HOUR
    every = [r for s in seeded.series.values() for r in s.rows]
    assert res.deleted_samples == sum(1 for r in every if r.started_at_ms < res.cutoff_ms) > 0


@pytest.mark.parametrize("label", ["hundreds-of-ms", "1-40-ms"])
def test_whole_range_summary_agrees_with_the_raw_samples_within_the_bound(seeded, label):
    engine, cutoff = seeded.engine, seeded.retention.cutoff_ms
    mine = seeded.series[label]
    key, rows, before = mine.key, mine.rows, mine.summary
    assert mine.rq_summary == {**before, "n_rollup": 0, "rollup": None}  # nothing was rolled up yet

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


@pytest.mark.parametrize("tz", TZS)
def test_whole_range_hour_of_day_agrees_with_the_raw_samples_within_the_bound(seeded, tz):
    mine = seeded.series["hundreds-of-ms"]
    rows, before, cutoff = mine.rows, mine.hour_of_day[tz], seeded.retention.cutoff_ms
    hod = rq.hour_of_day(seeded.engine, mine.key, START, NOW, tz)
    assert list(hod["hour"]) == list(range(24))
    zone = ZoneInfo(tz)

    def local_hour(ms):
        return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).astimezone(zone).hour

    by_hour: dict[int, list] = {}
    for r in rows:
        by_hour.setdefault(local_hour(r.started_at_ms), []).append(r)
    for h in range(24):
        mine_h = by_hour[h]
        ok = [r.ttft_ms for r in mine_h if r.ok]
        failed = sum(1 for r in mine_h if not r.ok and r.kind != "skipped")
        row = hod.iloc[h]
        assert int(row["n"]) == len(ok) == int(before.iloc[h]["n"])
        assert int(row["failed"]) == failed and int(row["skipped"]) == sum(1 for r in mine_h if r.kind == "skipped")
        assert row["error_rate"] == pytest.approx(failed / (len(ok) + failed))
        assert int(row["n_rollup"]) == sum(1 for r in mine_h if r.ok and r.started_at_ms < cutoff) > 0
        assert bool(row["reliable_p95"])
        for p in (50, 95):
            exact = percentile(ok, p / 100).value
            assert exact == pytest.approx(before.iloc[h][f"p{p}_ms"])
            _check_bound(float(row[f"p{p}_ms"]), exact)
    # The busy hours still stand out after the roll-up.
    busy = hod[hod["hour"].isin([14, 15])] if tz == "UTC" else hod[hod["hour"].isin([9, 10])]
    assert busy["p50_ms"].min() > 500 > hod[hod["hour"] == 3]["p50_ms"].iloc[0]


def test_ranges_wholly_raw_are_exact_and_wholly_rolled_up_are_bounded(seeded):
    engine, mine = seeded.engine, seeded.series["hundreds-of-ms"]
    key, rows = mine.key, mine.rows
    # Inside retention: exactly the raw query, no rollup label.
    assert rq.summary(engine, key, *RECENT) == {**mine.recent_summary, "n_rollup": 0, "rollup": None}
    hod = rq.hour_of_day(engine, key, *RECENT, "UTC")
    assert (hod["n_rollup"] == 0).all()
    assert hod.drop(columns=["n_rollup"]).equals(mine.recent_hour_of_day)
    # Wholly before the oldest raw sample: everything from histograms, n still exact.
    old = (START + DAY, START + 5 * DAY)
    s = rq.summary(engine, key, *old)
    ok = [r.ttft_ms for r in rows if r.ok and old[0] <= r.started_at_ms < old[1]]
    assert s["n"] == s["n_rollup"] == len(ok) and s["rollup"]["hours"] == 4 * 24
    assert s["rollup"]["raw_first_ms"] >= seeded.retention.cutoff_ms
    for p in (50, 95, 99):
        _check_bound(s[f"p{p}_ms"], percentile(ok, p / 100).value)
    # A range with nothing at all.
    empty = rq.summary(engine, key, START - 10 * DAY, START)
    assert empty["n"] == 0 and empty["p95_ms"] is None and empty["n_rollup"] == 0
