"""Regions › Results: the ranked table, the map and charts, and the network figure handed to the worksheet."""

from collections.abc import Sequence

import pandas as pd
import streamlit as st
from sqlalchemy.engine import Engine

from planner.inputs.untrusted import md_text
from planner.regions.catalog import ROUND_TRIPS, Region, network_figure
from planner.regions.rtt_history import load_samples, rtt_summary
from ttft_planner_app import worksheet_state
from ttft_planner_app.charts.regions import (
    MAP_CONFIG,
    METHOD_NAMES,
    distribution_figure,
    history_figure,
    map_figure,
    ranked_rows,
    ranked_table,
    server_vs_browser_figure,
    vantage_label,
)
from ttft_planner_app.widgets import wrapped_table

__all__ = ["WINDOWS_MS", "render"]

WINDOWS_MS = {"last hour": 3_600_000, "last 24 hours": 86_400_000, "last 7 days": 7 * 86_400_000, "all time": None}


def render(eng: Engine, regions: Sequence[Region], tz: str) -> None:
    """Draw the Results section for the chosen vantage and window, and the "Use for worksheet" hand-off."""
    labels = {r.id: r.label for r in regions}
    # ---- results
    st.subheader("Results")
    summary_all = rtt_summary(eng)
    vantages = sorted(v for v in summary_all["vantage"].dropna().unique()) if not summary_all.empty else []
    f1, f2 = st.columns(2)
    chosen = f1.selectbox(
        "Vantage",
        ["all vantages", *vantages],
        key="rtt_vantage_filter",
        format_func=lambda v: v if v == "all vantages" else vantage_label(v),
    )
    window = f2.selectbox("Window", list(WINDOWS_MS), index=1, key="rtt_window")
    since_ms = None
    span_ms = WINDOWS_MS[window]
    if span_ms is not None:
        since_ms = int(pd.Timestamp.now(tz="UTC").timestamp() * 1000) - span_ms
    vantage_filter = None if chosen == "all vantages" else chosen
    rows = ranked_rows(rtt_summary(eng, vantage=vantage_filter, since_ms=since_ms), regions)

    if not rows.empty:
        rows["vantage"] = rows["vantage"].map(vantage_label)
        rows["last_measured"] = rows["last_measured"].dt.tz_convert(tz)
    if rows.empty:
        st.info(
            "No RTT samples in this window yet. Probe from the server or from this browser above, "
            "or run `ttft-planner rtt --region ID --store`."
        )
    else:
        st.caption(f"Ranked by median RTT; times in {tz}.")
        wrapped_table(*ranked_table(rows))
        for r in rows[rows["status"] != "ok"].itertuples():
            st.caption(md_text(f"{r.region} · {r.side} from {r.vantage}: {r.status}"))
        st.caption(
            "Nearest-rank percentiles with n; a p90 from fewer than 10 samples is greyed and marked (too few). "
            "Server rows are TCP connects (1 round trip); browser rows are Resource Timing, or the labelled "
            "performance.now() fallback."
        )
        st.plotly_chart(map_figure(rows.drop_duplicates("region_id"), regions), key="rtt_map", config=MAP_CONFIG)
        samples = load_samples(
            eng, region_ids=rows["region_id"].unique().tolist(), vantage=vantage_filter, since_ms=since_ms
        )
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
                "Region figure",
                usable.index.tolist(),
                key="rtt_pick",
                format_func=lambda i: (
                    f"{usable.at[i, 'region']} · {usable.at[i, 'side']} from "
                    f"{usable.at[i, 'vantage']} · median {usable.at[i, 'median_ms']:.1f} ms "
                    f"(n={usable.at[i, 'n']})"
                ),
            )
            trips = st.radio(
                "Round trips the request pays",
                list(ROUND_TRIPS),
                format_func=lambda k: ROUND_TRIPS[k],
                key="rtt_round_trips",
            )
            st.caption(
                "A coding agent that keeps its HTTPS connection warm pays one round trip per request; after an "
                "idle gap longer than the keep-alive timeout (often 5–60 s) the next request pays the TCP and "
                "TLS handshakes again. Inline completions after a pause are often the fresh case."
            )
            row = usable.loc[pick]
            fig = network_figure(
                region_label=row["region"],
                vantage=row["vantage"],
                side=row["side"],
                rtt_ms=float(row["median_ms"]),
                n=int(row["n"]),
                measured_at_ms=int(row["last_measured_at_ms"]),
                round_trips=int(trips),
                method=METHOD_NAMES.get(row["method_code"], row["method_code"]),
            )
            st.metric("Network segment", f"{fig.value:,.1f} ms", help=fig.describe())
            if st.button("Use for worksheet", key="rtt_use", type="primary"):
                worksheet_state.hand_over({"network_ms": fig})
