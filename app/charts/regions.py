"""Figures for the Regions page: ranked table data, world map, distributions, server vs browser, history.

Pure functions over planner.store.rtt frames (rtt_summary / load_samples) and catalog regions.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

from planner import present
from planner.percentiles import min_n_for, percentile
from planner.probes.rtt_rank import ranked, row_outcome, row_status
from planner.regions.catalog import Region, RttMethod
from planner.settings import vantage_name
from ttft_planner_app.charts import SEMANTIC, SIDE_COLORS

__all__ = [
    "MAP_CONFIG",
    "TOPOJSON_URL",
    "distribution_figure",
    "history_figure",
    "map_figure",
    "ranked_rows",
    "ranked_table",
    "server_vs_browser_figure",
    "vantage_label",
]

#: Where Plotly's geo traces read their world shapes: app/static/topojson/ served by Streamlit (relative to the
#: page, so a base URL path works too) instead of Plotly's CDN — the map draws with no internet.
TOPOJSON_URL = "app/static/topojson/"
MAP_CONFIG = {"topojsonURL": TOPOJSON_URL, "displaylogo": False}


def vantage_label(v) -> str:
    """'' (the one default vantage: the server the worker and the page run on) reads as words (vantage_name)."""
    return vantage_name(None if not isinstance(v, str) and pd.isna(v) else v)


RANKED_COLUMNS = [
    "rank",
    "region",
    "region_id",
    "provider",
    "city",
    "side",
    "vantage",
    "method",
    "method_code",
    "median_ms",
    "min_ms",
    "p90_ms",
    "p90_reliable",
    "n",
    "n_errors",
    "status",
    "outcome",
    "last_measured",
    "last_measured_at_ms",
    "anycast",
    "lat",
    "lon",
    "proxy",
]

#: What each stored method measured, in words (the network figure's description uses these).
METHOD_NAMES: dict[str, str] = {
    RttMethod.TCP_CONNECT: "TCP connect",
    RttMethod.RESOURCE_TIMING: "Resource Timing",
    RttMethod.FETCH_PERFORMANCE_NOW: "performance.now() around fetch",
}
#: The table's Method column: the name, and why the fallback was used.
METHOD_LABELS = METHOD_NAMES | {
    RttMethod.FETCH_PERFORMANCE_NOW: METHOD_NAMES[RttMethod.FETCH_PERFORMANCE_NOW]
    + " (fallback: no Timing-Allow-Origin)"
}
#: The methods whose samples are an RTT (server TCP connects, browser samples); dns, tls and https-ttfb are not.
_RTT_METHODS = [RttMethod.TCP_CONNECT, RttMethod.RESOURCE_TIMING, RttMethod.FETCH_PERFORMANCE_NOW]


def _text(v) -> str:
    """'' for None/NaN (pandas turns missing strings into NaN), else str(v)."""
    return "" if v is None or (not isinstance(v, str) and pd.isna(v)) else str(v)


#: The legend above the plot, right-aligned under the title: below it, its box hid the region ticks it overlapped.
ABOVE_PLOT = dict(orientation="h", yanchor="bottom", y=1.02, xanchor="right", x=1)


def _two_lines(label: str) -> str:
    """A region's label as an axis tick on two lines ("AWS<br>Europe (Ireland)"): half the page's width holds
    several of them side by side."""
    return label.replace(" · ", "<br>", 1)


def ranked_rows(summary: pd.DataFrame, regions: Sequence[Region]) -> pd.DataFrame:
    """The ranked table: one row per (region, side, vantage) in planner.probes.rtt_rank's order (fastest median
    first, no median last, ties by label).

    `status` is rtt_rank.row_status: "ok", "no samples", or the failure class and sentence of the newest outcome,
    with the notes of anycast and proxied rows. p90_reliable is False below n = 10.
    """
    by_id = {r.id: r for r in regions}
    rows = []
    for rec in summary.to_dict("records"):
        reg = by_id.get(rec["region_id"])
        err, detail, proxy = (_text(rec.get(k)) for k in ("last_error_class", "last_error_detail", "proxy"))
        anycast = bool(reg.anycast) if reg else False
        # the table's short column (the failure class, or ok / no samples); `status` is the whole sentence, shown
        # below the table (anycast rows: their label says "anycast edge" in the table)
        outcome = row_outcome(err, int(rec["n"])) + (" · via proxy" if proxy else "")
        median = rec["median_ms"]
        rows.append(
            {
                "region": reg.label if reg else rec["region_id"],
                "region_id": rec["region_id"],
                "provider": reg.provider if reg else "",
                "city": reg.city if reg else "",
                "side": rec["side"],
                "vantage": rec["vantage"],
                "method": METHOD_LABELS.get(rec["method"], rec["method"]),
                "method_code": rec["method"],
                "median_ms": None if pd.isna(median) else float(median),
                "min_ms": None if pd.isna(rec["min_ms"]) else float(rec["min_ms"]),
                "p90_ms": None if pd.isna(rec["p90_ms"]) else float(rec["p90_ms"]),
                "p90_reliable": int(rec["n"]) >= min_n_for(0.9),
                "n": int(rec["n"]),
                "n_errors": int(rec["n_errors"]),
                "status": row_status(err, detail, int(rec["n"]), anycast=anycast, proxy=proxy),
                "outcome": outcome,
                "last_measured_at_ms": int(rec["last_measured_at_ms"]),
                "last_measured": pd.to_datetime(int(rec["last_measured_at_ms"]), unit="ms", utc=True),
                "anycast": anycast,
                "lat": reg.lat if reg else None,
                "lon": reg.lon if reg else None,
                "proxy": proxy or None,
            }
        )
    rows = ranked(rows, median_ms=lambda r: r["median_ms"], label=lambda r: r["region"])
    df = pd.DataFrame(rows, columns=[c for c in RANKED_COLUMNS if c != "rank"])
    if df.empty:
        return pd.DataFrame(columns=RANKED_COLUMNS)
    df.insert(0, "rank", range(1, len(df) + 1))
    return df


def ranked_table(rows: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The ranked rows as (cells, css) for ttft_planner_app.widgets.wrapped_table, which wraps to the page's width:
    a missing RTT is "—", a p90 from fewer than 10 samples carries the one too-few mark (and is greyed), a failure's
    status is in the error colour."""
    ms = lambda v: present.MISSING if present.is_missing(v) else f"{v:,.1f}"  # noqa: E731
    cells = pd.DataFrame(
        {
            "Rank": [str(int(v)) for v in rows["rank"]],
            "Region": rows["region"],
            "Status": rows["outcome"],
            "Median (ms)": [ms(v) for v in rows["median_ms"]],
            "Min (ms)": [ms(v) for v in rows["min_ms"]],
            "p90 (ms)": [
                present.too_few(ms(v), bool(ok)) for v, ok in zip(rows["p90_ms"], rows["p90_reliable"], strict=True)
            ],
            "Samples (n)": [present.count(v) for v in rows["n"]],
            "Side": rows["side"],
            "Vantage": rows["vantage"],
            "Last measured": [
                present.MISSING if pd.isna(v) else v.strftime("%Y-%m-%d %H:%M") for v in rows["last_measured"]
            ],
            "Method": rows["method"],
        },
        index=rows.index,
    )
    css = pd.DataFrame(
        {
            "p90 (ms)": ["" if ok else f"color: {SEMANTIC['muted']}" for ok in rows["p90_reliable"]],
            "Status": ["" if str(v).startswith("ok") else f"color: {SEMANTIC['error']}" for v in rows["outcome"]],
        },
        index=rows.index,
    )
    return cells, css


