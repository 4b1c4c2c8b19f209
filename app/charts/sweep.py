"""Sweep chart: TTFT p50/p95/p99 against load, the p95 target as a line, the knee marked."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

__all__ = ["sweep_figure"]


def sweep_figure(steps: pd.DataFrame, *, unit: str, target_p95_ms: float | None, knee_load: float | None) -> go.Figure:
    """One line per percentile over the steps' loads (x: `unit`), the target and the knee when known."""
    fig = go.Figure()
    for col, name, dash in (
        ("ttft_p50_ms", "p50", "dot"),
        ("ttft_p95_ms", "p95", "solid"),
        ("ttft_p99_ms", "p99", "dash"),
    ):
        fig.add_trace(
            go.Scatter(
                x=steps["load"],
                y=steps[col],
                name=f"TTFT {name}",
                mode="lines+markers",
                line={"dash": dash},
                customdata=steps[["n_ok"]],
                hovertemplate=f"%{{x:g}} {unit}<br>{name} %{{y:,.0f}} ms<br>n=%{{customdata[0]}}<extra></extra>",
            )
        )
    if target_p95_ms is not None:
        fig.add_hline(
            y=target_p95_ms,
            line_dash="dash",
            line_color="crimson",
            annotation_text=f"p95 target {target_p95_ms:,.0f} ms",
        )
    if knee_load is not None:
        fig.add_vline(x=knee_load, line_dash="dot", line_color="gray", annotation_text=f"knee {knee_load:g} {unit}")
    fig.update_layout(
        xaxis_title=f"Load ({unit})",
        yaxis_title="TTFT (ms)",
        height=420,
        margin={"t": 30, "b": 40},
        legend={"orientation": "h", "y": -0.2},
    )
    return fig
