"""Logs › headline: what was read (rejected lines, estimated counts, notes), the headline figures over the working day,
the hand-off to the worksheet and saving the upload (numbers only)."""

import pandas as pd
import streamlit as st
from sqlalchemy.engine import Engine

from planner import present
from planner.inputs.untrusted import md_text
from planner.logs import summarize
from planner.logs.stored import save_upload
from planner.logs.summary import LogSummary, busiest_hour_words
from planner.worksheet.provenance import Figure, Source
from ttft_planner_app import viewer, worksheet_state
from ttft_planner_app.auth import can, record, require

__all__ = ["render"]


def render(eng: Engine, key: str, workday: str, tz: str) -> tuple[pd.DataFrame, LogSummary]:
    """Draw the headline of the result on show (st.session_state["logs_result"], read with `key`); return its frame
    and its summary over `workday` in the viewer's zone `tz` (summarised once per reading, working day and zone, by
    planner.logs.summarize: the summary `logs summarize` prints)."""
    ss = st.session_state
    result = ss.logs_result
    frame, parsed = result["frame"], result["parsed"]
    if parsed is not None:
        fmts = md_text(", ".join(f"{name} → {f}" for name, f in parsed.formats.items()))
        st.success(f"Read {len(frame):,} requests ({fmts}).", icon=":material/check_circle:")
        if parsed.n_rejected:
            with st.expander(
                f"{parsed.n_rejected:,} line{'' if parsed.n_rejected == 1 else 's'} rejected", icon=":material/warning:"
            ):
                st.dataframe(
                    [{"file": r.source, "line": r.line_no, "reason": r.reason} for r in parsed.rejected[:50]],
                    hide_index=True,
                    key="logs_rejected",
                )
        if parsed.tokens_estimated:
            st.warning(f"Token counts were not in the log: they are an {parsed.token_counter}.", icon=":material/info:")
        for note in parsed.notes:
            st.info(note[0].upper() + note[1:] + ".", icon=":material/info:")
    else:
        st.success(f"Showing {md_text(result['label'])}: {len(frame):,} requests.", icon=":material/check_circle:")

    summary_key = (key, workday, tz)
    if ss.get("logs_summary_key") != summary_key:
        with st.spinner("Summarising…"):
            ss.logs_summary = summarize(frame, tz=tz, workday=workday)
        ss.logs_summary_key = summary_key
    s = ss.logs_summary

    first = viewer.fmt_ms(s.first_ts_ms, tz, "%Y-%m-%d").removesuffix(f" {tz}")
    last = viewer.fmt_ms(s.last_ts_ms, tz, "%Y-%m-%d").removesuffix(f" {tz}")
    m = st.columns(4)
    span, prompt = s.headline_prompt()  # the whole log when the working day holds no request, said so below
    p95w, p50w = prompt["p95"], prompt["p50"]
    window = f"{first}…{last}, working day {workday} {tz}"
    if span == "whole log":
        window = f"{first}…{last}, whole log (no request in the working day {workday} {tz})"
        st.info(
            f"None of the {s.n:,} requests falls in the working day ({workday}, Mon–Fri, {tz}): the figures below are "
            "over the whole log. Change the working day above to read another window.",
            icon=":material/schedule:",
        )
    m[0].metric(
        f"p95 prompt tokens ({span})",
        "—" if p95w.value is None else f"{p95w.value:,.0f}",
        help=f"nearest-rank, n={p95w.n}" + ("" if p95w.reliable else " — too few requests for a p95 (needs 20)"),
    )
    m[1].metric(f"p50 prompt tokens ({span})", "—" if p50w.value is None else f"{p50w.value:,.0f}", help=f"n={p50w.n}")
    # A log that records no cached token at all has no cache columns (or none hit): its cache share is unknown
    # (None in the summary, "—" here and in the Per model tab), not a measured 0 %, and not handed to the worksheet.
    cache_known = s.cache_known
    m[2].metric(
        "Cached share of prompt tokens",
        present.pct(s.cached["token_fraction"], 0),
        help=(
            f"{present.pct(s.cached['request_fraction'], 0)} of requests had a prefix-cache hit; only uncached "
            "tokens cost prefill"
            if cache_known
            else "This log records no cached tokens (no cache column, or no request hit the cache): "
            "the worksheet keeps its own cache-hit figure."
        ),
    )
    busiest = busiest_hour_words(s)
    m[3].metric(
        "Busiest clock hour",
        f"{s.peak_hour_requests:,} requests",
        help=f"Requests in the busiest clock hour of the log ({tz}): {busiest}. Mean over the whole log: "
        f"{present.rate(s.mean_rate_per_s * 3600, 'req/h', 1)}.",
    )
    if not p95w.reliable:
        st.caption(
            f":grey[The {span} p95 rests on n={p95w.n}: fewer than 20 requests, so it is only the largest value.]"
        )
    if s.n and s.peak_hour_covered_s < 3600:  # part of an hour: its count is not an hourly rate, and says so
        st.caption(f":grey[Busiest clock hour {md_text(busiest)}.]")

    b1, b2, b3 = st.columns([1, 1, 2])
    if b1.button(
        "Use in worksheet", key="logs_use", type="primary", icon=":material/input:", disabled=p95w.value is None
    ):
        detail = result["label"]
        figures = {
            "prompt_tokens_p95": Figure(float(p95w.value), "tokens", Source.LOG, detail=detail, n=p95w.n, window=window)
        }
        if cache_known:
            figures["cache_hit_fraction"] = Figure(
                round(s.cached["token_fraction"], 4), "fraction", Source.LOG, detail=detail, n=s.n, window=window
            )
        worksheet_state.hand_over(figures)
    if parsed is not None:
        name = b3.text_input(
            "Name for this upload", value=result["label"][:300], key="logs_save_name", label_visibility="collapsed"
        )
        if b2.button(
            "Save upload", key="logs_save", icon=":material/save:", disabled=not can("logs.upload")
        ) and require("logs.upload"):
            with st.spinner(f"Storing {len(frame):,} requests…"):
                upload_id = save_upload(eng, name, parsed)
            record("logs.upload", name, f"stored upload {upload_id}: {len(frame):,} requests")
            st.toast(f"Stored upload {upload_id}: {len(frame):,} requests (numbers only).")
    return frame, s
