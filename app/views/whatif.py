"""What-if: with our traffic, what p95 TTFT and what cost will each candidate deployment give?"""

import json
from typing import Literal

import pandas as pd
import streamlit as st

from planner.inputs.untrusted import md_text
from planner.inputs.validate import REPLAY_GROWTH
from planner.logs import UPLOAD_EXTENSIONS, LogFormatError, read_logs
from planner.logs.samples import SAMPLE_DIR, samples
from planner.logs.spool import Spool
from planner.logs.stored import SourceInfo, UploadNotFound, log_frame, stored_logs
from planner.whatif.candidates import parse_candidates
from planner.whatif.deployment import (
    DEDICATED_KEYS,
    SERVERLESS_KEYS,
    Deployment,
    defaults_from_worksheet,
    defaults_taken,
)
from planner.whatif.describe import figure_text, fit_words, has_spread, serving_model, speed_spread
from planner.whatif.fits import recent_fits
from planner.whatif.handoff import worksheet_figures
from planner.whatif.results import compare
from planner.whatif.routing import LogFile, prefix_cache_sentence, with_prefix_identity
from planner.whatif.trace import Trace, TraceError, busiest_day, grow, trace_from_frame
from ttft_planner_app import page_state, session_log, viewer, worksheet_state
from ttft_planner_app.cache import engine
from ttft_planner_app.charts.whatif import cost_vs_p95_figure, hourly_p95_figure, segments_figure, table_view
from ttft_planner_app.widgets import number_input_for, wrapped_table

# The starting candidates leave prefill and RTT out: they take the worksheet's figures (measured or typed, with
# their provenance), so the comparison starts from what the team measured rather than from a number of ours.
DEFAULT_SPECS = (
    "serverless:name=serverless 4×8,window=300,cold=20,slots=8,max=4,decode=60,usd_per_mtok=0.3\n"
    "dedicated:name=dedicated 1×8,replicas=1,slots=8,decode=60,usd_per_gpu_h=3.2,gpus=1"
)

# This page has no mapping box: a log whose columns must be named is mapped on the Logs page and stored there.
# What the page reads: a stored upload (its id), a production source (its id: ("source", id) is never taken for
# ("stored", id)), the log read on the Logs page in this session, not saved (its reading's serial), or a sample (its
# file name), or the files just uploaded.
LogChoice = (
    tuple[Literal["stored"], int]
    | tuple[Literal["source"], int]
    | tuple[Literal["session"], int]
    | tuple[Literal["sample"], str]
)
LogSource = LogChoice | tuple[Literal["files"], tuple[tuple[str, str], ...]]
WHATIF_MAP_HINT = "map it in the Column mapping box on the Logs page, save the upload there, and pick it here"

_RATE_LABELS = {
    "prefill_tokens_per_s": "prefill",
    "decode_tokens_per_s": "decode",
    "rtt_ms": "network RTT",
    "cold_start_s": "cold start",
}

_SEGMENT_WORDS = {"queue_ms": "queueing", "cold_ms": "cold start"}


def _source_label(s: SourceInfo) -> str:
    """A production source in the picker, and so in the address (?wi_source=…): its name and kind, not its request
    count, which a sync changes (a link, or the browser's pick, would then name no option and be dropped)."""
    return f"production: {s.name} ({s.kind.short})"


def _source_provenance(s: SourceInfo) -> str:
    """What a replay of source `s` was read from: 'production traffic from the LiteLLM proxy, source “prod”'."""
    return f"production traffic from {s.kind.origin}, source “{s.name}”"


@st.cache_data(show_spinner=False, max_entries=8)
def _replay(trace_key: str, _trace: Trace, deployments: tuple[Deployment, ...], interaction, tz: str):
    """The replay of `_trace` against `deployments` (planner.whatif.results.compare), once per set of inputs: a click
    that changes none of them (the candidate picked for the worksheet, a tab) reuses it. `trace_key` names the trace
    (its source and reading, busiest day, growth); the deployments, target and zone are hashed as they are."""
    return compare(_trace, list(deployments), interaction=interaction, tz=tz)


