"""Issue 12 regressions on the Probes page: what a user reads after a cold reading, a CSV that belongs to the
selection, segment 1 from one hour, the day axis of one day, an empty range, and one definition of a sample."""

from __future__ import annotations

import datetime as dt
import time

import sqlalchemy as sa

from planner.endpoints.registry import add_endpoint
from planner.endpoints.samples import MEASURED_KINDS
from planner.store import open_store
from planner.store.probes import insert_samples
from planner.store.requests import create_request
from tests.app.conftest import open_page, plotly_array
from tests.app.test_probes import _chart
from tests.support.cold_readings import store_cold_reading
from tests.support.probe_rows import slot_row

HOUR = 3_600_000


def _endpoint(eng, name: str):
    return add_endpoint(
        eng, {"name": name, "base_url": f"http://127.0.0.1:1/{name}/v1", "model": "m", "interval_s": 60}
    )


def _samples(eng, ep, start_ms: int, n: int, ttft_ms: float, step_ms: int = 60_000, kind: str = "scheduled"):
    insert_samples(
        eng,
        [slot_row(ep.id, start_ms + i * step_ms, ttft_ms + i % 5, kind=kind) for i in range(n)],
    )


def _this_hour() -> int:
    return int(time.time() * 1000) // HOUR * HOUR


def test_a_finished_cold_reading_with_no_detail_reads_cleanly_after_refresh():
    eng = open_store()
    ep = _endpoint(eng, "sim")
    _samples(eng, ep, _this_hour(), 3, 200.0)
    now = int(time.time() * 1000)
    req = create_request(eng, ep.id, "cold_reading", idle_s=60)
    with eng.begin() as c:
        c.execute(sa.text("UPDATE probe_request SET status = 'done', detail = NULL WHERE id = :i"), {"i": req})
    store_cold_reading(
        eng,
        ep.id,
        idle_s=60.0,
        cold_ttft_ms=9_200.0,
        warm_ttft_ms=200.0,
        requested_at_ms=now - 90_000,
        completed_at_ms=now,
    )
    at = open_page("probes")
    at.run()  # the next auto-refresh
    assert not at.exception, at.exception
    latest = next(c.value for c in at.caption if c.value.startswith("Latest requests"))
    assert latest == "Latest requests: Cold reading done"
    assert at.get("plotly_chart")  # the charts are still there
    cold_table = at.dataframe[-1].value
    assert cold_table["Cold − warm (ms)"].tolist() == ["9,000 ms"] and "nan" not in cold_table.to_string().lower()


def test_the_csv_download_belongs_to_the_endpoint_it_was_prepared_for():
    eng = open_store()
    a, b = _endpoint(eng, "alpha"), _endpoint(eng, "beta")
    _samples(eng, a, _this_hour(), 4, 100.0)
    _samples(eng, b, _this_hour(), 7, 900.0)
    at = open_page("probes")
    at.selectbox(key="probes_series").set_value(
        next(k for k in at.selectbox(key="probes_series").options if k.startswith("alpha"))
    ).run()
    [x for x in at.button if x.label.startswith("Prepare CSV")][0].click().run()
    assert [d.label for d in at.get("download_button")] == ["Download CSV"]
    at.selectbox(key="probes_series").set_value(
        next(k for k in at.selectbox(key="probes_series").options if k.startswith("beta"))
    ).run()
    assert not at.get("download_button")  # alpha's rows are never offered under beta's name
    assert any("prepare it again" in c.value for c in at.caption)
    [x for x in at.button if x.label.startswith("Prepare CSV")][0].click().run()
    text = at.session_state["probes_csv"][1]
    rows = text.strip().splitlines()[1:]
    assert len(rows) == 7 and all(r.startswith("beta,") for r in rows)


