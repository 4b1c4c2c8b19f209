"""Break-even tab: serverless vs dedicated for the chosen token mix and traffic, with the hybrid in between."""

import math

import pandas as pd
import streamlit as st

from planner import present
from planner.capacity import specs as P
from planner.capacity.cost import CostInputs, hybrid_by_hour, monthly_cost_curve, summarize
from planner.capacity.errors import CapacityError
from planner.capacity.traffic import DAILY_RULE, LogTraffic, daily_words
from planner.inputs.untrusted import md_text
from planner.inputs.validate import (
    FRACTION,
    GPUS_PER_REPLICA,
    GROWTH_FACTOR,
    MIN_REPLICAS,
    REPLICAS,
    TOKEN_RATIO,
    TOKENS_PER_HOUR,
    TOKENS_PER_MIN,
    USD_PER_HOUR,
    USD_PER_MTOK,
)
from ttft_planner_app import page_state
from ttft_planner_app.charts.capacity import break_even_figure, hybrid_figure
from ttft_planner_app.views.capacity_tabs._common import source_caption
from ttft_planner_app.widgets import number_input_for, persisted_preset

__all__ = ["render"]


def render(traffic: LogTraffic | None) -> CostInputs:
    """Draw the Break-even tab for `traffic` (None: typed numbers) and return its inputs.

    The inputs are also left in st.session_state["cost_inputs"] (as a dict): the Compare page prices from them.
    """
    left, right = st.columns([2, 3], gap="large")
    with left:
        inputs = _read_inputs(traffic)
    page_state.put_cost_inputs(inputs.to_dict())
    with right:
        _show_results(inputs)
    return inputs


def _read_inputs(traffic: LogTraffic | None) -> CostInputs:
    st.subheader("Serverless price")
    prices = {p.key: p for p in P.serverless_prices()}
    pkey = persisted_preset("Price preset", prices, key="cap_price")
    sp = prices[pkey]
    st.caption(
        source_caption(sp.source, sp.as_of)
        + (
            ""
            if sp.cached_input_usd_per_mtok is not None
            else " · no cached-input price published: billed at the input price"
        )
    )
    p_in, p_cached, p_out = (
        number_input_for(
            USD_PER_MTOK, label, key=f"cap_{kind}_{pkey}", where=col, persist=True, value=value, format="%.4f"
        )
        for col, (label, kind, value) in zip(
            st.columns(3),
            (
                ("Input $/1M", "pin", sp.input_usd_per_mtok),
                ("Cached $/1M", "pc", sp.effective_cached_usd_per_mtok),
                ("Output $/1M", "pout", sp.output_usd_per_mtok),
            ),
            strict=True,
        )
    )

    st.subheader("Token mix")
    if traffic is not None:
        mix = traffic.mix
        st.caption(
            f"From the log {md_text(traffic.label)}."
            + (
                ""
                if traffic.cache_known
                else " It records no cached prompt tokens: its cache-hit rate is unknown, so every prompt token is "
                "priced as uncached (an upper bound)."
            )
        )
    else:
        dm = P.default_mix()
        c1, c2 = st.columns(2)
        hit = number_input_for(
            FRACTION,
            "Prompt tokens cached (0–1)",
            key="cap_mix_hit",
            where=c1,
            persist=True,
            value=round(dm.cache_hit_fraction, 4),
            format="%.4f",
        )
        ratio = number_input_for(
            TOKEN_RATIO,
            "Input : output ratio",
            key="cap_mix_ratio",
            where=c2,
            persist=True,
            value=round(dm.input_output_ratio, 1),
        )
        mix = P.TokenMix.from_fractions(hit, ratio, label=dm.label)
        st.caption(source_caption(f"{dm.label}, {dm.source}", dm.as_of))

    st.subheader("Dedicated")
    gprices = {g.key: g for g in P.gpu_hour_prices()}
    gkey = persisted_preset("GPU-hour preset", gprices, key="cap_gpu_price")
    gp = gprices[gkey]
    st.caption(source_caption(gp.source, gp.as_of))
    claim, claim_note = P.capacity_claim(gp, gprices.values())
    c1, c2 = st.columns(2)
    gpu_usd = number_input_for(
        USD_PER_HOUR,
        "$ per GPU-hour",
        key=f"cap_gusd_{gkey}",
        where=c1,
        persist=True,
        value=gp.usd_per_gpu_hour,
        format="%.4f",
    )
    gpus_per_replica = number_input_for(
        GPUS_PER_REPLICA, "GPUs per replica (node size)", key="cap_gpr", where=c2, persist=True, value=1, step=1
    )
    tpm = number_input_for(
        TOKENS_PER_MIN,
        "Sustained capacity per replica (tokens/min)",
        key=f"cap_tpm_{gkey}",
        persist=True,
        value=claim,
        step=10_000.0,
        help="Measure your own at the target concurrency. " + claim_note,
    )
    counts_cached = st.checkbox(
        "The capacity counts cached prompt tokens",
        value=True,
        persist_state="session",
        bind="query-params",
        key="cap_counts_cached",
        help="Off: the capacity counts only uncached prompt + output tokens, "
        "and cached tokens are assumed free to serve.",
    )
    c1, c2 = st.columns(2)
    min_rep = number_input_for(
        MIN_REPLICAS, "Minimum warm replicas", key="cap_min_rep", where=c1, persist=True, value=0, step=1
    )
    max_rep = number_input_for(REPLICAS, "Maximum replicas", key="cap_max_rep", where=c2, persist=True, value=8, step=1)

    st.subheader("Traffic")
    growth = number_input_for(GROWTH_FACTOR, "Growth factor", key="cap_growth", persist=True, value=1.0, step=0.25)
    if traffic is not None:
        hourly = traffic.hourly_tokens
        st.caption(
            f"Tokens per hour of day from the log (prompt incl. cached + output), averaged over the "
            f"{present.count(traffic.covered_hours)} clock hours it covers, in {traffic.tz}; times the growth factor. "
            + daily_words(traffic),
            help=DAILY_RULE,
        )
    else:
        flat = number_input_for(
            TOKENS_PER_HOUR,
            "Tokens per hour (flat)",
            key="cap_flat_tph",
            persist=True,
            value=20e6,
            step=1e6,
            format="%.0f",
        )
        hourly = (flat,) * 24

    return CostInputs.from_mix(
        mix,
        input_usd_per_mtok=p_in,
        cached_input_usd_per_mtok=p_cached,
        output_usd_per_mtok=p_out,
        gpu_usd_per_hour=gpu_usd,
        capacity_tokens_per_min=tpm,
        gpus_per_replica=int(gpus_per_replica),
        capacity_counts_cached=counts_cached,
        min_replicas=int(min_rep),
        max_replicas=int(max_rep),
        hourly_tokens=tuple(hourly),
        growth_factor=growth,
        price_label=sp.label,
        gpu_label=gp.label,
        traffic_label=traffic.label if traffic is not None else "typed",
    )


