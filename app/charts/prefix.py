"""Prefix cache figure: hit rate and predicted prefill p95 against KV tokens per replica, one line per routing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from planner.kvcache.regime import RegimePoint
from ttft_planner_app.charts import SEMANTIC
from ttft_planner_app.charts._labels import log_ticks

__all__ = ["ROUTING_COLORS", "regime_figure"]

#: One colour per routing policy, the same in both panels (Plotly's D3 palette without its red).
ROUTING_COLORS = {
    "round-robin": "#1f77b4",
    "least-loaded": "#ff7f0e",
    "session": "#2ca02c",
    "prefix": "#9467bd",
}
_OTHER_COLOR = "#7f7f7f"
_DEPLOYMENT_COLOR = "#404040"  # the deployment's own capacity: a reference line, not a verdict


def _marker(fig: go.Figure, x: float, tops: tuple[float, float], name: str, dash: str, color: str, group: str) -> None:
    """A vertical line at `x` across both panels (from 0 to each panel's top), named once in the legend.

    A two-point line trace rather than a shape with an annotation: the legend names it (labels of nearby lines
    would print over each other), and it sits right on a log axis (a shape's annotation there would need log10 x).
    """
    for row, top in ((1, tops[0]), (2, tops[1])):
        fig.add_trace(
            go.Scatter(
                x=[x, x],
                y=[0, top],
                mode="lines",
                line={"dash": dash, "color": color, "width": 1.5},
                name=name,
                legendgroup=group,
                showlegend=row == 1,
                hovertemplate=f"{name}<extra></extra>",
            ),
            row=row,
            col=1,
        )


def regime_figure(
    sweep: Sequence[RegimePoint], capacity_tokens: int, knees: Mapping[str, int | None], replicas: int
) -> go.Figure:
    """Hit rate (top panel) and predicted prefill p95 (bottom) against KV tokens per replica (log axis), one line
    per routing policy, at `replicas` replicas; a dashed line at the deployment's capacity and a dotted one at each
    knee (routings whose knee falls at the same capacity share one line and one legend entry)."""
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08, row_heights=[0.6, 0.4])
    routings = list(dict.fromkeys(p.routing for p in sweep))
    prefill_top = max((p.ttft_p95_ms for p in sweep if p.ttft_p95_ms is not None), default=0.0) or 1.0
    for routing in routings:
        pts = sorted((p for p in sweep if p.routing == routing), key=lambda p: p.capacity_tokens)
        color = ROUTING_COLORS.get(routing, _OTHER_COLOR)
        fig.add_trace(
            go.Scatter(
                x=[p.capacity_tokens for p in pts],
                y=[p.hit_rate * 100 for p in pts],
                mode="lines+markers",
                name=routing,
                legendgroup=routing,
                line={"color": color},
                hovertemplate=f"{routing}: %{{x:,}} KV tokens per replica → %{{y:.1f}}% hit rate<extra></extra>",
            ),
            row=1,
            col=1,
        )
        timed = [p for p in pts if p.ttft_p95_ms is not None]
        fig.add_trace(
            go.Scatter(
                x=[p.capacity_tokens for p in timed],
                y=[p.ttft_p95_ms for p in timed],
                mode="lines+markers",
                name=routing,
                legendgroup=routing,
                showlegend=False,
                line={"color": color},
                hovertemplate=f"{routing}: %{{x:,}} KV tokens per replica → prefill p95 %{{y:,.0f}} ms<extra></extra>",
            ),
            row=2,
            col=1,
        )
    tops = (100.0, prefill_top * 1.05)
    _marker(
        fig, capacity_tokens, tops, f"this deployment: {capacity_tokens:,} tokens", "dash", _DEPLOYMENT_COLOR, "cap"
    )
    by_knee: dict[int, list[str]] = {}
    for routing in routings:
        k = knees.get(routing)
        if k is not None:
            by_knee.setdefault(k, []).append(routing)
    for k, names in sorted(by_knee.items()):
        color = ROUTING_COLORS.get(names[0], _OTHER_COLOR) if len(names) == 1 else SEMANTIC["muted"]
        _marker(fig, k, tops, f"knee at {k:,} tokens: {', '.join(names)}", "dot", color, f"knee-{k}")
    xs = [p.capacity_tokens for p in sweep] + [capacity_tokens]
    fig.update_xaxes(**log_ticks(xs))
    fig.update_xaxes(title_text="KV tokens per replica (log scale)", row=2, col=1)
    fig.update_yaxes(title_text="hit rate (%)", range=[0, 105], ticksuffix="%", row=1, col=1)
    fig.update_yaxes(title_text="prefill p95 (ms)", rangemode="nonnegative", row=2, col=1)
    fig.update_layout(
        title=f"Hit rate and prefill p95 by KV tokens per replica, {replicas} replica{'s' if replicas != 1 else ''}"
        "<br><sup>dashed: this deployment's capacity · dotted: the knee, past which more KV memory buys little</sup>",
        height=560,
        legend={"orientation": "h", "y": -0.18},
        margin={"t": 80, "b": 120},
    )
    return fig
