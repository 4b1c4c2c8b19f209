"""Weight loading tab: checkpoint size and load time from published loader rows or your own cold reading."""

import pandas as pd
import streamlit as st

from planner import present
from planner.capacity import specs as P
from planner.capacity.errors import CapacityError
from planner.capacity.weights import (
    PROJECTION_LABEL,
    checkpoint_gb,
    load_time_s,
    projection_table,
    rate_from_cold_reading,
    rate_from_row,
)
from planner.inputs.validate import CHECKPOINT_GB, DURATION_MS, DURATION_S, MODEL_PARAMS_B
from planner.worksheet.provenance import Figure, Source
from ttft_planner_app.charts.capacity import projection_figure
from ttft_planner_app.views.capacity_tabs._common import DTYPES, source_caption, to_worksheet
from ttft_planner_app.widgets import number_input_for, wrapped_table

__all__ = ["render"]


def render() -> None:
    """Draw the Weight loading tab; its button hands a cold start (ms) to the worksheet."""
    left, right = st.columns([2, 3], gap="large")
    rows = {r.key: r for r in P.loader_rows()}
    with left:
        params_b = number_input_for(
            MODEL_PARAMS_B, "Parameters (billions)", value=70.0, key="cap_w_params", persist=True
        )
        wdtype = st.selectbox(
            "Weight format",
            DTYPES,
            index=DTYPES.index("fp8"),
            persist_state="session",
            bind="query-params",
            key="cap_w_dtype",
            help="FP8/INT8 1 byte per parameter, BF16/FP16 2, INT4/FP4 0.5.",
        )
        picked = st.multiselect(
            "Published load rows",
            list(rows),
            default=[list(rows)[0], list(rows)[-1]],
            format_func=lambda k: rows[k].label,
            persist_state="session",
            bind="query-params",
            key="cap_w_rows",
        )
        first = next(iter(rows.values()))
        st.caption(
            source_caption(first.source, first.as_of)
            + ". Llama 3 8B, ~15 GB, one A10G, vLLM 0.5.5; GP3/IO2 are EBS network volumes."
        )
        startup_s = number_input_for(
            DURATION_S,
            "Engine start-up on top (s)",
            persist=True,
            value=0.0,
            key="cap_w_startup",
            help="Process start, rank setup, CUDA-graph capture: 16–21 s in the published rows (ready − load).",
        )
        with st.expander("From your own cold reading"):
            cold_ms_in = number_input_for(
                DURATION_MS, "Cold reading (ms)", value=0.0, key="cap_w_cold_ms", persist=True
            )
            warm_ms_in = number_input_for(
                DURATION_MS, "Warm TTFT right after (ms)", value=0.0, key="cap_w_warm_ms", persist=True
            )
            cold_gb = number_input_for(
                CHECKPOINT_GB, "Checkpoint of that endpoint (GB)", value=0.0, key="cap_w_cold_gb", persist=True
            )
    with right:
        try:
            rates = [rate_from_row(rows[k]) for k in picked]
            if cold_ms_in > 0 and cold_gb > 0:
                rates.append(rate_from_cold_reading(cold_gb, cold_ms_in, warm_ms_in, startup_s))
            gb = checkpoint_gb(params_b, wdtype)
            st.metric(
                "Checkpoint (weights only)", f"{gb:,.1f} GB", help="Scales, metadata and the KV cache come on top."
            )
            if not rates:
                st.info("Pick a published row or enter a cold reading to project load times.")
                return
            loads = {r.name: load_time_s(gb, r, startup_s) for r in rates}
            wrapped_table(  # every column in view at 1,400 px, in this half of the page
                pd.DataFrame(
                    [
                        {
                            "Load rate": f"{r.name} ({r.gb_per_s:.2f} GB/s)",
                            "Load + start-up": present.seconds(loads[r.name]),
                        }
                        for r in rates
                    ]
                )
            )
            table = projection_table(rates, wdtype, engine_startup_s=startup_s)
            st.plotly_chart(projection_figure(table), key="cap_w_chart")
            st.caption(f"Projection table, {wdtype}: {PROJECTION_LABEL}.")
            shown = table.rename(columns={"params_b": "Parameters", "checkpoint_gb": "Checkpoint"})
            wrapped_table(
                present.display_frame(
                    shown,
                    {c: present.seconds for c in shown.columns[2:]}
                    | {"Parameters": lambda v: f"{v:g}B", "Checkpoint": lambda v: f"{v:,.1f} GB"},
                )
            )
            pick = st.selectbox(
                "Rate for the worksheet's cold-start segment",
                [r.name for r in rates],
                persist_state="session",
                bind="query-params",
                key="cap_w_pick",
            )
            r = next(x for x in rates if x.name == pick)
            if st.button("Use this cold start in the worksheet", key="cap_w_use", icon=":material/input:"):
                to_worksheet(
                    "cold_ms",
                    Figure(
                        loads[pick] * 1000.0,
                        "ms",
                        Source.MODEL,
                        detail=f"{params_b:g}B {wdtype} = {gb:,.0f} GB at {r.gb_per_s:.2f} GB/s "
                        f"({r.name}) + {startup_s:g} s start-up",
                        window="constant-rate estimate",
                    ),
                )
        except CapacityError as exc:
            st.error(str(exc))
