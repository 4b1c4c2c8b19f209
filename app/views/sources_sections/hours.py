"""Production TTFT per hour, drawn the same for every source: the hours with requests as a table and a chart, the
busiest hour's p95, and — where the hours carry a queue-time p95 (Prometheus) — the hand-off of the worksheet's
queueing segment (planner.sources.prometheus.queue_hour_for_worksheet decides which hour)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from planner.inputs.untrusted import md_text
from planner.sources.prometheus import MIN_REQUESTS_FOR_P95, busiest_hour, queue_hour_for_worksheet
from planner.sources.registry import HourTtft
from planner.worksheet.provenance import Figure, Source
from ttft_planner_app import viewer
from ttft_planner_app.charts.sources import production_hours_figure
from ttft_planner_app.views.capacity_tabs._common import to_worksheet
from ttft_planner_app.widgets import wrapped_table

__all__ = ["fmt_ms", "show_hours"]


def fmt_ms(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f} ms"


def _table(busy: Sequence[HourTtft], tz: str, engine_figures: bool) -> pd.DataFrame:
    rows = []
    for h in busy:
        row = {
            "Hour": viewer.fmt_ms(h.hour_start_ms, tz),
            "Requests": f"{h.requests:,.0f}",
            "TTFT p50": fmt_ms(h.p50_ms),
            "TTFT p95": fmt_ms(h.p95_ms),
        }
        if engine_figures:  # the engine's own queue figures, where the source has them
            row["Queue p95"] = fmt_ms(h.queue_p95_ms)
            row["Mean waiting"] = "—" if h.waiting_mean is None else f"{h.waiting_mean:,.1f}"
        rows.append(row)
    return pd.DataFrame(rows)


def show_hours(
    hours: Sequence[HourTtft], *, where: str, key: str, engine_figures: bool, no_queue_why: str = ""
) -> None:
    """Draw the hours with requests (`where` names the source in the captions and the worksheet's provenance); with
    `engine_figures`, the queue columns and the hand-off button (keyed `key`), else neither."""
    tz = viewer.time_zone()
    busy = [h for h in hours if h.requests > 0]
    if not busy:
        st.info(md_text(f"{where}: no requests in the {len(hours):,} hours read."))
        return
    top = busiest_hour(busy)
    assert top is not None  # busy holds an hour with requests
    st.markdown(
        md_text(
            f"Production TTFT p95, busiest hour ({viewer.fmt_ms(top.hour_start_ms, tz)}): {fmt_ms(top.p95_ms)} "
            f"({top.requests:,.0f} requests)."
        )
    )
    if len(busy) > 1:
        st.plotly_chart(production_hours_figure(busy, tz), key=f"{key}_chart")
    wrapped_table(_table(busy, tz, engine_figures))
    if not engine_figures:
        return
    pick = queue_hour_for_worksheet(busy)
    if (
        st.button(
            "Use queue p95 in the worksheet",
            key=key,
            icon=":material/input:",
            type="primary",
            disabled=pick is None,
        )
        and pick is not None
        and pick.queue_p95_ms is not None
    ):
        hour = viewer.fmt_ms(pick.hour_start_ms, tz)
        to_worksheet(
            "queue_ms",
            Figure(
                float(pick.queue_p95_ms),
                "ms",
                Source.LOG,
                detail=f"production queue-time p95 from {where}, hour {hour}",
                n=int(pick.requests),
            ),
        )
    if pick is not None:
        st.caption(
            md_text(
                f"Hands the worksheet's queueing segment {fmt_ms(pick.queue_p95_ms)}: the queue p95 of "
                f"{viewer.fmt_ms(pick.hour_start_ms, tz)} ({pick.requests:,.0f} requests), the largest among the "
                f"hours with at least {MIN_REQUESTS_FOR_P95} requests."
            )
        )
    elif all(h.queue_p95_ms is None for h in busy):
        st.caption(md_text(f"No queue p95 to hand over: {no_queue_why or 'the source has no queue-time histogram'}."))
    else:
        st.caption(
            md_text(
                f"No queue p95 to hand over: no hour has {MIN_REQUESTS_FOR_P95} requests or more, and the p95 of fewer "
                "is only the largest value."
            )
        )
