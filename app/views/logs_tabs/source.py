"""Logs › source: the log on show — a new upload (copied to disk, kept across pages), a sample, a stored upload or a
production source — and reading it, once per source and read options (st.session_state["logs_result"] or
["logs_error"]).

A stored input on show is named in the page's address (?log=upload-<id> or ?log=source-<id>), so a link to the Logs
page reopens it: `open_link` opens the one a link names, `keep_link` keeps the address naming the one on show.
"""

import json
from dataclasses import dataclass

import streamlit as st
from sqlalchemy.engine import Engine
from streamlit.runtime.uploaded_file_manager import UploadedFile

from planner.inputs.untrusted import md_text
from planner.logs import LogFormatError, read_logs
from planner.logs.context import MAP_HINT_PAGE
from planner.logs.samples import SAMPLE_DIR
from planner.logs.spool import Spool
from planner.logs.stored import SourceInfo, UploadInfo, UploadNotFound, log_frame
from ttft_planner_app import session_log, viewer
from ttft_planner_app.views.logs_tabs.options import ReadOptions

__all__ = ["LINK", "Reading", "current", "drop_spool", "keep_link", "kept_mapping", "link_value", "open_link", "read"]

# The query parameter naming the stored input on show: "upload-<id>" or "source-<id>" (a public contract: deep links).
LINK = "log"
_LINK_KINDS = {"stored": "upload", "source": "source"}


@dataclass(frozen=True)
class Reading:
    """What the result on show was read from: `key` (source and read options) and `source_id` (the source alone, which
    a column mapping belongs to), with the column mapping applied (None: the detected columns); `kept`: that mapping
    was chosen for the previous upload and kept because it fits this one's columns."""

    key: str
    source_id: str
    mapping: dict[str, str] | None
    kept: bool = False


def drop_spool() -> None:
    """Remove the last upload's files from disk (a new upload, a sample or a stored upload replaces it), and stop
    offering its reading to the other pages."""
    session_log.withdraw()
    spool = st.session_state.pop("logs_spool", None)
    if spool is not None:
        spool.close()


def link_value(source: tuple | None) -> str | None:
    """The address's name for a stored input (("stored", id) → "upload-<id>", ("source", id) → "source-<id>");
    None for anything a link cannot reopen (an upload not stored, a sample)."""
    kind = _LINK_KINDS.get(source[0]) if source else None
    return f"{kind}-{source[1]}" if kind and source else None


def open_link(uploads: list[UploadInfo], sources: list[SourceInfo]) -> tuple | None:
    """Put the stored input a link names (?log=…) on show, when the address came from outside (a link opened, not
    what `keep_link` wrote last), and return it; a link to one that is gone says so and is dropped."""
    ss = st.session_state
    value = st.query_params.get(LINK)
    if value is None or value == ss.get("logs_link"):
        return None
    known = {link_value(("stored", u.id)): ("stored", u.id) for u in uploads}
    known |= {link_value(("source", s.id)): ("source", s.id) for s in sources}
    if value in known:
        if ss.get("logs_source") != known[value]:
            ss.logs_source = known[value]
            drop_spool()
        ss.logs_link = value
        return known[value]
    st.info(
        "The link names a stored log that is not here (deleted, or a production source with no requests yet): "
        "pick a log below.",
        icon=":material/link_off:",
    )
    del st.query_params[LINK]
    ss.logs_link = None
    return None


def keep_link(source: tuple | None) -> None:
    """Make the address name `source` (the log on show), or nothing when a link cannot reopen it."""
    value = link_value(source)
    if st.query_params.get(LINK) != value:
        if value is None:
            del st.query_params[LINK]
        else:
            st.query_params[LINK] = value
    st.session_state.logs_link = value


def current(files: list[UploadedFile]) -> tuple:
    """The source on show: ("files", ids), ("sample", file name), ("stored", upload id) or ("source", source id).

    A new upload is copied to disk first; the last one stays on show (with a Clear button) when the uploader is empty,
    so leaving the page does not lose it. Stops the page with a hint when there is no log yet.
    """
    ss = st.session_state
    if files:
        uploaded = ("files", tuple((f.file_id, f.name, f.size) for f in files))
        if ss.get("logs_source") != uploaded:
            # Copied to disk in chunks, with a bar that moves by bytes: then read out of core like a file on disk.
            drop_spool()
            bar = st.progress(0.0, "Receiving the upload…")
            try:
                ss.logs_spool = Spool(files, progress=lambda frac, msg: bar.progress(frac, msg))
            except OSError as exc:
                st.error(f"The upload could not be saved to a temporary file: {exc.strerror or exc}")
                st.stop()
            bar.empty()
            ss.logs_source = uploaded
    source = ss.get("logs_source")
    if source is not None and source[0] == "files" and not (ss.get("logs_spool") and ss.logs_spool.alive):
        source = None
    keep_link(source)
    if source is None:
        st.info("Upload a log, load a sample, or open a stored upload to start.")
        st.stop()
    if source[0] == "files" and not files:
        a, b = st.columns([5, 1])
        a.caption(f"Showing your last upload: {md_text(', '.join(ss.logs_spool.names))}.")
        if b.button("Clear", key="logs_clear", icon=":material/close:"):
            drop_spool()
            for k in ("logs_source", "logs_key", "logs_result", "logs_error"):
                ss.pop(k, None)
            st.rerun()
    return source


