"""The Sources page's figure: production TTFT per hour (p50 and p95 lines) over the requests each hour rests on."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

from planner.store.sources import HourTtft

__all__ = ["production_hours_figure"]


def production_hours_figure(hours: Sequence[HourTtft], tz: str) -> go.Figure:
    """Requests per hour (bars, right axis) and TTFT p50/p95 per hour (lines, ms), at local hours in `tz`."""
    at = pd.to_datetime([h.hour_start_ms for h in hours], unit="ms", utc=True).tz_convert(tz)
    fig = go.Figure()
    fig.add_trace(
        go.Bar(
            x=at,
            y=[h.requests for h in hours],
            name="requests",
            yaxis="y2",
            opacity=0.35,
            hovertemplate="%{x|%Y-%m-%d %H:00}: %{y:,.0f} requests<extra></extra>",
        )
    )
    for q, dash in (("p50", "dot"), ("p95", "solid")):
        fig.add_trace(
            go.Scatter(
                x=at,
                y=[getattr(h, f"{q}_ms") for h in hours],
                name=f"TTFT {q}",
                mode="lines+markers",
                line_dash=dash,
                hovertemplate=f"%{{x|%Y-%m-%d %H:00}}: {q} %{{y:,.0f}} ms<extra></extra>",
            )
        )
    fig.update_layout(
        title="Production TTFT per hour",
        xaxis_title=f"hour ({tz})",
        yaxis=dict(title="TTFT (ms)", rangemode="tozero"),
        yaxis2=dict(overlaying="y", side="right", title="requests", showgrid=False, rangemode="tozero"),
        margin=dict(l=10, r=10, t=40, b=10),
        height=300,
        legend=dict(orientation="h", y=-0.3),
    )
    return fig
