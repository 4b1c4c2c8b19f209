"""A LiteLLM spend log holding rows no real request has (dated 2999, `infinity`, a first token before the start),
with real rows before and after them: each bad row is left out with its reason on every sync that reads it, never
becomes the watermark, and the real rows are kept once each, however the pages fall (issue 42, item 6)."""

from __future__ import annotations

import datetime as dt

import pytest

from planner.sources import litellm
from planner.sources.sync import sync_source
from planner.store.sources import get_source, load_source_requests, store_batch
from tests.planner.sources import test_sources_litellm as library_tests
from tests.planner.sources.test_sources_litellm import T0, _insert, _requests, _source

pytestmark = pytest.mark.postgres

litellm_template = library_tests.litellm_template
proxy_db = library_tests.proxy_db

EPOCH_T0_MS = int(T0.replace(tzinfo=dt.UTC).timestamp() * 1000)
NOW_MS = EPOCH_T0_MS + 3_600_000  # an hour after the first request: the sync's injected "now"


def _bad(request_id: str, start, first, end) -> dict:
    return {"id": request_id, "start": start, "first": first, "end": end, "prompt": 100, "output": 10}


def _bad_rows() -> list[dict]:
    at = T0 + dt.timedelta(seconds=20)
    year_2999 = dt.datetime(2999, 1, 1)
    return [
        _bad("dated-2999", year_2999, year_2999 + dt.timedelta(milliseconds=300), year_2999 + dt.timedelta(seconds=2)),
        _bad("dated-in-two-days", T0 + dt.timedelta(days=2), None, T0 + dt.timedelta(days=2, seconds=1)),
        _bad("dated-12000", "12000-01-01", None, "12000-01-01 00:00:01"),  # PostgreSQL's years go on to 294276
        _bad("start-infinity", "infinity", "infinity", "infinity"),
        _bad("start-minus-infinity", "-infinity", None, at),
        _bad("first-token-before-start", at, at - dt.timedelta(seconds=1), at + dt.timedelta(seconds=2)),
        # a real request whose first token and end the proxy wrote as infinity: no first token, no end, not Inf
        _bad("first-and-end-infinity", at + dt.timedelta(seconds=1), "infinity", "infinity"),
    ]


def test_bad_rows_are_left_out_with_their_reason_and_never_move_the_watermark(engine, proxy_db, monkeypatch):
    good = _requests(20) + _requests(20, start_s=30)  # 0…19 s and 30…49 s after T0
    _insert(proxy_db, good + _bad_rows())
    src = _source(engine, proxy_db, monkeypatch)

    first = sync_source(engine, src, page_rows=7, now_ms=NOW_MS)  # pages of 7: bad rows inside and across pages
    why = dict(first.left_out)
    assert set(why) == {"dated-2999", "dated-12000", "dated-in-two-days", "start-infinity", "first-token-before-start"}
    assert all("1970 to 2100" in why[i] for i in ("dated-2999", "dated-12000", "start-infinity"))
    assert "more than a day in the future" in why["dated-in-two-days"]
    assert "ttft_ms is negative" in why["first-token-before-start"]
    newest = (EPOCH_T0_MS + 49_000, "chatcmpl-000049")
    assert first.new == 41 and first.watermark == newest
    src = get_source(engine, "prod")
    assert (src.watermark_ms, src.watermark_id, src.n_requests, src.last_error) == (*newest, 41, None)
    kept = {r["request_id"]: r for r in load_source_requests(engine, src.id)}
    assert set(kept) == {g["id"] for g in good} | {"first-and-end-infinity"}
    assert (kept["first-and-end-infinity"]["ttft_ms"], kept["first-and-end-infinity"]["duration_ms"]) == (None, None)

    # the bad rows after the watermark are read and left out again; the watermark stays on the newest real request
    second = sync_source(engine, src, page_rows=7, now_ms=NOW_MS + 60_000)
    assert second.new == 0 and second.watermark == newest
    assert {"dated-2999", "dated-12000", "dated-in-two-days", "start-infinity"} <= {i for i, _ in second.left_out}

    # a request written after the bad rows, started before now, is stored by the next sync
    _insert(proxy_db, _requests(1, start_s=55))
    third = sync_source(engine, get_source(engine, "prod"), page_rows=7, now_ms=NOW_MS + 120_000)
    assert third.new == 1 and third.watermark == (EPOCH_T0_MS + 55_000, "chatcmpl-000055")
    ids = [r["request_id"] for r in load_source_requests(engine, src.id)]
    assert len(ids) == len(set(ids)) == 42 and "chatcmpl-000055" in ids
    assert get_source(engine, "prod").watermark_ms == EPOCH_T0_MS + 55_000

    # what `sources test` says of the table: every row counted, its first and last start a time to show
    held = litellm.describe(litellm.connect(proxy_db))
    assert held["rows"] == 41 + 7 and held["first_ms"] == EPOCH_T0_MS
    assert held["last_ms"] == EPOCH_T0_MS + 2 * 86_400_000  # "dated-in-two-days": 2999 and on are no time to show


