"""Capacity & cost figures: break-even, hybrid by hour, load projection, GPU fit, prefill, keep-warm trade-off."""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go

from planner.capacity.cost import BreakEven
from ttft_planner_app.charts import SEMANTIC
from ttft_planner_app.charts._labels import log_ticks, place_labels, plot_px

__all__ = [
    "break_even_figure",
    "gpu_fit_figure",
    "hybrid_figure",
    "prefill_figure",
    "projection_figure",
    "tradeoff_figure",
]


def break_even_figure(
    curve: pd.DataFrame, be: BreakEven, token_definition: str, traffic_utilisation: float | None = None
) -> go.Figure:
    """Monthly cost of one replica vs serverless for the same tokens, over utilisation, with u* marked.

    The title states the node size (GPUs per replica, $/h) and what counts as a token.
    """
    x = [u * 100 for u in curve["utilisation"]]
    fig = go.Figure()
    fig.add_scatter(
        x=x,
        y=curve["serverless_usd_per_month"],
        mode="lines",
        name=f"Serverless (${be.blended_usd_per_mtok:.3f}/1M blended)",
        hovertemplate="%{x:.0f}% busy: $%{y:,.0f}/month<extra>serverless</extra>",
    )
    fig.add_scatter(
        x=x,
        y=curve["dedicated_usd_per_month"],
        mode="lines",
        name=f"Dedicated ({be.gpus_per_replica} GPU, ${be.node_usd_per_hour:,.2f}/h)",
        hovertemplate="$%{y:,.0f}/month whatever the load<extra>dedicated</extra>",
    )
    u = be.break_even_utilisation
    if math.isfinite(u) and u <= 1:
        fig.add_vline(
            x=u * 100, line_dash="dash", annotation_text=f"break-even u* = {u:.0%}", annotation_position="top left"
        )
    else:
        fig.add_annotation(
            x=50,
            y=float(curve["dedicated_usd_per_month"].iloc[0]),
            yshift=18,
            showarrow=False,
            text="serverless is cheaper at any utilisation" + ("" if math.isinf(u) else f" (u* = {u:.2f})"),
            font={"color": SEMANTIC["warn"]},
        )
    if traffic_utilisation is not None and 0 < traffic_utilisation <= 1:
        y = traffic_utilisation * be.capacity_tokens_per_hour * 730 / 1e6 * be.blended_usd_per_mtok
        fig.add_scatter(
            x=[traffic_utilisation * 100],
            y=[y],
            mode="markers+text",
            name="Your traffic",
            text=["your traffic"],
            textposition="bottom right",
            marker={"size": 12, "symbol": "diamond"},
            hovertemplate="your traffic: %{x:.0f}% of one replica<extra></extra>",
        )
    fig.update_layout(
        title=f"Per {be.gpus_per_replica}-GPU replica (node), {be.capacity_tokens_per_hour / 1e6:,.1f}"
        f"M tokens/h capacity<br><sup>{token_definition}</sup>",
        xaxis_title="utilisation of one replica (%)",
        yaxis_title="USD per month",
        height=460,
        legend={"orientation": "h", "y": -0.25},
        margin={"t": 80, "b": 100},
    )
    return fig


def hybrid_figure(hourly: pd.DataFrame, base_replicas: int) -> go.Figure:
    """Tokens per hour of day, split into the dedicated base and the serverless overflow."""
    fig = go.Figure()
    fig.add_bar(
        x=hourly["hour"],
        y=hourly["dedicated_tokens"] / 1e6,
        name=f"Dedicated base ({base_replicas} replica(s))",
        hovertemplate="%{x}:00 %{y:,.1f}M tokens<extra>dedicated</extra>",
    )
    fig.add_bar(
        x=hourly["hour"],
        y=hourly["overflow_tokens"] / 1e6,
        name="Serverless overflow",
        hovertemplate="%{x}:00 %{y:,.1f}M tokens<extra>serverless</extra>",
    )
    fig.update_layout(
        barmode="stack",
        title="Hybrid: dedicated base + serverless overflow per hour of day",
        xaxis_title="hour of day",
        yaxis_title="M tokens per hour",
        height=400,
        yaxis={"rangemode": "nonnegative"},
        xaxis={"dtick": 3},
        legend={"orientation": "h", "y": -0.25},
        margin={"b": 100},
    )
    return fig


