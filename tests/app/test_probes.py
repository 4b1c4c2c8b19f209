"""AppTest: the Probes view over constructed samples — summary, hour-of-day (greyed hours), warnings,
probe-now / cold-reading requests, and the segment-1 / segment-2 hand-off to the worksheet."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
import sqlalchemy as sa

from planner.endpoints.registry import add_endpoint
from planner.store import leases as lease
from planner.store import open_store
from planner.store.probes import insert_samples
from tests.app.conftest import open_page, plotly_array, store_snapshot, use_store
from tests.support.cold_readings import store_cold_reading
from tests.support.probe_rows import slot_row

HOUR = 3_600_000


def _chart(at, title_part: str) -> dict:
    for c in at.get("plotly_chart"):
        spec = json.loads(c.proto.spec)
        if title_part in str(spec["layout"].get("title", "")):
            return spec
    raise AssertionError(f"no chart titled …{title_part}…")


def _seed_into(eng, interval_s=60.0, window_s=None, api_key_env=""):
    """One endpoint "sim" with a day of samples every 2 minutes (14:00 UTC busy, 03:00 UTC thin) and one failure."""
    ep = add_endpoint(
        eng,
        {
            "name": "sim",
            "base_url": "http://127.0.0.1:1/v1",
            "model": "m",
            "interval_s": interval_s,
            "scale_down_window_s": window_s,
            "api_key_env": api_key_env,
        },
    )
    now = int(time.time() * 1000) // HOUR * HOUR
    start = now - 24 * HOUR
    rows = []
    for k in range(24 * 30):  # 24 h, every 2 minutes: 30 per UTC hour
        t = start + k * 120_000
        hour = (t // HOUR) % 24
        ttft = 200.0 + (500.0 if hour == 14 else 0.0) + (k % 7)
        rows.append(slot_row(ep.id, t, ttft, headers_ms=ttft - 20, dns_ms=1.0, connect_ms=0.4))
    # 3 o'clock UTC is thin: only 5 samples (not enough for a p95).
    rows = [r for r in rows if not ((r.started_at_ms // HOUR) % 24 == 3 and (r.started_at_ms // 120_000) % 30 >= 5)]
    rows.append(slot_row(ep.id, now - 1000))  # a failure (server_error)
    insert_samples(eng, rows)
    return ep.id


@pytest.fixture(scope="module")
def _snapshots(tmp_path_factory):
    """Each seeding (_seed_into's arguments) written once for the module: 700 samples take seconds to write."""
    made: dict[tuple, tuple] = {}

    def get(**kwargs):
        key = tuple(sorted(kwargs.items()))
        if key not in made:
            made[key] = store_snapshot(tmp_path_factory.mktemp("probes"), lambda eng: _seed_into(eng, **kwargs))
        return made[key]

    return get


@pytest.fixture
def seed(_temp_store, _snapshots):
    """seed(**kwargs) makes this test's store a copy of that seeding; returns (engine, endpoint id)."""

    def use(**kwargs):
        path, endpoint_id = _snapshots(**kwargs)
        use_store(path)
        return open_store(), endpoint_id

    return use


def test_no_endpoints_points_to_the_endpoints_page():
    at = open_page("probes")
    assert "No endpoints yet" in at.info[0].value


def test_hour_of_day_shows_p50_p95_with_n_greys_thin_hours_exports_csv_and_hands_segment_1_over(seed):
    """One open of the page on a day of samples: what it shows, then its CSV export, then the segment-1 hand-off
    (three tests once; the hand-off comes last because it opens the worksheet)."""
    seed()
    at = open_page("probes")
    assert not at.exception, at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Samples (n)"] == f"{24 * 30 - 25:,}"
    assert metrics["p50 TTFT"] == "203 ms"
    hod = _chart(at, "hour of day")
    p95 = next(t for t in hod["data"] if t["name"] == "p95")
    assert plotly_array(p95["x"]) == list(range(24))
    ys = plotly_array(p95["y"])
    assert ys[14] == 706.0 and ys[13] == 206.0  # the busy hour stands out
    n = [row[0] for row in plotly_array(p95["customdata"])]
    assert n[3] == 5 and n[14] == 30
    grey = next(t for t in hod["data"] if t["name"].startswith("p95, too few"))
    gy = plotly_array(grey["y"])
    assert np.isnan(ys[3]) and gy[3] > 0  # 5 samples: drawn in the grey trace only
    assert np.isnan(gy[14])
    # Segment 1 = worst reliable hour's p95 − quietest hour's p50.
    p50 = plotly_array(next(t for t in hod["data"] if t["name"] == "p50")["y"])
    expected = ys[14] - min(v for h, v in enumerate(p50) if h != 3)
    assert 490 <= expected <= 510
    assert any(m.label == "worst-hour p95 − quietest-hour p50" and m.value == f"{expected:,.0f} ms" for m in at.metric)
    assert not at.warning or all("worker" in w.value for w in at.warning)

    # The CSV export of the range: every row of the series (the failure too).
    [b for b in at.button if b.label.startswith("Prepare CSV")][0].click().run()
    csv_text = at.session_state["probes_csv"][1]
    lines = csv_text.strip().splitlines()
    assert lines[0].startswith("endpoint_name,id,endpoint_id") and len(lines) - 1 == 24 * 30 - 25 + 1

    # Segment 1 goes to the worksheet with provenance.
    at.button(key="use_seg1").click().run()
    assert not at.exception, at.exception
    assert 490 <= at.number_input(key="queue_ms").value <= 510
    fig = at.session_state["ws_figures"]["queue_ms"]
    # n = the samples of the hours with n ≥ 20 (the thin 03:00 hour's 5 samples do not count)
    assert fig["source"] == "probe" and "worst hour 14:00" in fig["detail"] and fig["n"] == 24 * 30 - 25 - 5
    assert fig["measured_at_ms"] <= time.time() * 1000  # never dated in the future (the range ends at midnight)
    assert "(UTC)" in fig["window"]  # the window names the viewer's zone


def test_cold_reading_shows_and_feeds_segment_2(seed):
    eng, endpoint_id = seed(window_s=300.0)
    now = int(time.time() * 1000)
    store_cold_reading(
        eng,
        endpoint_id,
        idle_s=330.0,
        cold_ttft_ms=21_400.0,
        warm_ttft_ms=250.0,
        cold_attempts=4,
        cold_status_503=3,
        requested_at_ms=now - 400_000,
        completed_at_ms=now,
    )
    at = open_page("probes")
    # 60 s probes keep a 300 s scale-down window warm: the page says so, beside segment 2 (not as a warning first).
    assert any("keep this endpoint warm" in c.value for c in at.caption)
    assert not any("keep this endpoint warm" in w.value for w in at.warning)
    assert any(m.label == "latest cold − warm" and m.value == "21,150 ms" for m in at.metric)
    at.button(key="use_seg2").click().run()
    assert at.number_input(key="cold_ms").value == 21_150.0
    assert at.session_state["ws_figures"]["cold_ms"]["source"] == "cold reading"


def test_probe_now_and_cold_reading_are_queued_for_the_worker(seed):
    eng, endpoint_id = seed(window_s=300.0)
    at = open_page("probes")
    assert any("No worker is probing" in w.value for w in at.warning)
    [b for b in at.button if b.label == "Probe now"][0].click().run()
    at.number_input(key=f"probes_idle_{endpoint_id}").set_value(45.0).run()
    [b for b in at.button if b.label == "Take a cold reading"][0].click().run()
    assert not at.exception, at.exception
    with eng.connect() as c:
        reqs = c.execute(sa.text("SELECT kind, status, idle_s FROM probe_request ORDER BY id")).all()
    assert [(r[0], r[1]) for r in reqs] == [("probe_now", "pending"), ("cold_reading", "pending")]
    assert reqs[1][2] == 45.0


def test_missing_key_and_a_live_worker_are_shown(seed, monkeypatch):
    monkeypatch.delenv("PROBES_PAGE_KEY", raising=False)
    eng, endpoint_id = seed(api_key_env="PROBES_PAGE_KEY")
    with eng.begin() as c:
        c.execute(
            sa.text(
                "INSERT INTO endpoint_status (endpoint_id, vantage, state, detail, "
                "consecutive_failures, updated_at_ms) "
                "VALUES (:e, '', 'key missing', 'API key variable PROBES_PAGE_KEY is not set', 0, 0)"
            ),
            {"e": endpoint_id},
        )
    # a live worker: its lease runs for an hour, so a slow page run on a loaded machine still finds it live
    lease.acquire(eng, "", "host:1:x", int(time.time() * 1000), ttl_s=3600)
    at = open_page("probes")
    assert any("Key missing" in e.value and "PROBES_PAGE_KEY" in e.value for e in at.error)
    assert not any("No worker is probing" in w.value for w in at.warning)


def test_a_range_older_than_retention_reads_the_hourly_rollups_and_says_so():
    import datetime as dt

    from planner.store.rollups import apply_retention

    eng = open_store()
    ep = add_endpoint(eng, {"name": "old", "base_url": "http://127.0.0.1:1/v1", "model": "m"})
    now = int(time.time() * 1000) // HOUR * HOUR
    rows = []
    for start in (now - 95 * 24 * HOUR, now - 24 * HOUR):  # one day long gone (rolled up), one day of raw samples
        for k in range(24 * 6):  # every 10 minutes
            t = start + k * 600_000
            rows.append(slot_row(ep.id, t, 300.0 + k % 13))
    insert_samples(eng, rows)
    assert apply_retention(eng, now, 90).deleted_samples == 24 * 6
    at = open_page("probes")
    today = dt.datetime.now(dt.UTC).date()
    at.date_input(key="probes_range").set_value((today - dt.timedelta(days=100), today)).run()
    assert not at.exception, at.exception
    assert any(
        "hourly rollups" in i.value and "upper bound within ~12%" in i.value and "144 ok samples" in i.value
        for i in at.info
    )
    assert any("from hourly histograms: upper bound within ~12%" in c.value for c in at.caption)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Samples (n)"] == "288"  # n stays exact: 144 rolled up + 144 raw
    hod = _chart(at, "hour of day")
    assert "from hourly rollups" in hod["layout"]["title"]["text"]
    n = [row[0] for row in plotly_array(next(t for t in hod["data"] if t["name"] == "p95")["customdata"])]
    assert n == [12] * 24  # 6 raw + 6 rolled up per hour
    # The default range (the last 7 days) is all raw: no rollup label.
    at.date_input(key="probes_range").set_value((today - dt.timedelta(days=6), today)).run()
    assert not any("hourly rollups" in i.value for i in at.info)


def test_a_base_url_in_the_provenance_caption_is_code_not_a_link():
    """Issue 28: a manual endpoint's name holds its base URL ("manual: m @ http://… (openai-chat)"); the segment
    card's provenance caption shows it as code, which Streamlit's Markdown never turns into a clickable link."""
    from planner.store.endpoints import get_or_create_manual_endpoint

    eng = open_store()
    ep = get_or_create_manual_endpoint(eng, "http://127.0.0.1:1/v1", "m", "openai-chat")
    now = int(time.time() * 1000) // HOUR * HOUR
    rows = [
        slot_row(ep.id, t, 200.0 + (300.0 if h == 2 else 0.0) + k, kind="manual")
        for h in (2, 3)
        for k in range(25)
        if (t := now - h * HOUR + k * 60_000)
    ]
    insert_samples(eng, rows)
    at = open_page("probes")
    assert not at.exception, at.exception
    captions = [c.value for c in at.caption if "http://127.0.0.1:1/v1" in c.value]
    assert captions, [c.value for c in at.caption]
    for c in captions:  # the URL only ever inside backticks: no bare http:// left for the renderer to link
        assert "`http://127.0.0.1:1/v1`" in c and "http://" not in c.replace("`http://127.0.0.1:1/v1`", ""), c
