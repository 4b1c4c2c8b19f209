"""Compare: which candidate endpoint wins, and is the difference real?"""

import streamlit as st

from app import worksheet_state
from app.cache import engine
from app.charts.compare import hourly_p95_figure, p95_interval_figure, phases_figure
from app.date_range import date_range_input
from app.viewer import time_zone
from planner.budget import SEGMENTS, BudgetError, Worksheet
from planner.capacity.errors import CapacityError
from planner.compare import (
    CostBasis,
    compare,
    cost_basis,
    endpoint_names,
    report_csv,
    report_html,
    report_markdown,
    vantages,
)
from planner.compare.comparison import metrics_table
from planner.compare.data import load_endpoints
from planner.compare.ranking import LEVEL_LABELS, RANKING_RULE, TARGETS_RULE, decision_levels
from planner.compare.regions import region_table
from planner.compare.report import decision_display, segment_cell, summary_table
from planner.compare.stats import Margin
from planner.samples import DEFINITION
from planner.stats import min_n_for
from planner.untrusted import md_text

ALL = "All vantages"
UNLABELLED = "default vantage (no label)"
GREY = "color: #9e9e9e"
LEVEL_CSS = {
    "OK": "background-color: rgba(26,127,55,0.15)",
    "Prompt too long": "background-color: rgba(154,103,0,0.18)",
    "Over budget": "background-color: rgba(207,34,46,0.15)",
    "No verdict": "color: #9e9e9e",
    "No data": "color: #9e9e9e",
}


@st.cache_data(ttl=30, show_spinner="Comparing…")
def _compare(_eng, names, since_ms, until_ms, vantage, tz, ws_dict, cost: CostBasis, margin: Margin):
    cmp = compare(
        _eng,
        list(names),
        since_ms=since_ms,
        until_ms=until_ms,
        vantage=vantage,
        tz=tz,
        worksheet=Worksheet.from_dict(ws_dict),
        cost=cost,
        margin=margin,
    )
    return cmp, report_html(cmp), report_markdown(cmp), report_csv(cmp)


def _worksheet() -> tuple[Worksheet, str]:
    """The worksheet page's current inputs when it has been opened this session, else the defaults."""
    ws = worksheet_state.current()
    if ws is None:
        return Worksheet(), "the default worksheet (open the Worksheet page to use yours)"
    return ws, f"your worksheet “{ws.name}” from the Worksheet page"


st.title("Compare endpoints")
st.caption("Measured TTFT side by side, a decision table, and whether the data can tell the candidates apart.")
eng = engine()
names = endpoint_names(eng)
if not names:
    st.info("No endpoints yet: register candidates on the Endpoints page and let the worker probe them for a few days.")
    st.stop()

c1, c2, c3 = st.columns([3, 1.4, 2])
picked = c1.multiselect("Endpoints", names, default=names[:3], key="cmp_endpoints", max_selections=8)
vantage_opt = c2.selectbox("Vantage", [ALL, *[v or UNLABELLED for v in vantages(eng)]], key="cmp_vantage")
rng = date_range_input(c3, "cmp_days")
if not picked:
    st.info("Pick at least one endpoint.")
    st.stop()
if rng is None:
    st.info("Pick the end of the date range.")
    st.stop()
tz = time_zone()
infos = load_endpoints(eng, picked)
vantage = None if vantage_opt == ALL else ("" if vantage_opt == UNLABELLED else vantage_opt)

ws, ws_source = _worksheet()
cost_inputs = st.session_state.get("cost_inputs")
with st.expander("Cost assumptions and equivalence margin"):
    st.caption(
        "Traffic and token mix come from "
        + (
            "the Capacity & cost page's inputs."
            if cost_inputs
            else "typed defaults (fill in the Capacity & cost page to use your traffic)."
        )
    )
    typed = {}
    for col, info in zip(st.columns(min(len(infos), 5)) * 2, infos, strict=False):
        price = col.number_input(
            f"{md_text(info.name)} \\$/1M tokens",
            min_value=0.0,
            value=None,
            step=0.05,
            key=f"cmp_price_{info.name}",
            help="Blended price; empty = matching price preset, else the Capacity page's price.",
        )
        if price is not None:
            typed[info.name] = price
    m1, m2 = st.columns(2)
    margin_ms = m1.number_input(
        "Equivalence margin, at least (ms)",
        min_value=0.0,
        value=5.0,
        step=1.0,
        key="cmp_margin_ms",
        help="Two p95s whose whole 95% interval of the difference lies within ± the margin are "
        "“practically equivalent”; one is “faster” only when the interval lies wholly beyond it.",
    )
    margin_pct = m2.number_input(
        "…or this share of the faster p95 (%)",
        min_value=0.0,
        max_value=100.0,
        value=3.0,
        step=0.5,
        key="cmp_margin_pct",
    )
margin = Margin(abs_ms=float(margin_ms), fraction=float(margin_pct) / 100)
try:
    cost = cost_basis(infos, cost_inputs, typed)
    cmp, html_report, md_report, csv_report = _compare(
        eng, tuple(picked), rng.start_ms, rng.end_ms, vantage, tz, ws.to_dict(), cost, margin
    )
