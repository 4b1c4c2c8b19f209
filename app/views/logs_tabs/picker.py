"""Logs › picker: a new upload, a sample, or an upload stored earlier."""

import streamlit as st
from sqlalchemy.engine import Engine
from streamlit.runtime.uploaded_file_manager import UploadedFile

from planner.logs import UPLOAD_EXTENSIONS
from planner.logs.samples import samples
from planner.store.logs import UploadInfo, list_uploads
from ttft_planner_app.views.logs_tabs.source import drop_spool

__all__ = ["render"]


def render(eng: Engine) -> tuple[list[UploadedFile], list[UploadInfo]]:
    """Draw the picker; return the files uploaded now (maybe none) and the stored uploads.

    "Load sample" and "Open stored upload" make their log the one on show (st.session_state["logs_source"]).
    """
    ss = st.session_state
    files = st.file_uploader(
        "Request logs",
        accept_multiple_files=True,
        key="logs_files",
        type=list(UPLOAD_EXTENSIONS),
        help="Several files at once are read together. Over the size limit, a file is refused with a message.",
    )
    # Below the uploader, half the page each: a sample's title and an upload's name (the user's own) read whole.
    left, right = st.columns(2)
    with left:
        sample = st.selectbox(
            "…or try a sample", list(samples()), key="logs_sample", format_func=lambda k: samples()[k]
        )
        if st.button("Load sample", key="logs_load_sample", icon=":material/science:"):
            ss.logs_source = ("sample", sample)
            drop_spool()
    uploads = list_uploads(eng)
    with right:
        if uploads:
            chosen = st.selectbox(
                "…or open a stored upload",
                [u.id for u in uploads],
                key="logs_stored",
                format_func=lambda i: next(f"{u.name} ({u.n_requests:,} requests)" for u in uploads if u.id == i),
            )
            if st.button("Open stored upload", key="logs_open_stored", icon=":material/folder_open:"):
                ss.logs_source = ("stored", chosen)
                drop_spool()
    return files or [], uploads
