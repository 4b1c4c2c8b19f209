"""Figures for the Logs page: prompt-token distribution, hour-of-day shapes, traffic, cold-start exposure.

Pure functions over the frames a LogSummary (planner.logs.summarize) and planner.logs.distribution give. Unreliable
percentiles (n below
planner.percentiles.min_n_for) are drawn in the muted colour.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.graph_objects as go

from planner.logs.exposure import P95_COLD_THRESHOLD
from planner.percentiles import Percentile
from planner.present import count
from ttft_planner_app.charts import SEMANTIC
from ttft_planner_app.charts._labels import log_ticks
from ttft_planner_app.charts._layout import axes_layout

__all__ = [
    "cold_curve_figure",
    "ecdf_figure",
    "histogram_figure",
    "hour_percentiles_figure",
    "percentile_rows",
    "percentile_table_style",
    "traffic_figure",
    "ttft_vs_probes_figure",
    "weekday_figure",
]


def _layout(fig: go.Figure, x: str, y: str, **kw) -> go.Figure:
    return axes_layout(fig, x, y, height_px=320, **kw)


def _series(fig: go.Figure, frame: pd.DataFrame, x: str, *series: dict[str, Any]) -> go.Figure:
    """`fig` with one trace per entry of `series`: the column named by its "y" over the column `x` of `frame`, a
    go.Bar where it says "bar": True, else a go.Scatter; "customdata" names a column too, and the entry's other keys
    are the trace's own (name, mode, line_dash, hovertemplate, …)."""
    for entry in series:
        kw = dict(entry)
        trace = go.Bar if kw.pop("bar", False) else go.Scatter
        if "customdata" in kw:
            kw["customdata"] = frame[kw["customdata"]]
        fig.add_trace(trace(x=frame[x], y=frame[kw.pop("y")], **kw))
    return fig


def percentile_rows(groups: dict[str, dict[str, Percentile]], unit: str) -> pd.DataFrame:
    """One row per (what, percentile): columns what, percentile, value, n, reliable, unit."""
    rows = []
    for what, pcs in groups.items():
        for key, pc in pcs.items():
            rows.append(
                {"what": what, "percentile": key, "value": pc.value, "n": pc.n, "reliable": pc.reliable, "unit": unit}
            )
    return pd.DataFrame(rows, columns=["what", "percentile", "value", "n", "reliable", "unit"])


def percentile_table_style(rows: pd.DataFrame):
    """Styler: values as counts, '—' where there is none (n = 0: the grid would draw a missing number as "None"),
    those with n too small for their percentile in the muted colour."""

    def grey(col: pd.Series) -> list[str]:
        return ["" if ok else f"color: {SEMANTIC['muted']}" for ok in rows["reliable"]]

    shown = rows.assign(value=[count(v) for v in rows["value"]])
    return shown.style.apply(grey, subset=["value", "percentile"])


def _marks(fig: go.Figure, marks: dict[str, Percentile]) -> None:
    """Dashed lines at the percentiles, labelled on alternate sides and heights so close values never overprint."""
    shown = [(pc.value, k, pc) for k, pc in marks.items() if pc.value is not None]
    for i, (_, key, pc) in enumerate(sorted(shown, key=lambda vkp: vkp[0])):
        colour = None if pc.reliable else SEMANTIC["muted"]
        fig.add_vline(x=pc.value, line_dash="dash", line_color=colour)
        fig.add_annotation(
            x=pc.value,
            xref="x",
            y=1.0 - 0.09 * (i % 2),
            yref="paper",
            yanchor="bottom",
            xanchor="right" if i % 2 == 0 else "left",
            text=f"{key} {pc.value:,.0f}",
            showarrow=False,
            font=dict(color=colour) if colour else None,
            bgcolor="rgba(255,255,255,0.8)",
        )


def histogram_figure(hist: pd.DataFrame, marks: dict[str, Percentile], what: str = "prompt tokens") -> go.Figure:
    """Bars of requests per token bin (from planner.logs.distribution.histogram) with p50/p95 lines."""
    fig = go.Figure(
        go.Bar(
            x=(hist["left"] + hist["right"]) / 2,
            y=hist["count"],
            width=(hist["right"] - hist["left"]),
            name="requests",
            customdata=hist[["left", "right"]].to_numpy(),
            hovertemplate="%{customdata[0]:,.0f}–%{customdata[1]:,.0f}: %{y} requests<extra></extra>",
        )
    )
    _marks(fig, marks)
    return _layout(fig, what, "requests", title=f"Distribution of {what}")


def ecdf_figure(points: pd.DataFrame, marks: dict[str, Percentile], what: str = "prompt tokens") -> go.Figure:
    """Step line of the empirical CDF (planner.logs.distribution.ecdf_points) with p50/p95 lines."""
    fig = go.Figure(
        go.Scatter(
            x=points["value"],
            y=points["fraction"],
            mode="lines",
            line_shape="hv",
            name="ECDF",
            hovertemplate="%{x:,.0f}: %{y:.1%} of requests at or below<extra></extra>",
        )
    )
    _marks(fig, marks)
    fig.update_yaxes(tickformat=".0%", range=[0, 1.02])
    return _layout(fig, what, "share of requests ≤ x", title=f"ECDF of {what}")


