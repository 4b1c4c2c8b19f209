"""Plotly builders for the Probes page: pure functions from query frames to figures.

Times arrive as UTC epoch ms and are shown in the viewer's time zone; percentiles
with too few samples (p95 needs n ≥ 20) are drawn grey, and every hover says n.
"""

from __future__ import annotations

from zoneinfo import ZoneInfo

import pandas as pd
import plotly.graph_objects as go

from planner.compare.charts import mark_empty
from planner.endpoints.samples import MEASURED_KINDS
from ttft_planner_app.charts import SEMANTIC

__all__ = ["ecdf_figure", "heatmap_figure", "hour_of_day_figure", "phase_figure", "time_series_figure"]

PHASE_LABELS = {
    "dns_ms": "DNS",
    "connect_ms": "connect",
    "tls_ms": "TLS",
    "headers_ms": "headers",
    "first_event_ms": "first event",
    "ttft_ms": "first token",
    "first_content_ms": "first content",
}


def _local(ms: pd.Series, tz: str) -> pd.Series:
    return pd.to_datetime(ms.astype("int64"), unit="ms", utc=True).dt.tz_convert(ZoneInfo(tz)).dt.tz_localize(None)


def _layout(fig: go.Figure, title: str, y: str = "TTFT (ms)", x: str | None = None) -> go.Figure:
    # The legend sits above the plot, right-aligned under the title, so it never covers the x-axis title.
    fig.update_layout(
        title=title,
        yaxis_title=y,
        xaxis_title=x,
        margin=dict(l=10, r=10, t=80, b=10),
        legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="right", x=1),
        hovermode="closest",
    )
    return fig


