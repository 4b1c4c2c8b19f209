"""Logs › Traffic tab: requests by hour of day and by weekday."""

import streamlit as st

from planner.logs.summary import LogSummary
from ttft_planner_app.charts.logs import traffic_figure, weekday_figure

__all__ = ["render"]


def render(s: LogSummary, tz: str) -> None:
    """Draw the Traffic tab of the summary `s` (hours in `tz`)."""
    st.plotly_chart(traffic_figure(s.hourly, tz), key="logs_traffic")
    st.plotly_chart(weekday_figure(s.weekdays), key="logs_weekday")