def _show_results(inputs: CostInputs) -> None:
    try:
        summary = summarize(inputs)
    except CapacityError as exc:
        st.error(str(exc))
        return
    token_def = (
        "tokens = every billed token, cached prompt tokens included"
        if inputs.capacity_counts_cached
        else "tokens = uncached prompt + output (cached served free)"
    )
    be = summary.break_even
    u = be.break_even_utilisation
    m1, m2, m3 = st.columns(3)
    m1.metric(
        "Break-even u*",
        "never" if math.isinf(u) else f"{u:.0%}",
        help="Break-even utilisation u* = dedicated $/h ÷ (blended $/token × capacity tokens/h)",
    )
    m2.metric(
        "Serverless $/1M",
        f"${be.blended_usd_per_mtok:.3f}",
        help="Blended: uncached, cached and output prices weighted by the token mix.",
    )
    m3.metric(
        "Dedicated $/1M",
        "—" if summary.dedicated_usd_per_mtok is None else f"${summary.dedicated_usd_per_mtok:.3f}",
        help="At your traffic: the dedicated replicas' monthly cost over the tokens they serve.",
    )
    (st.warning if be.serverless_always_cheaper else st.success)(be.verdict())
    st.plotly_chart(
        break_even_figure(
            monthly_cost_curve(inputs),
            be,
            token_def,
            summary.traffic_utilisation if summary.replicas_for_peak == 1 else None,
        ),
        key="cap_be_chart",
    )
    st.dataframe(
        pd.DataFrame(
            [
                {"Option": "Serverless", "Cost per month": present.usd(summary.serverless_usd_per_month, 0)},
                {
                    "Option": f"Dedicated ({summary.replicas_for_peak} × {be.gpus_per_replica} GPU)",
                    "Cost per month": present.usd(summary.dedicated_usd_per_month, 0),
                },
                {
                    "Option": f"Hybrid ({summary.hybrid_base_replicas} dedicated + serverless overflow)"
                    if summary.hybrid_base_replicas
                    else "Hybrid: no dedicated replica pays off (the same as serverless)",
                    "Cost per month": present.usd(summary.hybrid_usd_per_month, 0),
                },
            ]
        ),
        hide_index=True,
    )
    st.caption(
        f"Your traffic: {summary.monthly_tokens / 1e9:,.2f}B tokens/month, "
        f"peak {summary.peak_tokens_per_hour / 1e6:,.1f}M tokens/h → "
        f"dedicated-only needs {summary.replicas_for_peak} replica(s) at {summary.traffic_utilisation:.0%} "
        "utilisation. "
        f"Cheapest: **{summary.cheapest}**."
    )
    for note in summary.notes:
        st.info(note)
    st.plotly_chart(
        hybrid_figure(hybrid_by_hour(inputs, summary.hybrid_base_replicas), summary.hybrid_base_replicas),
        key="cap_hybrid_chart",
    )