def read(
    eng: Engine, source: tuple, opts: ReadOptions, uploads: list[UploadInfo], sources: list[SourceInfo]
) -> Reading:
    """Read `source` with `opts` and the column mapping made for it, unless the session already holds that reading.

    Leaves {"frame", "label", "parsed"} in st.session_state["logs_result"], or {"message", "columns"} in
    ["logs_error"] when nothing could be read. A stored upload or a production source that has gone stops the page
    with the reason. A production source is read again once a sync has added requests to it. A reading of files (an
    upload, a sample) is offered to Capacity & cost and What-if before it is saved (ttft_planner_app.session_log).
    """
    ss = st.session_state
    src, synced = None, None  # a production source on show, and its sync state (part of the reading's key)
    if source[0] == "source":
        src = next((s for s in sources if s.id == source[1]), None)
        if src is None:
            st.error("That production source was removed, or holds no requests: open another log.")
            ss.pop("logs_source", None)
            keep_link(None)
            st.stop()
        synced = [src.n_requests, src.watermark_ms, src.watermark_id]
        st.caption(
            f"Production traffic from {src.kind.origin}: source “{md_text(src.name)}”, {src.n_requests:,} requests "
            f"up to {viewer.fmt_ms(src.watermark_ms)}, last synced {viewer.fmt_ms(src.synced_at_ms)}. Sync it on "
            "the Sources page."
        )
    source_id = json.dumps(source, default=str)
    # A mapping belongs to the file it was made for. The next upload (a second file added, the same export again)
    # keeps it when that upload cannot be read by its own columns and holds every column the mapping names.
    saved_map = ss.get("logs_mapping") or {}
    own = saved_map.get("source") == source_id
    mapping = saved_map.get("mapping") if own else None
    kept_from = None if own or source[0] != "files" else saved_map.get("mapping")
    was_kept = own and bool(saved_map.get("kept"))
    tok_id = opts.tok_file.file_id if opts.tok_file else None

    def key_for(m: dict[str, str] | None) -> str:
        return json.dumps(
            [source, opts.fmt, m, opts.naive_tz, opts.start, opts.cache_blocks, tok_id, synced], default=str
        )

    key = key_for(mapping)
    if ss.get("logs_key") != key:
        ss.pop("logs_result", None)
        ss.pop("logs_error", None)
        if ss.get("logs_map_source") != source_id:  # the form's widgets start afresh for a new file
            for k in [k for k in ss if str(k).startswith("logs_map_")]:
                del ss[k]
            ss.logs_map_source = source_id
        if source[0] == "stored":
            try:
                frame = log_frame(eng, upload_id=source[1])
            except UploadNotFound as exc:
                st.error(str(exc.args[0]))
                ss.pop("logs_source", None)
                st.stop()
            name = next((u.name for u in uploads if u.id == source[1]), str(source[1]))
            ss.logs_result = {"frame": frame, "label": f"stored upload “{name}”", "parsed": None}
        elif src is not None:
            with st.spinner(f"Loading {src.n_requests:,} production requests…"):
                frame = log_frame(eng, source_id=src.id)
            ss.logs_result = {
                "frame": frame,
                "label": f"production traffic from {src.kind.origin}, source “{src.name}”",
                "parsed": None,
            }
        else:
            inputs = list(ss.logs_spool.paths) if source[0] == "files" else [SAMPLE_DIR / source[1]]
            bar = st.progress(0.0, "Reading…")

            def read_with(m: dict[str, str] | None):
                return read_logs(
                    inputs,
                    fmt=opts.fmt,
                    mapping=m,
                    tz=opts.naive_tz,
                    tokenizer=opts.tokenizer,
                    start=opts.start.strip() or None,
                    cache_blocks=opts.cache_blocks,
                    progress=lambda frac, msg: bar.progress(min(frac, 1.0), msg),
                    map_hint=MAP_HINT_PAGE,
                )

            res = None
            try:
                res = read_with(mapping)
            except LogFormatError as exc:
                kept = kept_mapping(kept_from, exc.columns)
                if kept is not None:
                    try:
                        res = read_with(kept)
                    except LogFormatError:
                        pass
                    else:
                        mapping, key, was_kept = kept, key_for(kept), True
                        ss.logs_mapping = {"source": source_id, "mapping": kept, "kept": True}
                if res is None:
                    ss.logs_error = {"message": str(exc), "columns": exc.columns}
            if res is not None:
                ss.logs_result = {"frame": res.frame, "label": ", ".join(res.formats) or "log", "parsed": res}
            bar.empty()
        ss.logs_key = key
    result = ss.get("logs_result")
    if result is not None and result["parsed"] is not None:
        session_log.offer(ss.logs_key, result["label"], result["frame"])
    else:
        session_log.withdraw()
    return Reading(key, source_id, mapping, kept=was_kept)


def kept_mapping(previous: dict[str, str] | None, columns: list[str]) -> dict[str, str] | None:
    """The mapping chosen for the previous upload, when it still applies to these columns (every column it names is
    one of them); None otherwise."""
    if not previous or not set(previous.values()) <= set(columns):
        return None
    return dict(previous)
