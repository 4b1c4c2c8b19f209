"""Logs: how long are our prompts, how cached, when do they arrive?

(p95 prompt tokens, cache-hit rate, cold exposure)"""

import json

import streamlit as st

from app import viewer, worksheet_state
from app.auth import can, record, require
from app.cache import engine
from app.charts.logs import (
    cold_curve_figure,
    ecdf_figure,
    histogram_figure,
    hour_percentiles_figure,
    percentile_rows,
    percentile_table_style,
    traffic_figure,
    ttft_vs_probes_figure,
    weekday_figure,
)
from app.present import count, display_frame, pct
from planner.logs import FORMATS, UPLOAD_EXTENSIONS, LogFormatError, TokenCounter, read_logs
from planner.logs.exposure import P95_COLD_THRESHOLD
from planner.logs.mapped import FIELDS as MAP_FIELDS
from planner.logs.prefix import DEFAULT_CACHE_BLOCKS
from planner.logs.samples import SAMPLE_DIR, samples
from planner.logs.spool import Spool
from planner.logs.summary import DEFAULT_WORKDAY, ecdf_points, histogram, parse_workday, summarize_logs
from planner.logs.traces import DEFAULT_START, guess_table_mapping, start_ms
from planner.provenance import Figure, Source
from planner.store.logs import UploadNotFound, delete_upload, list_uploads, load_upload_frame, save_upload
from planner.store.probe_queries import hour_of_day, series_keys
from planner.untrusted import md_text

ZONE_HINT = (
    "Times written without a zone (e.g. '2024-05-10 09:00:00') are read in this zone; hours of day and "
    "the working day are shown in the viewer's time zone (sidebar)."
)

st.title("Logs")
st.caption(
    "Upload your agent's request logs (CSV, JSON Lines, JSON or Parquet, optionally .gz/.zst) or a public trace "
    "(Azure 2023/2024, BurstGPT, Mooncake). Prompt-token percentiles over the working day, the cached share, traffic "
    "by hour and the cold-start exposure of a scale-to-zero deployment. Only times, token counts and model names are "
    "kept: prompt and completion text never leave the parser."
)
eng = engine()
ss = st.session_state


def drop_spool() -> None:
    """Remove the last upload's files from disk (a new upload, a sample or a stored upload replaces it)."""
    spool = ss.pop("logs_spool", None)
    if spool is not None:
        spool.close()


tz = viewer.time_zone()  # hours, working day and dates on this page: the one viewer zone
# Page settings outlive the page (widget state does not): kept here and given back to the widgets on return.
prefs = ss.setdefault(
    "logs_prefs",
    {"fmt": "auto", "naive_tz": "UTC", "workday": DEFAULT_WORKDAY, "start": "", "cache_blocks": DEFAULT_CACHE_BLOCKS},
)

# ---- inputs
left, right = st.columns([3, 2])
files = left.file_uploader(
    "Request logs",
    accept_multiple_files=True,
    key="logs_files",
    type=list(UPLOAD_EXTENSIONS),
    help="Several files at once are read together. Over the size limit, a file is refused with a message.",
)
with right:
    sample = st.selectbox("…or try a sample", list(samples()), key="logs_sample", format_func=lambda k: samples()[k])
    if st.button("Load sample", key="logs_load_sample", icon=":material/science:"):
        ss.logs_source = ("sample", sample)
        drop_spool()
    uploads = list_uploads(eng)
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
workday = c3.text_input(f"Working day (Mon–Fri, {tz})", value=prefs["workday"], key="logs_workday")
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
            help="LRU size under which the cached share is derived from a trace's hash_ids.",
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

# ---- the source: a new upload, or the last one (kept in the session so leaving the page does not lose it)
if files:
    source = ("files", tuple((f.file_id, f.name, f.size) for f in files))
    if ss.get("logs_source") != source:
        # Copied to disk in chunks, with a bar that moves by bytes: then read out of core like a file on disk.
        drop_spool()
        bar = st.progress(0.0, "Receiving the upload…")
        try:
            ss.logs_spool = Spool(files, progress=lambda frac, msg: bar.progress(frac, msg))
        except OSError as exc:
            st.error(f"The upload could not be saved to a temporary file: {exc.strerror or exc}")
            st.stop()
        bar.empty()
        ss.logs_source = source
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

source_id = json.dumps(source, default=str)
# A mapping belongs to the file it was made for: the next file starts from its own detected columns.
saved_map = ss.get("logs_mapping") or {}
mapping = saved_map.get("mapping") if saved_map.get("source") == source_id else None

