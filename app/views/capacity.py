"""Capacity & cost: what does it cost, what fits, how fast is prefill, how many warm replicas?"""

import math

import pandas as pd
import streamlit as st
from sqlalchemy.exc import SQLAlchemyError

from app import worksheet_state
from app.cache import try_engine
from app.charts.capacity import (
    break_even_figure,
    gpu_fit_figure,
    hybrid_figure,
    prefill_figure,
    projection_figure,
    tradeoff_figure,
)
from planner.budget import Worksheet
from planner.capacity import presets as P
from planner.capacity.cost import CostInputs, hybrid_by_hour, monthly_cost_curve, summarize
from planner.capacity.errors import CapacityError
from planner.capacity.gpufit import fit, fit_table
from planner.capacity.prefill import estimate, largest_prompts, prefill_curve, rate_from_slope
from planner.capacity.warmpool import keep_warm_tradeoff, min_slots_for_target, queue_wait
from planner.capacity.weights import (
    BYTES_PER_PARAM,
    PROJECTION_LABEL,
    checkpoint_gb,
    load_time_s,
    projection_table,
    rate_from_cold_reading,
    rate_from_row,
)
from planner.presets import interactions
from planner.provenance import Figure, Source
from planner.store import database_url

ss = st.session_state
DTYPES = list(BYTES_PER_PARAM)
WS = Worksheet()


@st.cache_data(show_spinner=False, max_entries=8)
def _log_traffic(db_url: str, upload_id: int, label: str, tz: str):  # db_url: part of the cache key
    from planner.capacity.traffic import traffic_from_frame
    from planner.store.logs import load_upload_frame

    engine, _ = try_engine()
    return traffic_from_frame(load_upload_frame(engine, upload_id), label, tz)


@st.cache_data(show_spinner=False, ttl=60)
def _slopes(db_url: str):  # db_url: part of the cache key
    from planner.capacity.measured import measured_slopes

    engine, _ = try_engine()
    try:
        return measured_slopes(engine) if engine is not None else []
    except SQLAlchemyError:  # probe tables unreadable: the model and a typed slope still work
        return []


def _src(source: str, as_of: str) -> str:
    return f"Source: {source} · as of {as_of}"


def _to_worksheet(field: str, figure: Figure) -> None:
    worksheet_state.offer(field, figure)
    st.switch_page("views/worksheet.py")


st.title("Capacity & cost")
st.caption(
    "What does it cost, what fits, how fast is prefill, how many warm replicas? Every price and spec below is a preset "
    "with its source and date: edit any number; nothing is hard-coded."
)

# ---- traffic: a stored log upload, or typed numbers
engine, db_error = try_engine()
uploads = []
if engine is not None:
    try:
        from planner.store.logs import list_uploads

        uploads = list_uploads(engine)
    except SQLAlchemyError as exc:  # the store opened but the logs table is unreadable: typed numbers still work
        db_error = str(exc)
choices = {0: "Typed numbers"} | {u.id: f"{u.name} ({u.n_requests:,} requests)" for u in uploads}
traffic_id = st.selectbox("Token mix and traffic from", list(choices), format_func=choices.get, key="cap_traffic",
                          help="Pick a request log uploaded on the Logs page, or type the numbers.")
traffic = None
if traffic_id:
    tz = st.context.timezone or "UTC"
    try:
        traffic = _log_traffic(database_url(), traffic_id, choices[traffic_id], tz)
        st.caption(f"From the log: {traffic.n_requests:,} requests, {traffic.mix.cache_hit_fraction:.1%} of prompt tokens cached, "
                   f"{traffic.mix.input_output_ratio:,.0f}:1 input:output, peak hour {traffic.peak_arrivals_per_hour:,.0f} requests/h ({tz}).")
    except (CapacityError, KeyError) as exc:
        st.warning(f"Cannot use that log: {exc}. Using typed numbers.")
elif not uploads:
    st.caption("No request log uploaded yet (Logs page): the typed numbers below stand in." + (f" Database: {db_error}" if db_error else ""))

