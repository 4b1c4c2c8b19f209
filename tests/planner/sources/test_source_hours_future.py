"""A row dated far ahead that an older version stored (OpenTelemetry accepted spans up to 2100; LiteLLM rows of any
year) is not a source's newest hour: `sources hours` and the Sources page show the real hours up to the newest real
request, not the 24 hours up to 2098 (issue 42, item 13)."""

from __future__ import annotations

import datetime as dt

from planner.store.source_hours import newest_ms, production_hours, request_hours, store_hours
from planner.store.sources import HOUR_MS, HourTtft, SourceKind, add_source, store_batch
from tests.planner.sources.test_source_hours import _row

NOW_MS = int(dt.datetime(2026, 12, 1, 12, tzinfo=dt.UTC).timestamp() * 1000)  # an hour's start
YEAR_2098_MS = int(dt.datetime(2098, 6, 1, tzinfo=dt.UTC).timestamp() * 1000)


def test_a_row_or_an_hour_stored_in_2098_never_hides_the_real_hours(engine):
    sid = add_source(engine, "spans", SourceKind.OTLP, "TOKEN_VAR")
    real = [_row(i, NOW_MS - 3 * HOUR_MS + i * 60_000, 200.0 + i) for i in range(30)]  # three hours ago
    store_batch(engine, sid, [*real, _row(99, YEAR_2098_MS, 50.0)], None)
    store_hours(engine, sid, [HourTtft(YEAR_2098_MS, 7.0, 1.0, 2.0, None)])  # a metric point of 2098
    want = request_hours(engine, sid, NOW_MS - 3 * HOUR_MS, NOW_MS)
    assert [h.requests for h in want] == [30.0]

    assert production_hours(engine, sid) == want  # as of the wall clock, years before 2098
    assert production_hours(engine, sid, now_ms=NOW_MS) == want
    assert newest_ms(engine, sid, NOW_MS) == real[-1]["ts_ms"]
    # a request a few hours ahead of now is inside the day of clock skew admitted: still the newest
    store_batch(engine, sid, [_row(100, NOW_MS + 5 * HOUR_MS, 300.0)], None)
    assert newest_ms(engine, sid, NOW_MS) == NOW_MS + 5 * HOUR_MS
