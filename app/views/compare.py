"""Compare: which candidate endpoint wins, and is the difference real?

The page compares; its sections, one module each in app/views/compare_sections/, pick the inputs (selection,
assumptions) and draw the result (decision, per_endpoint, worksheets, report).
"""

import streamlit as st

from planner.capacity.errors import CapacityError
from planner.compare import CostBasis, compare, cost_basis, endpoint_names, report_csv, report_html, report_markdown
from planner.compare.bootstrap import Margin
from planner.compare.data import load_endpoints
from planner.endpoints.status import failing_by_endpoint
from planner.inputs.untrusted import md_text
from planner.worksheet.budget import BudgetError, Worksheet
from ttft_planner_app import page_state, worksheet_state
from ttft_planner_app.cache import engine
from ttft_planner_app.viewer import time_zone
from ttft_planner_app.views.compare_sections import assumptions, decision, per_endpoint, report, selection, worksheets


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

picked = selection.render(eng, names)
tz = time_zone()
infos = load_endpoints(eng, picked.endpoints)
ws, ws_source = _worksheet()
cost_inputs = page_state.cost_inputs()
typed, margin = assumptions.render(infos, from_capacity_page=bool(cost_inputs))
try:
    cost = cost_basis(infos, cost_inputs, typed)
    cmp, html_report, md_report, csv_report = _compare(
        eng,
        tuple(picked.endpoints),
        picked.days.start_ms,
        picked.days.end_ms,
        picked.vantage,
        tz,
        ws.to_dict(),
        cost,
        margin,
    )
except (BudgetError, CapacityError) as exc:
    st.error(f"Cannot compare with these inputs: {md_text(exc)}")
    st.stop()
st.caption(
    md_text(
        f"Window {cmp.window} · {'all vantages' if picked.vantage is None else 'vantage ' + picked.vantage_label} · "
        f"worksheet: {ws_source} · cost: {cost.source}."
    )
)

decision.render(cmp, len(picked.endpoints), margin, failing_by_endpoint(eng, picked.endpoints, picked.vantage))
per_endpoint.render(cmp, picked.vantage, tz)
worksheets.render(cmp, tz)
report.render(picked.endpoints, html_report, md_report, csv_report)
