"""Figures for the What-if page: hour-of-day p95 per candidate, the tail's segments, cost vs p95.

Pure functions over the frames `planner.whatif.results.Comparison` returns. Hours whose p95
rests on fewer than 20 requests are drawn as hollow, muted markers.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from app.charts import SEMANTIC
from app.charts._labels import log_ticks, place_labels

__all__ = ["SEGMENT_LABELS", "cost_vs_p95_figure", "hourly_p95_figure", "segments_figure", "table_style"]

SEGMENT_LABELS = {
    "queue_ms": "Queueing",
    "cold_ms": "Cold start",
    "prefill_ms": "Prefill",
    "network_ms": "Network",
}


def _wide(values: pd.Series) -> bool:
    """True when positive values span more than 20×: a log axis keeps the small ones readable."""
    v = values.dropna()
    v = v[v > 0]
    return len(v) > 1 and v.max() / v.min() > 20


def _layout(fig: go.Figure, x: str, y: str, **kw) -> go.Figure:
    fig.update_layout(
        xaxis_title=x,
        yaxis_title=y,
        margin=dict(l=10, r=10, t=40, b=10),
        height=340,
        legend=dict(orientation="h", y=-0.25),
        **kw,
    )
    return fig


def hourly_p95_figure(hourly: pd.DataFrame, target_ms: float, tz: str) -> go.Figure:
    """Predicted p95 TTFT (ms) by hour of day, one line per candidate, with the target as a dashed line
    (log axis when the values span more than 20×)."""
    fig = go.Figure()
    for name, g in hourly.groupby("candidate", sort=False):
        g = g.sort_values("hour")
        fig.add_trace(
            go.Scatter(
                x=g["hour"],
                y=g["p95_ms"],
                name=str(name),
                mode="lines+markers",
                marker=dict(symbol=["circle" if ok else "circle-open" for ok in g["p95_reliable"]], size=8),
                customdata=g[["n"]].to_numpy(),
                hovertemplate="%{x}:00 · p95 %{y:,.0f} ms · n=%{customdata[0]}<extra></extra>",
            )
        )
    # A trace, not add_hline: its label survives a log axis and shows in the legend.
    fig.add_trace(
        go.Scatter(
            x=[-0.5, 23.5],
            y=[target_ms, target_ms],
            mode="lines",
            name=f"target {target_ms:,.0f} ms",
            line=dict(dash="dash", color=SEMANTIC["error"]),
            hoverinfo="skip",
        )
    )
    fig.update_xaxes(range=[-0.5, 23.5], dtick=2)
    values = pd.concat([hourly["p95_ms"], pd.Series([target_ms])])
    if _wide(values):
        fig.update_yaxes(**log_ticks(values.dropna().tolist()))
    return _layout(
        fig, f"hour of day ({tz})", "predicted p95 TTFT (ms)", title="Predicted p95 by hour (hollow: n < 20)"
    )


def segments_figure(segments: pd.DataFrame) -> go.Figure:
    """Stacked bars: mean time in each segment over each candidate's p95 tail (ms)."""
    fig = go.Figure()
    for key, label in SEGMENT_LABELS.items():
        g = segments[segments["segment"] == key]
        fig.add_trace(
            go.Bar(x=g["candidate"], y=g["ms"], name=label, hovertemplate=f"{label}: %{{y:,.0f}} ms<extra></extra>")
        )
    fig.update_layout(barmode="stack")
    return _layout(fig, "candidate", "mean over requests ≥ p95 (ms)", title="What the slowest 5% wait for")


#: The nominal plot area of the cost chart (full width at 1,400 px is wider), for placing its labels.
_COST_PLOT_PX = (700.0, 260.0)


