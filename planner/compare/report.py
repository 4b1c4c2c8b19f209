"""The comparison as files a buyer can forward: one self-contained HTML, Markdown and CSV.

The HTML embeds plotly.js inline (no network is needed to open it), the
decision table, the per-endpoint figures, the worksheets with provenance, the
charts and the method. Markdown and CSV carry the same tables for design docs.
Nothing here touches secrets: endpoints are shown by name, provider, region
and model only.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

from planner.compare.charts import hourly_p95_figure, p95_interval_figure, phases_figure
from planner.compare.comparison import Comparison, method_lines, metrics_table
from planner.compare.ranking import LEVEL_LABELS, RANKING_RULE, TARGETS_RULE
from planner.inputs.untrusted import csv_text, md_text
from planner.present import TOO_FEW, too_few
from planner.sources.by_endpoint import compare_cell
from planner.worksheet.budget import SEGMENTS

__all__ = [
    "decision_display",
    "figures",
    "report_csv",
    "report_html",
    "report_markdown",
    "segment_cell",
    "summary_table",
    "worksheet_frame",
]

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1200px;
padding:0 1rem;color:#222}
table{border-collapse:collapse;margin:0.5rem 0 1.5rem;font-size:0.9rem}
th,td{border:1px solid #ccc;padding:0.3rem 0.5rem;text-align:left;vertical-align:top}
th{background:#f3f3f3} td.num{text-align:right;font-variant-numeric:tabular-nums}
.few{color:#999} .ok{color:#1a7f37} .warn{color:#9a6700} .error{color:#cf222e}
.note{color:#555;font-size:0.9rem}
"""


def _fmt(v, unit: str = "", digits: int = 0) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int, float)):
        return f"{v:,.{digits}f}{(' ' + unit) if unit else ''}"
    return str(v)


def _pct(v) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.1%}"


#: Decision-table columns as a reader sees them (the verdict columns already read as words).
DECISION_LABELS = {
    "rank": "Rank",
    "endpoint": "Endpoint",
    "ttft_p95_ms": "TTFT p95 (ms)",
    "n": "Samples (n)",
    "targets_met": "Targets met (measured p95 ≤ target)",
    "monthly_cost_usd": "Monthly cost ($)",
    "vs_leader": "Compared with the leader",
}


def segment_cell(v, key: str, tz: str = "UTC") -> str:
    """A worksheet segment for one endpoint: '823 ms (probe · …)', '0 ms (worksheet's typed value)' or missing."""
    if key in v.missing:
        return "missing — not measured for this endpoint"
    fig = v.worksheet.segment(key)
    src = "worksheet's typed value" if not fig.is_measured else fig.describe(tz)
    return f"{_fmt(fig.value)} ms ({src})"


def summary_table(cmp: Comparison) -> pd.DataFrame:
    """The per-endpoint table as display strings (column names with units); a percentile from too few samples carries
    planner.present's one mark, "(too few)", in every format the report is written in."""
    t = metrics_table(cmp)
    rows = []
    for _, r in t.iterrows():
        rows.append(
            {
                "Endpoint": r["endpoint"],
                "TTFT p50 (ms)": too_few(_fmt(r["ttft_p50_ms"]), bool(r["ttft_p50_reliable"])),
                "TTFT p95 (ms)": too_few(_fmt(r["ttft_p95_ms"]), bool(r["ttft_p95_reliable"])),
                "TTFT p99 (ms)": too_few(_fmt(r["ttft_p99_ms"]), bool(r["ttft_p99_reliable"])),
                "Samples (n)": int(r["n"]),
                "Production p95": compare_cell(cmp.production.get(r["endpoint"])),
                "first content p50 (ms)": _fmt(r["first_content_p50_ms"]),
                "first content p95 (ms)": too_few(
                    _fmt(r["first_content_p95_ms"]), bool(r["first_content_p95_reliable"])
                ),
                "error rate": _pct(r["error_rate"]),
                "retry rate": _pct(r["retry_rate"]),
                "queueing excess (ms)": _fmt(r["queue_excess_ms"]),
                "latest cold TTFT (ms)": _fmt(r["cold_ttft_ms"])
                if pd.notna(r["cold_ttft_ms"])
                else "missing — no cold reading",
                "cold − warm (ms)": _fmt(r["cold_minus_warm_ms"]) if pd.notna(r["cold_minus_warm_ms"]) else "missing",
                "RTT to region (ms)": _fmt(r["rtt_median_ms"], digits=1),
                "monthly cost (USD)": _fmt(r["monthly_cost_usd"]),
            }
        )
    return pd.DataFrame(rows)


