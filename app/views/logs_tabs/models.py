"""Logs › Per model tab: requests, prompt-token percentiles, cached share and output length per model."""

import streamlit as st

from planner.logs.summary import LogSummary
from planner.present import count, display_frame, pct

__all__ = ["render"]


def render(s: LogSummary) -> None:
    """Draw the Per model tab of the summary `s`."""
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