key = json.dumps(
    [source, fmt, mapping, naive_tz, start, cache_blocks, tok_file.file_id if tok_file else None], default=str
)
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
        name = next((u.name for u in list_uploads(eng) if u.id == source[1]), str(source[1]))
        ss.logs_result = {"frame": frame, "label": f"stored upload “{name}”", "parsed": None}
    else:
        inputs = list(ss.logs_spool.paths) if source[0] == "files" else [SAMPLE_DIR / source[1]]
        bar = st.progress(0.0, "Reading…")
        try:
            res = read_logs(
                inputs,
                fmt=fmt,
                mapping=mapping,
                tz=naive_tz,
                tokenizer=tokenizer,
                start=start.strip() or None,
                cache_blocks=cache_blocks,
                progress=lambda frac, msg: bar.progress(min(frac, 1.0), msg),
            )
        except LogFormatError as exc:
            ss.logs_error = {"message": str(exc), "columns": exc.columns}
        else:
            ss.logs_result = {"frame": res.frame, "label": ", ".join(res.formats) or "log", "parsed": res}
        bar.empty()
    ss.logs_key = key

# ---- column mapping (shown when nothing could be read, and on demand)
error = ss.get("logs_error")
parsed = (ss.get("logs_result") or {}).get("parsed")
columns = (
    error["columns"] if error else sorted({c for cols in (parsed.columns if parsed else {}).values() for c in cols})
)
if error:
    st.error(error["message"], icon=":material/error:")
if columns:
    guess = guess_table_mapping(columns)
    current = mapping or (parsed.mapping if parsed else None) or guess
    with st.expander("Column mapping", expanded=bool(error), icon=":material/table_chart:"):
        st.caption(
            "Which column holds what. Needed: the arrival time (ts, or ts_relative_s / ts_relative_ms for a "
            "trace that counts from its start) and prompt tokens (prompt_tokens incl. cached; "
            "prompt_tokens_uncached for Anthropic-style input_tokens; or prompt_text to count)."
        )
        if guess:
            st.caption("Guessed from the column names: " + ", ".join(f"{k} ← {v}" for k, v in guess.items()))
        with st.form("logs_mapping_form"):
            cols = st.columns(4)
            chosen_map = {}
            for i, field in enumerate(MAP_FIELDS):
                options = ["", *columns]
                default = current.get(field, "")
                chosen_map[field] = cols[i % 4].selectbox(
                    field, options, index=options.index(default) if default in options else 0, key=f"logs_map_{field}"
                )
            if st.form_submit_button("Apply mapping"):
                ss.logs_mapping = {"source": source_id, "mapping": {k: v for k, v in chosen_map.items() if v}}
                st.rerun()
if error or not ss.get("logs_result"):
    st.stop()

result = ss.logs_result
frame = result["frame"]
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
        ss.logs_summary = summarize_logs(frame, tz=tz, workday=workday)
    ss.logs_summary_key = summary_key
s = ss.logs_summary

# ---- headline
first = viewer.fmt_ms(s.first_ts_ms, tz, "%Y-%m-%d").removesuffix(f" {tz}")
last = viewer.fmt_ms(s.last_ts_ms, tz, "%Y-%m-%d").removesuffix(f" {tz}")
window = f"{first}…{last}, working day {workday} {tz}"
m = st.columns(4)
p95w, p50w = s.prompt_workday["p95"], s.prompt_workday["p50"]
m[0].metric(
    "p95 prompt tokens (working day)",
    "—" if p95w.value is None else f"{p95w.value:,.0f}",
    help=f"nearest-rank, n={p95w.n}" + ("" if p95w.reliable else " — too few requests for a p95 (needs 20)"),
)
m[1].metric("p50 prompt tokens (working day)", "—" if p50w.value is None else f"{p50w.value:,.0f}", help=f"n={p50w.n}")
m[2].metric(
    "Cached share of prompt tokens",
    f"{s.cached['token_fraction']:.0%}",
    help=f"{s.cached['request_fraction']:.0%} of requests had a prefix-cache hit; only uncached tokens cost prefill",
)
m[3].metric(
    "Peak-hour arrival rate",
    f"{s.peak_hour_rate_per_s * 3600:,.0f} req/h",
    help=f"busiest clock hour; mean {s.mean_rate_per_s * 3600:,.1f} req/h",
)
if not p95w.reliable:
    st.caption(
        f":grey[The working-day p95 rests on n={p95w.n}: fewer than 20 requests, so it is only the largest value.]"
    )

b1, b2, b3 = st.columns([1, 1, 2])
if b1.button("Use in worksheet", key="logs_use", type="primary", icon=":material/input:", disabled=p95w.value is None):
    detail = result["label"]
    worksheet_state.offer(
        "prompt_tokens_p95", Figure(float(p95w.value), "tokens", Source.LOG, detail=detail, n=p95w.n, window=window)
    )
    worksheet_state.offer(
        "cache_hit_fraction",
        Figure(round(s.cached["token_fraction"], 4), "fraction", Source.LOG, detail=detail, n=s.n, window=window),
    )
    st.switch_page("views/worksheet.py")