def _log_files(source: LogSource, files) -> list[LogFile]:
    """The log file(s) a trace was read from, for routing='s prefix identity: an upload's (name, bytes), a sample's
    path; none for a stored upload or a production source (they keep token counts only)."""
    if source[0] == "files":
        return [(f.name, f.getvalue()) for f in files]
    if source[0] == "sample":
        return [SAMPLE_DIR / source[1]]
    return []


def _window(trace: Trace, tz: str, day: str | None) -> str:
    """The replayed period, for a figure's provenance: 'busiest day 2025-11-30 (UTC)' or first…last arrival."""
    if day:
        return f"busiest day {day} ({tz})"
    first, last = pd.to_datetime([trace.arrival_ms[0], trace.arrival_ms[-1]], unit="ms", utc=True).tz_convert(tz)
    return f"{first:%Y-%m-%d %H:%M}…{last:%Y-%m-%d %H:%M} {tz}"


st.title("What-if")
st.caption(
    "Replay your own request log against candidate deployments in virtual time: each request queues for a slot, may "
    "wait for a cold start, pays prefill for its uncached tokens and adds the network RTT. Predicted TTFT per hour of "
    "day, what the slowest 5% wait for, and the cost of the period — side by side."
)
eng = engine()
ss = st.session_state

# ---- the traffic: an upload, a stored upload, a production source (Sources page) or a sample
# one under the other, each the page's width: the uploader lists every file type it takes, and a stored
# upload's name (the user's own) or a sample's title is read whole in the box
files = st.file_uploader("Request log", accept_multiple_files=True, key="wi_files", type=list(UPLOAD_EXTENSIONS))
stored = stored_logs(eng)
uploads = stored.uploads
sources = {s.id: s for s in stored.sources}  # a source with no requests yet has nothing to replay
session = session_log.offered()  # the log read on the Logs page in this session, saved or not
options: list[LogChoice] = [("session", session.serial)] if session is not None else []
options += [("stored", u.id) for u in uploads]
options += [("source", i) for i in sources]
options += [("sample", name) for name in samples()]
labels: dict[LogChoice, str] = {("stored", u.id): f"stored: {u.name} ({u.n_requests:,} requests)" for u in uploads}
labels.update({("source", i): _source_label(s) for i, s in sources.items()})
if session is not None:
    labels[("session", session.serial)] = session.choice_label
labels.update({("sample", k): f"sample: {v}" for k, v in samples().items()})
kept = ss.get("wi_source")
if kept is not None and tuple(kept)[:1] == ("session",) and tuple(kept) not in options:
    del ss["wi_source"]  # an earlier reading of the Logs page, replaced or cleared since
if "wi_source" not in ss and ("stored", page_state.selected_log()) in options:
    ss.wi_source = ("stored", page_state.selected_log())  # the log picked on another page
picked = st.selectbox(
    "…or a stored upload / production source / sample" if sources else "…or a stored upload / sample",
    options,
    key="wi_source",
    format_func=lambda o: labels[o],
    index=None,
    placeholder="choose a log",
    persist_state="session",
    bind="query-params",
    help="A production source: the requests synced on the Sources page (the LiteLLM proxy's, or OpenTelemetry "
    "spans), replayed like a stored upload."
    if sources
    else None,
)
if picked and picked[0] == "stored":
    page_state.select_log(picked[1])
source: LogSource | None = ("files", tuple((f.file_id, f.name) for f in files)) if files else picked
live = sources.get(source[1]) if source and source[0] == "source" else None  # the production source replayed
if live is not None:
    st.caption(
        f"Production traffic from {live.kind.origin}: source “{md_text(live.name)}”, {live.n_requests:,} requests "
        f"up to {viewer.fmt_ms(live.watermark_ms)}, last synced {viewer.fmt_ms(live.synced_at_ms)}. Sync it on the "
        "Sources page."
    )

