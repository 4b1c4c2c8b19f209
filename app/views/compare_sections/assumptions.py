"""Compare › cost assumptions and equivalence margin: typed prices per endpoint, and the margin within which two p95s
count as practically equivalent."""

from collections.abc import Sequence

import streamlit as st

from planner.compare.bootstrap import Margin
from planner.compare.data import EndpointInfo
from planner.inputs.untrusted import md_text
from planner.inputs.validate import EQUIVALENCE_MARGIN_MS, PERCENT, USD_PER_MTOK
from ttft_planner_app.widgets import number_input_for

__all__ = ["render"]


def render(infos: Sequence[EndpointInfo], from_capacity_page: bool) -> tuple[dict[str, float], Margin]:
    """Draw the expander; return the typed prices ($/1M tokens by endpoint name; empty ones left out) and the margin.

    `from_capacity_page`: whether the Capacity & cost page's inputs set the traffic (the caption says which).
    """
    with st.expander("Cost assumptions and equivalence margin"):
        st.caption(
            "Traffic and token mix come from "
            + (
                "the Capacity & cost page's inputs."
                if from_capacity_page
                else "typed defaults (fill in the Capacity & cost page to use your traffic)."
            )
        )
        typed = {}
        for col, info in zip(st.columns(min(len(infos), 5)) * 2, infos, strict=False):
            price = number_input_for(
                USD_PER_MTOK,
                f"{md_text(info.name)} \\$/1M tokens",
                where=col,
                value=None,
                step=0.05,
                key=f"cmp_price_{info.name}",
                help="Blended price; empty = matching price preset, else the Capacity page's price.",
            )
            if price is not None:
                typed[info.name] = price
        m1, m2 = st.columns(2)
        margin_ms = number_input_for(
            EQUIVALENCE_MARGIN_MS,
            "Equivalence margin, at least (ms)",
            where=m1,
            value=5.0,
            step=1.0,
            key="cmp_margin_ms",
            help="Two p95s whose whole 95% interval of the difference lies within ± the margin are "
            "“practically equivalent”; one is “faster” only when the interval lies wholly beyond it.",
        )
        margin_pct = number_input_for(
            PERCENT,
            "…or this share of the faster p95 (%)",
            where=m2,
            value=3.0,
            step=0.5,
            key="cmp_margin_pct",
        )
    return typed, Margin(abs_ms=float(margin_ms), fraction=float(margin_pct) / 100)
