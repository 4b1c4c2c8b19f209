"""Probes-page queries (SQL-side nearest-rank percentiles, viewer time zone) and the segment figures,
checked against planner.percentiles on SQLite and PostgreSQL. The tests only read: the series is seeded once per back
end."""

from __future__ import annotations

import csv
import datetime as dt
import io
import random
from zoneinfo import ZoneInfo

import pytest

from planner.endpoints.registry import add_endpoint
from planner.percentiles import nearest_rank_index, percentile
from planner.store import probe_queries as pq
from planner.store.probes import insert_samples
from planner.worksheet.provenance import Source
from planner.worksheet.segment_figures import queueing_excess, segment1_figure, segment2_figure
from tests.support.probe_rows import STORE_BACKENDS, module_engine, slot_row

pytestmark = pytest.mark.xdist_group("test_worker_queries")

HOUR = 3_600_000
# 2026-10-23 00:00 UTC: the range crosses Europe/Paris' switch from CEST (+2) to CET (+1) on 2026-10-25.
T0 = int(dt.datetime(2026, 10, 23, tzinfo=dt.UTC).timestamp() * 1000)


def _ttft(rng: random.Random, utc_hour: int) -> float:
    busy = 400.0 if 13 <= utc_hour <= 15 else 0.0  # queueing in the afternoon (UTC)
    return 100.0 + busy + rng.random() * 50


@pytest.fixture(scope="module", params=STORE_BACKENDS)
def series(request, tmp_path_factory):
    """Four days of one sample every 2 minutes (2,880 slots, with failures and skips), on each back end."""
    with module_engine(request, tmp_path_factory) as engine:
        yield _seed(engine)


