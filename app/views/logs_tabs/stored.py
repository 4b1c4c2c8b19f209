"""Logs › stored uploads: the uploads kept in the store (numbers only), each with its Delete button."""

import streamlit as st
from sqlalchemy.engine import Engine

from planner.inputs.untrusted import md_text
from planner.logs.stored import UploadInfo, delete_upload
from ttft_planner_app.auth import can, record, require

__all__ = ["render"]


def render(eng: Engine, uploads: list[UploadInfo]) -> None:
    """Draw the stored uploads (nothing when there are none); a deleted upload on show stops being shown."""
    if not uploads:
        return
    with st.expander(f"Stored uploads ({len(uploads)})", icon=":material/database:"):
        for u in uploads:
            a, b = st.columns([5, 1])
            a.write(
                f"**{md_text(u.name)}** — {u.n_requests:,} requests, {u.n_rejected:,} rejected, "
                + md_text(", ".join(sorted(set(u.formats.values()))))
            )
            if b.button(
                "Delete", key=f"logs_delete_{u.id}", icon=":material/delete:", disabled=not can("logs.delete")
            ) and require("logs.delete"):
                delete_upload(eng, u.id)
                record("logs.delete", u.name, f"deleted upload {u.id}")
                if st.session_state.get("logs_source") == ("stored", u.id):
                    st.session_state.pop("logs_source", None)
                st.rerun()
