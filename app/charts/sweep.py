"""Sweep chart: TTFT p50/p95/p99 against load, the p95 target as a line, the knee marked."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

__all__ = ["sweep_figure"]


def _fraction(value: float, values: list[float]) -> float:
    """Where `value` lies between the smallest and the largest of `values` (0.5 when they are all equal)."""
    lo, hi = min(values), max(values)
    return 0.5 if hi <= lo else (value - lo) / (hi - lo)


def _label_sides(steps: pd.DataFrame, target_ms: float | None, knee: float | None) -> tuple[str, str]:
    """Where the target line's label and the knee line's label go, chosen from the data so they never meet.

    The target's label sits at the end of its line away from the knee (the left end when the knee is in the right
    half, where the curves are still under the target, so above the line is clear; otherwise the right end, below
    the line, where the curves have passed it). The knee's label sits at the end of its line away from the target
    (the bottom when the target is in the upper half, the top otherwise), on the side of the line facing the middle
    of the chart, so it is not cut at the edge. The two labels then differ in both directions."""
    loads = [float(v) for v in steps["load"].dropna()] or [0.0]
    ys = [float(v) for c in ("ttft_p50_ms", "ttft_p95_ms", "ttft_p99_ms") for v in steps[c].dropna()]
    if target_ms is not None:
        ys.append(float(target_ms))
    knee_x = _fraction(float(knee), [*loads, float(knee)]) if knee is not None else 1.0
    target_y = _fraction(float(target_ms), ys) if target_ms is not None and ys else 0.5
    target_side = "top left" if knee_x >= 0.5 else "bottom right"
    knee_side = ("bottom " if target_y >= 0.5 else "top ") + ("left" if knee_x >= 0.5 else "right")
    return target_side, knee_side


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
    target_side, knee_side = _label_sides(steps, target_p95_ms, knee_load)
    if target_p95_ms is not None:
        fig.add_hline(
            y=target_p95_ms,
            line_dash="dash",
            line_color="crimson",
            annotation_text=f"p95 target {target_p95_ms:,.0f} ms",
            annotation_position=target_side,
        )
    if knee_load is not None:
        fig.add_vline(
            x=knee_load,
            line_dash="dot",
            line_color="gray",
            annotation_text=f"knee {knee_load:g} {unit}",
            annotation_position=knee_side,
        )
    fig.update_layout(
        xaxis_title=f"Load ({unit})",
        yaxis_title="TTFT (ms)",
        height=420,
        margin={"t": 30, "b": 40},
        legend={"orientation": "h", "y": -0.2},
    )
    return fig
