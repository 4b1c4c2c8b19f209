"""Layout shared by the figure builders: axis titles, a tight margin and the legend in a row under the plot."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

__all__ = ["axes_layout"]


def axes_layout(fig: go.Figure, x: str, y: str, *, height_px: int, **kw: Any) -> go.Figure:
    """`fig` with axis titles `x` and `y`, `height_px` tall, a tight margin and a horizontal legend under the plot;
    `kw` are further layout settings (a title, …)."""
    fig.update_layout(
        xaxis_title=x,
        yaxis_title=y,
        margin=dict(l=10, r=10, t=40, b=10),
        height=height_px,
        legend=dict(orientation="h", y=-0.25),
        **kw,
    )
    return fig