def time_series_figure(mode: str, df: pd.DataFrame, tz: str) -> go.Figure:
    """TTFT over time: each sample (mode 'raw') or per-bucket p50/p95 (mode 'bucketed'); failures marked red."""
    fig = go.Figure()
    if df.empty:
        return mark_empty(_layout(fig, "TTFT over time", x=f"time ({tz})"))
    if mode == "raw":
        counted = df["kind"].isin(MEASURED_KINDS) & ~df["cached_series"]  # planner.endpoints.samples' definition
        ok = df[counted & df["ok"] & df["ttft_ms"].notna()]
        bad = df[counted & ~df["ok"]]
        skipped = df[df["kind"] == "skipped"]
        cold = df[df["kind"].isin(("cold", "warm")) & df["ok"] & df["ttft_ms"].notna()]
        fig.add_scatter(
            x=_local(ok["started_at_ms"], tz),
            y=ok["ttft_ms"],
            mode="markers",
            name="TTFT",
            marker=dict(size=5),
            customdata=ok[["kind"]],
            hovertemplate="%{y:.0f} ms · %{customdata[0]}<extra></extra>",
        )
        base = float(ok["ttft_ms"].min()) if len(ok) else 0.0
        fig.add_scatter(
            x=_local(bad["started_at_ms"], tz),
            y=[base] * len(bad),
            mode="markers",
            name="failed",
            marker=dict(symbol="x", size=9, color=SEMANTIC["error"]),
            customdata=bad[["error_class"]],
            hovertemplate="failed: %{customdata[0]}<extra></extra>",
        )
        if len(skipped):
            fig.add_scatter(
                x=_local(skipped["started_at_ms"], tz),
                y=[base] * len(skipped),
                mode="markers",
                name="skipped slot",
                marker=dict(symbol="line-ns-open", size=10, color=SEMANTIC["muted"]),
                hovertemplate="skipped slot<extra></extra>",
            )
        if len(cold):
            fig.add_scatter(
                x=_local(cold["started_at_ms"], tz),
                y=cold["ttft_ms"],
                mode="markers",
                name="cold reading (not a sample)",
                marker=dict(symbol="diamond", size=8, color=SEMANTIC["muted"]),
                customdata=cold[["kind"]],
                hovertemplate="%{y:,.0f} ms · %{customdata[0]} probe of a cold reading<extra></extra>",
            )
        if ok.empty and bad.empty:
            mark_empty(fig)
        return _layout(fig, f"TTFT per sample ({len(ok):,} samples, {len(bad):,} failed)", x=f"time ({tz})")
    x = _local(df["t_ms"], tz)
    hover = "%{y:.0f} ms · n=%{customdata[0]} · failed %{customdata[1]}<extra></extra>"
    cd = df[["n", "failed"]]
    fig.add_scatter(x=x, y=df["p50_ms"], mode="lines", name="p50", customdata=cd, hovertemplate="p50 " + hover)
    fig.add_scatter(
        x=x,
        y=df["p95_ms"].where(df["n"] >= 20),
        mode="lines",
        name="p95 (n ≥ 20)",
        customdata=cd,
        hovertemplate="p95 " + hover,
    )
    bad = df[df["failed"] > 0]
    fig.add_scatter(
        x=_local(bad["t_ms"], tz),
        y=bad["p50_ms"].fillna(0),
        mode="markers",
        name="bucket with failures",
        marker=dict(symbol="x", size=8, color=SEMANTIC["error"]),
        customdata=bad[["failed"]],
        hovertemplate="%{customdata[0]} failed<extra></extra>",
    )
    minutes = int(df["bucket_ms"].iloc[0] // 60_000)
    return _layout(fig, f"TTFT p50/p95 per {minutes}-minute bucket", x=f"time ({tz})")


def hour_of_day_figure(hours: pd.DataFrame, tz: str) -> go.Figure:
    """p50 and p95 per hour of day (viewer's time zone) with n and error rate; unreliable hours grey. With an
    `n_rollup` column (planner.store.rollup_queries) > 0 the title and hover say which part came from hourly rollups."""
    hours = hours.copy()
    if int(hours["n"].sum()) == 0:
        return mark_empty(_layout(go.Figure(), f"TTFT by hour of day ({tz})", x=f"hour of day ({tz})"))
    hours["err_pct"] = (hours["error_rate"].fillna(0.0) * 100).round(1)
    if "n_rollup" not in hours:
        hours["n_rollup"] = 0
    rolled = int(hours["n_rollup"].sum()) > 0  # part of the range is only left as hourly histograms (retention)
    cd = hours[["n", "err_pct", "failed", "n_rollup"]]
    rel = hours["reliable_p95"].astype(bool)
    extra = " · %{customdata[3]} from hourly rollups (upper bound within ~12%)" if rolled else ""
    hover = "%{x}:00 p95 %{y:.0f} ms · n=%{customdata[0]} · errors %{customdata[1]}%" + extra + "<extra></extra>"
    fig = go.Figure()
    fig.add_bar(x=hours["hour"], y=hours["p95_ms"].where(rel), name="p95", customdata=cd, hovertemplate=hover)
    fig.add_bar(
        x=hours["hour"],
        y=hours["p95_ms"].where(~rel),
        name="p95, too few samples (n < 20)",
        customdata=cd,
        marker=dict(color=SEMANTIC["muted"], opacity=0.5),
        hovertemplate=hover,
    )
    fig.add_scatter(
        x=hours["hour"],
        y=hours["p50_ms"].where(hours["reliable_p50"].astype(bool)),
        name="p50",
        mode="lines+markers",
        customdata=cd,
        hovertemplate="%{x}:00 p50 %{y:.0f} ms · n=%{customdata[0]} · errors %{customdata[1]}%"
        + extra
        + "<extra></extra>",
    )
    fig.update_layout(barmode="overlay")
    fig.update_xaxes(tickmode="array", tickvals=list(range(24)), ticktext=[f"{h:02d}" for h in range(24)])
    title = f"TTFT by hour of day ({tz}) — n per hour in the hover"
    if rolled:
        title += (
            f"<br><sup>{int(hours['n_rollup'].sum()):,} of {int(hours['n'].sum()):,} samples from hourly rollups: "
            "percentiles are an upper bound within ~12%</sup>"
        )
    return _layout(fig, title, x=f"hour of day ({tz})")


def heatmap_figure(heat: pd.DataFrame, tz: str) -> go.Figure:
    """Day × hour heatmap of p50 TTFT (ms), n in the hover. The title is short enough for half the page's width
    (the axes name the time zone; the page says how many days it covers)."""
    if heat.empty:
        return mark_empty(_layout(go.Figure(), "p50 TTFT by day and hour", y="day"))
    z = heat.pivot_table(index="day", columns="hour", values="p50_ms", aggfunc="first").reindex(columns=range(24))
    n = heat.pivot_table(index="day", columns="hour", values="n", aggfunc="first").reindex(
        index=z.index, columns=range(24)
    )
    fig = go.Figure(
        go.Heatmap(
            z=z.values,
            x=[f"{h:02d}" for h in range(24)],
            y=[str(d) for d in z.index],
            customdata=n.values,
            colorbar=dict(title="p50 ms"),
            hovertemplate="%{y} %{x}:00 · p50 %{z:.0f} ms · n=%{customdata}<extra></extra>",
        )
    )
    # Days are categories: one day of data must read "2026-11-29", never a continuous date axis around it.
    fig.update_yaxes(type="category", categoryorder="array", categoryarray=[str(d) for d in z.index])
    return _layout(
        fig,
        "p50 TTFT by day and hour",
        y=f"day ({tz})",
        x=f"hour of day ({tz})",
    )


def ecdf_figure(points: pd.DataFrame) -> go.Figure:
    """Empirical CDF of TTFT."""
    fig = go.Figure()
    if len(points):
        fig.add_scatter(
            x=points["ttft_ms"],
            y=points["fraction"],
            mode="lines",
            line_shape="hv",
            name="ECDF",
            hovertemplate="%{x:.0f} ms: %{y:.1%} of samples at or below<extra></extra>",
        )
        n = int(points["n"].iloc[0])
    else:
        n = 0
    fig.update_yaxes(tickformat=".0%", range=[0, 1.02])
    fig = _layout(fig, f"ECDF of TTFT (n={n:,})", y="fraction of samples ≤ x", x="TTFT (ms)")
    return fig if n else mark_empty(fig)


def phase_figure(phases: pd.DataFrame) -> go.Figure:
    """Where the time goes: median phase boundaries as stacked segments from send to first content."""
    p = phases.set_index("phase")["p50_ms"]
    dns, conn, tls = (float(p.get(k)) if pd.notna(p.get(k)) else 0.0 for k in ("dns_ms", "connect_ms", "tls_ms"))
    edges = [("DNS", dns), ("connect", dns + conn), ("TLS", dns + conn + tls)]
    for k in ("headers_ms", "first_event_ms", "ttft_ms", "first_content_ms"):
        if pd.notna(p.get(k)):
            edges.append((PHASE_LABELS[k], float(p[k])))
    fig = go.Figure()
    prev = 0.0
    for label, edge in edges:
        width = max(0.0, edge - prev)
        fig.add_bar(
            y=["p50"],
            x=[width],
            name=label,
            orientation="h",
            hovertemplate=f"{label}: {width:.1f} ms (ends at {edge:.1f} ms)<extra></extra>",
        )
        prev = max(prev, edge)
    n = int(phases.loc[phases["phase"] == "ttft_ms", "n"].iloc[0]) if (phases["phase"] == "ttft_ms").any() else 0
    fig.update_layout(barmode="stack", height=260)
    fig = _layout(fig, f"Phases, medians of the newest {n:,} samples", y="", x="ms from send")
    return fig if n else mark_empty(fig)
