"""Compare › per endpoint: the metrics table (a percentile with too few samples marked "(too few)" and greyed, and
the production p95 of your users' requests where a live source maps to the endpoint), where each endpoint serves
from, and the charts (p95 by hour of day, p95 intervals, phases)."""

import pandas as pd
import streamlit as st

from planner import present
from planner.compare import Comparison
from planner.compare.comparison import metrics_table
from planner.compare.regions import region_table
from planner.compare.report import summary_table
from planner.endpoints.samples import DEFINITION
from ttft_planner_app.charts.compare import hourly_p95_figure, p95_interval_figure, phases_figure
from ttft_planner_app.widgets import wrapped_table

__all__ = ["render"]

GREY = "color: #9e9e9e"
# A column of the shown table → the metrics column that says whether its percentile rests on enough samples.
RELIABLE = {
    "TTFT p50 (ms)": "ttft_p50_reliable",
    "TTFT p95 (ms)": "ttft_p95_reliable",
    "TTFT p99 (ms)": "ttft_p99_reliable",
    "first content p95 (ms)": "first_content_p95_reliable",
}


def render(cmp: Comparison, vantage: str | None, tz: str) -> None:
    """Draw the Per endpoint section of `cmp` as seen from `vantage` (None: all), hours of day in `tz`."""
    st.subheader("Per endpoint")
    st.caption(
        f"{DEFINITION} {present.TOO_FEW} marks, in grey, a percentile with too few samples (p95 needs n ≥ 20, p99 "
        "n ≥ 100)."
    )
    table, raw = summary_table(cmp).astype(str), metrics_table(cmp).set_index("endpoint")
    enough = {c: [bool(raw.loc[name, flag]) for name in table["Endpoint"]] for c, flag in RELIABLE.items()}
    for c, flags in enough.items():
        table[c] = [present.too_few(v, ok) for v, ok in zip(table[c], flags, strict=True)]
    # Static tables that wrap: every column in view at 1,400 px (as grids they scrolled sideways, the last cut).
    grey = pd.DataFrame({c: ["" if ok else GREY for ok in flags] for c, flags in enough.items()}, index=table.index)
    wrapped_table(table, grey)
    st.caption(
        "Production p95: your users' own requests to the endpoint in the same window (n: how many), from every live "
        "source whose stored API base is its base URL and whose model is its model; “—” where no source maps to it "
        "(add the LiteLLM proxy your users' requests go through, or your SDKs' OpenTelemetry spans, on the Sources "
        "page)."
    )
    st.caption(
        "Where each endpoint serves from, and the round trip to there from this vantage (the network share of "
        "its TTFT; an anycast edge's RTT is to the nearest edge, not to the serving region)."
    )
    regions = region_table(cmp.endpoints, cmp.serving, {m.name: m.rtt for m in cmp.metrics}, vantage)
    wrapped_table(
        present.display_frame(regions, {"RTT median (ms)": lambda v: present.ms(v, 1), "RTT n": present.count})
    )
    order = [r.metrics.name for r in cmp.ranked]
    st.plotly_chart(hourly_p95_figure(cmp.hourly, tz, order), key="cmp_hourly")
    left, right = st.columns(2)
    left.plotly_chart(p95_interval_figure(cmp.p95_intervals, order), key="cmp_ci")
    right.plotly_chart(phases_figure(metrics_table(cmp)), key="cmp_phases")
