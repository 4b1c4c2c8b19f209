"""Hand-off of measured figures from any page to the worksheet (value + provenance).

A page calls `offer(field, figure)` (e.g. the Regions page offers `network_ms`)
and then `st.switch_page` to the worksheet; the worksheet view calls `take()`
on its next run and applies the figures, showing their provenance.
"""

from __future__ import annotations

import streamlit as st

from planner.budget import Worksheet
from planner.provenance import Figure

__all__ = ["FIELDS", "current", "offer", "take"]

_KEY = "worksheet_figures"

# Worksheet fields a page may fill, with the unit each expects.
FIELDS = {
    "queue_ms": "ms",
    "cold_ms": "ms",
    "network_ms": "ms",
    "prefill_tokens_per_s": "tokens/s",
    "prompt_tokens_p95": "tokens",
    "cache_hit_fraction": "fraction",
}


def offer(field: str, figure: Figure) -> None:
    """Queue `figure` for the worksheet's `field`; raises KeyError/ValueError on a wrong field or unit."""
    if field not in FIELDS:
        raise KeyError(f"unknown worksheet field {field!r}; one of {', '.join(FIELDS)}")
    if figure.unit != FIELDS[field]:
        raise ValueError(f"{field} takes {FIELDS[field]}, got a figure in {figure.unit}")
    st.session_state.setdefault(_KEY, {})[field] = figure.to_dict()


def take() -> dict[str, Figure]:
    """Pop every queued figure (field → Figure)."""
    pending = st.session_state.pop(_KEY, {}) or {}
    return {field: Figure.from_dict(d) for field, d in pending.items()}


def current() -> Worksheet | None:
    """The Worksheet page's inputs in this session (figures with provenance), or None until that page has run.

    The worksheet view keeps them in session state as ws_figures / ws_targets / ws_labels / ws_name.
    """
    ss = st.session_state
    if "ws_figures" not in ss:
        return None
    figures = {field: Figure.from_dict(d) for field, d in ss.ws_figures.items()}
    interaction = ss.get("interaction") if ss.get("interaction") in ss.ws_targets else next(iter(ss.ws_targets))
    return Worksheet(name=ss.get("ws_name", "Untitled"), interaction=interaction, targets_ms=dict(ss.ws_targets),
                     target_labels=dict(ss.ws_labels), **figures)
