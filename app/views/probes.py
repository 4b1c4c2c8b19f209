"""Probes: how fast is each endpoint, at which hour, how cold? (feeds segment 1 queueing and segment 2 cold start)"""

import dataclasses
import datetime as dt
import time
from zoneinfo import ZoneInfo, available_timezones

import pandas as pd
import streamlit as st

from app import viewer, worksheet_state
from app.cache import engine
from app.charts import probes as charts
from planner.endpoints import get_endpoint
from planner.probe_analysis import segment1_figure, segment2_figure
from planner.store import database_url
from planner.store import probe_queries as pq
from planner.store import rollup_queries as rq
from planner.store.worker import create_request, endpoint_statuses
from planner.worker import lease
from planner.worker.state import worker_report
from planner.worker.cold import ColdReadingError, idle_seconds_for, keeps_itself_warm

REFRESH_S = 10

st.title("Probes")
st.caption("Scheduled TTFT probes per endpoint and vantage. Queueing shows up as a time-of-day shape your own traffic "
           "does not explain (segment 1); a cold reading times the weight load after a scale-down (segment 2).")
eng = engine()
URL = database_url()


@st.cache_data(ttl=5, show_spinner=False)
def _q(name: str, url: str, *args):
    """One cached Probes query (keyed by database URL and arguments)."""
    return getattr(pq, name)(engine(), *args)


@st.cache_data(ttl=5, show_spinner=False)
def _rq(name: str, url: str, *args):
    """One cached query over raw samples and hourly rollups (planner.store.rollup_queries)."""
    return getattr(rq, name)(engine(), *args)


@st.cache_data(ttl=5, show_spinner=False)
def _keys(url: str) -> list[pq.SeriesKey]:
    return pq.series_keys(engine())


keys = _keys(URL)
if not keys:
    st.info("No endpoints yet. Add one on the Endpoints page (or run `ttft-planner serve`, which registers the "
            "built-in simulated endpoint).")
    st.page_link("views/endpoints.py", label="Endpoints", icon=":material/dns:")
    st.stop()

c1, c2, c3 = st.columns([3, 2, 2])
key = c1.selectbox("Endpoint @ vantage", keys, format_func=lambda k: k.label, key="probes_series")
browser_tz = st.context.timezone or "UTC"
zones = sorted(available_timezones())
tz = c2.selectbox("Time zone", zones, index=zones.index(browser_tz) if browser_tz in zones else zones.index("UTC"),
                  key="probes_tz", help="Hours of day are counted in this zone (default: your browser's).")
today = dt.datetime.now(ZoneInfo(tz)).date()
picked = c3.date_input("Date range", value=(today - dt.timedelta(days=6), today), max_value=today, key="probes_range")
start_d, end_d = (picked if isinstance(picked, tuple) and len(picked) == 2 else (picked[0], picked[0]) if isinstance(picked, tuple) else (picked, picked))
start_ms = int(dt.datetime.combine(start_d, dt.time(), ZoneInfo(tz)).timestamp() * 1000)
end_ms = int(dt.datetime.combine(end_d + dt.timedelta(days=1), dt.time(), ZoneInfo(tz)).timestamp() * 1000)
window = f"{start_d} – {end_d}"

ep = get_endpoint(eng, key.endpoint_name)
status = {s["vantage"]: s for s in endpoint_statuses(eng).get(ep.id, [])}.get(key.vantage)
worker_now = worker_report(eng, key.vantage, lease.current(eng), int(time.time() * 1000), fmt_ms=viewer.fmt_ms)
if worker_now.level != "ok":  # the worker's own account: running and buffering, lease lapsed, or not running
    st.warning(worker_now.text, icon=":material/pause_circle:")
if status and status["state"] == "key missing":
    st.error(f"Key missing: {status['detail']}. The worker does not probe this endpoint until the variable is set.")
elif status and status["state"] == "paused":
    st.info(f"Cold reading in progress ({status['detail']}): scheduled probes of this endpoint are paused.",
            icon=":material/ac_unit:")