except (BudgetError, CapacityError) as exc:
    st.error(f"Cannot compare with these inputs: {md_text(exc)}")
    st.stop()
st.caption(
    md_text(
        f"Window {cmp.window} · {'all vantages' if vantage is None else 'vantage ' + vantage_opt} · "
        f"worksheet: {ws_source} · cost: {cost.source}."
    )
)

need = min_n_for(0.95)
thin = [m.name for m in cmp.metrics if m.n_ok < need]
if len(picked) < 2 or thin:
    why = []
    if len(picked) < 2:
        why.append("pick a second endpoint")
    if thin:
        why.append(
            f"let the worker probe {', '.join(thin)} for about a day (a p95 needs n ≥ {need}; "
            "queueing needs two hours with n ≥ 20 each)"
        )
    st.info(
        "A comparison needs at least two endpoints, each with about a day of probing: "
        + " and ".join(why)
        + ". Until then ranks and verdicts are provisional.",
        icon=":material/hourglass_empty:",
    )

st.subheader("Decision")
decision = decision_display(cmp)
levels = decision_levels(cmp.ranked)  # the level behind each verdict cell, as data (never read back from its text)
styled = decision.style.apply(
    lambda col: [LEVEL_CSS.get(LEVEL_LABELS.get(lv, ""), "") for lv in levels[col.name]], subset=list(levels.columns)
)
st.dataframe(styled, hide_index=True, key="cmp_decision")
st.caption(f"{RANKING_RULE} {TARGETS_RULE}")
st.caption(f"Equivalence margin: {margin.describe()}.")
for d in cmp.differences:
    (st.success if d.distinguishable else st.info)(md_text(d.statement()))

st.subheader("Per endpoint")
st.caption(f"{DEFINITION} Greyed percentiles have too few samples (p95 needs n ≥ 20, p99 n ≥ 100).")
table, raw = summary_table(cmp), metrics_table(cmp).set_index("endpoint")
grey = {
    "TTFT p50 (ms)": "ttft_p50_reliable",
    "TTFT p95 (ms)": "ttft_p95_reliable",
    "TTFT p99 (ms)": "ttft_p99_reliable",
    "first content p95 (ms)": "first_content_p95_reliable",
}
st.dataframe(
    table.style.apply(
        lambda row: [GREY if c in grey and not raw.loc[row["Endpoint"], grey[c]] else "" for c in row.index], axis=1
    ),
    hide_index=True,
    key="cmp_metrics",
)
st.caption(
    "Where each endpoint serves from, and the round trip to there from this vantage (the network share of "
    "its TTFT; an anycast edge's RTT is to the nearest edge, not to the serving region)."
)
st.dataframe(
    region_table(cmp.endpoints, cmp.serving, {m.name: m.rtt for m in cmp.metrics}, vantage),
    hide_index=True,
    key="cmp_regions",
)
order = [r.metrics.name for r in cmp.ranked]
st.plotly_chart(hourly_p95_figure(cmp.hourly, tz, order), key="cmp_hourly")
left, right = st.columns(2)
left.plotly_chart(p95_interval_figure(cmp.p95_intervals, order), key="cmp_ci")
right.plotly_chart(phases_figure(metrics_table(cmp)), key="cmp_phases")

st.subheader("Worksheets with measured segments")
st.caption(
    "Each endpoint is judged with its own measurements only; a segment it has not measured is the worksheet's "
    "typed value (labelled) or missing — never another endpoint's figure."
)
for m in cmp.metrics:
    with st.expander(
        md_text(f"{m.name}: " + " · ".join(f"{v.label} {LEVEL_LABELS.get(v.level, v.level)}" for v in m.verdicts))
    ):
        for v in m.verdicts:
            good = "—" if v.goodput_fraction is None else f"{v.goodput_fraction:.1%}"
            decided = f", decided by {v.deciding_label}" if v.deciding_label else ""
            segs = "; ".join(f"{SEGMENTS[k].lower()}: {segment_cell(v, k, tz)}" for k in SEGMENTS)
            st.markdown(
                f"**{md_text(v.label)}** "
                + md_text(
                    f"({v.target_ms:,.0f} ms) — {LEVEL_LABELS.get(v.level, v.level)}{decided}. "
                    f"{v.sentence} Goodput: {good} of samples within target. Segments — {segs}."
                )
            )

st.subheader("Report")
stem = "ttft-comparison-" + "-vs-".join(picked)[:80]
d1, d2, d3 = st.columns(3)
d1.download_button(
    "Download HTML report", html_report, f"{stem}.html", "text/html", key="cmp_dl_html", on_click="ignore"
)
d2.download_button("Download Markdown", md_report, f"{stem}.md", "text/markdown", key="cmp_dl_md", on_click="ignore")
d3.download_button("Download CSV", csv_report, f"{stem}.csv", "text/csv", key="cmp_dl_csv", on_click="ignore")
