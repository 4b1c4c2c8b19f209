"""Logs › options: how to read the log — format, the zone of times written without one, the working day, the start of
a trace with relative times, the prefix cache, and a tokenizer for logs with text but no counts."""

from dataclasses import dataclass

import streamlit as st
from streamlit.runtime.uploaded_file_manager import UploadedFile

from planner.logs import FORMATS, TokenCounter
from planner.logs.prefix import DEFAULT_CACHE_BLOCKS
from planner.logs.summary import DEFAULT_WORKDAY, parse_workday
from planner.logs.traces import DEFAULT_START, start_ms

__all__ = ["ReadOptions", "render"]

ZONE_HINT = (
    "Times written without a zone (e.g. '2024-05-10 09:00:00') are read in this zone; hours of day and "
    "the working day are shown in the viewer's time zone (sidebar)."
)


@dataclass(frozen=True)
class ReadOptions:
    """The options as chosen; every one but `workday` changes what is read (and so re-reads the log)."""

    fmt: str
    naive_tz: str
    workday: str
    start: str
    cache_blocks: int
    tok_file: UploadedFile | None
    tokenizer: TokenCounter | None


def render(tz: str) -> ReadOptions:
    """Draw the options (the working day labelled in the viewer's zone `tz`); stop the page at a malformed working
    day or start date, with the reason."""
    # Page settings outlive the page (widget state does not): kept here and given back to the widgets on return.
    prefs = st.session_state.setdefault(
        "logs_prefs",
        {
            "fmt": "auto",
            "naive_tz": "UTC",
            "workday": DEFAULT_WORKDAY,
            "start": "",
            "cache_blocks": DEFAULT_CACHE_BLOCKS,
        },
    )
    c1, c2, c3 = st.columns(3)
    fmt_names = list(FORMATS)
    fmt = c1.selectbox(
        "Format",
        fmt_names,
        key="logs_format",
        index=fmt_names.index(prefs["fmt"]),
        format_func=lambda k: f"{k}: {FORMATS[k]}",
    )
    zones = list(dict.fromkeys(["UTC", tz, prefs["naive_tz"]]))
    naive_tz = c2.selectbox(
        "Times without a zone are in", zones, key="logs_naive_tz", index=zones.index(prefs["naive_tz"]), help=ZONE_HINT
    )
    workday = c3.text_input(
        f"Working day (Mon–Fri, {tz})",
        value=prefs["workday"],
        key="logs_workday",
        help="HH:MM-HH:MM; a night shift ends before it starts (22:00-06:00: weekday evenings to the next morning).",
    )
    with st.expander("Relative traces and prefix cache (BurstGPT, Mooncake)", icon=":material/schedule:"):
        t1, t2 = st.columns(2)
        start = t1.text_input(
            "Start date of a trace with relative times",
            value=prefs["start"],
            key="logs_start",
            placeholder=f"{DEFAULT_START} (default)",
            help="BurstGPT counts seconds and Mooncake milliseconds from the trace's start; hours of day "
            "need a date. YYYY-MM-DD or YYYY-MM-DDTHH:MM, in the zone above.",
        )
        cache_blocks = int(
            t2.number_input(
                "Prefix cache (blocks of 512 tokens)",
                min_value=1,
                step=1024,
                value=int(prefs["cache_blocks"]),
                key="logs_cache_blocks",
                help="Prefix-cache size (evicting as vLLM does) under which the cached share is derived from a "
                "trace's hash_ids.",
            )
        )
    prefs.update(fmt=fmt, naive_tz=naive_tz, workday=workday, start=start, cache_blocks=cache_blocks)
    try:
        parse_workday(workday)
        if start.strip():
            start_ms(start, naive_tz)
    except ValueError as exc:
        st.error(str(exc))
        st.stop()
    with st.expander("Token counting for logs with text but no counts", icon=":material/function:"):
        tok_file = st.file_uploader(
            "Hugging Face tokenizer.json (optional)",
            type=["json"],
            key="logs_tokenizer",
            help="Counted offline with the `tokenizers` package. Without one, counts are an estimate "
            "of about 4 characters per token, and the page says so.",
        )
    tokenizer = None
    if tok_file is not None:
        try:
            tokenizer = TokenCounter.from_tokenizer_json(tok_file.getvalue(), tok_file.name)
        except (ValueError, RuntimeError) as exc:
            st.error(str(exc))
    return ReadOptions(fmt, naive_tz, workday, start, cache_blocks, tok_file, tokenizer)
