"""Retention: raw samples older than the window become hourly histogram rollups (percentiles still readable),
the database stays bounded, and nothing is lost or counted twice — on SQLite and PostgreSQL."""

from __future__ import annotations

import random

import pytest
import sqlalchemy as sa

from planner.endpoints.registry import add_endpoint
from planner.percentiles import percentile
from planner.store import rollup_queries as rq
from planner.store.probe_queries import SeriesKey
from planner.store.probes import ProbeSampleRow, insert_samples
from planner.store.rollups import apply_retention, bucket_index, bucket_upper_ms, retention_days
from tests.support.probe_rows import slot_row

DAY = 86_400_000
HOUR = 3_600_000
NOW = 1_796_000_000_000 // HOUR * HOUR


def _rows(eid: int, start: int, hours: int, rng: random.Random) -> list[ProbeSampleRow]:
    out = []
    for k in range(hours * 60):  # one a minute
        t = start + k * 60_000
        if k % 40 == 0:
            out.append(slot_row(eid, t))
        elif k % 61 == 0:
            out.append(slot_row(eid, t, kind="skipped"))
        else:
            out.append(slot_row(eid, t, 150 + rng.expovariate(1 / 80)))
    return out


def test_a_bucket_upper_edge_is_an_upper_bound_within_twelve_percent():
    # Every rolled-up value is read as its bucket's upper edge, so every percentile read from rollups is too.
    rng = random.Random(3)
    for v in [rng.lognormvariate(5, 0.8) for _ in range(5000)] + [100.0, 0.5, 60_000.0]:
        assert v < bucket_upper_ms(bucket_index(v)) <= v * 1.123


def test_old_samples_roll_up_and_are_deleted_recent_ones_stay(engine):
    e = add_endpoint(engine, {"name": "r", "base_url": "http://127.0.0.1:1/v1", "model": "m"})
    rng = random.Random(5)
    old_start = NOW - 100 * DAY
    old = _rows(e.id, old_start, 6, rng)
    # a cold reading's pair: kept in cold_reading, never part of the series' percentiles, raw or rolled up
    cold_pair = [slot_row(e.id, old_start + 90_001, ms, kind=k) for k, ms in (("cold", 45_000.0), ("warm", 180.0))]
    recent = _rows(e.id, NOW - 2 * HOUR, 2, rng)
    insert_samples(engine, old + cold_pair + recent)
    res = apply_retention(engine, NOW, 90)
    assert res.deleted_samples == len(old) + 2 and res.rollup_hours == 6
    with engine.connect() as c:
        left = c.execute(sa.text("SELECT COUNT(*) FROM probe_sample")).scalar()
        rollups = c.execute(sa.text("SELECT * FROM probe_rollup ORDER BY hour_start_ms")).mappings().all()
    assert left == len(recent)
    assert len(rollups) == 6
    assert sum(r["n_ok"] for r in rollups) == sum(1 for r in old if r.ok)
    assert max(r["ttft_max_ms"] for r in rollups) < 45_000
    assert sum(r["n_failed"] for r in rollups) == sum(1 for r in old if not r.ok and r.kind == "scheduled")
    assert sum(r["n_skipped"] for r in rollups) == sum(1 for r in old if r.kind == "skipped")
    # What the Probes page reads of those hours: every sample counted once, p95 an upper bound within ~12 %.
    read = rq.summary(engine, SeriesKey(e.id, e.name, ""), old_start, old_start + 6 * HOUR)
    n_ok = sum(1 for r in old if r.ok)
    exact = percentile([r.ttft_ms for r in old if r.ok], 0.95).value
    assert read["n"] == read["n_rollup"] == n_ok and exact <= read["p95_ms"] <= exact * 1.123
    # Running it again changes nothing: no double counting.
    again = apply_retention(engine, NOW, 90)
    assert again.deleted_samples == 0
    with engine.connect() as c:
        assert c.execute(sa.text("SELECT SUM(n_ok) FROM probe_rollup")).scalar() == n_ok


def test_late_rows_for_a_rolled_hour_merge_into_it(engine):
    e = add_endpoint(engine, {"name": "m", "base_url": "http://127.0.0.1:1/v1", "model": "m"})
    rng = random.Random(6)
    start = NOW - 95 * DAY
    first = _rows(e.id, start, 1, rng)
    insert_samples(engine, first[:30])
    apply_retention(engine, NOW, 90)
    insert_samples(engine, first[30:])  # e.g. imported later from another vantage's backlog
    apply_retention(engine, NOW, 90)
    with engine.connect() as c:
        rows = c.execute(sa.text("SELECT n_ok, n_failed, n_skipped FROM probe_rollup")).all()
    assert len(rows) == 1 and sum(rows[0]) == 60


def test_retention_days_from_the_environment(monkeypatch):
    monkeypatch.delenv("TTFT_PLANNER_RETENTION_DAYS", raising=False)
    assert retention_days() == 90.0
    monkeypatch.setenv("TTFT_PLANNER_RETENTION_DAYS", "30")
    assert retention_days() == 30.0
    monkeypatch.setenv("TTFT_PLANNER_RETENTION_DAYS", "0")
    with pytest.raises(ValueError, match="TTFT_PLANNER_RETENTION_DAYS"):
        retention_days()


@pytest.mark.parametrize("raw", ["inf", "-inf", "nan", "1e308", "-1", "0", "1e-320", "ninety"])
def test_a_retention_setting_that_is_not_a_finite_number_in_range_is_refused_naming_it(monkeypatch, raw):
    """Issue 28: TTFT_PLANNER_RETENTION_DAYS=inf (or 1e308) was accepted and overflowed the cutoff; every value the
    rule of `worker --retention-days` refuses is refused here too, with one sentence naming the variable."""
    from planner.inputs.validate import RETENTION_DAYS

    monkeypatch.setenv("TTFT_PLANNER_RETENTION_DAYS", raw)
    with pytest.raises(ValueError) as err:
        retention_days()
    message = str(err.value)
    assert message.startswith("TTFT_PLANNER_RETENTION_DAYS ") and RETENTION_DAYS.describe() in message, message
    assert repr(raw) in message  # the value as given


def test_retention_from_a_bad_setting_deletes_nothing_and_says_why(engine, monkeypatch):
    e = add_endpoint(engine, {"name": "r", "base_url": "http://127.0.0.1:1/v1", "model": "m"})
    insert_samples(engine, _rows(e.id, NOW - 100 * DAY, 2, random.Random(1)))
    monkeypatch.setenv("TTFT_PLANNER_RETENTION_DAYS", "inf")
    with pytest.raises(ValueError, match="TTFT_PLANNER_RETENTION_DAYS .*inf"):
        apply_retention(engine, NOW)
    with pytest.raises(ValueError, match="retention days .*not a finite number"):
        apply_retention(engine, NOW, float("nan"))
    with engine.connect() as c:
        assert c.execute(sa.text("SELECT count(*) FROM probe_sample")).scalar() == 2 * 60
