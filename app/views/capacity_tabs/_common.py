"""Helpers shared by the Capacity & cost tabs: the weight formats, the source caption, the hand-off to the worksheet."""

import streamlit as st

from planner.capacity.weights import BYTES_PER_PARAM
from planner.worksheet.provenance import Figure
from ttft_planner_app import worksheet_state

__all__ = ["DTYPES", "dtype_pickers", "source_caption", "to_worksheet", "usable_share"]

DTYPES = list(BYTES_PER_PARAM)


def source_caption(source: str, as_of: str) -> str:
    """The caption text under a preset: where its numbers come from, and as of when."""
    return f"Source: {source} · as of {as_of}"


def to_worksheet(field: str, figure: Figure) -> None:
    """Offer `figure` for the worksheet's `field` (e.g. `cold_ms`)
    and switch to the Worksheet page, which picks it up."""
    worksheet_state.hand_over({field: figure})


def dtype_pickers(key_prefix: str) -> tuple[str, str]:
    """Side by side: the weights' and the KV cache's format (bf16 by default), each kept in the session and the
    address bar under `<key_prefix>_wdtype` / `<key_prefix>_kvdtype`."""
    c1, c2 = st.columns(2)
    picked = []
    for col, label, key in ((c1, "Weights", "wdtype"), (c2, "KV cache", "kvdtype")):
        picked.append(
            col.selectbox(
                label,
                DTYPES,
                index=DTYPES.index("bf16"),
                persist_state="session",
                bind="query-params",
                key=f"{key_prefix}_{key}",
            )
        )
    return picked[0], picked[1]


def usable_share(key: str, default: float, source: str) -> float:
    """A slider for the share of HBM weights and KV may take (vLLM's gpu_memory_utilization), kept in the session and
    the address bar under `key`; `source` says where the default comes from."""
    return float(
        st.slider(
            "Usable share of HBM",
            0.5,
            1.0,
            float(default),
            0.01,
            persist_state="session",
            bind="query-params",
            key=key,
            help=source,
        )
    )