def _greyed(cmp: Comparison) -> dict[tuple[str, str], bool]:
    t = metrics_table(cmp)
    out = {}
    for _, r in t.iterrows():
        out[(r["endpoint"], "TTFT p50 (ms)")] = not r["ttft_p50_reliable"]
        out[(r["endpoint"], "TTFT p95 (ms)")] = not r["ttft_p95_reliable"]
        out[(r["endpoint"], "TTFT p99 (ms)")] = not r["ttft_p99_reliable"]
        out[(r["endpoint"], "first content p95 (ms)")] = not r["first_content_p95_reliable"]
    return out


def decision_display(cmp: Comparison) -> pd.DataFrame:
    d = cmp.decision.copy()
    if d.empty:
        return d
    d["rank"] = d["rank"].map(lambda v: "—" if v is None or pd.isna(v) else f"{int(v)}")
    d["ttft_p95_ms"] = d["ttft_p95_ms"].map(_fmt)
    d["monthly_cost_usd"] = d["monthly_cost_usd"].map(lambda v: "—" if v is None or pd.isna(v) else f"${v:,.0f}")
    d["targets_met"] = d["targets_met"].map(lambda v: "—" if v is None or pd.isna(v) else v)
    return d.drop(columns=["p95_reliable"]).rename(columns=DECISION_LABELS)


def worksheet_frame(cmp: Comparison) -> pd.DataFrame:
    rows = []
    for m in cmp.metrics:
        for v in m.verdicts:
            r = v.result
            rows.append(
                {
                    "Endpoint": m.name,
                    "interaction": v.label,
                    "target (ms)": _fmt(v.target_ms),
                    **{f"{SEGMENTS[k]}": segment_cell(v, k, cmp.tz) for k in SEGMENTS},
                    "prefill budget (ms)": "—" if r is None else _signed_ms(r.prefill_budget_ms),
                    "prefill needed (ms)": "—" if r is None else _fmt(r.prefill_needed_ms),
                    "verdict": LEVEL_LABELS.get(v.level, v.level),
                    "decided by": v.deciding_label or "—",
                    "goodput": _pct(v.goodput_fraction),
                    "what it means": v.sentence,
                }
            )
    return pd.DataFrame(rows)


def _signed_ms(v) -> str:
    """A budget that can be negative, with a true minus sign."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    return ("−" if v < 0 and round(v) != 0 else "") + f"{abs(v):,.0f}"


def _html_table(df: pd.DataFrame, table_id: str, grey: dict[tuple[str, str], bool] | None = None) -> str:
    grey = grey or {}
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    body = []
    for _, row in df.iterrows():
        cells = []
        key = str(row.iloc[0]) if len(row) else ""
        if "Endpoint" in df.columns:
            key = str(row["Endpoint"])
        for c in df.columns:
            v = row[c]
            classes = []
            if isinstance(v, (int, float)) or (isinstance(v, str) and v[:1].isdigit()):
                classes.append("num")
            if grey.get((key, c)):
                classes.append("few")
            if c == "verdict" and isinstance(v, str):
                classes.append({label: code for code, label in LEVEL_LABELS.items()}.get(v, "").replace(" ", "-"))
            title = ' title="n too small for this percentile"' if grey.get((key, c)) else ""
            cls = f' class="{" ".join(classes)}"' if classes else ""
            cells.append(f"<td{cls}{title}>{html.escape(_fmt(v))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f'<table id="{table_id}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def figures(cmp: Comparison) -> list[go.Figure]:
    """The report's charts: hour-of-day p95 overlay, p95 with intervals, phase breakdown."""
    order = [r.metrics.name for r in cmp.ranked]
    return [
        hourly_p95_figure(cmp.hourly, cmp.tz, order),
        p95_interval_figure(cmp.p95_intervals, order),
        phases_figure(metrics_table(cmp)),
    ]


def _title(cmp: Comparison) -> str:
    return "TTFT comparison: " + " vs ".join(e.name for e in cmp.endpoints)


