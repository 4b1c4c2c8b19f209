"""Logs › picker: a new upload, a sample, or a stored input — an upload stored earlier or a production source (the
LiteLLM proxy's requests, synced on the Sources page)."""

import streamlit as st
from sqlalchemy.engine import Engine
from streamlit.runtime.uploaded_file_manager import UploadedFile

from planner.logs import UPLOAD_EXTENSIONS
from planner.logs.samples import samples
from planner.logs.stored import SourceInfo, UploadInfo, stored_logs
from ttft_planner_app.views.logs_tabs.source import drop_spool, open_link

__all__ = ["render", "stored_inputs"]


def stored_inputs(uploads: list[UploadInfo], sources: list[SourceInfo]) -> dict[int | str, str]:
    """The stored-input picker's options and labels: an upload by its id (an int), a production source by
    "source-<id>" (a str), so the two can never be taken for each other."""
    options: dict[int | str, str] = {u.id: f"{u.name} ({u.n_requests:,} requests)" for u in uploads}
    options |= {f"source-{s.id}": f"production: {s.name} ({s.kind.short}, {s.n_requests:,} requests)" for s in sources}
    return options


def render(eng: Engine) -> tuple[list[UploadedFile], list[UploadInfo], list[SourceInfo]]:
    """Draw the picker; return the files uploaded now (maybe none), the stored uploads and the production sources
    that hold requests.

    "Load sample" and "Open" make their log the one on show (st.session_state["logs_source"]), and so does a link
    that names a stored input (?log=upload-<id> or ?log=source-<id>, source.open_link).
    """
    ss = st.session_state
    held = stored_logs(eng)
    uploads, sources = held.uploads, held.sources
    linked = open_link(uploads, sources)
    if linked is not None:  # the picker shows what the link opened
        ss.logs_stored = linked[1] if linked[0] == "stored" else f"source-{linked[1]}"
    files = st.file_uploader(
        "Request logs",
        accept_multiple_files=True,
        key="logs_files",
        type=list(UPLOAD_EXTENSIONS),
        help=f"Up to {st.get_option('server.maxUploadSize'):,} MB per file (the server's maxUploadSize; a larger file "
        "is refused with a message). Several files at once are read together.",
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
    stored = stored_inputs(uploads, sources)
    with right:
        if stored:
            chosen = st.selectbox(
                "…or open a stored upload" + (" or a production source" if sources else ""),
                list(stored),
                key="logs_stored",
                format_func=lambda k: stored.get(k, str(k)),
                help="A production source: the LiteLLM proxy's own requests (Sources page, Sync now), or "
                "OpenTelemetry spans received by `ttft-planner sources receive`."
                if sources
                else None,
            )
            if st.button("Open", key="logs_open_stored", icon=":material/folder_open:") and chosen is not None:
                ss.logs_source = (
                    ("source", int(chosen.removeprefix("source-"))) if isinstance(chosen, str) else ("stored", chosen)
                )
                drop_spool()
    return files or [], uploads, sources