tab_cost, tab_weights, tab_fit, tab_prefill, tab_pool = st.tabs(["Break-even", "Weight loading", "GPU fit", "Prefill", "Warm pool"])

# ======================================================================== Break-even
with tab_cost:
    left, right = st.columns([2, 3], gap="large")
    with left:
        st.subheader("Serverless price")
        prices = {p.key: p for p in P.serverless_prices()}
        pkey = st.selectbox("Price preset", list(prices), format_func=lambda k: prices[k].label, key="cap_price")
        sp = prices[pkey]
        st.caption(_src(sp.source, sp.as_of) + ("" if sp.cached_input_usd_per_mtok is not None else " · no cached-input price published: billed at the input price"))
        c1, c2, c3 = st.columns(3)
        p_in = c1.number_input("Input $/1M", min_value=0.0, value=sp.input_usd_per_mtok, format="%.4f", key=f"cap_pin_{pkey}")
        p_cached = c2.number_input("Cached $/1M", min_value=0.0, value=sp.effective_cached_usd_per_mtok, format="%.4f", key=f"cap_pc_{pkey}")
        p_out = c3.number_input("Output $/1M", min_value=0.0, value=sp.output_usd_per_mtok, format="%.4f", key=f"cap_pout_{pkey}")

        st.subheader("Token mix")
        if traffic is not None:
            mix = traffic.mix
            st.caption(f"From the log {traffic.label}.")
        else:
            dm = P.default_mix()
            c1, c2 = st.columns(2)
            hit = c1.number_input("Prompt tokens cached (0–1)", 0.0, 1.0, round(dm.cache_hit_fraction, 4), format="%.4f", key="cap_mix_hit")
            ratio = c2.number_input("Input : output ratio", min_value=0.0, value=round(dm.input_output_ratio, 1), key="cap_mix_ratio")
            prompt = ratio / (ratio + 1.0) if ratio > 0 else 0.0
            mix = P.TokenMix(prompt * (1 - hit), prompt * hit, 1.0 - prompt, label=dm.label)
            st.caption(_src(f"{dm.label}, {dm.source}", dm.as_of))

        st.subheader("Dedicated")
        gprices = {g.key: g for g in P.gpu_hour_prices()}
        gkey = st.selectbox("GPU-hour preset", list(gprices), format_func=lambda k: gprices[k].label, key="cap_gpu_price")
        gp = gprices[gkey]
        st.caption(_src(gp.source, gp.as_of))
        claim = gp.capacity_tokens_per_min or next((g.capacity_tokens_per_min for g in gprices.values() if g.capacity_tokens_per_min), 0.0)
        claim_src = gp if gp.capacity_tokens_per_min else next((g for g in gprices.values() if g.capacity_tokens_per_min), gp)
        c1, c2 = st.columns(2)
        gpu_usd = c1.number_input("$ per GPU-hour", min_value=0.0, value=gp.usd_per_gpu_hour, format="%.4f", key=f"cap_gusd_{gkey}")
        gpus_per_replica = c2.number_input("GPUs per replica (node size)", min_value=1, value=1, step=1, key="cap_gpr")
        tpm = st.number_input("Sustained capacity per replica (tokens/min)", min_value=0.0, value=float(claim), step=10_000.0,
                              key=f"cap_tpm_{gkey}", help="Measure your own at the target concurrency. " + (claim_src.token_note or ""))
        counts_cached = st.checkbox("The capacity counts cached prompt tokens", value=True, key="cap_counts_cached",
                                    help="Off: the capacity counts only uncached prompt + output tokens, and cached tokens are assumed free to serve.")
        c1, c2 = st.columns(2)
        min_rep = c1.number_input("Minimum warm replicas", min_value=0, value=0, step=1, key="cap_min_rep")
        max_rep = c2.number_input("Maximum replicas", min_value=1, value=8, step=1, key="cap_max_rep")

        st.subheader("Traffic")
        growth = st.number_input("Growth factor", min_value=0.0, value=1.0, step=0.25, key="cap_growth")
        if traffic is not None:
            hourly = traffic.hourly_tokens
            st.caption("Tokens per hour of day from the log (prompt incl. cached + output), times the growth factor.")
        else:
            flat = st.number_input("Tokens per hour (flat)", min_value=0.0, value=20e6, step=1e6, format="%.0f", key="cap_flat_tph")
            hourly = (flat,) * 24

    inputs = CostInputs(
        input_usd_per_mtok=p_in, cached_input_usd_per_mtok=p_cached, output_usd_per_mtok=p_out,
        mix_uncached_input_tokens=mix.uncached_input_tokens, mix_cached_input_tokens=mix.cached_input_tokens,
        mix_output_tokens=mix.output_tokens, gpu_usd_per_hour=gpu_usd, capacity_tokens_per_min=tpm,
        gpus_per_replica=int(gpus_per_replica), capacity_counts_cached=counts_cached, min_replicas=int(min_rep),
        max_replicas=int(max_rep), hourly_tokens=tuple(hourly), growth_factor=growth, price_label=sp.label, gpu_label=gp.label,
        traffic_label=traffic.label if traffic is not None else "typed",
    )
    ss["cost_inputs"] = inputs.to_dict()
    token_def = ("tokens = every billed token, cached prompt tokens included" if counts_cached
                 else "tokens = uncached prompt + output (cached served free)")
    with right:
        try:
            summary = summarize(inputs)
        except CapacityError as exc:
            st.error(str(exc))
            summary = None
        if summary is not None:
            be = summary.break_even
            u = be.break_even_utilisation
            m1, m2, m3 = st.columns(3)
            m1.metric("Break-even u*", "never" if math.isinf(u) else f"{u:.0%}", help="Break-even utilisation u* = dedicated $/h ÷ (blended $/token × capacity tokens/h)")
            m2.metric("Serverless $/1M", f"${be.blended_usd_per_mtok:.3f}", help="Blended: uncached, cached and output prices weighted by the token mix.")
            m3.metric("Dedicated $/1M", "—" if summary.dedicated_usd_per_mtok is None else f"${summary.dedicated_usd_per_mtok:.3f}",
                      help="At your traffic: the dedicated replicas' monthly cost over the tokens they serve.")
            (st.warning if be.serverless_always_cheaper else st.success)(be.verdict())
            st.plotly_chart(break_even_figure(monthly_cost_curve(inputs), be, token_def, summary.traffic_utilisation if summary.replicas_for_peak == 1 else None),
                            key="cap_be_chart")
            st.dataframe(pd.DataFrame([
                {"option": "Serverless", "USD per month": summary.serverless_usd_per_month},
                {"option": f"Dedicated ({summary.replicas_for_peak} × {be.gpus_per_replica} GPU)", "USD per month": summary.dedicated_usd_per_month},
                {"option": f"Hybrid ({summary.hybrid_base_replicas} dedicated + serverless overflow)", "USD per month": summary.hybrid_usd_per_month},
            ]), hide_index=True, column_config={"USD per month": st.column_config.NumberColumn(format="$%.0f")})
            st.caption(f"Your traffic: {summary.monthly_tokens / 1e9:,.2f}B tokens/month, peak {summary.peak_tokens_per_hour / 1e6:,.1f}M tokens/h → "
                       f"{summary.replicas_for_peak} replica(s) at {summary.traffic_utilisation:.0%} utilisation. Cheapest: **{summary.cheapest}**.")
            for note in summary.notes:
                st.info(note)
            st.plotly_chart(hybrid_figure(hybrid_by_hour(inputs, summary.hybrid_base_replicas), summary.hybrid_base_replicas), key="cap_hybrid_chart")

