"""Capacity & cost: what does it cost, what fits, how fast is prefill, how many warm replicas, how much prefix reuse?

The page: the traffic selector the tabs share (a stored log upload, a production source, or typed numbers) and six
tabs, one module each in app/views/capacity_tabs/. The Break-even tab's inputs price a replica on the Warm pool tab (and
reach the Compare page as st.session_state["cost_inputs"]); the presets edited on the GPU fit tab feed the Prefill and
Prefix cache tabs (the Prefix cache tab reads its own trace: a sample or an upload with prompt identity).
"""

import streamlit as st
from sqlalchemy.exc import SQLAlchemyError

from planner import present
from planner.capacity.errors import CapacityError
from planner.capacity.traffic import DAILY_RULE, daily_words
from planner.inputs.untrusted import md_text
from ttft_planner_app import page_state, session_log, viewer
from ttft_planner_app.cache import store_url, try_engine
from ttft_planner_app.views.capacity_tabs import cost, gpufit, prefill, prefix, warmpool, weights

# A production source's option: "source-<id>", a str, so it is never taken for an upload's id (an int; 0: typed).
SOURCE_PREFIX = "source-"


@st.cache_data(show_spinner=False, max_entries=8)
def _log_traffic(db_url: str, log_id: int | str, label: str, tz: str, synced: tuple | None = None):
    """The traffic of a stored upload (an int id) or a production source ("source-<id>"), read as the Logs page reads
    it. db_url and `synced` (a source's sync state: its requests and watermark) are part of the cache key only, so a
    source is read again once a sync has added requests to it."""
    from planner.capacity.traffic import traffic_from_frame
    from planner.logs.stored import log_frame

    engine, _ = try_engine()
    assert engine is not None  # a stored log was picked, so the store opened
    if isinstance(log_id, str):
        frame = log_frame(engine, source_id=int(log_id.removeprefix(SOURCE_PREFIX)))
    else:
        frame = log_frame(engine, upload_id=log_id)
    return traffic_from_frame(frame, label, tz)


def _session_traffic(log: session_log.SessionLog, tz: str):
    """The traffic of the log read on the Logs page in this session (not saved), built once per reading and zone."""
    from planner.capacity.traffic import traffic_from_frame

    ss = st.session_state
    if ss.get("cap_session_traffic_key") != (log.key, tz):
        ss.cap_session_traffic = traffic_from_frame(log.frame, log.choice_label, tz)
        ss.cap_session_traffic_key = (log.key, tz)
    return ss.cap_session_traffic


st.title("Capacity & cost")
st.caption(
    "What does it cost, what fits, how fast is prefill, how many warm replicas? Every price and spec below is a preset "
    "with its source and date: edit any number; nothing is hard-coded."
)

# ---- traffic: a stored log upload, a production source (Sources page), or typed numbers
engine, db_error = try_engine()
uploads, sources = [], {}
if engine is not None:
    try:
        from planner.logs.stored import stored_logs

        logs = stored_logs(engine)
        uploads = logs.uploads
        sources = {f"{SOURCE_PREFIX}{s.id}": s for s in logs.sources}
    except SQLAlchemyError as exc:  # the store opened but the logs table is unreadable: typed numbers still work
        db_error = str(exc)
choices: dict[int | str, str] = {0: "Typed numbers"}
choices |= {u.id: f"{u.name} ({u.n_requests:,} requests)" for u in uploads}
# A source is labelled as on the Logs page, less its request count: the option's label is the address's value
# (?cap_traffic=…), and a sync changes the count (the link, or the browser's pick, would name no option).
choices |= {k: f"production: {s.name} ({s.kind.short})" for k, s in sources.items()}
session = session_log.offered()  # the log read on the Logs page in this session, saved or not
if session is not None:
    choices[session_log.CHOICE] = session.choice_label
