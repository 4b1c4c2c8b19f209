"""Prefill tab: the prefill rate (FLOPs model, a measured slope from probes, or a typed slope) and the largest
p95 prompt that fits each interaction type's prefill budget."""

import math

import streamlit as st
from sqlalchemy.exc import SQLAlchemyError

from planner import present
from planner.capacity import specs as P
from planner.capacity.errors import CapacityError
from planner.capacity.prefill import Segments, estimate, largest_prompts, prefill_curve, rate_from_slope
from planner.capacity.traffic import LogTraffic, prompt_figures
from planner.inputs.untrusted import md_text
from planner.inputs.validate import DURATION_MS, FRACTION, GPUS_PER_REPLICA, PROMPT_TOKENS_P95, SLOPE_MS_PER_1K_TOKENS
from planner.worksheet.provenance import Figure, Source
from ttft_planner_app import worksheet_state
from ttft_planner_app.cache import store_url, try_engine
from ttft_planner_app.charts.capacity import prefill_figure
from ttft_planner_app.views.capacity_tabs._common import to_worksheet
from ttft_planner_app.widgets import number_input_for, persisted_preset

__all__ = ["render"]


@st.cache_data(show_spinner=False, ttl=60)
def _slopes(db_url: str):  # db_url: part of the cache key
    from planner.capacity.measured import measured_slopes

    engine, _ = try_engine()
    try:
        return measured_slopes(engine) if engine is not None else []
    except SQLAlchemyError:  # probe tables unreadable: the model and a typed slope still work
        return []


