"""Compare › decision: whether the data can tell the candidates apart yet, the ranked decision table (each verdict
cell coloured by its level) and the difference statements."""

from collections.abc import Mapping

import streamlit as st

from planner.compare import Comparison
from planner.compare.bootstrap import Margin
from planner.compare.ranking import LEVEL_LABELS, RANKING_RULE, TARGETS_RULE, decision_levels
from planner.compare.report import decision_display
from planner.inputs.untrusted import md_text
from planner.percentiles import min_n_for
from ttft_planner_app.widgets import wrapped_table

__all__ = ["render"]

LEVEL_CSS = {
    "OK": "background-color: rgba(26,127,55,0.15)",
    "Prompt too long": "background-color: rgba(154,103,0,0.18)",
    "Over budget": "background-color: rgba(207,34,46,0.15)",
    "No verdict": "color: #9e9e9e",
    "No data": "color: #9e9e9e",
}


def render(cmp: Comparison, n_picked: int, margin: Margin, failing: Mapping[str, list[str]]) -> None:
    """Draw the Decision section of `cmp` (`n_picked` endpoints picked), saying first what would make it final.

    `failing`: the failing warnings by endpoint name (planner.endpoints.status.failing_by_endpoint); such an endpoint
    is named with its failure, never told to wait for more probing.
    """
    need = min_n_for(0.95)
    for name in (m.name for m in cmp.metrics):
        for line in failing.get(name, []):
            st.warning(
                f"Failing: {md_text(line)}. More probing will not fill it: fix the endpoint (Endpoints page).",
                icon=":material/error:",
            )
    thin = [m.name for m in cmp.metrics if m.n_ok < need and m.name not in failing]
    if n_picked < 2 or thin:
        why = []
        if n_picked < 2:
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
    # Wrapped, not a grid: every verdict column and the comparison with the leader in view without a sideways scroll.
    css = levels.map(lambda lv: LEVEL_CSS.get(LEVEL_LABELS.get(lv, ""), ""))
    wrapped_table(decision, css)
    st.caption(f"{RANKING_RULE} {TARGETS_RULE}")
    st.caption(f"Equivalence margin: {margin.describe()}.")
    for d in cmp.differences:
        (st.success if d.distinguishable else st.info)(md_text(d.statement()))
