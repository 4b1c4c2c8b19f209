"""Helpers shared by the Capacity & cost tabs: the weight formats, the source caption, the hand-off to the worksheet."""

from planner.capacity.weights import BYTES_PER_PARAM
from planner.provenance import Figure
from ttft_planner_app import worksheet_state

__all__ = ["DTYPES", "source_caption", "to_worksheet"]

DTYPES = list(BYTES_PER_PARAM)


def source_caption(source: str, as_of: str) -> str:
    """The caption text under a preset: where its numbers come from, and as of when."""
    return f"Source: {source} · as of {as_of}"


def to_worksheet(field: str, figure: Figure) -> None:
    """Offer `figure` for the worksheet's `field` (e.g. `cold_ms`)
    and switch to the Worksheet page, which picks it up."""
    worksheet_state.hand_over({field: figure})