def _seed(engine):
    e = add_endpoint(engine, {"name": "sim", "base_url": "http://127.0.0.1:1/v1", "model": "m", "interval_s": 60})
    rng = random.Random(7)
    rows = []
    for k in range(4 * 24 * 30):  # four days, a sample every 2 minutes
        t = T0 + k * 120_000
        utc_hour = (t // HOUR) % 24
        if k % 50 == 0:
            rows.append(slot_row(e.id, t))
        elif k % 97 == 0:
            rows.append(slot_row(e.id, t, kind="skipped"))
        else:
            v = _ttft(rng, utc_hour)
            rows.append(
                slot_row(
                    e.id,
                    t,
                    v,
                    headers_ms=v - 20,
                    dns_ms=1.0,
                    connect_ms=0.5,
                    first_event_ms=v - 5,
                    first_content_ms=v + 1,
                )
            )
    # Another vantage's samples must never leak into this series.
    rows.append(slot_row(e.id, T0, 99_999.0, vantage="elsewhere"))
    assert insert_samples(engine, rows) == len(rows)
    key = pq.SeriesKey(e.id, "sim", "")
    return engine, key, rows


def _local_hour(ms: int, tz: str) -> int:
    return dt.datetime.fromtimestamp(ms / 1000, tz=ZoneInfo(tz)).hour


def test_rank_cells_finds_the_nearest_rank_of_planner_stats():
    # Both two-pass queries (raw, raw ∪ rollups) pick their percentile's cell with it: it must be exact.
    rng = random.Random(11)
    for _ in range(300):
        counts = [rng.randint(0, 4) for _ in range(rng.randint(1, 12))]
        if not sum(counts):
            continue
        values = [cell for cell, c in enumerate(counts) for _ in range(c)]  # each value is its cell's index
        for p, (cell, offset) in pq.rank_cells(counts, (1, 50, 90, 95, 99, 100)).items():
            index = nearest_rank_index(p / 100, len(values))
            assert (cell, offset) == (values[index], index - sum(counts[:cell]))


@pytest.mark.parametrize("tz", ["UTC", "Europe/Paris", "America/New_York"])
def test_hour_of_day_matches_nearest_rank_in_the_viewers_time_zone(series, tz):
    engine, key, rows = series
    end = T0 + 4 * 24 * HOUR
    got = pq.hour_of_day(engine, key, T0, end, tz).set_index("hour")
    assert list(got.index) == list(range(24))
    mine = [r for r in rows if r.vantage == ""]
    for h in range(24):
        ok = [r.ttft_ms for r in mine if r.ok and _local_hour(r.started_at_ms, tz) == h]
        failed = [r for r in mine if not r.ok and r.kind == "scheduled" and _local_hour(r.started_at_ms, tz) == h]
        row = got.loc[h]
        assert row["n"] == len(ok)
        assert row["failed"] == len(failed)
        assert row["p50_ms"] == percentile(ok, 0.5).value
        assert row["p95_ms"] == percentile(ok, 0.95).value
        assert row["error_rate"] == pytest.approx(len(failed) / (len(ok) + len(failed)))
        assert bool(row["reliable_p95"]) == (len(ok) >= 20)


def test_summary_time_series_heatmap_ecdf_and_phases(series):
    engine, key, rows = series
    end = T0 + 4 * 24 * HOUR
    ok = [r.ttft_ms for r in rows if r.ok and r.vantage == ""]
    s = pq.summary(engine, key, T0, end)
    assert s["n"] == len(ok) and s["p95_ms"] == percentile(ok, 0.95).value and s["p99_ms"] == percentile(ok, 0.99).value
    assert s["reliable"]["p99"] is True and s["skipped"] == sum(r.kind == "skipped" for r in rows)

    mode, ts = pq.time_series(engine, key, T0, end, max_raw=100)
    assert mode == "bucketed" and ts["n"].sum() == len(ok) and ts["failed"].sum() == s["failed"]
    for b in ts.sort_values("n").iloc[[0, len(ts) // 2, -1]].itertuples():  # exact nearest rank per bucket
        vals = [
            r.ttft_ms for r in rows if r.ok and r.vantage == "" and b.t_ms <= r.started_at_ms < b.t_ms + b.bucket_ms
        ]
        assert (b.p50_ms, b.p95_ms) == (percentile(vals, 0.5).value, percentile(vals, 0.95).value)
    mode, raw = pq.time_series(engine, key, T0, T0 + HOUR)
    assert mode == "raw" and len(raw) == 30 and (~raw["ok"]).sum() >= 1

    heat = pq.day_hour_heatmap(engine, key, T0, end, "UTC")
    assert len(heat) == 96 and heat["n"].sum() == len(ok)
    cell = heat[(heat["day"] == dt.date(2026, 10, 24)) & (heat["hour"] == 14)].iloc[0]
    vals = [
        r.ttft_ms
        for r in rows
        if r.ok and r.vantage == "" and T0 + 24 * HOUR + 14 * HOUR <= r.started_at_ms < T0 + 24 * HOUR + 15 * HOUR
    ]
    assert cell["p50_ms"] == percentile(vals, 0.5).value

    ecdf = pq.ecdf_points(engine, key, T0, end, max_points=100)
    assert ecdf["ttft_ms"].is_monotonic_increasing and ecdf["fraction"].iloc[-1] == 1.0
    assert ecdf["ttft_ms"].iloc[-1] == max(ok) and len(ecdf) <= 110

    phases = pq.phase_breakdown(engine, key, T0, end, latest=500).set_index("phase")
    newest = [
        r.ttft_ms for r in sorted((r for r in rows if r.ok and r.vantage == ""), key=lambda r: r.started_at_ms)[-500:]
    ]
    assert phases.loc["ttft_ms", "p50_ms"] == percentile(newest, 0.5).value and phases.loc["ttft_ms", "n"] == 500
    assert phases.loc["tls_ms", "n"] == 0  # plain http: no TLS phase

    text = pq.export_csv(engine, key, T0, T0 + HOUR)
    parsed = list(csv.DictReader(io.StringIO(text)))
    assert len(parsed) == 30 and parsed[0]["endpoint_name"] == "sim" and "ttft_ms" in parsed[0]


def test_segment1_is_worst_hour_p95_minus_quietest_hour_p50(series):
    engine, key, rows = series
    hours = pq.hour_of_day(engine, key, T0, T0 + 4 * 24 * HOUR, "UTC")
    df, quiet = queueing_excess(hours)
    assert not 13 <= quiet <= 15
    fig = segment1_figure(hours, series="sim @ default", tz="UTC", window="4 days")
    busy = df[df["hour"].between(13, 15)]
    assert fig.source == Source.PROBE and fig.unit == "ms"
    assert fig.value == pytest.approx(busy["excess_p95_ms"].max(), abs=0.1)
    assert 400 < fig.value < 460  # the injected afternoon queueing, not the baseline
    assert fig.n == int(hours["n"].sum()) and "worst hour 1" in fig.detail


def test_segment1_needs_hours_with_twenty_samples():
    import pandas as pd

    sparse = pd.DataFrame({"hour": range(24), "n": [5] * 24, "p50_ms": [100.0] * 24, "p95_ms": [900.0] * 24})
    assert segment1_figure(sparse, series="x", tz="UTC", window="") is None


def test_segment2_from_a_cold_reading():
    fig = segment2_figure(
        {
            "state": "done",
            "cold_ttft_ms": 21_500.0,
            "warm_ttft_ms": 300.0,
            "cold_minus_warm_ms": 21_200.0,
            "idle_s": 330.0,
            "cold_attempts": 5,
            "cold_status_503": 4,
            "completed_at_ms": T0,
        },
        series="sim",
    )
    assert fig.value == 21_200.0 and fig.source == Source.COLD_READING and fig.measured_at_ms == T0
    assert "4 × 503" in fig.detail
    assert segment2_figure({"state": "failed", "cold_minus_warm_ms": None}, series="sim") is None