def test_after_a_row_dated_2999_the_next_sync_still_stores_the_new_requests(engine, proxy_db, monkeypatch):
    year_2999 = dt.datetime(2999, 1, 1)
    _insert(proxy_db, _requests(5) + [_bad("dated-2999", year_2999, None, year_2999 + dt.timedelta(seconds=1))])
    src = _source(engine, proxy_db, monkeypatch)
    assert sync_source(engine, src, now_ms=NOW_MS).new == 5
    _insert(proxy_db, _requests(3, start_s=10))
    assert sync_source(engine, get_source(engine, "prod"), now_ms=NOW_MS).new == 3


def test_rows_left_out_for_their_timings_are_read_past_once_not_again_each_sync(engine, proxy_db, monkeypatch):
    broken = []  # a run of rows longer than a page, each with its first token a second before its start
    for r in _requests(12, start_s=10):
        r["first"] = r["start"] - dt.timedelta(seconds=1)
        broken.append(r)
    _insert(proxy_db, _requests(5) + broken)
    src = _source(engine, proxy_db, monkeypatch)
    rep = sync_source(engine, src, page_rows=4, now_ms=NOW_MS)
    assert rep.new == 5 and len(rep.left_out) == 12
    assert rep.watermark == (EPOCH_T0_MS + 21_000, "chatcmpl-000021")  # "read up to" the last row read
    # without the overlap's re-read, the next sync starts at the watermark's start: the run is not read again
    again = sync_source(engine, get_source(engine, "prod"), page_rows=4, overlap_ms=0, now_ms=NOW_MS)
    assert [i for i, _ in again.left_out] == ["chatcmpl-000021"]


def test_a_watermark_an_older_version_set_in_2999_is_put_back_on_the_newest_request_stored(
    engine, proxy_db, monkeypatch
):
    _insert(proxy_db, _requests(30))
    src = _source(engine, proxy_db, monkeypatch)
    assert sync_source(engine, src, page_rows=10, now_ms=NOW_MS).new == 30
    year_2999_ms = int(dt.datetime(2999, 1, 1, tzinfo=dt.UTC).timestamp() * 1000)
    store_batch(engine, src.id, [], (year_2999_ms, "dated-2999"))  # what a sync before the fix stored
    _insert(proxy_db, _requests(10, start_s=40))

    rep = sync_source(engine, get_source(engine, "prod"), page_rows=10, now_ms=NOW_MS)
    assert rep.new == 10 and rep.watermark == (EPOCH_T0_MS + 49_000, "chatcmpl-000049")
    src = get_source(engine, "prod")
    assert (src.watermark_ms, src.n_requests) == (EPOCH_T0_MS + 49_000, 40)


def test_a_request_dated_hours_ahead_is_kept_and_never_hides_one_that_lands_later_before_it(
    engine, proxy_db, monkeypatch
):
    ahead = _requests(1, start_s=5 * 3600)[0] | {"id": "five-hours-ahead"}  # inside the day of clock skew admitted
    _insert(proxy_db, _requests(10) + [ahead])
    src = _source(engine, proxy_db, monkeypatch)
    first = sync_source(engine, src, now_ms=NOW_MS)
    assert first.new == 11 and first.watermark == (EPOCH_T0_MS + 5 * 3_600_000, "five-hours-ahead")
    # written after that sync, started before now (and hours before the row dated ahead)
    _insert(proxy_db, _requests(1, start_s=3000))
    again = sync_source(engine, get_source(engine, "prod"), now_ms=NOW_MS + 60_000)
    assert again.new == 1 and "chatcmpl-003000" in {r["request_id"] for r in load_source_requests(engine, src.id)}
