"""Worksheet figures: the waterfall from target to prefill budget, and the grouped comparison."""

from __future__ import annotations

import math
from collections.abc import Sequence

import plotly.graph_objects as go

from planner import present
from planner.worksheet.budget import SEGMENTS, BudgetResult
from ttft_planner_app.charts import SEMANTIC

__all__ = ["SHORT_SEGMENTS", "comparison_figure", "waterfall_figure"]

SHORT_SEGMENTS = {"queue_ms": "Queueing", "cold_ms": "Cold start", "network_ms": "Network"}


def waterfall_figure(r: BudgetResult, interaction_label: str) -> go.Figure:
    """Target → minus each non-prefill segment → the prefill budget that remains (ms)."""
    # short category names on one line each (long ones were rotated into each other);
    # the interaction type is in the title
    names = ["Target", *SHORT_SEGMENTS.values(), "Prefill budget"]
    values = [r.target_ms, -r.queue_ms, -r.cold_ms, -r.network_ms, r.prefill_budget_ms]
    fig = go.Figure(
        go.Waterfall(
            x=names,
            y=values,
            # the target rises from 0 as a neutral bar; only the budget (the total) turns red when it is negative
            measure=["relative", "relative", "relative", "relative", "total"],
            # signed labels: a segment takes its ms away, and a negative budget reads "−115 ms", never "115 ms"
            text=[present.ms(v) for v in values],
            textposition="outside",
            decreasing={"marker": {"color": SEMANTIC["warn"]}},
            increasing={"marker": {"color": "#4C78A8"}},
            totals={"marker": {"color": SEMANTIC["ok"] if r.prefill_budget_ms >= 0 else SEMANTIC["error"]}},
            connector={"line": {"width": 1, "dash": "dot"}},
            hovertemplate="%{x}: %{y:,.0f} ms<extra></extra>",
            showlegend=False,
        )
    )
    fig.add_hline(y=0, line_width=1)
    if not math.isnan(r.prefill_needed_ms):
        # A dashed line across the bars, named in the legend below the chart rather than written over the bars.
        fig.add_scatter(
            x=[names[0], names[-1]],
            y=[r.prefill_needed_ms] * 2,
            mode="lines",
            line={"dash": "dash", "color": "#555"},
            name=f"Prefill needed for the p95 prompt: {present.ms(r.prefill_needed_ms)}",
            hovertemplate=f"prefill needed: {present.ms(r.prefill_needed_ms)}<extra></extra>",
        )
    fig.update_layout(
        title=f"p95 TTFT budget: {interaction_label}",
        xaxis={"tickangle": 0},
        yaxis_title="ms",
        showlegend=not math.isnan(r.prefill_needed_ms),
        legend={"orientation": "h", "y": -0.18, "x": 0},
        margin={"t": 60, "b": 80},
        height=440,
    )
    return fig


def comparison_figure(rows: Sequence[dict]) -> go.Figure:
    """One grouped bar chart: each saved worksheet's segments, budget and prefill need (ms)."""
    series = {**SEGMENTS, "prefill_budget_ms": "Prefill budget", "prefill_needed_ms": "Prefill needed (p95 prompt)"}
    fig = go.Figure()
    names = [row["worksheet"] for row in rows]
    for key, label in series.items():
        fig.add_bar(
            name=label,
            x=names,
            y=[row[key] for row in rows],
            hovertemplate=f"{label}: %{{y:,.0f}} ms<extra>%{{x}}</extra>",
        )
    fig.update_layout(
        barmode="group", yaxis_title="ms", title="Saved worksheets side by side", height=420, legend_orientation="h"
    )
    return fig