# ======================================================================== Weight loading
with tab_weights:
    left, right = st.columns([2, 3], gap="large")
    rows = {r.key: r for r in P.loader_rows()}
    with left:
        params_b = st.number_input("Parameters (billions)", min_value=0.1, value=70.0, key="cap_w_params")
        wdtype = st.selectbox("Weight format", DTYPES, index=DTYPES.index("fp8"), key="cap_w_dtype",
                              help="FP8/INT8 1 byte per parameter, BF16/FP16 2, INT4/FP4 0.5.")
        picked = st.multiselect("Published load rows", list(rows), default=[list(rows)[0], list(rows)[-1]], format_func=lambda k: rows[k].label,
                                key="cap_w_rows")
        first = next(iter(rows.values()))
        st.caption(_src(first.source, first.as_of) + ". Llama 3 8B, ~15 GB, one A10G, vLLM 0.5.5; GP3/IO2 are EBS network volumes.")
        startup_s = st.number_input("Engine start-up on top (s)", min_value=0.0, value=0.0, key="cap_w_startup",
                                    help="Process start, rank setup, CUDA-graph capture: 16–21 s in the published rows (ready − load).")
        with st.expander("From your own cold reading"):
            cold_ms_in = st.number_input("Cold reading (ms)", min_value=0.0, value=0.0, key="cap_w_cold_ms")
            warm_ms_in = st.number_input("Warm TTFT right after (ms)", min_value=0.0, value=0.0, key="cap_w_warm_ms")
            cold_gb = st.number_input("Checkpoint of that endpoint (GB)", min_value=0.0, value=0.0, key="cap_w_cold_gb")
    with right:
        try:
            rates = [rate_from_row(rows[k]) for k in picked]
            if cold_ms_in > 0 and cold_gb > 0:
                rates.append(rate_from_cold_reading(cold_gb, cold_ms_in, warm_ms_in, startup_s))
            gb = checkpoint_gb(params_b, wdtype)
            st.metric("Checkpoint (weights only)", f"{gb:,.1f} GB", help="Scales, metadata and the KV cache come on top.")
            if not rates:
                st.info("Pick a published row or enter a cold reading to project load times.")
            else:
                loads = {r.name: load_time_s(gb, r, startup_s) for r in rates}
                st.dataframe(pd.DataFrame([{"rate": f"{r.name} ({r.gb_per_s:.2f} GB/s)", "load + start-up (s)": loads[r.name]} for r in rates]),
                             hide_index=True, column_config={"load + start-up (s)": st.column_config.NumberColumn(format="%.1f")})
                table = projection_table(rates, wdtype, engine_startup_s=startup_s)
                st.plotly_chart(projection_figure(table), key="cap_w_chart")
                st.caption(f"Projection table, {wdtype}: {PROJECTION_LABEL}.")
                st.dataframe(table.round(1), hide_index=True)
                pick = st.selectbox("Rate for the worksheet's cold-start segment", [r.name for r in rates], key="cap_w_pick")
                r = next(x for x in rates if x.name == pick)
                if st.button("Use this cold start in the worksheet", key="cap_w_use", icon=":material/input:"):
                    _to_worksheet("cold_ms", Figure(loads[pick] * 1000.0, "ms", Source.MODEL,
                                                    detail=f"{params_b:g}B {wdtype} = {gb:,.0f} GB at {r.gb_per_s:.2f} GB/s ({r.name}) + {startup_s:g} s start-up",
                                                    window="constant-rate estimate"))
        except CapacityError as exc:
            st.error(str(exc))