if st.session_state.get("cap_traffic") not in choices:  # first visit, or the kept choice was deleted
    st.session_state.pop("cap_traffic", None)
    picked = page_state.selected_log()
    st.session_state.cap_traffic = picked if picked in choices else session_log.CHOICE if session is not None else 0
traffic_id = st.selectbox(
    "Token mix and traffic from",
    list(choices),
    format_func=lambda i: choices[i],
    persist_state="session",
    bind="query-params",
    key="cap_traffic",
    help="Pick a request log uploaded on the Logs page (read there in this session, or saved), a production source "
    "synced on the Sources page, or type the numbers. Kept when you leave the page.",
)
live = sources.get(traffic_id) if isinstance(traffic_id, str) else None  # the production source picked
unsaved = session if traffic_id == session_log.CHOICE else None  # the Logs page's reading picked
page_state.select_log(traffic_id if isinstance(traffic_id, int) else None)  # the shared pick names uploads only
# The tabs key their inputs by the traffic choice (an int): a source's are keyed by its id negated, never an upload's;
# the session's log by its own key (session_log.SessionLog.tab_key).
if unsaved is not None:
    tab_key = unsaved.tab_key
else:
    tab_key = -int(traffic_id.removeprefix(SOURCE_PREFIX)) if isinstance(traffic_id, str) else traffic_id
traffic = None
if traffic_id:
    tz = viewer.time_zone()
    try:
        if live is not None:
            label = f"production: {live.name} ({live.kind.short}, {live.n_requests:,} requests)"
            synced = (live.n_requests, live.watermark_ms, live.watermark_id)
            traffic = _log_traffic(store_url(), traffic_id, label, tz, synced)
            lead = (
                f"From production traffic from {live.kind.origin}, source “{md_text(live.name)}” (up to "
                f"{viewer.fmt_ms(live.watermark_ms, tz)}, last synced {viewer.fmt_ms(live.synced_at_ms, tz)})"
            )
        elif unsaved is not None:
            traffic = _session_traffic(unsaved, tz)
            lead = f"From the log read on the Logs page, {md_text(unsaved.label)} (not saved)"
        else:
            traffic, lead = _log_traffic(store_url(), traffic_id, choices[traffic_id], tz), "From the log"
        st.caption(
            f"{lead}: {present.count(traffic.n_requests)} "
            f"requests over {present.count(traffic.covered_hours)} clock hours, "
            + (
                f"{present.pct(traffic.mix.cache_hit_fraction)} of prompt tokens cached, "
                if traffic.cache_known
                else "cache-hit rate unknown (no request records cached tokens), "
            )
            + f"{traffic.mix.input_output_ratio:,.0f}:1 input:output, "
            f"peak hour {present.rate(traffic.peak_arrivals_per_hour, 'requests/h')}. "
            f"Hours of day in {viewer.zone_label(tz)} (the time zone in the sidebar). "
            f"{daily_words(traffic)} Every tab uses this daily model.",
            help=DAILY_RULE,
        )
    except (CapacityError, KeyError) as exc:
        st.warning(f"Cannot use that log: {md_text(exc)}. Using typed numbers.")
elif not uploads and not sources and session is None:
    st.caption(
        "No request log uploaded yet (Logs page): the typed numbers below stand in."
        + (f" Database: {db_error}" if db_error else "")
    )

tab_cost, tab_weights, tab_fit, tab_prefill, tab_pool, tab_prefix = st.tabs(
    ["Break-even", "Weight loading", "GPU fit", "Prefill", "Warm pool", "Prefix cache"]
)
with tab_cost:
    cost_inputs = cost.render(traffic)
with tab_weights:
    weights.render()
with tab_fit:
    models, gpu_by_key = gpufit.render()
with tab_prefill:
    prefill.render(traffic, tab_key, models, gpu_by_key)
with tab_pool:
    warmpool.render(traffic, tab_key, cost_inputs)
with tab_prefix:
    prefix.render(models, gpu_by_key)
