"""A source read by the hour (planner.store.source_hours), on SQLite and PostgreSQL: an hour of stored requests gives
the nearest-rank p50/p95 of its first-token times; an hour a source reported fills an hour without requests, never
one with them; the window ends at the source's newest request, not at the wall clock."""

from __future__ import annotations

from planner.percentiles import summarize
from planner.store.source_hours import load_hours, newest_ms, production_hours, request_hours, store_hours
from planner.store.sources import HOUR_MS, HourTtft, SourceKind, add_source, get_source, store_batch

T0 = 1_794_819_600_000  # 2026-11-16 09:00 UTC, an hour's start


def _row(i: int, ts_ms: int, ttft_ms: float | None) -> dict:
    return {
        "request_id": f"r{i}",
        "ts_ms": ts_ms,
        "model": "m",
        "api_base": "https://api.example.com",
        "prompt_tokens": 100,
        "cached_tokens": 0,
        "output_tokens": 10,
        "ttft_ms": ttft_ms,
        "duration_ms": None if ttft_ms is None else ttft_ms + 50,
    }


def test_each_hour_of_requests_has_the_nearest_rank_percentiles_of_its_first_token_times(engine):
    sid = add_source(engine, "proxy", SourceKind.OTLP, "TOKEN_VAR")
    first = [(T0 + i * 60_000, 100.0 + (i * 37) % 400) for i in range(50)]  # 50 in the first hour
    third = [(T0 + 2 * HOUR_MS + i * 1000, 900.0 - i) for i in range(7)]  # 7 two hours later
    rows = [_row(i, ts, v) for i, (ts, v) in enumerate(first + third)]
    rows.append(_row(99, T0 + 2 * HOUR_MS + 30_000, None))  # no first-token time: a request, not a TTFT
    store_batch(engine, sid, rows, None)

    got = request_hours(engine, sid, T0, T0 + 3 * HOUR_MS)
    assert [h.hour_start_ms for h in got] == [T0, T0 + 2 * HOUR_MS]  # the empty hour is left out
    for h, values, n in ((got[0], [v for _, v in first], 50), (got[1], [v for _, v in third], 8)):
        want = summarize(values)
        assert (h.requests, h.p50_ms, h.p95_ms) == (n, want["p50"].value, want["p95"].value)
    assert request_hours(engine, sid, T0 + HOUR_MS, T0 + 2 * HOUR_MS) == []

    # the newest request ends the window, whatever the wall clock says
    assert newest_ms(engine, sid) == T0 + 2 * HOUR_MS + 30_000
    assert production_hours(engine, sid) == got
    assert production_hours(engine, sid, hours=1) == got[1:]


def test_a_reported_hour_fills_an_hour_without_requests_and_never_doubles_one_with_them(engine):
    sid = add_source(engine, "spans-and-metric", SourceKind.OTLP, "TOKEN_VAR")
    store_batch(engine, sid, [_row(i, T0 + i * 1000, 200.0 + i) for i in range(20)], None)
    reported = [HourTtft(T0, 500.0, 1.0, 2.0, None), HourTtft(T0 + HOUR_MS, 30.0, 310.0, 480.0, None)]
    store_hours(engine, sid, reported)
    got = production_hours(engine, sid)
    assert [(h.hour_start_ms, h.requests) for h in got] == [(T0, 20.0), (T0 + HOUR_MS, 30.0)]
    assert got[1] == reported[1]


def test_storing_an_hour_again_replaces_it_and_the_source_counts_what_its_hours_hold(engine):
    sid = add_source(engine, "prom", SourceKind.PROMETHEUS, "", url="http://prometheus:9090", profile="vllm")
    store_hours(engine, sid, [HourTtft(T0, 10.0, 100.0, 200.0, 0.5), HourTtft(T0 + HOUR_MS, 4.0, 90.0, 95.0, 0.0)])
    store_hours(engine, sid, [HourTtft(T0 + HOUR_MS, 9.0, 80.0, 150.0, 1.0, 40.0)])  # the hour that was filling
    assert load_hours(engine, sid) == [
        HourTtft(T0, 10.0, 100.0, 200.0, 0.5),
        HourTtft(T0 + HOUR_MS, 9.0, 80.0, 150.0, 1.0, 40.0),
    ]
    src = get_source(engine, "prom")
    assert (src.n_requests, src.watermark_ms, src.last_error) == (19, T0 + HOUR_MS, None)
    assert (src.url, src.profile, src.model_filter) == ("http://prometheus:9090", "vllm", None)
    assert newest_ms(engine, sid) == T0 + HOUR_MS