# ======================================================================== GPU fit
with tab_fit:
    gpu_df = pd.DataFrame([g.__dict__ for g in P.gpus()])
    with st.expander("GPU presets (editable: dense TFLOPS, HBM, bandwidth, with source and date)"):
        gpu_df = st.data_editor(gpu_df, hide_index=True, disabled=["key", "source", "as_of"], key="cap_gpu_editor")
    gpu_list = []
    for r in gpu_df.to_dict(orient="records"):
        try:
            gpu_list.append(P.gpu_from_record(r))
        except CapacityError as exc:
            st.warning(f"{exc}: that GPU row is left out.")
    gpu_by_key = {g.key: g for g in gpu_list} or {g.key: g for g in P.gpus()}
    model_df = pd.DataFrame([m.__dict__ for m in P.models()])
    with st.expander("Model presets (editable; add a row for a custom model)"):
        model_df = st.data_editor(model_df, hide_index=True, num_rows="dynamic", key="cap_model_editor")
    models = {}
    for r in model_df.to_dict(orient="records"):
        try:
            m = P.model_from_record(r)
            models[m.key] = m
        except CapacityError as exc:
            st.warning(f"{exc}: that model row is left out.")
    models = models or {m.key: m for m in P.models()}
    left, right = st.columns([2, 3], gap="large")
    gdef = P.gpu_defaults()
    with left:
        mkey = st.selectbox("Model", list(models), format_func=lambda k: models[k].label, key="cap_fit_model")
        model = models[mkey]
        st.caption(_src(model.source, model.as_of))
        c1, c2 = st.columns(2)
        f_wdtype = c1.selectbox("Weights", DTYPES, index=DTYPES.index("bf16"), key="cap_fit_wdtype")
        f_kvdtype = c2.selectbox("KV cache", DTYPES, index=DTYPES.index("bf16"), key="cap_fit_kvdtype")
        ctx = st.number_input("Context length (tokens in flight per sequence)", min_value=1, value=32_768, step=1024, key="cap_fit_ctx")
        seqs = st.number_input("Concurrent sequences", min_value=1, value=8, key="cap_fit_seqs")
        usable = st.slider("Usable share of HBM", 0.5, 1.0, float(gdef["usable_memory_fraction"]), 0.01, key="cap_fit_usable",
                           help=gdef["usable_memory_source"])
        fkey = st.selectbox("GPU", list(gpu_by_key), format_func=lambda k: gpu_by_key[k].label, key="cap_fit_gpu")
    with right:
        try:
            kw = dict(weight_dtype=f_wdtype, kv_dtype=f_kvdtype, context_tokens=int(ctx), concurrent_sequences=int(seqs), usable_fraction=usable)
            one = fit(model, gpu_by_key[fkey], **kw)
            (st.success if one.fits else st.error)(one.message)
            st.caption(f"KV cache: {one.kv_bytes_per_token / 1024:,.0f} KiB per token = 2 × {model.layers} layers × {model.kv_heads} KV heads × "
                       f"{model.head_dim} head dim × {BYTES_PER_PARAM[f_kvdtype]:g} bytes.")
            table = fit_table(model, list(gpu_by_key.values()), **kw)
            st.plotly_chart(gpu_fit_figure(table), key="cap_fit_chart")
            st.dataframe(table.round(1), hide_index=True)
        except CapacityError as exc:
            st.error(str(exc))