def map_figure(rows: pd.DataFrame, regions: Sequence[Region]) -> go.Figure:
    """World map: measured regions coloured by median RTT (ms); catalog regions not measured in grey."""
    fig = go.Figure()
    measured = rows.dropna(subset=["lat", "lon", "median_ms"]) if not rows.empty else rows
    seen = set(measured["region_id"]) if not measured.empty else set()
    idle = [r for r in regions if r.lat is not None and r.id not in seen]
    if idle:
        fig.add_trace(
            go.Scattergeo(
                lat=[r.lat for r in idle],
                lon=[r.lon for r in idle],
                text=[r.label for r in idle],
                name="not measured",
                mode="markers",
                marker=dict(size=5, color=SEMANTIC["muted"], opacity=0.6),
                hoverinfo="text",
            )
        )
    if not measured.empty:
        fig.add_trace(
            go.Scattergeo(
                lat=measured["lat"].tolist(),
                lon=measured["lon"].tolist(),
                name="median RTT",
                text=[
                    f"{r.region}<br>{r.side} from {vantage_label(r.vantage)}: median {r.median_ms:.1f} ms (n={r.n})"
                    for r in measured.itertuples()
                ],
                mode="markers",
                hoverinfo="text",
                # The scale starts at 0 ms: one measured region must not get a −0.4…0.4 ms scale around itself.
                marker=dict(
                    size=11,
                    color=measured["median_ms"].tolist(),
                    colorscale="RdYlGn",
                    reversescale=True,
                    cmin=0.0,
                    cmax=max(1.0, float(measured["median_ms"].max())),
                    colorbar=dict(title="median RTT (ms)"),
                    line=dict(width=0.5, color="#333"),
                ),
            )
        )
    fig.update_geos(
        projection_type="natural earth", resolution=110, showcountries=True, showland=True, landcolor="#f3f3f3"
    )
    fig.update_layout(
        margin=dict(l=0, r=0, t=30, b=0),
        height=420,
        title="Median RTT by region",
        legend=dict(orientation="h", y=-0.05),
    )
    return fig


