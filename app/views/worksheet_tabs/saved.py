"""Worksheet tabs: save, open, duplicate and delete worksheets; compare saved ones side by side."""

from collections.abc import Callable

import streamlit as st
from sqlalchemy.engine import Engine

from app.charts.worksheet import comparison_figure
from app.store_errors import STORE_FAILURES, show_store_failure
from planner.budget import BudgetError, Worksheet
from planner.store.worksheets import (
    NameTaken,
    WorksheetNotFound,
    delete_worksheet,
    duplicate_worksheet,
    list_worksheets,
    load_worksheet,
    save_worksheet,
)
from planner.untrusted import md_text
from planner.worksheet_report import comparison_rows

__all__ = ["render_compare", "render_save"]


def render_save(engine: Engine | None, store_problem: str | None, ws: Worksheet, apply: Callable[[Worksheet], None]) -> None:
    """Save under a name (refusing an existing one unless asked), open, duplicate, delete."""
    ss = st.session_state
    if engine is None:
        st.error(f"Saving is unavailable: {md_text(store_problem)}", icon=":material/database_off:")
        return
    left, right = st.columns(2)
    with left:
        name = st.text_input("Worksheet name", value=ss.ws_name, key="save_name", max_chars=200)
        overwrite = st.checkbox("Overwrite if it exists", key="save_overwrite")
        if st.button("Save worksheet", type="primary", key="save"):
            try:
                save_worksheet(engine, Worksheet.from_dict({**ws.to_dict(), "name": name}), overwrite=overwrite)
                ss.ws_name = name.strip()
                st.success(f"Saved “{md_text(name.strip())}”.")
            except (NameTaken, ValueError) as exc:
                st.error(str(exc))
            except STORE_FAILURES as exc:
                show_store_failure(exc)
    saved = [n for n, _ in list_worksheets(engine)]
    with right:
        if not saved:
            st.info("No saved worksheets yet.")
            return
        chosen = st.selectbox("Saved worksheets", saved, key="open_name")

        def _open() -> None:
            try:
                apply(load_worksheet(engine, ss.open_name))
            except WorksheetNotFound as exc:
                ss.open_error = str(exc)

        st.button("Open", key="open", on_click=_open)
        copy_name = st.text_input("Duplicate as", key="dup_name", placeholder=f"{chosen} (copy)")
        if st.button("Duplicate", key="duplicate"):
            try:
                duplicate_worksheet(engine, chosen, copy_name or f"{chosen} (copy)")
                st.rerun()
            except (NameTaken, WorksheetNotFound, ValueError) as exc:
                st.error(md_text(exc))
            except STORE_FAILURES as exc:
                show_store_failure(exc)
        if st.button("Delete", key="delete"):
            try:
                delete_worksheet(engine, chosen)
                st.rerun()
            except STORE_FAILURES as exc:
                show_store_failure(exc)
        if ss.get("open_error"):
            st.error(ss.pop("open_error"))


def render_compare(engine: Engine | None) -> None:
    """A table and one grouped chart over the chosen saved worksheets."""
    if engine is None:
        st.info("Comparing needs the database.")
        return
    names = [n for n, _ in list_worksheets(engine)]
    picked = st.multiselect("Worksheets to compare", names, default=names[:4])
    if not picked:
        return
    try:
        rows = comparison_rows([load_worksheet(engine, n) for n in picked])
    except (WorksheetNotFound, BudgetError) as exc:
        st.error(str(exc))
        return
    st.dataframe(rows, hide_index=True)
    st.plotly_chart(comparison_figure(rows), key="compare_chart")
