"""Worksheet tabs: save, open, duplicate and delete worksheets; compare saved ones side by side."""

from collections.abc import Callable
from typing import Any

import pandas as pd
import streamlit as st
from sqlalchemy.engine import Engine

from planner import present
from planner.inputs.untrusted import md_text
from planner.worksheet.budget import BudgetError, Worksheet
from planner.worksheet.report import comparison_rows
from planner.worksheet.saved import (
    NameTaken,
    WorksheetNotFound,
    delete_worksheet,
    duplicate_worksheet,
    list_worksheets,
    load_worksheet,
    save_worksheet,
)
from ttft_planner_app.auth import can, record, require
from ttft_planner_app.charts.worksheet import comparison_figure
from ttft_planner_app.store_errors import STORE_FAILURES, show_store_failure

__all__ = ["render_compare", "render_save"]


def _notice(text: str) -> None:
    """A success message shown on the next run (after st.rerun or a callback)."""
    st.session_state.ws_saved_notice = text


def render_save(
    engine: Engine | None, store_problem: str | None, ws: Worksheet, apply: Callable[[Worksheet], None]
) -> None:
    """Save under a name (refusing an existing one unless asked), open, duplicate, delete (after a confirmation).

    The name field always shows the worksheet in front of you: opening a saved worksheet puts its name there, so
    "Save" with "Overwrite" updates the worksheet you opened, never the one opened before.
    """
    ss = st.session_state
    if engine is None:
        st.error(f"Saving is unavailable: {md_text(store_problem)}", icon=":material/database_off:")
        return
    if ss.get("ws_saved_notice"):
        st.success(md_text(ss.pop("ws_saved_notice")), icon=":material/check:")
    if "save_name" not in ss or ss.get("_save_name_of") != ss.ws_name:
        ss.save_name, ss._save_name_of = ss.ws_name, ss.ws_name  # follows the worksheet that was opened
    left, right = st.columns(2)
    with left:
        name = st.text_input("Worksheet name", key="save_name", max_chars=200)
        overwrite = st.checkbox("Overwrite if it exists", key="save_overwrite")
        if st.button("Save worksheet", type="primary", key="save", disabled=not can("worksheet.save")) and require(
            "worksheet.save"
        ):
            try:
                save_worksheet(engine, Worksheet.from_dict({**ws.to_dict(), "name": name}), overwrite=overwrite)
                record("worksheet.save", name.strip(), "saved" + (" (overwrite)" if overwrite else ""))
                ss.ws_name = ss._save_name_of = name.strip()
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
                opened = load_worksheet(engine, ss.open_name)
            except WorksheetNotFound as exc:
                ss.open_error = str(exc)
                return
            apply(opened)
            ss.save_name = ss._save_name_of = opened.name
            ss.save_overwrite = False
            _notice(f"Opened “{opened.name}”.")

        st.button("Open worksheet", key="open", on_click=_open)
        copy_name = st.text_input("Duplicate as", key="dup_name", placeholder=f"{chosen} (copy)")
        if st.button("Duplicate", key="duplicate", disabled=not can("worksheet.save")) and require("worksheet.save"):
            try:
                copy = duplicate_worksheet(engine, chosen, copy_name or f"{chosen} (copy)")
                record("worksheet.save", copy.name, f"duplicated from {chosen}")
                _notice(f"Saved a copy of “{chosen}” as “{copy.name}”.")
                st.rerun()
            except (NameTaken, WorksheetNotFound, ValueError) as exc:
                st.error(md_text(exc))
            except STORE_FAILURES as exc:
                show_store_failure(exc)
        sure = st.checkbox(f"Yes, delete “{md_text(chosen)}”", key="delete_confirm", value=False)
        if st.button(
            "Delete",
            key="delete",
            disabled=not sure or not can("worksheet.delete"),
            help="Tick the box above first: deleting cannot be undone.",
        ) and require("worksheet.delete"):
            try:
                delete_worksheet(engine, chosen)
                record("worksheet.delete", chosen, "deleted")
                _notice(f"Deleted “{chosen}”.")
                st.rerun()
            except WorksheetNotFound as exc:
                st.error(md_text(exc))
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
    st.dataframe(_compare_table(rows), hide_index=True, key="compare_table")
    st.plotly_chart(comparison_figure(rows), key="compare_chart")


_VERDICT = {"ok": "fits", "warn": "prompt too long", "error": "over budget"}
_COLUMNS: dict[str, tuple[str, Callable[[Any], str]]] = {  # comparison_rows key → (what the user reads, formatter)
    "worksheet": ("Worksheet", str),
    "interaction": ("Interaction type", str),
    "target_ms": ("Target", present.ms),
    "queue_ms": ("Queueing", present.ms),
    "cold_ms": ("Cold start", present.ms),
    "network_ms": ("Network", present.ms),
    "prefill_budget_ms": ("Prefill budget", present.ms),
    "prefill_needed_ms": ("Prefill needed", present.ms),
    "max_prompt_tokens_p95": ("Largest p95 prompt", lambda v: "unlimited" if v == float("inf") else present.tokens(v)),
    "verdict": ("Verdict", lambda v: _VERDICT.get(v, v)),
}


def _compare_table(rows: list[dict]) -> pd.DataFrame:
    """The comparison rows with labelled columns and numbers formatted with their units."""
    return pd.DataFrame([{label: fmt(r[k]) for k, (label, fmt) in _COLUMNS.items()} for r in rows])