tz = viewer.time_zone()  # hours of day in the one viewer zone, chosen in the sidebar
worksheet = worksheet_state.get()
targets = {i.key: i for i in worksheet_state.interaction_types(worksheet)}
if ss.get("wi_interaction") not in targets:
    ss.wi_interaction = worksheet.interaction
c2, c3, c4 = st.columns([2, 1, 1])
interaction = c2.selectbox(
    "Target",
    list(targets),
    key="wi_interaction",
    format_func=lambda k: f"{targets[k].label} · p95 ≤ {targets[k].target_p95_ms:,.0f} ms",
    help="The interaction types and targets of your worksheet (Worksheet page), custom ones included.",
)
growth = number_input_for(
    REPLAY_GROWTH,  # `whatif --growth`'s
    "Growth ×",
    key="wi_growth",
    where=c3,
    persist=True,
    value=1.0,
    step=0.25,
    help="Scale the request volume, keeping the hour-of-day shape (2 = twice the requests).",
)
only_busiest = c4.checkbox(
    "Busiest day only",
    key="wi_busiest",
    persist_state="session",
    bind="query-params",
    help=f"Replay the calendar day ({tz}) with the most requests.",
)

specs_text = st.text_area(
    "Candidates (one per line)",
    DEFAULT_SPECS,
    height=110,
    key="wi_specs",
    persist_state="session",
    bind="query-params",
    help="serverless: "
    + ", ".join(SERVERLESS_KEYS)
    + " · dedicated: "
    + ", ".join(DEDICATED_KEYS)
    + ", overflow_<serverless key>. Units: window/cold s, prefill/decode tokens/s per slot, rtt ms, USD. "
    "engine=vllm|sglang|llama.cpp (dedicated) replays a continuous-batching scheduler step by step: slots is then "
    "its running sequences, with max_num_batched_tokens, chunked_prefill, mixed, block_size, kv_blocks and step_ms "
    "(`ttft-planner whatif --help` has each).",
)
defaults = defaults_from_worksheet({f: getattr(worksheet, f) for f in worksheet_state.FIELDS})
candidates = parse_candidates(specs_text.splitlines(), defaults)  # as `whatif --deployment` reads them
deployments, problems = candidates.deployments, candidates.problems

# Say which worksheet figures are in use, and by which candidates: only those a candidate really left out.
used = [
    f"{k} = {figure_text(defaults[k])} ({defaults[k].describe(tz)}) for {', '.join(who)}"
    for k, who in defaults_taken(deployments, defaults).items()
]
if deployments:
    st.caption(
        md_text(f"From your worksheet “{worksheet.name}”: " + " · ".join(used))
        if used
        else "Every candidate sets its own prefill rate, RTT and cold start: no figure comes from the worksheet."
    )

if source is None:
    st.info(
        "Upload a request log, or pick a stored upload (Logs page), a production source (Sources page) or a sample, "
        "to start."
    )
    st.stop()

