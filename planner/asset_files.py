"""The shipped data files (`assets/*.toml`: data, not code, each with a source and an as-of date): where they are
and how one is parsed. What a file means is typed where it is used (planner.worksheet.interactions,
planner.capacity.specs, planner.regions.catalog, planner.endpoints.providers)."""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["ASSETS_DIR", "assets_dir", "first_repeat", "load_asset"]


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


def first_repeat(keys: Iterable[str]) -> str | None:
    """The first key that `keys` has already given (a catalog's duplicate key), or None when each is new."""
    seen: set[str] = set()
    for key in keys:
        if key in seen:
            return key
        seen.add(key)
    return None
