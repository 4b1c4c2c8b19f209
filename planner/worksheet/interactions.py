"""Interaction types (inline completion, chat panel, agent-loop call) and their default p95 TTFT targets, from
assets/interactions.toml."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from planner.asset_files import load_asset

__all__ = ["Interaction", "interactions"]


@dataclass(frozen=True)
class Interaction:
    """An interaction type with its default p95 TTFT target."""

    key: str
    label: str
    target_p95_ms: float
    help: str = ""


@cache
def interactions() -> tuple[Interaction, ...]:
    """The built-in interaction types (inline 200 ms, chat 500 ms, agent 1000 ms by default)."""
    data = load_asset("interactions.toml")
    return tuple(
        Interaction(key=i["key"], label=i["label"], target_p95_ms=float(i["target_p95_ms"]), help=i.get("help", ""))
        for i in data["interaction"]
    )
