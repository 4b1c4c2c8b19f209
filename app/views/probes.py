"""Probes: how fast is each endpoint, at which hour, how cold? (feeds segment 1 queueing and segment 2 cold start)"""

import dataclasses
import time

import pandas as pd
import streamlit as st

from planner import present
from planner.endpoints import probe_history as pq
from planner.endpoints.cold_policy import ColdReadingError, keeps_itself_warm, suggested_idle_s
from planner.endpoints.cold_readings import LATEST_RULE, cold_reading_history, cold_start_figure
from planner.endpoints.registry import get_endpoint
from planner.endpoints.samples import DEFINITION
from planner.endpoints.status import failing_warnings
from planner.fleet.requests import RequestKind, request_cold_reading, request_probe_now
from planner.fleet.watch import EndpointState, endpoint_statuses, worker_account
from planner.inputs.untrusted import md_text
from planner.inputs.validate import COLD_IDLE_S
from planner.sources.by_endpoint import EndpointAddress, ProductionTtft, production_for, users_p95_words
from planner.worksheet.provenance import Figure
from planner.worksheet.segment_figures import SEGMENT1_RULE, queueing_segment, segment1_figure
from ttft_planner_app import viewer, worksheet_state
from ttft_planner_app.auth import can, require
from ttft_planner_app.cache import engine, store_url
from ttft_planner_app.charts import probes as charts
from ttft_planner_app.date_range import date_range_input
from ttft_planner_app.store_errors import STORE_FAILURES, guarded, show_store_failure
from ttft_planner_app.viewer import fmt_ms, time_zone
from ttft_planner_app.widgets import number_input_for

REFRESH_S = 10
REQUEST_KINDS = {RequestKind.PROBE_NOW: "Probe now", RequestKind.COLD_READING: "Cold reading"}

st.title("Probes")
st.caption(
    "Scheduled TTFT probes per endpoint and vantage. Queueing shows up as a time-of-day shape your own traffic "
    "does not explain (segment 1); a cold reading times the weight load after a scale-down (segment 2)."
)
eng = engine()
URL = store_url()


# One cached reader per query (5 s, keyed by database URL and arguments), so a search for a query finds this page.
_cached = st.cache_data(ttl=5, show_spinner=False)


@_cached
def _summary(url: str, key: pq.SeriesKey, start_ms: int, end_ms: int) -> dict:
    return pq.summary(engine(), key, start_ms, end_ms)


@_cached
def _hour_of_day(url: str, key: pq.SeriesKey, start_ms: int, end_ms: int, tz: str):
    return pq.hour_of_day(engine(), key, start_ms, end_ms, tz)


@_cached
def _time_series(url: str, key: pq.SeriesKey, start_ms: int, end_ms: int):
    return pq.time_series(engine(), key, start_ms, end_ms)


@_cached
def _cold_readings(url: str, endpoint_id: int, vantage: str):
    return cold_reading_history(engine(), endpoint_id, vantage)


@_cached
def _cold_start(url: str, endpoint_id: int, vantage: str, series: str) -> Figure | None:
    return cold_start_figure(engine(), endpoint_id, vantage, series=series)


@_cached
def _latest_requests(url: str, endpoint_id: int):
    return pq.latest_requests(engine(), endpoint_id)


@_cached
def _day_hour_heatmap(url: str, key: pq.SeriesKey, start_ms: int, end_ms: int, tz: str):
    return pq.day_hour_heatmap(engine(), key, start_ms, end_ms, tz)


@_cached
def _ecdf_points(url: str, key: pq.SeriesKey, start_ms: int, end_ms: int):
    return pq.ecdf_points(engine(), key, start_ms, end_ms)


@_cached
def _phase_breakdown(url: str, key: pq.SeriesKey, start_ms: int, end_ms: int):
    return pq.phase_breakdown(engine(), key, start_ms, end_ms)


@_cached
def _production(url: str, base_url: str, model: str, start_ms: int, end_ms: int) -> ProductionTtft | None:
    return production_for(engine(), EndpointAddress(base_url, model), start_ms, end_ms)


@st.cache_data(ttl=5, show_spinner=False)
def _keys(url: str) -> list[pq.SeriesKey]:
    return pq.series_keys(engine())


