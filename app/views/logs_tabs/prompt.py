"""Logs › Prompt tokens tab: percentiles (all, working day, output), histogram, ECDF, percentiles by hour of day."""

import pandas as pd
import streamlit as st

from planner.logs.distribution import ecdf_points, histogram
from planner.logs.summary import LogSummary
from ttft_planner_app.charts.logs import (
    ecdf_figure,
    histogram_figure,
    hour_percentiles_figure,
    percentile_rows,
    percentile_table_style,
)

__all__ = ["render"]


def render(frame: pd.DataFrame, s: LogSummary, tz: str) -> None:
    """Draw the Prompt tokens tab for the requests in `frame` and their summary `s` (hours in `tz`)."""
    # a window no request falls in has no percentiles: its rows show "—", and their label says why
    workday = "prompt tokens, working day" + ("" if s.prompt_workday["max"].n else " (no request in the working day)")
    rows = percentile_rows(
        {"prompt tokens, all": s.prompt, workday: s.prompt_workday, "output tokens, all": s.output}, "tokens"
    )
    st.dataframe(percentile_table_style(rows), hide_index=True, key="logs_percentiles")
    # the charts draw every request, so their lines are the whole log's percentiles, and say so (the headline's
    # p95 is the working day's)
    marks = {f"{k} (whole log)": s.prompt[k] for k in ("p50", "p95")}
    h1, h2 = st.columns(2)
    h1.plotly_chart(histogram_figure(histogram(frame["prompt_tokens"]), marks), key="logs_hist")
    h2.plotly_chart(ecdf_figure(ecdf_points(frame["prompt_tokens"]), marks), key="logs_ecdf")
    st.plotly_chart(hour_percentiles_figure(s.prompt_by_hour, "prompt tokens", tz), key="logs_prompt_hour")
