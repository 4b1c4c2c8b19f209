"""Compare: which candidate endpoint wins, and is the difference real?"""

import datetime as dt

import pandas as pd
import streamlit as st

from app import worksheet_state
from app.cache import engine
from app.charts.compare import hourly_p95_figure, p95_interval_figure, phases_figure
from planner.budget import BudgetError, Worksheet
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
from planner.compare.comparison import day_range_ms, metrics_table
from planner.compare.data import load_endpoints, sample_span
from planner.compare.report import summary_table
from planner.untrusted import md_text

ALL = "All vantages"
GREY = "color: #9e9e9e"
LEVEL_CSS = {"OK": "background-color: rgba(26,127,55,0.15)", "WARN": "background-color: rgba(154,103,0,0.18)",
             "ERROR": "background-color: rgba(207,34,46,0.15)"}


@st.cache_data(ttl=30, show_spinner="Comparing…")
def _compare(_eng, names, since_ms, until_ms, vantage, tz, ws_dict, cost: CostBasis):
    cmp = compare(_eng, list(names), since_ms=since_ms, until_ms=until_ms, vantage=vantage, tz=tz,
                  worksheet=Worksheet.from_dict(ws_dict), cost=cost)
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

c1, c2, c3 = st.columns([3, 1, 2])
picked = c1.multiselect("Endpoints", names, default=names[:3], key="cmp_endpoints", max_selections=8)
vantage_opt = c2.selectbox("Vantage", [ALL, *[v or "(unlabelled)" for v in vantages(eng)]], key="cmp_vantage")
if not picked:
    st.info("Pick at least one endpoint.")
    st.stop()
infos = load_endpoints(eng, picked)
tz = st.context.timezone or "UTC"
span = sample_span(eng, infos)
today = dt.datetime.now(dt.timezone.utc).date()
first, last = (today - dt.timedelta(days=7), today) if span is None else tuple(
    pd.Timestamp(ms, unit="ms", tz="UTC").tz_convert(tz).date() for ms in span)
days = c3.date_input("Date range", (first, last), key="cmp_days")
if not isinstance(days, (tuple, list)) or len(days) != 2:
    st.info("Pick the end of the date range.")
    st.stop()
since_ms, until_ms = day_range_ms(days[0], days[1], tz)
vantage = None if vantage_opt == ALL else ("" if vantage_opt == "(unlabelled)" else vantage_opt)

ws, ws_source = _worksheet()
cost_inputs = st.session_state.get("cost_inputs")
with st.expander("Cost assumptions"):
    st.caption("Traffic and token mix come from " + ("the Capacity & cost page's inputs." if cost_inputs else
               "typed defaults (fill in the Capacity & cost page to use your traffic)."))
    typed = {}
    for col, info in zip(st.columns(min(len(infos), 5)) * 2, infos):
        price = col.number_input(f"{md_text(info.name)} \\$/1M tokens", min_value=0.0, value=None, step=0.05, key=f"cmp_price_{info.name}",
                                 help="Blended price; empty = matching price preset, else the Capacity page's price.")
        if price is not None:
            typed[info.name] = price
try:
    cost = cost_basis(infos, cost_inputs, typed)
    cmp, html_report, md_report, csv_report = _compare(eng, tuple(picked), since_ms, until_ms, vantage, tz, ws.to_dict(), cost)
except (BudgetError, CapacityError) as exc:
    st.error(f"Cannot compare with these inputs: {md_text(exc)}")
    st.stop()
st.caption(md_text(f"Window {cmp.window} · {'all vantages' if vantage is None else 'vantage ' + vantage_opt} · "
                   f"worksheet: {ws_source} · cost: {cost.source}."))

st.subheader("Decision")
decision = cmp.decision.drop(columns=["p95_reliable"])
verdict_cols = [c for c in decision.columns if c.endswith(" ms)") and "·" in str(decision[c].iloc[0])]
styled = decision.style.map(lambda v: LEVEL_CSS.get(str(v).split(" ")[0], ""), subset=verdict_cols).format(
    {"ttft_p95_ms": lambda v: "—" if pd.isna(v) else f"{v:,.0f}",
     "monthly_cost_usd": lambda v: "—" if pd.isna(v) else f"${v:,.0f}"})
st.dataframe(styled, hide_index=True, key="cmp_decision")
for d in cmp.differences:
    (st.success if d.distinguishable else st.info)(md_text(d.statement()))

st.subheader("Per endpoint")
st.caption("Greyed percentiles have too few samples (p95 needs n ≥ 20, p99 n ≥ 100).")
table, raw = summary_table(cmp), metrics_table(cmp).set_index("endpoint")
grey = {"TTFT p50 (ms)": "ttft_p50_reliable", "TTFT p95 (ms)": "ttft_p95_reliable", "TTFT p99 (ms)": "ttft_p99_reliable",
        "first content p95 (ms)": "first_content_p95_reliable"}
st.dataframe(table.style.apply(lambda row: [GREY if c in grey and not raw.loc[row["endpoint"], grey[c]] else ""
                                            for c in row.index], axis=1), hide_index=True, key="cmp_metrics")
order = [r.metrics.name for r in cmp.ranked]
st.plotly_chart(hourly_p95_figure(cmp.hourly, tz, order), key="cmp_hourly")
left, right = st.columns(2)
left.plotly_chart(p95_interval_figure(cmp.p95_intervals, order), key="cmp_ci")
right.plotly_chart(phases_figure(metrics_table(cmp)), key="cmp_phases")

st.subheader("Worksheets with measured segments")
for m in cmp.metrics:
    with st.expander(md_text(f"{m.name}: " + " · ".join(f"{v.label} {v.level.upper()}" for v in m.verdicts))):
        for v in m.verdicts:
            st.markdown(f"**{md_text(v.label)}** " + md_text(
                f"({v.target_ms:,.0f} ms) — {v.level.upper()}, decided by {v.deciding_label}. "
                f"{v.sentence} Goodput: {'—' if v.goodput_fraction is None else f'{v.goodput_fraction:.1%}'} of samples "
                f"within target. Queueing: {v.worksheet.queue_ms.describe()}; network: {v.worksheet.network_ms.describe()}."))

st.subheader("Report")
stem = "ttft-comparison-" + "-vs-".join(picked)[:80]
d1, d2, d3 = st.columns(3)
d1.download_button("Download HTML report", html_report, f"{stem}.html", "text/html", key="cmp_dl_html", on_click="ignore")
d2.download_button("Download Markdown", md_report, f"{stem}.md", "text/markdown", key="cmp_dl_md", on_click="ignore")
d3.download_button("Download CSV", csv_report, f"{stem}.csv", "text/csv", key="cmp_dl_csv", on_click="ignore")