# ---- read the log (once per source, and again once a sync has added requests to a production source), build the
# candidates
synced = [live.n_requests, live.watermark_ms, live.watermark_id] if live is not None else None
frame_key = json.dumps([source, tz, synced], default=str)
if ss.get("wi_frame_key") != frame_key:
    try:
        if source[0] == "stored":
            frame, label = log_frame(eng, upload_id=source[1]), next(u.name for u in uploads if u.id == source[1])
        elif source[0] == "session":  # the Logs page's own reading: the same requests, not read again
            if session is None or session.serial != source[1]:
                raise ValueError("that log is no longer on the Logs page: read it there again, or pick another log")
            frame, label = session.frame, session.label
        elif source[0] == "source":  # read as the Logs page reads it, then replayed exactly as a stored upload
            if live is None:
                raise ValueError("that production source was removed, or holds no requests: pick another log")
            with st.spinner(f"Loading {live.n_requests:,} production requests…"):
                frame = log_frame(eng, source_id=live.id)
            label = _source_provenance(live)
        else:
            # An upload is copied to disk in chunks and read out of core, with a bar that moves by bytes.
            bar = st.progress(0.0, "Receiving the upload…")
            spool: Spool | None = None
            if source[0] == "files":
                spool = Spool(files, progress=lambda frac, msg: bar.progress(frac, msg))
                inputs = spool.paths
            else:
                inputs = [SAMPLE_DIR / source[1]]
            try:
                frame = read_logs(
                    inputs,
                    tz=tz,
                    progress=lambda frac, msg: bar.progress(min(frac, 1.0), msg),
                    map_hint=WHATIF_MAP_HINT,
                ).frame
            finally:
                if spool:
                    spool.close()  # the trace below keeps the numbers it needs
                bar.empty()
            label = ", ".join(f.name for f in files) if source[0] == "files" else source[1]
        ss.wi_trace, ss.wi_error = trace_from_frame(frame, source=label), None
    except (LogFormatError, TraceError, UploadNotFound, ValueError, OSError) as exc:
        ss.wi_trace, ss.wi_error = None, f"This log cannot be replayed: {exc}"
    ss.wi_frame_key = frame_key
if ss.wi_error:
    st.error(ss.wi_error, icon=":material/error:")
    st.stop()

for p in problems:
    st.error(p, icon=":material/error:")
if not deployments or problems:
    st.stop()

trace, day = ss.wi_trace, None
try:
    # routing=: each request's prefix identity from the log file, as `whatif` reads it (one call for both fronts),
    # read once per log and kept while the candidates change
    routed = any(getattr(d, "routing", None) for d in deployments)
    if ss.get("wi_ident_key") != [ss.wi_frame_key, routed]:
        ss.wi_ident_trace = with_prefix_identity(trace, deployments, _log_files(source, files) if routed else [])
        ss.wi_ident_key = [ss.wi_frame_key, routed]
    trace = ss.wi_ident_trace
    if only_busiest:
        trace, day = busiest_day(trace, tz)
    trace = grow(trace, growth)
except TraceError as exc:
    st.error(str(exc))
    st.stop()
with st.spinner(f"Replaying {trace.n:,} requests × {len(deployments)} candidates…"):
    # The trace is identified by what it was read from (wi_frame_key) and what was done to it, not hashed: a
    # million requests would take longer to hash than a rerun should.
    trace_key = json.dumps([ss.wi_frame_key, routed, only_busiest, day, growth])
    result = _replay(trace_key, trace, tuple(deployments), targets[interaction], tz)

# ---- results
target = result.interaction
scope = f", busiest day {day}" if day else ""
period_h = max((c.period_h for c in result.candidates if c.ok), default=0.0)
replayed = (
    f"Replayed: {md_text(trace.source)}, {trace.n:,} requests"  # a production source: its kind, origin and name
    if live is not None
    else f"{trace.n:,} requests from {md_text(trace.source)}"
)
st.caption(
    f"{replayed}{scope} over {period_h:,.1f} h · growth ×{growth:g} · "
    f"hours in {tz} · "
    f"percentiles nearest-rank; hours with n < 20 are hollow in the chart."
)
if result.cheapest:
    st.success(
        f"Cheapest candidate meeting the {target.label} target (p95 ≤ {target.target_p95_ms:,.0f} ms at every hour): "
        f"**{md_text(result.cheapest)}**",
        icon=":material/verified:",
    )
else:
    st.warning(
        f"No candidate meets the {target.label} target of {target.target_p95_ms:,.0f} ms at p95.",
        icon=":material/warning:",
    )
ok = [c for c in result.candidates if c.ok]
for c in ok:
    if c.interval:
        st.caption(f"**{md_text(c.name)}**: {md_text(c.interval_sentence('p95'))}.")
for c in ok:
    if c.regime:  # the sentence a lead forwards: what the p95 waits for, and what one replica more does
        st.markdown(f"**{md_text(c.name)}** is {md_text(c.regime)}.")
