"""Typed presets read from `assets/*.toml` (data, not code: each with a source and an as-of date)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["ASSETS_DIR", "Interaction", "interactions", "load_asset"]

ASSETS_DIR = Path(__file__).resolve().parent.parent / "assets"


def load_asset(name: str) -> dict[str, Any]:
    """Parse `assets/<name>` as TOML; raises FileNotFoundError / tomllib.TOMLDecodeError with the path."""
    path = ASSETS_DIR / name
    with path.open("rb") as fh:
        try:
            return tomllib.load(fh)
        except tomllib.TOMLDecodeError as exc:
            raise tomllib.TOMLDecodeError(f"{path}: {exc}") from exc


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