def distribution_figure(samples: pd.DataFrame, labels: dict[str, str]) -> go.Figure:
    """Box plot of RTT samples per region (server TCP connects and browser samples side by side), ms."""
    fig = go.Figure()
    ok = samples[samples["rtt_ms"].notna() & samples["error_class"].isna() & samples["method"].isin(_RTT_METHODS)]
    shown: set[str] = set()
    for (side, method), g in ok.groupby(["side", "method"], sort=True):
        # One legend entry and one colour per side (SIDE_COLORS, as on Server vs browser); the method is in the
        # hover: "browser · Resource Timing" and its fallback in the legend made it two rows, over the title.
        fig.add_trace(
            go.Box(
                x=[_two_lines(labels.get(r, r)) for r in g["region_id"]],
                y=g["rtt_ms"].tolist(),
                name=side,
                legendgroup=side,
                showlegend=side not in shown,
                marker_color=SIDE_COLORS.get(side),
                boxpoints="outliers",
                hovertemplate=f"{side} · {METHOD_LABELS.get(method, method)}: %{{y:.1f}} ms<extra></extra>",
            )
        )
        shown.add(side)
    fig.update_layout(
        boxmode="group",
        yaxis_title="RTT (ms)",
        height=380,
        margin=dict(t=80),
        title="RTT distribution per region",
        legend=ABOVE_PLOT,
    )
    return fig


def server_vs_browser_figure(rows: pd.DataFrame) -> go.Figure:
    """Median RTT per region, one bar per side (server / browser), with n in the hover."""
    fig = go.Figure()
    for side in ("server", "browser"):
        g = rows[(rows["side"] == side) & rows["median_ms"].notna()] if not rows.empty else rows
        if g.empty:
            continue
        fig.add_trace(
            go.Bar(
                x=[_two_lines(r) for r in g["region"]],
                y=g["median_ms"].tolist(),
                name=side,
                marker_color=SIDE_COLORS.get(side),
                hovertext=[
                    f"{side} from {vantage_label(v)}: {m:.1f} ms, n={n}"
                    for v, m, n in zip(g["vantage"], g["median_ms"], g["n"], strict=True)
                ],
            )
        )
    fig.update_layout(
        barmode="group",
        yaxis_title="median RTT (ms)",
        height=360,
        margin=dict(t=80),
        title="Server vs browser",
        legend=ABOVE_PLOT,
    )
    return fig


def history_figure(samples: pd.DataFrame, labels: dict[str, str], tz: str = "UTC") -> go.Figure:
    """Median RTT of each probe run over time, one line per region and side (times in the viewer's zone `tz`)."""
    fig = go.Figure()
    ok = samples[samples["rtt_ms"].notna() & samples["error_class"].isna() & samples["method"].isin(_RTT_METHODS)]
    for (region_id, side), g in ok.groupby(["region_id", "side"], sort=True):
        runs = []
        for _, run in g.groupby("run_id", sort=False):
            p = percentile(run["rtt_ms"].tolist(), 0.5)
            runs.append((int(run["measured_at_ms"].max()), p.value, p.n))
        runs.sort()
        fig.add_trace(
            go.Scatter(
                x=pd.to_datetime([r[0] for r in runs], unit="ms", utc=True).tz_convert(tz).tz_localize(None),
                y=[r[1] for r in runs],
                mode="lines+markers",
                name=f"{labels.get(region_id, region_id)} · {side}",
                line={"dash": "solid" if side == "server" else "dot"},  # a colour per region; the side by its dash
                hovertext=[f"median {v:.1f} ms (n={n})" for _, v, n in runs],
            )
        )
    fig.update_layout(
        yaxis_title="median RTT per run (ms)",
        xaxis_title=f"measured ({tz})",
        height=360,
        margin=dict(t=30),
        title="History",
        legend=dict(orientation="h", y=-0.35),
    )
    return fig
