"""Plotly figure builders for the comparison (pure: data → go.Figure).

They live in planner/ rather than app/charts/ because the CLI's report embeds
the same charts and the installed `ttft-planner` command cannot import the
app package; app/charts/compare.py re-exports them for the page. No colours
here: the page's theme (and plotly's default in the report) supplies them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd
import plotly.graph_objects as go

from planner.compare.bootstrap import Interval
from planner.compare.figures import PHASES

__all__ = ["NO_SAMPLES", "hourly_p95_figure", "mark_empty", "p95_interval_figure", "phases_figure"]

NO_SAMPLES = "No samples in this range"


def mark_empty(fig: go.Figure, message: str = NO_SAMPLES) -> go.Figure:
    """Say so in the middle of a figure with nothing to draw, and hide its axes (never empty −1…6 ticks)."""
    fig.add_annotation(text=message, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False, font={"size": 15})
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return fig


def _ordered(names: Sequence[str], order: Sequence[str] | None) -> list[str]:
    """`names` in `order` (the ranking) first, so an endpoint keeps its colour in every chart."""
    order = list(order or [])
    return [n for n in order if n in names] + [n for n in names if n not in order]


def hourly_p95_figure(hourly: pd.DataFrame, tz: str = "UTC", order: Sequence[str] | None = None) -> go.Figure:
    """Hour-of-day TTFT p95 per endpoint, overlaid; hours with n < 20 drawn as open markers named '(n < 20)'.

    hourly: planner.compare.figures.hourly_profile output; order: endpoint names in trace order.
    """
    fig = go.Figure()
    for endpoint in _ordered(list(dict.fromkeys(hourly["endpoint"])), order):
        grp = hourly[hourly["endpoint"] == endpoint].sort_values("hour")
        rel = grp[grp["reliable"]]
        fig.add_trace(
            go.Scatter(
                x=rel["hour"].tolist(),
                y=rel["p95_ms"].tolist(),
                mode="lines+markers",
                name=str(endpoint),
                legendgroup=str(endpoint),
                customdata=rel["n"].tolist(),
                hovertemplate="%{x}:00 · p95 %{y:,.0f} ms · n=%{customdata}<extra>" + str(endpoint) + "</extra>",
            )
        )
        few = grp[~grp["reliable"] & grp["p95_ms"].notna()]
        if not few.empty:
            fig.add_trace(
                go.Scatter(
                    x=few["hour"].tolist(),
                    y=few["p95_ms"].tolist(),
                    mode="markers",
                    name=f"{endpoint} (n < 20)",
                    legendgroup=str(endpoint),
                    marker={"symbol": "circle-open"},
                    opacity=0.5,
                    customdata=few["n"].tolist(),
                    hovertemplate="%{x}:00 · p95 %{y:,.0f} ms · n=%{customdata} (too few)<extra>"
                    + str(endpoint)
                    + "</extra>",
                )
            )
    fig.update_layout(
        title="TTFT p95 by hour of day",
        xaxis_title=f"hour of day ({tz})",
        yaxis_title="TTFT p95 (ms)",
        xaxis={"range": [-0.5, 23.5], "dtick": 2},
        legend_title_text="endpoint",
    )
    return fig if fig.data else mark_empty(fig)


def _error_bars(p: Interval) -> tuple[float, float]:
    """(above, below) the point, ms; an interval with a point has both ends (compare.stats._interval)."""
    assert p.point_ms is not None and p.low_ms is not None and p.high_ms is not None
    return p.high_ms - p.point_ms, p.point_ms - p.low_ms


def p95_interval_figure(intervals: Mapping[str, Interval], order: Sequence[str] | None = None) -> go.Figure:
    """Each endpoint's TTFT p95 with its bootstrap interval as error bars (ms); faded when n < 20."""
    names = [k for k in _ordered(list(intervals), order) if intervals[k].point_ms is not None]
    pts = [intervals[k] for k in names]
    bars = [_error_bars(p) for p in pts]
    fig = go.Figure(
        go.Scatter(
            x=[p.point_ms for p in pts],
            y=names,
            mode="markers",
            name="p95",
            marker={"size": 10, "opacity": [1.0 if p.reliable else 0.35 for p in pts]},
            error_x={
                "type": "data",
                "symmetric": False,
                "array": [above for above, _ in bars],
                "arrayminus": [below for _, below in bars],
            },
            customdata=[[p.n, p.low_ms, p.high_ms] for p in pts],
            hovertemplate="p95 %{x:,.0f} ms (95% CI %{customdata[1]:,.0f}–%{customdata[2]:,.0f}) · "
            "n=%{customdata[0]}<extra>%{y}</extra>",
        )
    )
    fig.update_layout(
        title="TTFT p95 with 95% bootstrap interval",
        xaxis_title="TTFT p95 (ms)",
        yaxis={"autorange": "reversed"},
        showlegend=False,
    )
    return fig if names else mark_empty(fig)


def phases_figure(table: pd.DataFrame) -> go.Figure:
    """Median time (ms from send) at which each phase completed, grouped per endpoint.

    table: planner.compare.comparison.metrics_table output.
    """
    fig = go.Figure()
    labels = list(PHASES.values())
    for _, row in table.iterrows():
        ys = [row.get(f"{col.removesuffix('_ms')}_p50_ms") for col in PHASES]
        fig.add_trace(go.Bar(x=labels, y=[None if pd.isna(y) else y for y in ys], name=str(row["endpoint"])))
    fig.update_layout(
        title="Phase breakdown (median ms from send)",
        barmode="group",
        yaxis_title="ms from send",
        legend_title_text="endpoint",
    )
    has_data = any(y is not None for t in fig.data for y in (t.y or ()))
    return fig if has_data else mark_empty(fig)
