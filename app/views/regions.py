"""Regions: how far is each candidate region from our people and our servers? (feeds segment 4, network)"""

from collections import Counter

import pandas as pd
import streamlit as st

from app import worksheet_state
from app.cache import engine
from app.charts.regions import (
    MAP_CONFIG,
    distribution_figure,
    history_figure,
    map_figure,
    ranked_rows,
    ranked_table_style,
    server_vs_browser_figure,
    vantage_label,
)
from app.viewer import time_zone
from app.components.browser_rtt import browser_rtt
from app.store_errors import STORE_FAILURES, show_store_failure
from planner.probes.rtt import default_vantage, probe_rtt_many
from planner.probes.rtt_browser import records_from_browser
from planner.regions import ROUND_TRIPS, CatalogError, catalog, merge_custom, network_figure, parse_target
from planner.store.rtt import (
    TargetExists,
    TargetNotFound,
    add_target,
    insert_rtt_samples,
    list_targets,
    load_samples,
    remove_target,
    rtt_summary,
)
from planner.untrusted import md_text

DEFAULT_REGIONS = ["aws-us-east-1", "aws-us-west-2", "aws-eu-west-1", "aws-ap-northeast-1", "gcp-us-central1",
                   "azure-westeurope", "openai-api", "anthropic-api"]
WINDOWS_MS = {"last hour": 3_600_000, "last 24 hours": 86_400_000, "last 7 days": 7 * 86_400_000, "all time": None}

st.title("Regions")
st.caption(
    "Round-trip time from your servers and from your people's browsers to each candidate region. "
    "Whatever you cannot remove here is a fixed tax on every request (segment 4 of TTFT)."
)
eng = engine()
ss = st.session_state
tz = time_zone()
if "rtt_flash" in ss:  # a message from the run before a rerun (e.g. "Added target …")
    st.success(ss.pop("rtt_flash"))
regions = merge_custom(catalog(), list_targets(eng))
by_id = {r.id: r for r in regions}
labels = {r.id: r.label for r in regions}

# ---- where the browser measures from: asked once, remembered in the URL and in this browser (localStorage)
if "rtt_vantage_pending" in ss:
    ss.rtt_vantage = ss.pop("rtt_vantage_pending")
if "rtt_vantage" not in ss:
    ss.rtt_vantage = st.query_params.get("vantage", "")
ss.setdefault("rtt_stored_runs", [])

st.subheader("Measure")
left, right = st.columns([2, 1])
linked = [i for i in st.query_params.get("regions", "").split(",") if i in by_id]  # deep link: ?regions=a,b
selected = left.multiselect(
    "Regions to measure", options=[r.id for r in regions], format_func=lambda i: labels.get(i, i),
    default=linked or [i for i in DEFAULT_REGIONS if i in by_id], key="rtt_regions",
    help="Catalog regions (assets/regions.toml) and your own targets. Anycast entries measure the nearest edge.",
)
n = right.number_input("Samples per region", min_value=3, max_value=100, value=10, step=1, key="rtt_n",
                       help="Kept samples; one more is made first and dropped (it pays DNS, TCP and TLS set-up).")
vantage = st.text_input("Your location / office", key="rtt_vantage", placeholder="e.g. Berlin office, home (Lisbon)",
                        help="Browser samples are stored with this label. It is remembered in this browser and in the page URL.")
if vantage:
    st.query_params["vantage"] = vantage

server_col, browser_col = st.columns(2)
server_vantage = default_vantage()
with server_col:
    st.markdown(f"**From the server** ({md_text(vantage_label(server_vantage))}): TCP connects, TLS handshake, one HTTPS request.")
    if st.button("Probe from the server", key="rtt_probe_server", disabled=not selected):
        with st.spinner(f"Probing {len(selected)} region(s) from {vantage_label(server_vantage)}…"):
            results = probe_rtt_many([(i, by_id[i].probe_url) for i in selected], n=int(n), vantage=server_vantage,
                                     concurrency=8)
            insert_rtt_samples(eng, [rec for r in results for rec in r.records()])
        failed = [r for r in results if not r.ok]
        st.toast(f"Stored {sum(r.stats.n for r in results)} server samples; {len(failed)} region(s) reported a failure.")