# ======================================================================== Prefill
with tab_prefill:
    left, right = st.columns([2, 3], gap="large")
    slopes = _slopes(database_url())
    with left:
        modes = ["model"] + [f"measured: {s.endpoint}" for s in slopes] + ["typed slope"]
        mode = st.radio("Prefill rate from", modes, key="cap_pf_mode", horizontal=True,
                        help="A measured slope (probes at two or more prompt lengths, Probes page) is preferred over the model.")
        if len(modes) == 2:
            st.caption("No endpoint has probes at two prompt lengths yet: the FLOPs model (or a typed slope) stands in.")
        pkey2 = st.selectbox("Model", list(models), format_func=lambda k: models[k].label, key="cap_pf_model")
        pgpu = st.selectbox("GPU", list(gpu_by_key), format_func=lambda k: gpu_by_key[k].label, key="cap_pf_gpu")
        c1, c2 = st.columns(2)
        pdtype = c1.selectbox("Compute format", ["bf16", "fp8"], key="cap_pf_dtype")
        pgpus = c2.number_input("GPUs (tensor parallel)", min_value=1, value=1, key="cap_pf_gpus")
        mfu = st.slider("MFU", 0.05, 1.0, float(gdef["mfu"]), 0.05, key="cap_pf_mfu", help=gdef["mfu_source"])
        prompt_p95 = st.number_input("p95 prompt tokens", min_value=1.0, value=float(WS.prompt_tokens_p95.value), step=500.0, key="cap_pf_prompt")
        hit = st.number_input("Prefix-cache hit rate (0–1)", 0.0, 1.0,
                              float(traffic.mix.cache_hit_fraction if traffic is not None else WS.cache_hit_fraction.value), key=f"cap_pf_hit_{traffic_id}")
        slope_typed = st.number_input("Typed slope (ms per 1K uncached tokens)", min_value=0.0, value=0.0, key="cap_pf_slope") if mode == "typed slope" else 0.0
        st.caption("Other segments (for the prefill budget per interaction type):")
        c1, c2, c3 = st.columns(3)
        q_ms = c1.number_input("Queue ms", min_value=0.0, value=float(WS.queue_ms.value), key="cap_pf_q")
        c_ms = c2.number_input("Cold ms", min_value=0.0, value=float(WS.cold_ms.value), key="cap_pf_c")
        n_ms = c3.number_input("Network ms", min_value=0.0, value=float(WS.network_ms.value), key="cap_pf_n")
    with right:
        try:
            pmodel, pgpu_spec = models[pkey2], gpu_by_key[pgpu]
            segs = dict(queue_ms=q_ms, cold_ms=c_ms, network_ms=n_ms, cache_hit_fraction=hit)
            if mode == "model":
                est = estimate(pmodel, pgpu_spec, prompt_p95, dtype=pdtype, mfu=mfu, gpus=int(pgpus), cache_hit_fraction=hit)
                rate = est.tokens_per_s
                figure = Figure(rate, "tokens/s", Source.MODEL, detail=est.detail)
                st.metric("Modelled prefill", f"{est.time_s * 1000:,.0f} ms", help="(2·N·L + 2·layers·L²·d) / (dense FLOPS × MFU × GPUs), uncached tokens only")
                st.caption(f"{est.uncached_tokens:,.0f} uncached tokens → {rate:,.0f} tokens/s; attention is {est.attention_fraction:.0%} of the work. "
                           "A measured slope from probes beats this model: prefer it when you have one.")
                budgets = largest_prompts(interactions(), model=pmodel, gpu=pgpu_spec, dtype=pdtype, mfu=mfu, gpus=int(pgpus), **segs)
                st.plotly_chart(prefill_figure(prefill_curve(pmodel, pgpu_spec, max(prompt_p95, 1.0) * 2, dtype=pdtype, mfu=mfu, gpus=int(pgpus),
                                                             cache_hit_fraction=hit), budgets), key="cap_pf_chart")
            else:
                if mode == "typed slope":
                    rate = rate_from_slope(slope_typed) if slope_typed > 0 else None
                    figure = None if rate is None else Figure(rate, "tokens/s", Source.TYPED)
                    label = "typed slope"
                else:
                    ms = slopes[modes.index(mode) - 1]
                    rate = ms.fit.prefill_tokens_per_s
                    figure = ms.fit.to_figure(detail=f"{ms.endpoint}: prefill slope fit ({ms.fit.quality})", measured_at_ms=ms.newest_at_ms)
                    label = f"measured · {ms.fit.describe()}"
                if rate is None:
                    st.info("Type a slope greater than 0 ms per 1K tokens.")
                    budgets = None
                else:
                    st.metric("Prefill rate", f"{rate:,.0f} tokens/s")
                    st.caption(label)
                    budgets = largest_prompts(interactions(), rate_tokens_per_s=rate, **segs)
            if budgets is not None:
                st.subheader("Largest p95 prompt per interaction type")
                show = budgets.assign(max_prompt_tokens_p95=[("no budget" if b <= 0 else ("unlimited" if math.isinf(x) else f"{x:,.0f}"))
                                                             for x, b in zip(budgets["max_prompt_tokens_p95"], budgets["prefill_budget_ms"])])
                st.dataframe(show, hide_index=True)
            if figure is not None and st.button("Use this prefill rate in the worksheet", key="cap_pf_use", icon=":material/input:"):
                _to_worksheet("prefill_tokens_per_s", figure)
        except CapacityError as exc:
            st.error(str(exc))

