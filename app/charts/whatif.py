"""Figures for the What-if page: hour-of-day p95 per candidate, the tail's segments, cost vs p95.

Pure functions over the frames `planner.whatif.results.Comparison` returns. Hours whose p95
rests on fewer than 20 requests are drawn as hollow markers; each candidate's p95 prediction interval is a band
in its line's colour.
"""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go

from planner.whatif.interval import DEFAULT_LEVEL, Band
from ttft_planner_app.charts import SEMANTIC
from ttft_planner_app.charts._labels import log_ticks, place_labels
from ttft_planner_app.charts._layout import axes_layout

__all__ = [
    "CANDIDATE_COLORS",
    "SEGMENT_LABELS",
    "cost_vs_p95_figure",
    "hourly_p95_figure",
    "interval_text",
    "segments_figure",
    "table_view",
]

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
    return axes_layout(fig, x, y, height_px=340, **kw)


#: One colour per candidate (line and band alike): Plotly's D3 palette without its red, which marks the target.
CANDIDATE_COLORS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
#: How far above the highest finite value an unbounded interval's top is drawn (it cannot be drawn at infinity).
UNBOUNDED_HEADROOM = 1.5


def _rgba(hex_color: str, alpha: float) -> str:
    r, g, b = (int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r}, {g}, {b}, {alpha})"


def interval_text(lo: float | None, hi: float | None) -> str:
    """An interval as the user reads it: '700–950 ms', '700 ms – unbounded', '—' when there is none."""
    from planner import present

    if present.is_missing(lo) or present.is_missing(hi):
        return present.MISSING
    assert lo is not None and hi is not None
    return Band(math.nan, float(lo), float(hi)).range_text()


def hourly_p95_figure(hourly: pd.DataFrame, target_ms: float, tz: str, level: float) -> go.Figure:
    """Predicted p95 TTFT (ms) by hour of day, one line per candidate with its `level` prediction interval shaded
    in the line's colour (columns p95_lo_ms, p95_hi_ms; legend-grouped with the line), and the target as a dashed
    line (log axis when the values span more than 20×).

    An infinite end of an interval (at its slower speeds the candidate cannot keep up) is drawn at the plot's top,
    UNBOUNDED_HEADROOM × the highest finite value, and its hover says "unbounded": the axis stays finite."""
    fig = go.Figure()
    missing = [c for c in ("p95_lo_ms", "p95_hi_ms") if c not in hourly.columns]  # no interval: no band
    hourly = hourly.reindex(columns=[*hourly.columns, *missing])
    bands = hourly[["p95_lo_ms", "p95_hi_ms"]].astype(float).to_numpy().ravel()
    finite = [float(v) for v in [*hourly["p95_ms"].dropna(), *bands, target_ms] if math.isfinite(v)]
    top = max(finite) * UNBOUNDED_HEADROOM
    level_txt = f"{level:.0%} interval"
    for i, (name, g) in enumerate(hourly.groupby("candidate", sort=False)):
        g = g.sort_values("hour")
        color = CANDIDATE_COLORS[i % len(CANDIDATE_COLORS)]
        texts = [interval_text(lo, hi) for lo, hi in zip(g["p95_lo_ms"], g["p95_hi_ms"], strict=True)]
        band = g.assign(text=texts).dropna(subset=["p95_lo_ms", "p95_hi_ms"])
        if len(band):
            # One closed polygon: along the tops hour by hour, back along the bottoms.
            lo = band["p95_lo_ms"].astype(float).clip(upper=top)
            hi = band["p95_hi_ms"].astype(float).clip(upper=top)
            hover = [f"{h}:00 · {level_txt} {t}" for h, t in zip(band["hour"], band["text"], strict=True)]
            fig.add_trace(
                go.Scatter(
                    x=[*band["hour"], *band["hour"][::-1]],
                    y=[*hi, *lo[::-1]],
                    name=f"{name} · {level_txt}",
                    legendgroup=str(name),
                    showlegend=False,
                    fill="toself",
                    fillcolor=_rgba(color, 0.18),
                    mode="lines",
                    line=dict(width=0, color=color),
                    hoveron="points",
                    text=[*hover, *hover[::-1]],
                    hovertemplate="%{text}<extra></extra>",
                )
            )
        fig.add_trace(
            go.Scatter(
                x=g["hour"],
                y=g["p95_ms"],
                name=str(name),
                legendgroup=str(name),
                mode="lines+markers",
                line=dict(color=color),
                marker=dict(
                    symbol=["circle" if ok else "circle-open" for ok in g["p95_reliable"]], size=8, color=color
                ),
                customdata=list(zip(g["n"], texts, strict=True)),
                hovertemplate=f"%{{x}}:00 · p95 %{{y:,.0f}} ms · {level_txt} %{{customdata[1]}} · "
                "n=%{customdata[0]}<extra></extra>",
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
    values = pd.Series(finite)
    if _wide(values):
        fig.update_yaxes(**log_ticks(finite))
    return _layout(
        fig,
        f"hour of day ({tz}) · hollow: n < 20",
        "predicted p95 TTFT (ms)",
        # short enough for a half-width column at 1,400 px (about 50 characters of title at most)
        title=f"Predicted p95 by hour · shaded: {level:.0%} interval",
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


def _display_table(table: pd.DataFrame, target_label: str, level: float = DEFAULT_LEVEL) -> pd.DataFrame:
    """Comparison.table() as the user reads it: labelled columns, numbers with units, yes/no instead of flags;
    the p95's `level` prediction interval as one range ('700–950 ms')."""
    from planner import present

    share_col = next((c for c in table.columns if c.startswith("share_within_")), None)
    rows = []
    for r in table.to_dict(orient="records"):
        rows.append(
            {
                "Candidate": r["candidate"],
                "Kind": r["kind"],
                "TTFT p50": present.ms(r["p50_ms"]),
                "TTFT p95": present.ms(r["p95_ms"]),
                f"TTFT p95, {level:.0%} interval": interval_text(r.get("p95_lo_ms"), r.get("p95_hi_ms")),
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


def table_view(
    table: pd.DataFrame, target_label: str = "chosen", level: float = DEFAULT_LEVEL
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The labelled table (`level`: of the p95's prediction interval) and its CSS per cell: the cheapest candidate
    meeting the target in bold green; candidates that cannot keep up muted."""
    shown = _display_table(table, target_label, level)
    cheapest = table["cheapest"].tolist()
    missing = table["p95_ms"].isna().tolist()

    def row(i: int) -> str:
        if cheapest[i]:
            return f"background-color: #e6f4ea; color: {SEMANTIC['ok']}; font-weight: bold"
        if missing[i]:
            return f"color: {SEMANTIC['muted']}"
        return ""

    css = pd.DataFrame({c: [row(i) for i in range(len(shown))] for c in shown.columns}, index=shown.index)
    return shown, css
