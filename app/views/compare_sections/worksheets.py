"""Compare › worksheets with measured segments: each endpoint judged per interaction type with its own measurements
only (a segment it has not measured is the worksheet's typed value, labelled, or missing)."""

import streamlit as st

from planner.compare import Comparison
from planner.compare.ranking import LEVEL_LABELS
from planner.compare.report import segment_cell
from planner.inputs.untrusted import md_text
from planner.worksheet.budget import SEGMENTS

__all__ = ["render"]


def render(cmp: Comparison, tz: str) -> None:
    """Draw one expander per endpoint of `cmp` with its verdicts and the segments behind them (times in `tz`)."""
    st.subheader("Worksheets with measured segments")
    st.caption(
        "Each endpoint is judged with its own measurements only; a segment it has not measured is the worksheet's "
        "typed value (labelled) or missing — never another endpoint's figure."
    )
    for m in cmp.metrics:
        with st.expander(
            md_text(f"{m.name}: " + " · ".join(f"{v.label} {LEVEL_LABELS.get(v.level, v.level)}" for v in m.verdicts))
        ):
            for v in m.verdicts:
                good = "—" if v.goodput_fraction is None else f"{v.goodput_fraction:.1%}"
                decided = f", decided by {v.deciding_label}" if v.deciding_label else ""
                segs = "; ".join(f"{SEGMENTS[k].lower()}: {segment_cell(v, k, tz)}" for k in SEGMENTS)
                st.markdown(
                    f"**{md_text(v.label)}** "
                    + md_text(
                        f"({v.target_ms:,.0f} ms) — {LEVEL_LABELS.get(v.level, v.level)}{decided}. "
                        f"{v.sentence} Goodput: {good} of samples within target. Segments — {segs}."
                    )
                )