elif status and status["state"] == "failing":
    st.warning(f"Failing ({status['consecutive_failures']} in a row): {status['detail']}")
if keeps_itself_warm(ep.interval_s, ep.scale_down_window_s):
    st.warning(f"The probe interval ({ep.interval_s:g} s) is shorter than the scale-down window "
               f"({ep.scale_down_window_s:g} s): the probes themselves keep this endpoint warm, so scheduled samples never "
               "see a cold start. Take a cold reading to measure segment 2.", icon=":material/local_fire_department:")

b1, b2, b3 = st.columns([1, 2, 2])
if b1.button("Probe now", icon=":material/play_arrow:", disabled=not ep.enabled):
    create_request(eng, ep.id, "probe_now", vantage=key.vantage)
    st.toast("Probe requested: the worker runs it within a second or two.")
idle_default = ep.scale_down_window_s + max(30.0, 0.1 * ep.scale_down_window_s) if ep.scale_down_window_s else 60.0
idle = b2.number_input("Idle before the cold probe (s)", min_value=0.0, value=float(idle_default), step=30.0,
                       key=f"probes_idle_{ep.id}")
if b3.button("Take a cold reading", icon=":material/ac_unit:", disabled=not ep.enabled):
    try:
        create_request(eng, ep.id, "cold_reading", vantage=key.vantage, idle_s=idle_seconds_for(ep.scale_down_window_s, idle))
        st.toast(f"Cold reading requested: the worker pauses this endpoint, idles {idle:g} s, then probes cold and warm.")
    except (ColdReadingError, ValueError) as exc:
        st.error(str(exc))

auto = st.toggle(f"Auto-refresh every {REFRESH_S} s", value=True, key="probes_auto")