# ======================================================================== Warm pool
with tab_pool:
    left, right = st.columns([2, 3], gap="large")
    with left:
        default_rate = traffic.peak_arrivals_per_hour if traffic is not None else 30.0
        arrivals = st.number_input("Arrivals per hour (peak hour)", min_value=0.0, value=float(default_rate), key=f"cap_wp_rate_{traffic_id}",
                                   help="From the log's busiest clock hour when a log is picked.")
        default_service = traffic.mean_service_s if traffic is not None and traffic.mean_service_s else 300.0
        service_s = st.number_input("Mean time a request holds a slot (s)", min_value=0.001, value=float(default_service), key=f"cap_wp_service_{traffic_id}",
                                    help="TTFT + decode at the target concurrency; from the log's mean duration when logged.")
        c1, c2 = st.columns(2)
        slots_per_rep = c1.number_input("Slots per replica", min_value=1, value=1, key="cap_wp_spr")
        replicas = c2.number_input("Warm replicas", min_value=1, value=4, key="cap_wp_reps")
        target_wait = st.number_input("Queue-wait p95 target (s)", min_value=0.0, value=1.0, key="cap_wp_target")
        st.caption("Scale-to-zero trade-off")
        cold_s = st.number_input("Cold start (s)", min_value=0.0, value=60.0, key="cap_wp_cold",
                                 help="A cold reading from the Probes page, or the Weight loading projection.")
        warm_p95 = st.number_input("Warm p95 TTFT (ms)", min_value=0.0, value=500.0, key="cap_wp_warm")
    with right:
        try:
            slots = int(replicas * slots_per_rep)
            qw = queue_wait(arrivals, service_s, slots)
            m1, m2, m3 = st.columns(3)
            m1.metric("P(wait)", f"{qw.wait_probability:.1%}")
            m2.metric("Queue-wait p95", "unbounded" if math.isinf(qw.wait_quantile_s) else f"{qw.wait_quantile_s:,.1f} s")
            need = min_slots_for_target(arrivals, service_s, target_wait)
            m3.metric("Minimum warm replicas", f"{math.ceil(need / slots_per_rep)}", help=f"{need} slots for a queue-wait p95 ≤ {target_wait:g} s")
            (st.success if qw.stable else st.error)(qw.message)
            node_usd = inputs.node_usd_per_hour
            if traffic is not None and traffic.n_requests >= 2:
                trade = keep_warm_tradeoff(node_usd_per_hour=node_usd, warm_ttft_p95_ms=warm_p95, cold_start_ms=cold_s * 1000,
                                           arrival_ms=traffic.arrival_ms, service_ms=float(pd.Series(traffic.service_ms).mean()),
                                           gpus_per_replica=inputs.gpus_per_replica)
                st.caption(f"Trace-driven from {traffic.label}; replica cost ${node_usd:,.2f}/h from the Break-even tab.")
            elif arrivals > 0:
                trade = keep_warm_tradeoff(node_usd_per_hour=node_usd, warm_ttft_p95_ms=warm_p95, cold_start_ms=cold_s * 1000,
                                           arrivals_per_hour=arrivals, service_ms=service_s * 1000, gpus_per_replica=inputs.gpus_per_replica)
                st.caption(f"Poisson arrivals at {arrivals:,.0f}/h (P(cold) = e^(−λW)); replica cost ${node_usd:,.2f}/h from the Break-even tab.")
            else:
                trade = None
                st.info("No traffic: nothing to keep warm; scale-to-zero costs nothing.")
            if trade is not None:
                st.plotly_chart(tradeoff_figure(trade), key="cap_wp_chart")
                st.dataframe(trade.round(2), hide_index=True, column_config={"cold_fraction": st.column_config.NumberColumn(format="percent")})
        except CapacityError as exc:
            st.error(str(exc))
