"""Logs › source: the log on show — a new upload (copied to disk, kept across pages), a sample or a stored upload — and
reading it, once per source and read options (st.session_state["logs_result"] or ["logs_error"])."""

import json
from dataclasses import dataclass

import streamlit as st
from sqlalchemy.engine import Engine
from streamlit.runtime.uploaded_file_manager import UploadedFile

from planner.logs import LogFormatError, read_logs
from planner.logs.context import MAP_HINT_PAGE
from planner.logs.samples import SAMPLE_DIR
from planner.logs.spool import Spool
from planner.store.logs import UploadInfo, UploadNotFound, load_upload_frame
from planner.untrusted import md_text
from ttft_planner_app.views.logs_tabs.options import ReadOptions

__all__ = ["Reading", "current", "drop_spool", "kept_mapping", "read"]


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
    """Remove the last upload's files from disk (a new upload, a sample or a stored upload replaces it)."""
    spool = st.session_state.pop("logs_spool", None)
    if spool is not None:
        spool.close()


def current(files: list[UploadedFile]) -> tuple:
    """The source on show: ("files", ids), ("sample", file name) or ("stored", upload id).

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


def read(eng: Engine, source: tuple, opts: ReadOptions, uploads: list[UploadInfo]) -> Reading:
    """Read `source` with `opts` and the column mapping made for it, unless the session already holds that reading.

    Leaves {"frame", "label", "parsed"} in st.session_state["logs_result"], or {"message", "columns"} in
    ["logs_error"] when nothing could be read. A stored upload that has gone stops the page with the reason.
    """
    ss = st.session_state
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
        return json.dumps([source, opts.fmt, m, opts.naive_tz, opts.start, opts.cache_blocks, tok_id], default=str)

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
                frame = load_upload_frame(eng, source[1])
            except UploadNotFound as exc:
                st.error(str(exc.args[0]))
                ss.pop("logs_source", None)
                st.stop()
            name = next((u.name for u in uploads if u.id == source[1]), str(source[1]))
            ss.logs_result = {"frame": frame, "label": f"stored upload “{name}”", "parsed": None}
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
    return Reading(key, source_id, mapping, kept=was_kept)


def kept_mapping(previous: dict[str, str] | None, columns: list[str]) -> dict[str, str] | None:
    """The mapping chosen for the previous upload, when it still applies to these columns (every column it names is
    one of them); None otherwise."""
    if not previous or not set(previous.values()) <= set(columns):
        return None
    return dict(previous)