def hour_percentiles_figure(by_hour: pd.DataFrame, what: str, tz: str) -> go.Figure:
    """p50 and p95 per local hour (LogSummary.prompt_by_hour); hours with n < 20 have muted p95 markers."""

    def line(q: str, **kw: Any) -> dict[str, Any]:
        hover = f"%{{x}}:00 {q} %{{y:,.0f}} (n=%{{customdata}})<extra></extra>"
        return dict(y=q, mode="lines+markers", name=q, customdata="n", hovertemplate=hover, **kw)

    p95_colours = ["#f08c00" if ok else SEMANTIC["muted"] for ok in by_hour["p95_reliable"]]
    fig = _series(go.Figure(), by_hour, "hour", line("p50"), line("p95", marker=dict(color=p95_colours)))
    fig.update_xaxes(dtick=2, range=[-0.5, 23.5])
    return _layout(fig, f"hour of day ({tz})", what, title=f"{what} by hour of day (grey p95: fewer than 20 requests)")


def traffic_figure(hourly: pd.DataFrame, tz: str) -> go.Figure:
    """Requests per hour of day (bars) and tokens per hour (line, right axis), averaged over the log's days."""
    fig = _series(
        go.Figure(),
        hourly,
        "hour",
        dict(bar=True, y="requests", name="requests / hour", hovertemplate="%{x}:00 %{y:,.1f} requests<extra></extra>"),
        dict(
            y="tokens_per_hour",
            name="tokens / hour (prompt + output)",
            yaxis="y2",
            mode="lines+markers",
            hovertemplate="%{x}:00 %{y:,.0f} tokens<extra></extra>",
        ),
    )
    fig.update_layout(
        yaxis2=dict(overlaying="y", side="right", title="tokens / hour", showgrid=False, rangemode="tozero"),
        yaxis=dict(rangemode="tozero"),
    )
    fig.update_xaxes(dtick=2)
    return _layout(fig, f"hour of day ({tz})", "requests / hour", title="Traffic by hour of day (average day)")


def weekday_figure(weekdays: pd.DataFrame) -> go.Figure:
    """Requests per weekday (average over the weeks in the log)."""
    fig = _series(
        go.Figure(),
        weekdays,
        "name",
        dict(bar=True, y="requests", name="requests / day", hovertemplate="%{x}: %{y:,.0f} requests<extra></extra>"),
    )
    return _layout(fig, "weekday", "requests / day", title="Traffic by weekday")


def cold_curve_figure(cold: pd.DataFrame) -> go.Figure:
    """Cold fraction over the scale-down window: trace-driven and Poisson e^(−λW), with the 5% (p95) line."""
    hover = "W = %{x:,.0f} s: %{y:.1%} cold<extra></extra>"
    fig = _series(
        go.Figure(),
        cold,
        "window_s",
        dict(
            y="trace_cold_fraction",
            mode="lines+markers",
            name="your trace (one scale-to-zero replica)",
            hovertemplate=hover,
        ),
        dict(
            y="poisson_cold_fraction",
            mode="lines",
            line_dash="dot",
            name="Poisson e^(−λW) at the mean rate",
            hovertemplate=hover,
        ),
    )
    fig.add_hline(
        y=P95_COLD_THRESHOLD,
        line_color=SEMANTIC["warn"],
        line_dash="dash",
        annotation_text="5%: above this, cold starts are in the p95",
        # the left end: cold fractions fall as W grows, so the curves cross the 5% line on the right
        annotation_position="top left",
    )
    fig.update_xaxes(**log_ticks(cold["window_s"].tolist()))
    fig.update_yaxes(tickformat=".0%", rangemode="tozero")
    return _layout(
        fig,
        "scale-down window W (s, log scale)",
        "requests that start cold",
        title="Cold-start exposure by scale-down window",
    )


def ttft_vs_probes_figure(
    production: pd.DataFrame, probes: pd.DataFrame | None, probe_label: str, tz: str
) -> go.Figure:
    """Production TTFT p50/p95 per local hour (LogSummary.ttft_by_hour) beside a probe
    series' p50_ms/p95_ms per hour (planner.store.probe_queries.hour_of_day), when one is chosen."""
    fig = hour_percentiles_figure(production, "TTFT (ms)", tz)
    fig.data[0].name, fig.data[1].name = "users waited, p50", "users waited, p95"
    if probes is not None and not probes.empty:
        _series(
            fig,
            probes,
            "hour",
            *(
                dict(
                    y=f"{q}_ms",
                    mode="lines",
                    line_dash="dot",
                    name=f"probe {q} ({probe_label})",
                    customdata="n",
                    hovertemplate=f"%{{x}}:00 probe {q} %{{y:,.0f}} ms (n=%{{customdata}})<extra></extra>",
                )
                for q in ("p50", "p95")
            ),
        )
    fig.update_layout(title="TTFT by hour of day: what users waited vs what the probes measured")
    return fig