def cost_vs_p95_figure(table: pd.DataFrame, target_ms: float) -> go.Figure:
    """Cost (USD/day) against predicted p95 (ms), one point per candidate that keeps up;
    the cheapest meeting the target starred.

    Candidate names are annotations set clear of the star and of each other (the starred one is placed first, see
    app/charts/_labels.py), not the markers' own text, which Plotly prints over a neighbour's."""
    ok = table.dropna(subset=["p95_ms"])
    sizes = [18 if c else 11 for c in ok["cheapest"]]
    fig = go.Figure(
        go.Scatter(
            x=ok["p95_ms"],
            y=ok["usd_per_day"],
            mode="markers",
            text=ok["candidate"],
            marker=dict(
                size=sizes,
                symbol=["star" if c else "circle" for c in ok["cheapest"]],
                color=[SEMANTIC["ok"] if m else SEMANTIC["warn"] for m in ok["meets_target"]],
            ),
            hovertemplate="%{text}: p95 %{x:,.0f} ms · $%{y:,.2f}/day<extra></extra>",
        )
    )
    fig.add_vline(x=target_ms, line_dash="dash", line_color=SEMANTIC["error"])
    x_log = _wide(pd.concat([ok["p95_ms"], pd.Series([target_ms])]))
    if x_log:
        fig.update_xaxes(**log_ticks([*ok["p95_ms"], target_ms]))
    if len(ok):
        # the starred candidate first, so it keeps the best place; labels keep clear of the target's line too
        order = sorted(range(len(ok)), key=lambda i: not bool(ok["cheapest"].iloc[i]))
        labels = place_labels(
            [float(ok["p95_ms"].iloc[i]) for i in order],
            [float(ok["usd_per_day"].iloc[i]) for i in order],
            [str(ok["candidate"].iloc[i]) for i in order],
            marker_px=[sizes[i] for i in order],
            x_log=x_log,
            vlines=[float(target_ms)],
            width_px=_COST_PLOT_PX[0],
            height_px=_COST_PLOT_PX[1],
        )
        for ann in labels:
            fig.add_annotation(**ann)
    return _layout(
        fig,
        "predicted p95 TTFT (ms) · dashed: target",
        "cost (USD/day)",
        title="Cost vs p95 (★ cheapest meeting the target)",
        showlegend=False,
    )


def _display_table(table: pd.DataFrame, target_label: str) -> pd.DataFrame:
    """Comparison.table() as the user reads it: labelled columns, numbers with units, yes/no instead of flags."""
    from app import present

    share_col = next((c for c in table.columns if c.startswith("share_within_")), None)
    rows = []
    for r in table.to_dict(orient="records"):
        rows.append(
            {
                "Candidate": r["candidate"],
                "Kind": r["kind"],
                "TTFT p50": present.ms(r["p50_ms"]),
                "TTFT p95": present.ms(r["p95_ms"]),
                "TTFT p99": present.ms(r["p99_ms"]),
                "Worst hourly p95": present.ms(r["worst_hour_p95_ms"]),
                f"Requests within the {target_label} target": present.pct(r[share_col])
                if share_col
                else present.MISSING,
                "Meets the target": "yes" if r["meets_target"] else "no",
                "GPU-hours": present.MISSING if present.is_missing(r["gpu_hours"]) else f"{r['gpu_hours']:,.1f}",
                "Cost of the period": present.usd(r["cost_usd"]),
                "Cost per day": present.usd(r["usd_per_day"]),
                "Cheapest meeting the target": "★" if r["cheapest"] else "",
                "Note": r["note"] or "",
            }
        )
    return pd.DataFrame(rows)


def table_style(table: pd.DataFrame, target_label: str = "chosen"):
    """Styler over the labelled table: the cheapest candidate meeting the target in bold green; candidates that
    cannot keep up muted."""
    shown = _display_table(table, target_label)
    cheapest = table["cheapest"].tolist()
    missing = table["p95_ms"].isna().tolist()

    def row(r: pd.Series) -> list[str]:
        if cheapest[r.name]:
            return [f"background-color: #e6f4ea; color: {SEMANTIC['ok']}; font-weight: bold"] * len(r)
        if missing[r.name]:
            return [f"color: {SEMANTIC['muted']}"] * len(r)
        return [""] * len(r)

    return shown.style.apply(row, axis=1)
