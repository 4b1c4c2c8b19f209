"""Prefix cache tab: how much of a team's prompts a deployment serves from its KV cache, by routing policy.

A trace (a sample, or an upload kept in memory: prompt text is never stored or shown) gives each request's prefix
identity (planner.kvcache.chains); the deployment (model on GPU, replicas, routing) gives each replica's KV capacity
(planner.kvcache.capacity) and the replay of the requests over it (planner.kvcache.regime), as `ttft-planner
prefix` does (planner/cli/prefix.py). Its button hands the chosen routing's uncached prompt p95 to the worksheet.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import pandas as pd
import streamlit as st

from planner import present
from planner.capacity import specs as P
from planner.capacity.errors import CapacityError
from planner.capacity.gpufit import TP_DEGREES
from planner.inputs.untrusted import md_text
from planner.inputs.validate import SLOPE_MS_PER_1K_TOKENS
from planner.kvcache.capacity import KvCapacity, kv_capacity, prefill_rate
from planner.kvcache.chains import PrefixTrace, PrefixTraceError, read_prefix_trace
from planner.kvcache.regime import RULE_WORDS, RegimePoint, Study, deployment_name, study
from planner.kvcache.simulate import Engine, Routing, ServiceRates, engine_eviction, reuse_ceiling
from planner.logs.samples import SAMPLE_DIR
from planner.worksheet.provenance import Figure, Source
from ttft_planner_app import worksheet_state
from ttft_planner_app.charts.prefix import regime_figure
from ttft_planner_app.views.capacity_tabs._common import dtype_pickers, source_caption, to_worksheet, usable_share
from ttft_planner_app.widgets import number_input_for, persisted_number, persisted_preset, wrapped_table

__all__ = ["SAMPLES", "TraceView", "render"]

#: The traces this tab offers from assets/sample_logs (file → label): one with message text and session ids, one
#: with Mooncake hash_ids. (agent_sessions.jsonl is not among the Logs page's samples: it has no token counts.)
SAMPLES = {
    "agent_sessions.jsonl": "Sample: coding-agent sessions",
    "mooncake_conversation.jsonl": "Sample: Mooncake conversation",
}
_ABOUT = {
    "agent_sessions.jsonl": "Synthetic coding-agent sessions: message text and session ids, a large prefix resent "
    "every turn (assets/sample_logs).",
    "mooncake_conversation.jsonl": "Real rows of the Mooncake conversation trace (Apache-2.0): hash_ids of 512-token "
    "blocks, no session ids (assets/sample_logs/README.md).",
}
_UPLOAD = "upload"
_UPLOAD_TYPES = ["jsonl", "ndjson", "json", "gz", "zst"]  # what planner.kvcache.chains reads (.gz / .zst inflated)
_SHOWN_REJECTS = 50  # rejected lines listed, as the Logs page lists them
#: The prompt at which a modelled prefill rate is read, as the CLI does (planner/cli/prefix.py keeps it private).
#: The rate assumed for a model without a width (no FLOPs model) and no typed slope: the simulator's default.
_DEFAULT_MODEL, _DEFAULT_GPU, _DEFAULT_REPLICAS = "qwen2.5-coder-32b", "L40S", 2
_ROUTINGS = [r.value for r in Routing]
#: The block-cache engines this tab replays, each with its own eviction rule (planner.logs.prefix).
_ENGINES = {Engine.VLLM.value: "vLLM (tail-first eviction)", Engine.SGLANG.value: "SGLang (radix-leaf eviction)"}


@dataclass(frozen=True)
class TraceView:
    """A trace read for the tab: its requests' prefix identity (block hashes, never text), what to call it, and
    the figures that do not depend on the deployment."""

    key: str  # identifies the trace in the caches: "sample:<file>" or "upload:<sha256>"
    label: str
    trace: PrefixTrace
    sessions: int
    ceiling: float
    within_session: float


def _view(key: str, label: str, trace: PrefixTrace) -> TraceView:
    ceiling, within = reuse_ceiling(trace.requests, trace.block_tokens)
    sessions = len({r.session for r in trace.requests if r.session is not None})
    return TraceView(key, label, trace, sessions, ceiling, within)


@st.cache_data(show_spinner=False, max_entries=4)
def _sample_trace(name: str) -> TraceView:
    return _view(f"sample:{name}", SAMPLES[name], read_prefix_trace(SAMPLE_DIR / name))


@st.cache_data(show_spinner=False, max_entries=4)
def _upload_trace(digest: str, name: str, _data: bytes) -> TraceView:
    """The trace of an upload, read in memory (keyed by its digest: the bytes are not part of the cache key, and the
    cached value holds block hashes, never text)."""
    trace = read_prefix_trace((name, _data))
    return _view(f"upload:{digest}", name, trace)


@st.cache_data(show_spinner=False, max_entries=16)
def _study(
    trace_key: str,  # identifies `_trace` in the cache key
    _trace: PrefixTrace,
    capacity_tokens: int,
    replicas: int,
    routings: tuple[str, ...],
    ms_per_token: float,
    engine: str = Engine.VLLM.value,
) -> Study:
    rates = ServiceRates(prefill_ms_per_token=ms_per_token)
    return study(_trace, capacity_tokens, [replicas], routings, rates, engine)


def _read_error(exc: Exception) -> str:
    """Why a trace could not be read, without quoting its content: the reader's own words (it names the file and
    its first rejected lines), else what a trace needs."""
    if isinstance(exc, PrefixTraceError):
        return str(exc)
    return (
        "a record this tab cannot read: each needs hash_ids with input_length (Mooncake), or messages or prompt "
        "text, and a timestamp"
    )


def _pick_trace(left) -> TraceView | None:
    """The trace picker (a sample or an upload); None (with the reason shown) when there is no trace to use."""
    options = [name for name in SAMPLES if (SAMPLE_DIR / name).exists()] + [_UPLOAD]
    choice = left.selectbox(
        "Sample or upload",
        options,
        format_func=lambda k: "Upload a JSON Lines trace…" if k == _UPLOAD else SAMPLES[k],
        persist_state="session",
        bind="query-params",
        key="cap_px_trace",
        help="Mooncake / AIPerf rows with hash_ids, or chat logs with messages and a session_id.",
    )
    try:
        if choice != _UPLOAD:
            left.caption(_ABOUT[choice])
            return _sample_trace(choice)
        upload = left.file_uploader(
            "JSON Lines trace (kept in memory, never stored)",
            help="Prompt text is read for its prefix identity only: never stored, never shown. Plain, .gz or .zst, "
            "read as the Logs page reads a file: a line that cannot be used is named and the rest read.",
            type=_UPLOAD_TYPES,
            key="cap_px_file",
        )
        if upload is None:
            st.info("Upload a trace (JSON Lines: hash_ids, or messages with a session_id), or pick a sample.")
            return None
        data = upload.getvalue()
        return _upload_trace(hashlib.sha256(data).hexdigest(), upload.name, data)
    except (PrefixTraceError, ValueError, TypeError, AttributeError, KeyError) as exc:
        st.error(f"Cannot read that trace: {md_text(_read_error(exc))}.")
        return None


def _default_index(keys: list[str], wanted: str) -> int:
    return keys.index(wanted) if wanted in keys else 0


def render(models: dict[str, P.ModelSpec], gpu_by_key: dict[str, P.GpuSpec]) -> None:
    """Draw the Prefix cache tab; `models` and `gpu_by_key` are the presets as edited on the GPU fit tab."""
    gdef = P.gpu_defaults()
    left, right = st.columns([2, 3], gap="large")
    left.subheader("Trace")
    with right:
        view = _pick_trace(left)
    with left:
        st.subheader("Deployment")
        mkey = persisted_preset("Model", models, key="cap_px_model", index=_default_index(list(models), _DEFAULT_MODEL))
        model = models[mkey]
        st.caption(source_caption(model.source, model.as_of))
        gkey = persisted_preset(
            "GPU", gpu_by_key, key="cap_px_gpu", index=_default_index(list(gpu_by_key), _DEFAULT_GPU)
        )
        gpu = gpu_by_key[gkey]
        wdtype, kvdtype = dtype_pickers("cap_px")
        c1, c2 = st.columns(2)
        tp = c1.selectbox(
            "GPUs per replica",
            [0, *TP_DEGREES],
            format_func=lambda n: "auto" if n == 0 else str(n),
            persist_state="session",
            bind="query-params",
            key="cap_px_tp",
            help="Tensor-parallel GPUs a replica spans. Auto: the fewest that hold the weights and some KV cache.",
        )
        replicas = int(
            persisted_number(
                "Replicas", min_value=1, max_value=64, value=_DEFAULT_REPLICAS, step=1, key="cap_px_reps", where=c2
            )
        )
        usable = usable_share("cap_px_usable", gdef["usable_memory_fraction"], gdef["usable_memory_source"])
        engine = st.selectbox(
            "Engine",
            list(_ENGINES),
            format_func=_ENGINES.__getitem__,
            persist_state="session",
            bind="query-params",
            key="cap_px_engine",
            help="How a full cache gives blocks up. vLLM frees a finished request's blocks tail first, so a shared "
            "prefix outlives the tails hanging off it; SGLang evicts the least recently used radix-tree leaf, a "
            "whole run of blocks at once.",
        )
        routings = st.multiselect(
            "Routing policies",
            _ROUTINGS,
            default=_ROUTINGS,
            persist_state="session",
            bind="query-params",
            key="cap_px_routing",
            wrap=True,  # in a column the chips would stay on one scrolling row, the fourth out of sight
            help="round-robin: in turn; least-loaded: fewest requests in flight; session: a session's requests to "
            "one replica; prefix: the replica holding the longest cached prefix.",
        )
        ms_per_1k = number_input_for(
            SLOPE_MS_PER_1K_TOKENS,  # `prefix --slope-ms-per-1k`'s; 0, its open end, reads as "none typed"
            "Prefill ms per 1K uncached tokens (0: from the prefill model)",
            persist=True,
            value=0.0,
            step=10.0,
            key="cap_px_ms1k",
            help="A measured slope (Probes page, or the Prefill tab) beats the model: type it here.",
        )
    with right:
        if view is None:
            return
        _trace_summary(view)
        try:
            cap = kv_capacity(
                model,
                gpu,
                gpus_per_replica=tp or None,
                weight_dtype=wdtype,
                kv_dtype=kvdtype,
                usable_fraction=usable,
                block_tokens=view.trace.block_tokens,
            )
            ms_per_token, rate_source = prefill_rate(model, gpu, cap.gpus_per_replica, ms_per_1k or None)
        except CapacityError as exc:
            st.error(
                f"No KV cache on this deployment: {md_text(exc)}. Pick a larger GPU, more GPUs per replica or a "
                "smaller weight format.",
                icon=":material/error:",
            )
            return
        st.markdown(f"**KV cache per replica:** {md_text(cap.label())}")
        st.caption(
            f"Prefill rate: {md_text(rate_source)} → {present.rate(1000.0 / ms_per_token, 'tokens/s')}. Predicted "
            "prefill is the uncached prompt at this rate: service only, no queueing (the What-if page adds that)."
        )
        if not routings:
            st.info("Pick at least one routing policy.")
            return
        chosen = tuple(r for r in _ROUTINGS if r in routings)
        result = _study(view.key, view.trace, cap.tokens, replicas, chosen, ms_per_token, engine)
        held = cap.blocks * cap.block_tokens  # what the replay holds: whole blocks
        rule = engine_eviction(engine)
        assert rule is not None  # the tab offers block-cache engines only
        st.caption(f"Eviction: {rule.value}: {RULE_WORDS[rule.value]}. The chart, knees and sentence assume it.")
        st.plotly_chart(regime_figure(result.sweep, held, result.knees, replicas), key="cap_px_chart")
        st.subheader("At this deployment's capacity")
        st.caption(
            f"{held:,} KV tokens per replica (whole {cap.block_tokens}-token blocks: "
            f"{P.gib(held * cap.kv_bytes_per_token):,.1f} GiB of the {cap.usable_gib:,.1f} GiB usable, memory in "
            f"GiB as vLLM counts it), at {replicas} replica{'s' if replicas > 1 else ''} and at one more."
        )
        wrapped_table(_at_capacity_table(result.at_capacity))
        said = result.sentence(deployment_name(replicas, cap), replicas)
        if said:
            st.info(md_text(said), icon=":material/forward_to_inbox:")
        else:
            st.caption("The sentence to forward compares against round-robin: add it to the routing policies.")
        _hand_off(view, result, cap, gpu, replicas, chosen)


def _trace_summary(view: TraceView) -> None:
    trace = view.trace
    st.caption(
        f"{md_text(view.label)}: {present.count(len(trace.requests))} requests, "
        f"{present.count(view.sessions)} sessions; prefix identity from {md_text(trace.source)}."
    )
    if trace.n_rejected:
        with st.expander(
            f"{trace.n_rejected:,} line{'' if trace.n_rejected == 1 else 's'} rejected", icon=":material/warning:"
        ):
            st.dataframe(
                [{"file": r.source, "line": r.line_no, "reason": r.reason} for r in trace.rejected[:_SHOWN_REJECTS]],
                hide_index=True,
                key="cap_px_rejected",
            )
    if trace.approximate:
        st.caption(
            ":material/warning: An estimate: this trace has message text and no token ids, so each prompt is cut "
            "into blocks at about 4 characters a token; token counts and hit rates are approximate."
        )
    within = (
        f" ({present.pct(view.within_session)} within the same session)"
        if view.sessions
        else " (no session ids in this trace)"
    )
    st.markdown(
        f"**Reuse ceiling:** {present.pct(view.ceiling)} of prompt tokens repeat an earlier request's prefix"
        f"{within}. No deployment serves more from its cache."
    )


def _at_capacity_table(points: list[RegimePoint]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "Routing": p.routing,
                "Replicas": present.count(p.replicas),
                "Hit rate": present.pct(p.hit_rate),
                "Requests with a hit": present.pct(p.request_hit_fraction),
                "Fully cached": f"{present.count(p.fully_cached)} of {present.count(p.requests)}",
                "Uncached prompt p95": present.tokens(p.uncached_p95),
                "Predicted prefill p95": present.ms(p.ttft_p95_ms),
            }
            for p in sorted(points, key=lambda p: (p.replicas, _ROUTINGS.index(p.routing)))
        ]
    )


def _hand_off(
    view: TraceView, result: Study, cap: KvCapacity, gpu: P.GpuSpec, replicas: int, chosen: tuple[str, ...]
) -> None:
    """The routing to hand over and the button: the worksheet's p95 prompt becomes that routing's uncached p95, and
    its cache-hit rate 0 (the worksheet takes p95 prompt × (1 − hit rate) as uncached: the cached part is out
    already)."""
    at = {p.routing: p for p in result.at_capacity if p.replicas == replicas}
    usable = [r for r in chosen if r in at and at[r].uncached_p95 is not None]
    if not usable:
        return
    pick = st.selectbox(
        "Routing for the worksheet",
        usable,
        persist_state="session",
        bind="query-params",
        key="cap_px_pick",
    )
    point = at[pick]
    assert point.uncached_p95 is not None
    st.caption(
        f"Sets the worksheet's p95 prompt to {present.tokens(point.uncached_p95)} (uncached, {pick} routing) and its "
        "cache-hit rate to 0: the cached part is already taken out."
    )
    if st.button("Use uncached p95 in the worksheet", key="cap_px_use", icon=":material/input:"):
        deployment = (
            f"{pick} routing, {deployment_name(replicas, cap)}, {cap.kv_dtype} KV, "
            f"{cap.blocks * cap.block_tokens:,} KV tokens per replica"
        )
        n = len(view.trace.requests)
        window = "an estimate: blocks cut from text at ≈ 4 characters a token" if view.trace.approximate else ""
        worksheet_state.offer(
            "cache_hit_fraction",
            Figure(
                0.0,
                "fraction",
                Source.MODEL,
                detail=f"0: the p95 prompt handed over is the uncached part ({present.pct(point.hit_rate)} of prompt "
                f"tokens cached with {pick} routing)",
                n=n,
                window=window,
            ),
        )
        to_worksheet(
            "prompt_tokens_p95",
            Figure(
                float(point.uncached_p95),
                "tokens",
                Source.MODEL,
                detail=f"uncached p95 modelled from your trace ({view.label}), this deployment: {deployment}",
                n=n,
                window=window,
            ),
        )
