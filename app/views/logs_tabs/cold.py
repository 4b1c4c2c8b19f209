"""Logs › Cold-start exposure tab: the share of requests a scale-to-zero replica would start cold, by scale-down
window, and whether that share reaches into the p95."""

import streamlit as st

from planner.logs.exposure import P95_COLD_THRESHOLD
from planner.logs.summary import LogSummary
from ttft_planner_app.charts.logs import cold_curve_figure

__all__ = ["render"]


def render(s: LogSummary) -> None:
    """Draw the Cold-start exposure tab of the summary `s`."""
    cold = s.cold
    st.caption(
        "One scale-to-zero replica: a request starts cold when the replica has been idle longer than the "
        "scale-down window W since the previous request finished (logged durations count as busy time)."
    )
    st.plotly_chart(cold_curve_figure(cold), key="logs_cold")
    w = st.select_slider(
        "Scale-down window W (s)", options=[int(x) for x in cold["window_s"]], value=300, key="logs_window"
    )
    frac = float(cold.loc[cold["window_s"] == w, "trace_cold_fraction"].iloc[0])
    if frac > P95_COLD_THRESHOLD:
        st.warning(
            f"At W = {w} s, {frac:.1%} of requests start cold: more than 5%, so the cold start is inside your p95."
        )
    else:
        st.success(f"At W = {w} s, {frac:.1%} of requests start cold: under 5%, so the p95 stays warm.")