def test_segment_1_from_one_hour_says_why_and_offers_no_hand_off():
    eng = open_store()
    ep = _endpoint(eng, "sim")
    start = _this_hour() - 2 * HOUR
    _samples(eng, ep, start, 60, 200.0)  # one full hour
    insert_samples(
        eng,
        [slot_row(ep.id, start + 1, 9_000.0, kind="cold")],
    )
    at = open_page("probes")
    assert not at.exception, at.exception
    assert any("at least 2 different hours of day" in i.value and "only" in i.value for i in at.info)
    assert not [b for b in at.button if b.key == "use_seg1"]
    assert {m.label: m.value for m in at.metric}["Samples (n)"] == "60"  # the cold probe is not a sample


def test_one_day_of_data_reads_as_that_day_on_the_heatmap():
    eng = open_store()
    ep = _endpoint(eng, "sim")
    _samples(eng, ep, _this_hour(), 5, 300.0)
    at = open_page("probes")
    heat = _chart(at, "by day and hour")
    assert heat["layout"]["yaxis"]["type"] == "category"
    today = dt.datetime.now(dt.UTC).date()
    assert [str(v) for v in plotly_array(heat["data"][0]["y"])] in ([str(today)], [str(today - dt.timedelta(days=1))])


def test_an_empty_range_says_no_samples_instead_of_empty_axes():
    eng = open_store()
    ep = _endpoint(eng, "sim")
    _samples(eng, ep, _this_hour() - 30 * 24 * HOUR, 5, 300.0)  # a month ago: nothing in the last 7 days
    at = open_page("probes")
    for title in ("TTFT over time", "hour of day", "by day and hour", "ECDF", "Phases"):
        spec = _chart(at, title)
        notes = [a["text"] for a in spec["layout"].get("annotations", [])]
        assert "No samples in this range" in notes, title
        assert spec["layout"]["xaxis"]["visible"] is False


def test_the_sample_count_agrees_everywhere_on_the_page():
    eng = open_store()
    ep = _endpoint(eng, "sim")
    start = _this_hour()
    _samples(eng, ep, start, 37, 200.0)
    _samples(eng, ep, start + 30_000, 2, 210.0, kind="manual")
    _samples(eng, ep, start + 45_000, 1, 9_000.0, kind="cold")
    _samples(eng, ep, start + 50_000, 1, 200.0, kind="warm")
    at = open_page("probes")
    n = 37 + 2  # scheduled + manual; the cold reading's two probes are not samples
    assert set(MEASURED_KINDS) == {"scheduled", "manual"}
    assert {m.label: m.value for m in at.metric}["Samples (n)"] == f"{n}"
    ts = _chart(at, "TTFT per sample")
    assert ts["layout"]["title"]["text"].startswith(f"TTFT per sample ({n} samples")
    assert "ECDF of TTFT (n=39)" in _chart(at, "ECDF")["layout"]["title"]["text"]
    assert any("A sample is one successful scheduled or manual" in c.value for c in at.caption)


def test_the_page_uses_the_sidebars_time_zone_and_has_none_of_its_own():
    eng = open_store()
    ep = _endpoint(eng, "sim")
    t = int(dt.datetime(2026, 11, 29, 23, 30, tzinfo=dt.UTC).timestamp() * 1000)
    if t > time.time() * 1000 - HOUR:
        t = _this_hour() - 2 * HOUR
    _samples(eng, ep, t, 3, 300.0)
    at = open_page("probes")
    assert not [s for s in at.selectbox if s.key == "probes_tz"]
    at.selectbox(key="_viewer_tz_widget").set_value("Asia/Kolkata").run()  # UTC+5:30
    assert not at.exception, at.exception
    hod = _chart(at, "hour of day")
    assert "(Asia/Kolkata)" in hod["layout"]["title"]["text"]
    local_hour = dt.datetime.fromtimestamp(t / 1000, dt.timezone(dt.timedelta(hours=5, minutes=30))).hour
    n = [
        row[0]
        for row in plotly_array(next(tr for tr in hod["data"] if tr["name"].startswith("p95, too few"))["customdata"])
    ]
    assert n[local_hour] == 3
    assert any("Date range (Asia/Kolkata)" == d.label for d in at.date_input)