with browser_col:
    st.markdown("**From this browser**: Resource Timing (`responseStart − requestStart`), first sample dropped.")
    targets = [{"region_id": i, "url": by_id[i].target.url} for i in selected if by_id[i].target.url]
    res = browser_rtt(targets, vantage=vantage, n=int(n))
    if res.remembered_vantage and not vantage:
        ss.rtt_vantage_pending = res.remembered_vantage
        st.rerun()
    run = res.result
    if run and run.get("run_id") not in ss.rtt_stored_runs:
        records, rejected = records_from_browser(run, vantage=run.get("vantage") or vantage)
        insert_rtt_samples(eng, records)
        ss.rtt_stored_runs.append(run.get("run_id"))
        fallback = sum(r.method == "fetch-performance-now" and r.error_class is None for r in records)
        measured = sum(r.error_class is None for r in records)
        failed = Counter(r.error_class for r in records if r.error_class is not None)
        failures = "; ".join(f"{k} ×{v}" for k, v in failed.items())
        (st.success if measured else st.error)(
            f"Stored {measured} browser samples as “{md_text(run.get('vantage') or vantage)}”"
            + (f"; {sum(failed.values())} target(s) failed ({md_text(failures)})." if failed else "."))
        if fallback:
            st.warning(f"{fallback} sample(s) used the fallback timing: those targets do not send Timing-Allow-Origin, "
                       "so the figure is the whole fetch (Resource Timing responseEnd − fetchStart, or performance.now() "
                       "around it), not one request round trip.")
        for line in rejected:
            st.warning(md_text(line))

# ---- results
st.subheader("Results")
summary_all = rtt_summary(eng)
vantages = sorted(v for v in summary_all["vantage"].dropna().unique()) if not summary_all.empty else []
f1, f2 = st.columns(2)
chosen = f1.selectbox("Vantage", ["all vantages", *vantages], key="rtt_vantage_filter",
                      format_func=lambda v: v if v == "all vantages" else vantage_label(v))
window = f2.selectbox("Window", list(WINDOWS_MS), index=1, key="rtt_window")
since_ms = None
if WINDOWS_MS[window] is not None:
    since_ms = int(pd.Timestamp.now(tz="UTC").timestamp() * 1000) - WINDOWS_MS[window]
vantage_filter = None if chosen == "all vantages" else chosen
rows = ranked_rows(rtt_summary(eng, vantage=vantage_filter, since_ms=since_ms), regions)

if not rows.empty:
    rows["vantage"] = rows["vantage"].map(vantage_label)
    rows["last_measured"] = rows["last_measured"].dt.tz_convert(tz)
if rows.empty:
    st.info("No RTT samples in this window yet. Probe from the server or from this browser above, "
            "or run `ttft-planner rtt --region ID --store`.")