def render(
    traffic: LogTraffic | None, traffic_id: int, models: dict[str, P.ModelSpec], gpu_by_key: dict[str, P.GpuSpec]
) -> None:
    """Draw the Prefill tab; its button hands the prefill rate (tokens/s) to the worksheet.

    `traffic_id` (the page's traffic choice, 0 for typed numbers) keys the cache-hit input, so picking another
    log resets it to that log's share; `models` and `gpu_by_key` are the presets as edited on the GPU fit tab.
    """
    ws = worksheet_state.get()  # the worksheet's p95 prompt, cache hit, segments and interaction types
    gdef = P.gpu_defaults()
    left, right = st.columns([2, 3], gap="large")
    slopes = _slopes(store_url())
    with left:
        modes = ["model"] + [f"measured: {s.endpoint}" for s in slopes] + ["typed slope"]
        mode = st.radio(
            "Prefill rate from",
            modes,
            persist_state="session",
            bind="query-params",
            key="cap_pf_mode",
            horizontal=True,
            help="A measured slope (probes at two or more prompt lengths, Probes page) is preferred over the model.",
        )
        if len(modes) == 2:
            st.caption(
                "No endpoint has probes at two prompt lengths yet: the FLOPs model (or a typed slope) stands in."
            )
        pkey = persisted_preset("Model", models, key="cap_pf_model")
        pgpu = persisted_preset("GPU", gpu_by_key, key="cap_pf_gpu")
        c1, c2 = st.columns(2)
        pdtype = c1.selectbox(
            "Compute format", ["bf16", "fp8"], persist_state="session", bind="query-params", key="cap_pf_dtype"
        )
        pgpus = number_input_for(
            GPUS_PER_REPLICA, "GPUs (tensor parallel)", value=1, key="cap_pf_gpus", where=c2, persist=True
        )
        mfu = st.slider(
            "MFU",
            0.05,
            1.0,
            float(gdef["mfu"]),
            0.05,
            persist_state="session",
            bind="query-params",
            key="cap_pf_mfu",
            help=gdef["mfu_source"],
        )
        start = prompt_figures(traffic, ws.prompt_tokens_p95.value, ws.cache_hit_fraction.value, ws.name)
        prompt_p95 = number_input_for(
            PROMPT_TOKENS_P95,
            "p95 prompt tokens",
            value=float(start.prompt_tokens_p95),
            step=500.0,
            format="%.0f",
            key=f"cap_pf_prompt_{traffic_id}",
        )
        hit = number_input_for(
            FRACTION,
            "Prefix-cache hit rate (0–1)",
            value=float(start.cache_hit_fraction),
            key=f"cap_pf_hit_{traffic_id}",
            help=None if traffic is None or traffic.cache_known else "Unknown in the log: the worksheet's value.",
        )
        slope_typed = (
            number_input_for(
                SLOPE_MS_PER_1K_TOKENS,
                "Typed slope (ms per 1K uncached tokens)",
                value=0.0,
                key="cap_pf_slope",
                persist=True,
            )
            if mode == "typed slope"
            else 0.0
        )
        st.caption(
            md_text(start.words)
            + f". From your worksheet “{md_text(ws.name)}” (edit it there to keep a change): the other segments and "
            "every interaction type's target. Other segments:"
        )
        c1, c2, c3 = st.columns(3)
        q_ms = number_input_for(DURATION_MS, "Queue ms", value=ws.queue_ms.value, key="cap_pf_q", where=c1)
        c_ms = number_input_for(DURATION_MS, "Cold ms", value=ws.cold_ms.value, key="cap_pf_c", where=c2)
        n_ms = number_input_for(DURATION_MS, "Network ms", value=ws.network_ms.value, key="cap_pf_n", where=c3)
    with right:
        try:
            pmodel, pgpu_spec = models[pkey], gpu_by_key[pgpu]
            segs: Segments = dict(queue_ms=q_ms, cold_ms=c_ms, network_ms=n_ms, cache_hit_fraction=hit)
            rate: float | None  # None: a typed slope of 0, no rate
            figure: Figure | None  # None: nothing to hand to the worksheet
            if mode == "model":
                est = estimate(
                    pmodel, pgpu_spec, prompt_p95, dtype=pdtype, mfu=mfu, gpus=int(pgpus), cache_hit_fraction=hit
                )
                rate = est.tokens_per_s
                figure = Figure(rate, "tokens/s", Source.MODEL, detail=est.detail)
                st.metric(
                    "Modelled prefill",
                    f"{est.time_s * 1000:,.0f} ms",
                    help="(2·N·L + 2·layers·L²·d) / (dense FLOPS × MFU × GPUs), uncached tokens only",
                )
                st.caption(
                    f"{est.uncached_tokens:,.0f} uncached tokens → {rate:,.0f} tokens/s; "
                    f"attention is {est.attention_fraction:.0%} of the work. "
                    "A measured slope from probes beats this model: prefer it when you have one."
                )
                budgets = largest_prompts(
                    worksheet_state.interaction_types(ws),
                    model=pmodel,
                    gpu=pgpu_spec,
                    dtype=pdtype,
                    mfu=mfu,
                    gpus=int(pgpus),
                    **segs,
                )
                st.plotly_chart(
                    prefill_figure(
                        prefill_curve(
                            pmodel,
                            pgpu_spec,
                            max(prompt_p95, 1.0) * 2,
                            dtype=pdtype,
                            mfu=mfu,
                            gpus=int(pgpus),
                            cache_hit_fraction=hit,
                        ),
                        budgets,
                    ),
                    key="cap_pf_chart",
                )
            else:
                if mode == "typed slope":
                    rate = rate_from_slope(slope_typed) if slope_typed > 0 else None
                    figure = None if rate is None else Figure(rate, "tokens/s", Source.TYPED)
                    label = "typed slope"
                else:
                    ms = slopes[modes.index(mode) - 1]
                    rate = ms.fit.prefill_tokens_per_s
                    figure = ms.fit.to_figure(
                        detail=f"{ms.endpoint}: prefill slope fit ({ms.fit.quality})", measured_at_ms=ms.newest_at_ms
                    )
                    spread = ms.describe_spread()
                    label = f"measured · {ms.fit.describe()}" + (f" · {spread}" if spread else "")
                if rate is None:
                    st.info("Type a slope greater than 0 ms per 1K tokens.")
                    budgets = None
                else:
                    st.metric("Prefill rate", f"{rate:,.0f} tokens/s")
                    st.caption(label)
                    budgets = largest_prompts(worksheet_state.interaction_types(ws), rate_tokens_per_s=rate, **segs)
            if budgets is not None:
                st.subheader("Largest p95 prompt per interaction type")
                st.dataframe(_budget_table(budgets), hide_index=True)
            if figure is not None and st.button(
                "Use this prefill rate in the worksheet", key="cap_pf_use", icon=":material/input:"
            ):
                to_worksheet("prefill_tokens_per_s", figure)
        except CapacityError as exc:
            st.error(str(exc))


def _budget_table(budgets) -> list[dict]:
    """largest_prompts() rows as the user reads them: labelled columns, numbers with units, no budget said in words."""
    return [
        {
            "Interaction type": r["interaction"],
            "Target": present.ms(r["target_ms"]),
            "Prefill budget": present.ms(r["prefill_budget_ms"]),
            "Largest p95 prompt": (
                "no budget"
                if r["prefill_budget_ms"] <= 0
                else "unlimited"
                if math.isinf(r["max_prompt_tokens_p95"])
                else present.tokens(r["max_prompt_tokens_p95"])
            ),
        }
        for r in budgets.to_dict(orient="records")
    ]