keys = _keys(URL)
if not keys:
    st.info(
        "No endpoints yet. Add one on the Endpoints page (or run `ttft-planner serve`, which registers the "
        "built-in simulated endpoint)."
    )
    st.page_link("views/endpoints.py", label="Endpoints", icon=":material/dns:")
    st.stop()

c1, c2 = st.columns([3, 2])
key = c1.selectbox("Endpoint @ vantage", keys, format_func=lambda k: k.label, key="probes_series")
tz = time_zone()
rng = date_range_input(c2, "probes_range")
if rng is None:
    st.info("Pick the end of the date range.")
    st.stop()
start_d, end_d, start_ms, end_ms = rng.first, rng.last, rng.start_ms, rng.end_ms
window = rng.label

ep = get_endpoint(eng, key.endpoint_name)
assert ep.id is not None  # a stored endpoint has an id
status = {s["vantage"]: s for s in endpoint_statuses(eng).get(ep.id, [])}.get(key.vantage)
worker_now = worker_account(eng, key.vantage, int(time.time() * 1000), fmt_ms=viewer.fmt_ms)
if worker_now.level != "ok":  # the worker's own account: running and buffering, lease lapsed, or not running
    st.warning(worker_now.text, icon=":material/pause_circle:")
if status and status["state"] == EndpointState.KEY_MISSING:
    st.error(
        f"Key missing: {md_text(status['detail'])}. The worker does not probe this endpoint until the variable is set."
    )
elif status and status["state"] == EndpointState.PAUSED:
    st.info(
        f"Cold reading in progress ({md_text(status['detail'])}): scheduled probes of this endpoint are paused.",
        icon=":material/ac_unit:",
    )
elif status:  # the one failing rule of every page (planner.endpoints.status): from 3 failures in a row
    for line in failing_warnings(ep, [status]):
        st.warning(md_text(line))
self_warm = keeps_itself_warm(ep.interval_s, ep.scale_down_window_s)

b1, b2, b3 = st.columns([1, 2, 2])
if b1.button("Probe now", icon=":material/play_arrow:", disabled=not ep.enabled or not can("probe.now")) and require(
    "probe.now"
):
    try:
        request_probe_now(eng, ep.id, key.vantage)
        st.toast("Probe requested: the worker runs it within a second or two.")
    except STORE_FAILURES as exc:
        show_store_failure(exc)
idle_default = suggested_idle_s(ep.scale_down_window_s)
idle = number_input_for(
    COLD_IDLE_S, "Idle before the cold probe (s)", value=idle_default, step=30.0, key=f"probes_idle_{ep.id}", where=b2
)
if b3.button(
    "Take a cold reading", icon=":material/ac_unit:", disabled=not ep.enabled or not can("cold.request")
) and require("cold.request"):
    try:
        request_cold_reading(eng, ep.id, key.vantage, scale_down_window_s=ep.scale_down_window_s, idle_s=idle)
        st.toast(
            f"Cold reading requested: the worker pauses this endpoint, idles {idle:g} s, then probes cold and warm."
        )
    except (ColdReadingError, ValueError) as exc:
        st.error(md_text(exc))
    except STORE_FAILURES as exc:
        show_store_failure(exc)

auto = st.toggle(f"Auto-refresh every {REFRESH_S} s", value=True, key="probes_auto")