for c in ok:
    if c.prefix_cache:  # routing=: its replicas' own prefix caches, in the command's words
        st.caption(f"**{md_text(c.name)}**: {md_text(prefix_cache_sentence(c.prefix_cache))}.")
for note in trace.notes:
    if note.startswith("routing="):
        st.caption(md_text(note))
by_name = {d.name: d for d in deployments}
fixed = [c.name for c in ok if not has_spread(by_name[c.name])]
if fixed:
    one = len(fixed) == 1
    st.caption(
        f"{md_text(', '.join(fixed))} {'has' if one else 'have'} no speed spread (speed_sd = request_sd = 0): "
        f"{'its' if one else 'their'} interval only covers the trace's size, not an engine running faster or slower "
        "than its rates. `ttft-planner calibrate` prints speed_sd/request_sd to add to the spec."
    )
for c in result.candidates:
    if not c.ok:
        st.error(f"**{md_text(c.name)}** {md_text(c.message)}", icon=":material/block:")
table = result.table()
wrapped_table(*table_view(table, target.label, result.level))  # every column in view at 1,400 px
g1, g2 = st.columns(2)
g1.plotly_chart(hourly_p95_figure(result.hourly_frame(), target.target_p95_ms, tz, result.level), key="wi_hourly")
g2.plotly_chart(segments_figure(result.segments_frame()), key="wi_segments")
st.plotly_chart(cost_vs_p95_figure(table, target.target_p95_ms), key="wi_cost")

# ---- a candidate's predicted queueing → the worksheet's segments, with the replay's provenance
if ok:
    names_ok = [c.name for c in ok]
    if ss.get("wi_use_pick") not in names_ok:
        ss.wi_use_pick = result.cheapest or names_ok[0]
    h1, h2 = st.columns([1, 2], vertical_alignment="bottom")
    if len(ok) > 1:
        h1.selectbox("Candidate for the worksheet", names_ok, key="wi_use_pick")
    chosen = next(c for c in ok if c.name == (ss.wi_use_pick if len(ok) > 1 else names_ok[0]))
    grown = f" ×{growth:g}" if growth != 1 else ""
    figures = worksheet_figures(chosen, f"{trace.source}{grown}", _window(trace, tz, day))
    if h2.button(
        f"Use {md_text(chosen.name)}'s predicted queueing in the worksheet",
        key="wi_use",
        icon=":material/input:",
        help="Fills the worksheet's queueing segment"
        + (" and cold start" if "cold_ms" in figures else "")
        + " with the segments of this candidate's replayed p95 request, which add up to its p95 ("
        + ", ".join(f"{_SEGMENT_WORDS[k]} {v.value:,.0f} ms" for k, v in figures.items())
        + "), its p95 interval in the provenance.",
    ):
        worksheet_state.hand_over(figures)

fits = recent_fits(eng)  # the step-model fits of the calibrations on record, for a batching candidate's spec
with st.expander("Where each candidate's rates come from, and the serving model it assumes", icon=":material/info:"):
    for d in deployments:
        figs = {
            k: getattr(d, k)
            for k in ("prefill_tokens_per_s", "decode_tokens_per_s", "rtt_ms", "cold_start_s")
            if hasattr(d, k)
        }
        st.markdown(
            f"**{md_text(d.name)}** — "
            + md_text(" · ".join(f"{_RATE_LABELS[k]} {figure_text(f)} ({f.describe(tz)})" for k, f in figs.items()))
        )
        st.caption(md_text(f"Serving model: {serving_model(d)} · {speed_spread(d)}."))
        fit = fit_words(d, fits)
        if fit:
            st.caption(md_text(f"{fit}."))
    st.caption(
        "engine=slots is simpler than a real server (no batching: prefill does not slow under load and decodes do "
        "not delay new prompts); engine=vllm|sglang|llama.cpp replays the engine's scheduler step by step, each "
        "step's time fitted by `ttft-planner calibrate --engine …`: see docs/whatif-model.md."
    )
