"""Worksheet tab: the link that reproduces the inputs (and their provenance), and the Markdown / JSON exports."""

import streamlit as st

from planner.worksheet.budget import Worksheet
from planner.worksheet.report import to_json, to_markdown
from planner.worksheet.saved import WorksheetNotFound, load_worksheet
from planner.worksheet.url import query_for
from ttft_planner_app import viewer
from ttft_planner_app.cache import engine
from ttft_planner_app.store_errors import STORE_FAILURES

__all__ = ["render_share"]


def render_share(ws: Worksheet, builtin: set[str], problem: str | None) -> None:
    query = query_for(ws, builtin)
    st.markdown("**Link that reproduces these inputs and where each came from**")
    st.caption("The address bar always holds the same link: a reload or a bookmark keeps measured figures measured.")
    st.code(f"{st.context.url.split('?')[0] if st.context.url else ''}?{query}", language=None)
    slug = "".join(c if c.isalnum() else "-" for c in ws.name).strip("-") or "worksheet"
    if problem:
        st.info("Fix the inputs above to export the worksheet.")
        return
    st.download_button(
        "Markdown",
        to_markdown(ws, tz=viewer.time_zone(), saved=_is_saved(ws)),
        file_name=f"{slug}.md",
        mime="text/markdown",
        key="dl_md",
        icon=":material/description:",
    )
    st.download_button(
        "JSON",
        to_json(ws),
        file_name=f"{slug}.json",
        mime="application/json",
        key="dl_json",
        icon=":material/data_object:",
    )


def _is_saved(ws: Worksheet) -> bool:
    """Whether `ws` is exactly the worksheet saved under its name (an edited or never-saved one is not)."""
    try:
        return load_worksheet(engine(), ws.name).to_dict() == ws.to_dict()
    except WorksheetNotFound:
        return False
    except STORE_FAILURES:
        return False
