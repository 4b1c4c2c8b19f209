"""Compare › selection: which endpoints, from which vantage, over which days."""

from dataclasses import dataclass

import streamlit as st
from sqlalchemy.engine import Engine

from planner.compare import vantages
from planner.settings import DEFAULT_VANTAGE_NAME
from ttft_planner_app.date_range import DateRange, date_range_input

__all__ = ["Selection", "render"]

ALL = "All vantages"
UNLABELLED = DEFAULT_VANTAGE_NAME


@dataclass(frozen=True)
class Selection:
    """The endpoints picked (by name, in the picker's order), the vantage (None: all; "": the unlabelled default) as
    data and as its label on the page, and the date range."""

    endpoints: list[str]
    vantage: str | None
    vantage_label: str
    days: DateRange


def render(eng: Engine, names: list[str]) -> Selection:
    """Draw the pickers over the endpoint `names`; stop the page with a hint until an endpoint and both ends of the
    date range are picked."""
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
    vantage = None if vantage_opt == ALL else ("" if vantage_opt == UNLABELLED else vantage_opt)
    return Selection(list(picked), vantage, vantage_opt, rng)