@st.fragment(run_every=REFRESH_S if auto else None)
@guarded
def live_view() -> None:
    summ = _summary(URL, key, start_ms, end_ms)
    roll = summ["rollup"]  # None unless part of the range is only left as hourly rollups (older than retention)
    if roll:

        def day(ms: int) -> str:
            return fmt_ms(ms, tz)

        raw_from = (
            "no raw samples left" if roll["raw_first_ms"] is None else f"raw samples from {day(roll['raw_first_ms'])}"
        )
        st.info(
            f"**Part of this range is older than the raw-sample retention** and comes from hourly rollups: "
            f"{roll['n_ok']:,} ok samples, {roll['n_failed']:,} failed, {roll['n_skipped']:,} skipped "
            f"({day(roll['first_ms'])} – {day(roll['end_ms'])}, {roll['hours']:,} hours). "
            "Percentiles that include them "
            f"are {pq.ROLLUP_LABEL}; n, failures and error rates stay exact. The time series, heatmap, ECDF, phases "
            f"and CSV show raw samples only ({raw_from}).",
            icon=":material/history:",
        )
    # two rows of three: a percentile on too few samples reads "263 ms (too few)", wider than a sixth of the page
    m = [*st.columns(3), *st.columns(3)]
    m[0].metric("Samples (n)", present.count(summ["n"]), help=DEFINITION)
    for col, p in zip(m[1:5], (50, 90, 95, 99), strict=True):
        v = summ[f"p{p}_ms"]
        reliable = summ["reliable"].get(f"p{p}", False)
        col.metric(
            f"p{p} TTFT",
            present.too_few(present.ms(v), reliable),
            help=f"nearest rank over n={summ['n']:,}"
            + ("" if reliable else "; not enough samples to trust it")
            + (f"; {summ['n_rollup']:,} of them {pq.ROLLUP_LABEL}" if summ["n_rollup"] else ""),
        )
    rate = summ["error_rate"]
    m[5].metric("error rate", present.pct(rate), help=f"{summ['failed']:,} failed, {summ['skipped']:,} skipped slots")
    users = users_p95_words(_production(URL, ep.base_url, ep.model, start_ms, end_ms))
    if users is None:
        st.caption(
            "Your users' p95: no live source has read a request to this endpoint (its base URL and model). Add the "
            "LiteLLM proxy your users' requests go through, or your SDKs' OpenTelemetry spans, on the Sources page to "
            "see it beside the probe's."
        )
    else:
        st.markdown(
            md_text(users),
            help="The TTFT of your users' own requests to this endpoint in the same range, from every live source "
            "whose stored API base is this endpoint's base URL and whose model is its model (nearest rank).",
        )
    st.caption(f"{DEFINITION} {window}.")
    if summ["n_rollup"]:
        st.caption(
            f"p50 / p90 / p95 / p99 over n={summ['n']:,}, of which {summ['n_rollup']:,} {pq.ROLLUP_LABEL} "
            "(never below the exact value)."
        )

    mode, ts = _time_series(URL, key, start_ms, end_ms)
    st.plotly_chart(charts.time_series_figure(mode, ts, tz), key="probes_ts")

    hours = _hour_of_day(URL, key, start_ms, end_ms, tz)
    st.plotly_chart(charts.hour_of_day_figure(hours, tz), key="probes_hod")
    with st.expander("Hour-of-day table (n, p50, p95, error rate)"):
        cols = ["hour", "n", "p50_ms", "p95_ms", "failed", "error_rate", "skipped"] + (["n_rollup"] if roll else [])
        table = hours[cols].copy()
        table["hour"] = [f"{h:02d}:00" for h in table["hour"]]
        st.dataframe(
            present.display_frame(
                table.rename(
                    columns={
                        "hour": f"Hour ({tz})",
                        "n_rollup": "n from rollups",
                        "failed": "Failed",
                        "skipped": "Skipped slots",
                        "p50_ms": "TTFT p50 (ms)",
                        "p95_ms": "TTFT p95 (ms)",
                    }
                ),
                {"error_rate": present.pct, "TTFT p50 (ms)": present.ms, "TTFT p95 (ms)": present.ms},
            ),
            hide_index=True,
        )

    queue = queueing_segment(hours, ep.interval_s)
    seg1 = segment1_figure(
        hours, series=key.label, tz=tz, window=window, measured_at_ms=min(end_ms, int(time.time() * 1000))
    )
    if seg1 is not None and roll:
        seg1 = dataclasses.replace(
            seg1, detail=f"{seg1.detail} · {int(hours['n_rollup'].sum()):,} samples {pq.ROLLUP_LABEL}"
        )
    readings = _cold_readings(URL, key.endpoint_id, key.vantage)
    seg2 = _cold_start(URL, key.endpoint_id, key.vantage, key.label)

    def segment_card(n: int, title: str, field: str, fig, metric: str, missing: str, note: str = "") -> None:
        st.subheader(f"Segment {n}: {title}")
        if note:
            st.caption(note)
        if fig is None:
            st.info(missing)
            return
        st.metric(metric, present.ms(fig.value))
        st.caption(md_text(fig.describe(tz)))  # the endpoint name may hold its base URL: text, never a link
        if st.button(f"Use in worksheet (segment {n})", key=f"use_seg{n}"):
            worksheet_state.hand_over({field: fig})

    s1, s2 = st.columns(2)
    with s1:
        segment_card(
            1,
            "queueing",
            "queue_ms",
            seg1,
            "worst-hour p95 − quietest-hour p50",
            queue.reason or "Cannot be computed from this range.",
            f"{SEGMENT1_RULE} Cold-reading probes and skipped slots never enter.",
        )
    with s2:
        warm_note = (
            (
                f"The probe interval ({ep.interval_s:g} s) is shorter than the scale-down window "
                f"({ep.scale_down_window_s:g} s), so scheduled probes keep this endpoint warm and never see a cold "
                "start: a cold reading measures it."
            )
            if self_warm
            else ""
        )
        segment_card(
            2,
            "cold start",
            "cold_ms",
            seg2,
            "latest cold − warm",
            "No completed cold reading yet: take one above.",
            f"{warm_note} {LATEST_RULE}".strip(),
        )
    if len(readings):
        show = pd.DataFrame(
            {
                f"Requested ({tz})": [fmt_ms(v, tz) for v in readings["requested_at_ms"]],
                "State": readings["state"].astype(str).str.capitalize(),
                "Idle before (s)": [present.seconds(v, 0) for v in readings["idle_s"]],
                "Cold TTFT (ms)": [present.ms(v) for v in readings["cold_ttft_ms"]],
                "Warm TTFT (ms)": [present.ms(v) for v in readings["warm_ttft_ms"]],
                "Cold − warm (ms)": [present.ms(v) for v in readings["cold_minus_warm_ms"]],
                "Attempts": [present.count(v) for v in readings["cold_attempts"]],
                "503 answers": [present.count(v) for v in readings["cold_status_503"]],
                "Detail": [
                    present.MISSING if present.is_missing(v) or not str(v) else str(v) for v in readings["detail"]
                ],
            }
        )
        st.dataframe(show, hide_index=True)
    reqs = _latest_requests(URL, key.endpoint_id)
    if len(reqs):
        st.caption(
            "Latest requests: "
            + " · ".join(
                md_text(
                    f"{REQUEST_KINDS.get(r.kind, r.kind)} {r.status}"
                    + ("" if present.is_missing(r.detail) or not str(r.detail) else f": {r.detail}")
                )
                for r in reqs.itertuples()
            )
        )

    left, right = st.columns(2)
    with left:
        st.plotly_chart(charts.heatmap_figure(_day_hour_heatmap(URL, key, start_ms, end_ms, tz), tz), key="probes_heat")
        st.caption(f"One row per day ({tz}), up to the last {pq.HEATMAP_MAX_DAYS} days of the range.")
    with right:
        st.plotly_chart(charts.ecdf_figure(_ecdf_points(URL, key, start_ms, end_ms)), key="probes_ecdf")
    phases = _phase_breakdown(URL, key, start_ms, end_ms)
    st.plotly_chart(charts.phase_figure(phases), key="probes_phases")
    by_phase = phases.set_index("phase")
    if "server_latency_ms" in by_phase.index and by_phase.loc["server_latency_ms", "n"] > 0:
        server, ours = by_phase.loc["server_latency_ms"], by_phase.loc["ttft_ms"]
        st.caption(
            f"The endpoint's own latency figure (Bedrock `metadata.metrics.latencyMs`, whole response): p50 "
            f"{present.ms(server['p50_ms'])} over {present.count(server['n'])} samples, beside our TTFT p50 "
            f"{present.ms(ours['p50_ms'])}. The gap between them is network, queueing before the server's clock "
            "starts, and — since the server's figure ends at the last token — generation."
        )


live_view()

# The prepared CSV belongs to the series and range it was made for: another selection never downloads it.
csv_for = (key, start_ms, end_ms)
if st.button("Prepare CSV of the raw samples", icon=":material/download:"):
    st.session_state["probes_csv"] = (csv_for, pq.export_csv(eng, key, start_ms, end_ms))
prepared = st.session_state.get("probes_csv")
if prepared is not None and prepared[0] == csv_for:
    vantage_part = f"-{key.vantage}" if key.vantage else ""
    st.download_button(
        "Download CSV",
        prepared[1],
        file_name=f"probes-{key.endpoint_name}{vantage_part}-{start_d}-{end_d}.csv",
        mime="text/csv",
        on_click="ignore",
    )
elif prepared is not None:
    st.caption("The CSV prepared earlier was for another endpoint or range: prepare it again for this one.")
