"""Regions › Measure: probe the chosen regions from the server, or from this browser, and store the samples."""

from collections import Counter
from collections.abc import Sequence

import streamlit as st
from sqlalchemy.engine import Engine

from app.auth import can, require
from app.charts.regions import vantage_label
from app.components.browser_rtt import browser_rtt
from planner.probes.rtt import default_vantage, probe_rtt_many
from planner.probes.rtt_browser import records_from_browser
from planner.regions import Region
from planner.store.rtt import insert_rtt_samples
from planner.untrusted import md_text

__all__ = ["DEFAULT_REGIONS", "render"]

DEFAULT_REGIONS = [
    "aws-us-east-1",
    "aws-us-west-2",
    "aws-eu-west-1",
    "aws-ap-northeast-1",
    "gcp-us-central1",
    "azure-westeurope",
    "openai-api",
    "anthropic-api",
]


def render(eng: Engine, regions: Sequence[Region]) -> None:
    """Draw the Measure section: region picker, the browser's vantage label, the server and browser probes."""
    ss = st.session_state
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
        "Regions to measure",
        options=[r.id for r in regions],
        format_func=lambda i: labels.get(i, i),
        default=linked or [i for i in DEFAULT_REGIONS if i in by_id],
        key="rtt_regions",
        help="Catalog regions (assets/regions.toml) and your own targets. Anycast entries measure the nearest edge.",
    )
    n = right.number_input(
        "Samples per region",
        min_value=3,
        max_value=100,
        value=10,
        step=1,
        key="rtt_n",
        help="Kept samples; one more is made first and dropped (it pays DNS, TCP and TLS set-up).",
    )
    vantage = st.text_input(
        "Your location / office",
        key="rtt_vantage",
        placeholder="e.g. Berlin office, home (Lisbon)",
        help="Browser samples are stored with this label. It is remembered in this browser and in the page URL.",
    )
    if vantage:
        st.query_params["vantage"] = vantage

    server_col, browser_col = st.columns(2)
    server_vantage = default_vantage()
    with server_col:
        st.markdown(
            f"**From the server** ({md_text(vantage_label(server_vantage))}): TCP connects, TLS handshake, "
            "one HTTPS request."
        )
        if st.button(
            "Probe from the server", key="rtt_probe_server", disabled=not selected or not can("rtt.measure")
        ) and require("rtt.measure"):
            with st.spinner(f"Probing {len(selected)} region(s) from {vantage_label(server_vantage)}…"):
                results = probe_rtt_many(
                    [(i, by_id[i].probe_url) for i in selected], n=int(n), vantage=server_vantage, concurrency=8
                )
                insert_rtt_samples(eng, [rec for r in results for rec in r.records()])
            failed = [r for r in results if not r.ok]
            st.toast(
                f"Stored {sum(r.stats.n for r in results)} server samples; {len(failed)} region(s) reported a failure."
            )

    with browser_col:
        st.markdown("**From this browser**: Resource Timing (`responseStart − requestStart`), first sample dropped.")
        targets = [{"region_id": i, "url": by_id[i].target.url} for i in selected if by_id[i].target.url]
        res = browser_rtt(targets, vantage=vantage, n=int(n))
        if res.remembered_vantage and not vantage:
            ss.rtt_vantage_pending = res.remembered_vantage
            st.rerun()
        run = res.result
        if run and run.get("run_id") not in ss.rtt_stored_runs and not can("rtt.measure"):
            st.info("Measured in your browser, but your role does not store measurements (an editor's does).")
            ss.rtt_stored_runs.append(run.get("run_id"))
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
                + (f"; {sum(failed.values())} target(s) failed ({md_text(failures)})." if failed else ".")
            )
            if fallback:
                st.warning(
                    f"{fallback} sample(s) used the fallback timing: those targets do not send "
                    "Timing-Allow-Origin, so the figure is the whole fetch (Resource Timing responseEnd − "
                    "fetchStart, or performance.now() around it), not one request round trip."
                )
            for line in rejected:
                st.warning(md_text(line))