def report_html(cmp: Comparison, charts: Sequence[go.Figure] | None = None) -> str:
    """A single self-contained HTML document (plotly.js inline; opens with no network)."""
    charts = figures(cmp) if charts is None else list(charts)
    # A file outside the app has no Streamlit theme; importing streamlit makes its (CSS-variable) template the
    # process default, which draws every trace black in a standalone page, so pin plotly's own template.
    charts = [go.Figure(fig).update_layout(template="plotly") for fig in charts]
    chart_html = [
        fig.to_html(full_html=False, include_plotlyjs=(i == 0), div_id=f"chart-{i}", config={"displaylogo": False})
        for i, fig in enumerate(charts)
    ]
    leader = cmp.ranked[0].metrics.name if cmp.ranked else "—"
    statements = (
        "".join(f"<li>{html.escape(d.statement())}</li>" for d in cmp.differences) or "<li>Only one endpoint.</li>"
    )
    method = "".join(f"<li>{html.escape(line)}</li>" for line in method_lines(cmp))
    endpoints = pd.DataFrame(
        [{"Endpoint": e.name, "provider": e.provider, "region": e.region, "model": e.model} for e in cmp.endpoints]
    )
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(_title(cmp))}</title><style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(_title(cmp))}</h1>",
        f'<p class="note">Window {html.escape(cmp.window)} · '
        f"{html.escape('all vantages' if cmp.vantage is None else 'vantage ' + (cmp.vantage or '(unlabelled)'))} · "
        f"ranked first: <strong>{html.escape(leader)}</strong></p>",
        "<h2>Decision</h2>",
        _html_table(decision_display(cmp), "decision"),
        f'<p class="note" id="rules">{html.escape(RANKING_RULE)} {html.escape(TARGETS_RULE)}</p>',
        "<h3>Can the data tell them apart?</h3>",
        f'<p class="note">Equivalence margin: {html.escape(cmp.margin.describe())}.</p>',
        f'<ul id="differences">{statements}</ul>',
        "<h2>Per endpoint</h2>",
        f'<p class="note">{TOO_FEW} (and greyed): too few samples for that percentile (p95 needs n ≥ 20, p99 n ≥ '
        "100); it is only the largest values seen.</p>",
        _html_table(summary_table(cmp), "metrics", _greyed(cmp)),
        "<h2>Charts</h2>",
        *[f'<div class="chart">{c}</div>' for c in chart_html],
        "<h2>Worksheets</h2>",
        _html_table(worksheet_frame(cmp), "worksheets"),
        "<h2>Endpoints</h2>",
        _html_table(endpoints, "endpoints"),
        "<h2>Method</h2>",
        f'<ul id="method">{method}</ul>',
        "</body></html>",
    ]
    return "\n".join(parts)


def _md_table(df: pd.DataFrame) -> str:
    if df.empty:
        return "_(no rows)_\n"
    cols = [str(c) for c in df.columns]
    esc = lambda v: md_text(_fmt(v))  # noqa: E731 - names come from outside: never links, images or HTML
    lines = ["| " + " | ".join(md_text(c) for c in cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    lines += ["| " + " | ".join(esc(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def report_markdown(cmp: Comparison) -> str:
    """The decision table, per-endpoint figures, CI statements, worksheets and method as Markdown."""
    out = [
        f"# {md_text(_title(cmp))}\n",
        f"Window {md_text(cmp.window)}.\n",
        "## Decision\n",
        _md_table(decision_display(cmp)),
        f"{RANKING_RULE} {TARGETS_RULE}\n",
        "## Can the data tell them apart?\n",
        f"Equivalence margin: {cmp.margin.describe()}.\n",
        *[f"- {md_text(d.statement())}" for d in cmp.differences],
        "",
        "## Per endpoint\n",
        f"{TOO_FEW} marks a percentile with n below its minimum (p95: 20, p99: 100): it is only the largest values "
        "seen.\n",
        _md_table(summary_table(cmp)),
        "## Worksheets\n",
        _md_table(worksheet_frame(cmp)),
        "## Method\n",
        *[f"- {md_text(line)}" for line in method_lines(cmp)],
        "",
    ]
    return "\n".join(out)


def report_csv(cmp: Comparison) -> str:
    """One row per endpoint, best first: rank, the decision columns and every per-endpoint figure (raw numbers)."""
    d = cmp.decision
    t = metrics_table(cmp)
    merged = (
        d.merge(
            t.drop(columns=["ttft_p95_ms", "ttft_p95_reliable", "n", "monthly_cost_usd"]), on="endpoint", how="left"
        )
        if not d.empty
        else t
    )
    if "rank" in merged:  # a whole number ("1", not "1.0"; empty where an endpoint has no rank)
        # object dtype: a list of ints with a None would become floats again ("1.0")
        ranks = [None if v is None or pd.isna(v) else int(v) for v in merged["rank"]]
        merged["rank"] = pd.Series(ranks, index=merged.index, dtype=object)
    return csv_text(merged)  # cells from outside (names, regions) cannot run as spreadsheet formulas