if parsed is not None:
    name = b3.text_input(
        "Name for this upload", value=result["label"][:300], key="logs_save_name", label_visibility="collapsed"
    )
    if b2.button("Save upload", key="logs_save", icon=":material/save:", disabled=not can("logs.upload")) and require(
        "logs.upload"
    ):
        with st.spinner(f"Storing {len(frame):,} requests…"):
            upload_id = save_upload(eng, name, parsed)
        record("logs.upload", name, f"stored upload {upload_id}: {len(frame):,} requests")
        st.toast(f"Stored upload {upload_id}: {len(frame):,} requests (numbers only).")

# ---- details
t_prompt, t_traffic, t_cold, t_ttft, t_models = st.tabs(
    ["Prompt tokens", "Traffic", "Cold-start exposure", "Production TTFT", "Per model"]
)
with t_prompt:
    rows = percentile_rows(
        {
            "prompt tokens, all": s.prompt,
            "prompt tokens, working day": s.prompt_workday,
            "output tokens, all": s.output,
        },
        "tokens",
    )
    st.dataframe(percentile_table_style(rows), hide_index=True, key="logs_percentiles")
    marks = {k: s.prompt[k] for k in ("p50", "p95")}
    h1, h2 = st.columns(2)
    h1.plotly_chart(histogram_figure(histogram(frame["prompt_tokens"]), marks), key="logs_hist")
    h2.plotly_chart(ecdf_figure(ecdf_points(frame["prompt_tokens"]), marks), key="logs_ecdf")
    st.plotly_chart(hour_percentiles_figure(s.prompt_by_hour, "prompt tokens", tz), key="logs_prompt_hour")
with t_traffic:
    st.plotly_chart(traffic_figure(s.hourly, tz), key="logs_traffic")
    st.plotly_chart(weekday_figure(s.weekdays), key="logs_weekday")
with t_cold:
    cold = s.cold
    st.caption(
        "One scale-to-zero replica: a request starts cold when the replica has been idle longer than the "
        "scale-down window W since the previous request finished (logged durations count as busy time)."
    )
    st.plotly_chart(cold_curve_figure(cold), key="logs_cold")
    w = st.select_slider(
        "Scale-down window W (s)", options=[int(x) for x in cold["window_s"]], value=300, key="logs_window"
    )
    frac = float(cold.loc[cold["window_s"] == w, "trace_cold_fraction"].iloc[0])
    if frac > P95_COLD_THRESHOLD:
        st.warning(
            f"At W = {w} s, {frac:.1%} of requests start cold: more than 5%, so the cold start is inside your p95."
        )
    else:
        st.success(f"At W = {w} s, {frac:.1%} of requests start cold: under 5%, so the p95 stays warm.")
with t_ttft:
    if s.ttft["p50"].n:
        st.dataframe(
            percentile_table_style(percentile_rows({"TTFT users waited": s.ttft}, "ms")),
            hide_index=True,
            key="logs_ttft_table",
        )
        keys = series_keys(eng)
        probe_key = st.selectbox(
            "Compare with a probe series",
            [None, *keys],
            key="logs_probe_series",
            format_func=lambda k: "— none —" if k is None else k.label,
        )
        probes = None
        if probe_key is not None:
            probes = hour_of_day(eng, probe_key, s.first_ts_ms, s.last_ts_ms + 1, tz=tz)
            if not int(probes["n"].sum()):
                st.caption(":grey[That series has no probe samples in the log's time span.]")
        st.plotly_chart(
            ttft_vs_probes_figure(s.ttft_by_hour, probes, probe_key.label if probe_key else "", tz),
            key="logs_ttft_hour",
        )
    else:
        st.info(
            "This log has no first-token times. LiteLLM and Langfuse (completionStartTime) and OpenTelemetry "
            "first-token events carry them."
        )
with t_models:
    st.dataframe(
        display_frame(
            s.models,
            {
                "cached_token_fraction": pct,
                "output_tokens_mean": lambda v: f"{v:,.0f}",
                "prompt_tokens_p50": count,
                "prompt_tokens_p95": count,
                "n": count,
                "p95_reliable": lambda v: "yes" if v else "no (n < 20)",
            },
        ),
        hide_index=True,
        key="logs_models",
    )

# ---- stored uploads
if uploads:
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
                if ss.get("logs_source") == ("stored", u.id):
                    ss.pop("logs_source", None)
                st.rerun()
