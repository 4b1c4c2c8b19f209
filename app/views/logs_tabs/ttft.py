"""Logs › Production TTFT tab: the TTFT users waited (from logged first-token times), by hour of day beside a probe
series over the same span."""

import streamlit as st
from sqlalchemy.engine import Engine

from planner.endpoints.probe_history import hour_of_day, series_keys
from planner.logs.summary import LogSummary
from ttft_planner_app.charts.logs import percentile_rows, percentile_table_style, ttft_vs_probes_figure

__all__ = ["render"]


def render(eng: Engine, s: LogSummary, tz: str) -> None:
    """Draw the Production TTFT tab of the summary `s` (hours in `tz`); says which logs carry first-token times when
    this one does not."""
    if not s.ttft["p50"].n:
        st.info(
            "This log has no first-token times. LiteLLM and Langfuse (completionStartTime) and OpenTelemetry "
            "first-token events carry them."
        )
        return
    st.dataframe(
        percentile_table_style(percentile_rows({"TTFT users waited": s.ttft}, "ms")),
        hide_index=True,
        key="logs_ttft_table",
    )
    keys = series_keys(eng)
    probe_key = st.selectbox(
        "Compare with a probe series",
        [None, *keys],
        key="logs_probe_series",
        format_func=lambda k: "— none —" if k is None else k.label,
    )
    probes = None
    if probe_key is not None and s.first_ts_ms is not None and s.last_ts_ms is not None:  # a log with TTFT has rows
        probes = hour_of_day(eng, probe_key, s.first_ts_ms, s.last_ts_ms + 1, tz=tz)
        if not int(probes["n"].sum()):
            st.caption(":grey[That series has no probe samples in the log's time span.]")
    st.plotly_chart(
        ttft_vs_probes_figure(s.ttft_by_hour, probes, probe_key.label if probe_key else "", tz),
        key="logs_ttft_hour",
    )
