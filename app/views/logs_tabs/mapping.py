"""Logs › column mapping: which column holds what — opened when nothing could be read, offered on demand otherwise."""

import streamlit as st

from planner.inputs.untrusted import md_text
from planner.logs.mapped import FIELD_LABELS
from planner.logs.mapped import FIELDS as MAP_FIELDS
from planner.logs.traces import guess_table_mapping
from ttft_planner_app.views.logs_tabs.source import Reading

__all__ = ["render"]


def render(reading: Reading) -> None:
    """Draw the reading's error and the mapping form over the columns seen; stop the page when nothing was read.

    "Apply mapping" keeps the mapping for this source (st.session_state["logs_mapping"]) and reruns, which re-reads.
    """
    ss = st.session_state
    error = ss.get("logs_error")
    parsed = (ss.get("logs_result") or {}).get("parsed")
    columns = (
        error["columns"] if error else sorted({c for cols in (parsed.columns if parsed else {}).values() for c in cols})
    )
    if error:
        st.error(md_text(error["message"]), icon=":material/error:")
    if reading.kept and reading.mapping:
        st.info(
            "Kept the column mapping you chose for the previous upload (this one has the same columns): "
            + md_text(", ".join(f"{FIELD_LABELS[k]} ← {v}" for k, v in reading.mapping.items() if k in FIELD_LABELS))
            + ". Change it under Column mapping.",
            icon=":material/table_chart:",
        )
    if columns:
        guess = guess_table_mapping(columns)
        current = reading.mapping or (parsed.mapping if parsed else None) or guess
        with st.expander("Column mapping", expanded=bool(error), icon=":material/table_chart:"):
            st.caption(
                "Which column holds what. Needed: the arrival time (a time, or seconds / milliseconds from the "
                "trace's start) and prompt tokens (cached included; uncached for Anthropic-style input_tokens; or "
                "the prompt text, to count)."
            )
            if guess:
                st.caption(
                    "Guessed from the column names: " + ", ".join(f"{FIELD_LABELS[k]} ← {v}" for k, v in guess.items())
                )
            with st.form("logs_mapping_form"):
                cols = st.columns(4)
                chosen_map = {}
                for i, field in enumerate(MAP_FIELDS):
                    options = ["", *columns]
                    default = current.get(field, "")
                    chosen_map[field] = cols[i % 4].selectbox(
                        FIELD_LABELS[field],
                        options,
                        index=options.index(default) if default in options else 0,
                        key=f"logs_map_{field}",
                    )
                if st.form_submit_button("Apply mapping"):
                    ss.logs_mapping = {
                        "source": reading.source_id,
                        "mapping": {k: v for k, v in chosen_map.items() if v},
                    }
                    st.rerun()
    if error or not ss.get("logs_result"):
        st.stop()