def projection_figure(table: pd.DataFrame) -> go.Figure:
    """Projected weight-load seconds vs checkpoint size, one line per rate (log axes with 1-2-5 ticks, see
    app/charts/_labels.log_ticks; constant-rate estimate)."""
    fig = go.Figure()
    for col in table.columns[2:]:
        fig.add_scatter(
            x=table["checkpoint_gb"],
            y=table[col],
            mode="lines+markers",
            name=col,
            hovertemplate="%{x:,.0f} GB → %{y:,.0f} s<extra></extra>",
        )
    fig.update_layout(
        title="Weight-load time vs checkpoint size (constant-rate estimate)",
        xaxis_title="checkpoint (GB)",
        yaxis_title="seconds",
        height=460,
        legend={"orientation": "h", "y": -0.25},
        margin={"b": 110},
    )
    fig.update_xaxes(**log_ticks(table["checkpoint_gb"].tolist()))
    fig.update_yaxes(**log_ticks([v for col in table.columns[2:] for v in table[col]]))
    return fig


def gpu_fit_figure(table: pd.DataFrame) -> go.Figure:
    """GPUs needed per GPU type (weights + KV); types that fit on no single 8-GPU node are marked."""
    colors = [SEMANTIC["ok"] if f else SEMANTIC["error"] for f in table["fits"]]
    labels = [
        (f"{int(t)} GPU{'s' if t != 1 else ''}" if t == m else f"needs {int(m)}, runs on {int(t)} (tensor parallel)")
        if f
        else f"≥ {int(m)} GPUs: no single node"
        for t, m, f in zip(table["tp_gpus"].fillna(0), table["min_gpus"], table["fits"], strict=True)
    ]
    # Bars across, each label to the right of its bar at full size: upright bars squeezed a long label ("needs 3, runs
    # on 4 (tensor parallel)") into the bar's width, down to 4 px text.
    top = float(table["min_gpus"].max()) if len(table) else 1.0
    fig = go.Figure(
        go.Bar(
            y=table["gpu"],
            x=table["min_gpus"],
            orientation="h",
            marker_color=colors,
            text=labels,
            textposition="outside",
            constraintext="none",
            cliponaxis=False,
            textfont={"size": 12},
            hovertemplate="%{y}: %{text}<extra></extra>",
        )
    )
    fig.update_layout(
        title="GPUs needed for weights + KV cache",
        xaxis_title="GPUs (minimum)",
        # room right of the longest bar for its label (about 2.2 bar lengths of the axis at most)
        xaxis_range=[0, top * 2.2],
        yaxis={"autorange": "reversed", "automargin": True},
        height=max(300, 60 + 42 * len(table)),
        showlegend=False,
        uniformtext={"minsize": 12, "mode": "show"},
    )
    return fig


def prefill_figure(curve: pd.DataFrame, budgets: pd.DataFrame) -> go.Figure:
    """Modelled prefill time vs prompt length, with each interaction type's prefill budget as a line."""
    fig = go.Figure()
    fig.add_scatter(
        x=curve["prompt_tokens"],
        y=curve["prefill_ms"],
        mode="lines",
        name="modelled prefill time",
        hovertemplate="%{x:,.0f} tokens → %{y:,.0f} ms<extra></extra>",
    )
    x_max = float(curve["prompt_tokens"].max()) if len(curve) else 1.0
    for _, row in budgets.iterrows():
        if (
            row["prefill_budget_ms"] > 0
        ):  # one dotted line per budget, named in the legend (labels on the lines collide)
            fig.add_scatter(
                x=[0, x_max],
                y=[row["prefill_budget_ms"]] * 2,
                mode="lines",
                line={"dash": "dot"},
                name=f"{row['interaction']} budget: {row['prefill_budget_ms']:,.0f} ms",
                hovertemplate=f"{row['interaction']}: {row['prefill_budget_ms']:,.0f} ms<extra></extra>",
            )
    fig.update_layout(
        title="Prefill time vs p95 prompt length",
        xaxis_title="prompt tokens",
        yaxis_title="ms",
        height=440,
        legend={"orientation": "h", "y": -0.25},
        margin={"b": 110},
        yaxis={"rangemode": "nonnegative"},
    )
    return fig