@st.fragment(run_every=REFRESH_S if auto else None)
def live_view() -> None:
    summ = _rq("summary", URL, key, start_ms, end_ms)
    roll = summ["rollup"]  # None unless part of the range is only left as hourly rollups (older than retention)
    if roll:
        def day(ms: int) -> str:
            return dt.datetime.fromtimestamp(ms / 1000, ZoneInfo(tz)).strftime("%Y-%m-%d %H:%M")

        raw_from = "no raw samples left" if roll["raw_first_ms"] is None else f"raw samples from {day(roll['raw_first_ms'])}"
        st.info(f"**Part of this range is older than the raw-sample retention** and comes from hourly rollups: "
                f"{roll['n_ok']:,} ok samples, {roll['n_failed']:,} failed, {roll['n_skipped']:,} skipped "
                f"({day(roll['first_ms'])} – {day(roll['end_ms'])}, {roll['hours']:,} hours). Percentiles that include them "
                f"are {rq.ROLLUP_LABEL}; n, failures and error rates stay exact. The time series, heatmap, ECDF, phases "
                f"and CSV show raw samples only ({raw_from}).", icon=":material/history:")
    m = st.columns(6)
    m[0].metric("samples (ok)", f"{summ['n']:,}")
    for col, p in zip(m[1:5], (50, 90, 95, 99)):
        v = summ[f"p{p}_ms"]
        reliable = summ["reliable"].get(f"p{p}", False)
        col.metric(f"p{p} TTFT" + ("" if reliable else " (too few)"), "—" if v is None else f"{v:,.0f} ms",
                   help=f"nearest rank over n={summ['n']:,}" + ("" if reliable else "; not enough samples to trust it")
                   + (f"; {summ['n_rollup']:,} of them {rq.ROLLUP_LABEL}" if summ["n_rollup"] else ""))
    rate = summ["error_rate"]
    m[5].metric("error rate", "—" if rate is None else f"{rate:.1%}", help=f"{summ['failed']:,} failed, {summ['skipped']:,} skipped slots")
    if summ["n_rollup"]:
        st.caption(f"p50 / p90 / p95 / p99 over n={summ['n']:,}, of which {summ['n_rollup']:,} {rq.ROLLUP_LABEL} "
                   "(never below the exact value).")

    mode, ts = _q("time_series", URL, key, start_ms, end_ms)
    st.plotly_chart(charts.time_series_figure(mode, ts, tz), key="probes_ts")

    hours = _rq("hour_of_day", URL, key, start_ms, end_ms, tz)
    st.plotly_chart(charts.hour_of_day_figure(hours, tz), key="probes_hod")
    with st.expander("Hour-of-day table (n, p50, p95, error rate)"):
        cols = ["hour", "n", "p50_ms", "p95_ms", "failed", "error_rate", "skipped"] + (["n_rollup"] if roll else [])
        st.dataframe(hours[cols], hide_index=True,
                     column_config={"error_rate": st.column_config.NumberColumn(format="percent"),
                                    "n_rollup": st.column_config.NumberColumn("n from rollups", help=rq.ROLLUP_LABEL)})

    seg1 = segment1_figure(hours, series=key.label, tz=tz, window=window, measured_at_ms=end_ms)
    if seg1 is not None and roll:
        seg1 = dataclasses.replace(seg1, detail=f"{seg1.detail} · {int(hours['n_rollup'].sum()):,} samples {rq.ROLLUP_LABEL}")
    readings = _q("cold_readings", URL, key.endpoint_id, key.vantage)
    done = readings[readings["state"] == "done"] if len(readings) else readings
    seg2 = segment2_figure(done.iloc[0].to_dict(), series=key.label) if len(done) else None
    def segment_card(n: int, title: str, field: str, fig, metric: str, missing: str) -> None:
        st.subheader(f"Segment {n}: {title}")
        if fig is None:
            st.info(missing)
            return
        st.metric(metric, f"{fig.value:,.0f} ms")
        st.caption(fig.describe())
        if st.button(f"Use in worksheet (segment {n})", key=f"use_seg{n}"):
            worksheet_state.offer(field, fig)
            st.switch_page("views/worksheet.py")

    s1, s2 = st.columns(2)
    with s1:
        segment_card(1, "queueing", "queue_ms", seg1, "worst-hour p95 − quietest-hour p50",
                     "Needs hours with at least 20 samples (p95) — keep the worker running (24 h at 60 s gives 60 per hour).")
    with s2:
        segment_card(2, "cold start", "cold_ms", seg2, "latest cold − warm", "No completed cold reading yet: take one above.")
    if len(readings):
        show = readings[["requested_at_ms", "state", "idle_s", "cold_ttft_ms", "warm_ttft_ms", "cold_minus_warm_ms",
                         "cold_attempts", "cold_status_503", "detail"]].copy()
        show.insert(0, "requested", pd.to_datetime(show.pop("requested_at_ms"), unit="ms", utc=True).dt.tz_convert(tz))
        st.dataframe(show, hide_index=True)
    reqs = _q("latest_requests", URL, key.endpoint_id)
    if len(reqs):
        st.caption("Latest requests: " + " · ".join(f"{r.kind} {r.status}{': ' + r.detail if r.detail else ''}"
                                                     for r in reqs.itertuples()))

    left, right = st.columns(2)
    with left:
        st.plotly_chart(charts.heatmap_figure(_q("day_hour_heatmap", URL, key, start_ms, end_ms, tz), tz), key="probes_heat")
    with right:
        st.plotly_chart(charts.ecdf_figure(_q("ecdf_points", URL, key, start_ms, end_ms)), key="probes_ecdf")
    st.plotly_chart(charts.phase_figure(_q("phase_breakdown", URL, key, start_ms, end_ms)), key="probes_phases")


live_view()

if st.button("Prepare CSV of the raw samples", icon=":material/download:"):
    st.session_state["probes_csv"] = pq.export_csv(eng, key, start_ms, end_ms)
if "probes_csv" in st.session_state:
    st.download_button("Download CSV", st.session_state["probes_csv"], file_name=f"probes-{key.endpoint_name}-{start_d}-{end_d}.csv",
                       mime="text/csv", on_click="ignore")