else:
    st.dataframe(
        ranked_table_style(rows), hide_index=True, key="rtt_table",
        column_order=["rank", "region", "side", "vantage", "median_ms", "min_ms", "p90_ms", "n", "status",
                      "last_measured", "method"],
        column_config={
            "rank": st.column_config.NumberColumn("Rank", width="small"),
            "region": st.column_config.TextColumn("Region", width="medium"),
            "side": st.column_config.TextColumn("Side", width="small"),
            "vantage": st.column_config.TextColumn("Vantage", width="medium"),
            "median_ms": st.column_config.NumberColumn("Median (ms)", format="%.1f"),
            "min_ms": st.column_config.NumberColumn("Min (ms)", format="%.1f", help="≈ the path RTT"),
            "p90_ms": st.column_config.NumberColumn("p90 (ms)", format="%.1f", help="Greyed below n = 10"),
            "n": st.column_config.NumberColumn("Samples (n)"),
            "status": st.column_config.TextColumn("Status", width="large"),
            "last_measured": st.column_config.DatetimeColumn(f"Last measured ({tz})", format="YYYY-MM-DD HH:mm"),
            "method": st.column_config.TextColumn("Method", width="large"),
        },
    )
    st.caption("Nearest-rank percentiles with n; p90 greyed below n = 10. Server rows are TCP connects (1 round trip); "
               "browser rows are Resource Timing, or the labelled performance.now() fallback.")
    st.plotly_chart(map_figure(rows.drop_duplicates("region_id"), regions), key="rtt_map", config=MAP_CONFIG)
    samples = load_samples(eng, region_ids=rows["region_id"].unique().tolist(), vantage=vantage_filter, since_ms=since_ms)
    c1, c2 = st.columns(2)
    c1.plotly_chart(distribution_figure(samples, labels), key="rtt_distribution")
    c2.plotly_chart(server_vs_browser_figure(rows), key="rtt_server_vs_browser")
    st.plotly_chart(history_figure(samples, labels, tz), key="rtt_history")

    # ---- hand the chosen figure to the worksheet
    st.subheader("Use for worksheet")
    usable = rows[rows["n"] > 0].reset_index(drop=True)
    if usable.empty:
        st.info("No region has a successful sample yet.")
    else:
        pick = st.selectbox(
            "Region figure", usable.index.tolist(), key="rtt_pick",
            format_func=lambda i: (f"{usable.at[i, 'region']} · {usable.at[i, 'side']} from {usable.at[i, 'vantage']}"
                                   f" · median {usable.at[i, 'median_ms']:.1f} ms (n={usable.at[i, 'n']})"),
        )
        trips = st.radio("Round trips the request pays", list(ROUND_TRIPS), format_func=lambda k: ROUND_TRIPS[k],
                         key="rtt_round_trips")
        st.caption("A coding agent that keeps its HTTPS connection warm pays one round trip per request; after an idle "
                   "gap longer than the keep-alive timeout (often 5–60 s) the next request pays the TCP and TLS "
                   "handshakes again. Inline completions after a pause are often the fresh case.")
        row = usable.loc[pick]
        fig = network_figure(region_label=row["region"], vantage=row["vantage"], side=row["side"],
                             rtt_ms=float(row["median_ms"]), n=int(row["n"]), measured_at_ms=int(row["last_measured_at_ms"]),
                             round_trips=int(trips), method=str(row["method"]).split(" (")[0])
        st.metric("Network segment", f"{fig.value:,.1f} ms", help=fig.describe())
        if st.button("Use for worksheet", key="rtt_use", type="primary"):
            worksheet_state.offer("network_ms", fig)
            st.switch_page("views/worksheet.py")

# ---- the user's own targets
with st.expander("Your own targets (custom hosts and scheduled probes)"):
    with st.form("rtt_add_target", clear_on_submit=True):
        a1, a2 = st.columns(2)
        new_id = a1.text_input("Id", placeholder="acme-eu-west")
        new_target = a2.text_input("URL or host:port", placeholder="https://eu.api.acme.dev/health")
        b1, b2, b3, b4 = st.columns(4)
        new_lat = b1.number_input("Latitude", min_value=-90.0, max_value=90.0, value=None)
        new_lon = b2.number_input("Longitude", min_value=-180.0, max_value=180.0, value=None)
        schedule = b3.checkbox("Scheduled by the worker", value=True)
        interval = b4.number_input("Every (s)", min_value=10, max_value=86_400, value=300)
        if st.form_submit_button("Add target"):
            try:
                parse_target(new_target)
                if (new_lat is None) != (new_lon is None):
                    raise ValueError("give both latitude and longitude, or neither")
                add_target(eng, new_id, new_target, lat=new_lat, lon=new_lon, enabled=schedule, interval_s=float(interval))
                ss.rtt_flash = (f"Added target “{new_id}”" + (f": the worker probes it every {interval:,} s."
                                                              if schedule else "; pick it under Regions to measure."))
                st.rerun()
            except (CatalogError, TargetExists, ValueError) as exc:
                st.error(f"Target not added: {md_text(exc)}")
            except STORE_FAILURES as exc:
                show_store_failure(exc)
    stored = list_targets(eng)
    if stored:
        st.dataframe(pd.DataFrame([{"Id": t.region_id, "Target": t.target, "Scheduled": "yes" if t.enabled else "no",
                                    "Every (s)": f"{t.interval_s:,.0f}", "Vantage": t.vantage or "any"} for t in stored]),
                     hide_index=True, key="rtt_targets_table")
        gone = st.selectbox("Remove target", [t.region_id for t in stored], key="rtt_remove_pick")
        if st.button("Remove", key="rtt_remove"):
            try:
                remove_target(eng, gone)
                ss.rtt_flash = f"Removed target “{gone}” (its stored samples are kept)."
            except TargetNotFound as exc:
                st.error(md_text(exc))
            except STORE_FAILURES as exc:
                show_store_failure(exc)
            st.rerun()