#: The nominal plot area of the keep-warm chart (the right-hand column at 1,400 px), for placing its labels.
_TRADEOFF_PLOT_PX = (480.0, 260.0)
_TRADEOFF_MARKER_PX = 10.0


def _window_text(w: float) -> str:
    return "always warm" if math.isinf(w) else f"{w:g} s"


def _tradeoff_labels(table: pd.DataFrame) -> list[dict]:
    """One label per group of windows whose markers fall on the same spot ("300 s – 3600 s, always warm"): windows
    that cost the same and give the same p95 are one choice to the reader, and their labels would print over each
    other. Groups are runs of consecutive windows within a marker's width of the run's first one."""
    xs = [float(v) for v in table["keep_warm_usd_per_month"]]
    ys = [float(v) for v in table["p95_ttft_ms"]]
    windows = [float(w) for w in table["window_s"]]
    width, height = _TRADEOFF_PLOT_PX
    px, py = plot_px(xs, ys, x_log=False, y_log=False, width_px=width, height_px=height)
    groups: list[list[int]] = []
    for i in range(len(xs)):
        if groups:
            first = groups[-1][0]
            if abs(px[i] - px[first]) < _TRADEOFF_MARKER_PX and abs(py[i] - py[first]) < _TRADEOFF_MARKER_PX:
                groups[-1].append(i)
                continue
        groups.append([i])
    texts = [""] * len(xs)
    for g in groups:
        finite = [windows[i] for i in g if math.isfinite(windows[i])]
        parts = []
        if finite:
            lo, hi = min(finite), max(finite)
            parts.append(_window_text(lo) if lo == hi else f"{lo:g} s – {hi:g} s")
        if len(finite) < len(g):
            parts.append(_window_text(math.inf))
        # the group's label sits on its middle member, so the label is centred on the cluster
        texts[g[len(g) // 2]] = ", ".join(parts)
    return place_labels(xs, ys, texts, marker_px=_TRADEOFF_MARKER_PX, width_px=width, height_px=height)


def _top_ms(values: pd.Series) -> float:
    """The top of a ms axis that starts at 0: 15 % above the largest value (1 ms when there is none)."""
    top = float(values.max()) if len(values) else 0.0
    return top * 1.15 if top > 0 else 1.0


def tradeoff_figure(table: pd.DataFrame) -> go.Figure:
    """Keep-warm cost per month vs p95 TTFT with cold starts, one point per scale-down window (and always-warm).

    Each point is labelled with its window; points on the same spot share one label, and labels are set on the
    side that leaves them clear of each other and of the markers (see app/charts/_labels.py)."""
    colors = [SEMANTIC["error"] if c else SEMANTIC["ok"] for c in table["cold_in_p95"]]
    fig = go.Figure(
        go.Scatter(
            x=table["keep_warm_usd_per_month"],
            y=table["p95_ttft_ms"],
            mode="markers",
            text=[_window_text(w) for w in table["window_s"]],
            marker={"size": _TRADEOFF_MARKER_PX, "color": colors},
            customdata=list(zip(table["option"], table["cold_fraction"] * 100, strict=True)),
            hovertemplate="%{customdata[0]}<br>$%{x:,.0f}/month"
            ", p95 %{y:,.0f} ms, %{customdata[1]:.1f}% cold<extra></extra>",
        )
    )
    fig.update_layout(
        title="Keep-warm cost vs p95 TTFT, per scale-down window W"
        "<br><sup>red: more than 5% of requests are cold, so the cold start is in the p95</sup>",
        xaxis_title="USD per month (warm GPU time)",
        yaxis_title="p95 TTFT (ms)",
        # From 0: equal p95s (no window puts a cold start in the p95) would otherwise span a 2 ms sliver.
        yaxis_range=[0, _top_ms(table["p95_ttft_ms"])],
        xaxis_rangemode="tozero",
        height=440,
        showlegend=False,
        annotations=_tradeoff_labels(table) if len(table) else [],
    )
    return fig
