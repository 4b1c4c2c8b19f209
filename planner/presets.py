"""Typed presets read from `assets/*.toml` (data, not code: each with a source and an as-of date)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["ASSETS_DIR", "Interaction", "assets_dir", "interactions", "load_asset"]


def assets_dir() -> Path:
    """The shipped data files: `planner/assets/` in an installed wheel, else the checkout's top-level `assets/`
    (editable installs and PYTHONPATH runs; setup.py maps that folder into the wheel)."""
    package = Path(__file__).resolve().parent
    shipped = package / "assets"
    return shipped if shipped.is_dir() else package.parent / "assets"


ASSETS_DIR = assets_dir()


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
