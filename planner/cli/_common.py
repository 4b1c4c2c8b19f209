"""Helpers shared by CLI modules: JSON output, store opening, error reporting, bounded numeric options."""

from __future__ import annotations

import json
import math
import sys
from typing import Any, NoReturn

import click
from sqlalchemy.engine import Engine

from planner.store import StoreError, open_store
from planner.store.faults import describe

__all__ = [
    "MAX_MAGNITUDE",
    "MIN_MAGNITUDE",
    "BoundedFloat",
    "BoundedInt",
    "bound_numeric_options",
    "echo_json",
    "fail",
    "json_default",
    "open_engine",
    "store_option",
]

# Every numeric option is finite and within these magnitudes unless it declares a tighter range: larger
# values are never a plan (1e12 tokens, $1e12/h) and overflow the arithmetic downstream; smaller non-zero
# ones (1e-320) are denormals that turn a division into inf.
MAX_MAGNITUDE = 1e12
MIN_MAGNITUDE = 1e-9


def json_default(obj: Any) -> Any:
    """JSON encoder for dataclasses, enums, and non-finite floats (→ null)."""
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    if hasattr(obj, "__dataclass_fields__"):
        from dataclasses import asdict

        return asdict(obj)
    return str(obj)


def _finite(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def echo_json(obj: Any) -> None:
    """Print one JSON object on one line (NaN/inf become null, so the output is valid JSON)."""
    click.echo(json.dumps(_finite(json.loads(json.dumps(obj, default=json_default))), allow_nan=False))


def fail(message: str, code: int = 1) -> NoReturn:
    """Print `error: message` to stderr and exit with `code`."""
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


store_option = click.option(
    "--database-url",
    envvar="TTFT_PLANNER_DATABASE_URL",
    default=None,
    show_envvar=True,
    help="SQLAlchemy URL of the store (default: SQLite under the data directory).",
)


def open_engine(database_url: str | None) -> Engine:
    """open_store(), turning StoreError into a clean exit 1 with the message."""
    try:
        return open_store(database_url)
    except StoreError as exc:
        fail(describe(exc, consequence="nothing was read or changed"))


def _bounds_text(lo: float | None, hi: float | None) -> str:
    if lo is not None and hi is not None:
        return f"between {lo:g} and {hi:g}"
    if lo is not None:
        return f"at least {lo:g} (and at most {MAX_MAGNITUDE:g})"
    if hi is not None:
        return f"at most {hi:g}"
    return f"between {-MAX_MAGNITUDE:g} and {MAX_MAGNITUDE:g}"


class BoundedFloat(click.ParamType):
    """A finite float in [min, max] (click's FloatRange semantics for open ends), never NaN or ±inf,
    never past ±MAX_MAGNITUDE and never a non-zero value smaller than MIN_MAGNITUDE. Bad input exits 2."""

    name = "float"

    def __init__(self, min: float | None = None, max: float | None = None, min_open: bool = False, max_open: bool = False) -> None:
        self.min, self.max, self.min_open, self.max_open = min, max, min_open, max_open

    def convert(self, value, param, ctx):
        if isinstance(value, bool):
            self.fail(f"{value!r} is not a number", param, ctx)
        try:
            x = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(x):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        lo, hi = self.min, self.max
        if (lo is not None and (x < lo or (self.min_open and x == lo))) or (hi is not None and (x > hi or (self.max_open and x == hi))) \
                or abs(x) > MAX_MAGNITUDE:
            self.fail(f"{value} is out of range: give a number {_bounds_text(lo, hi)}", param, ctx)
        if x != 0 and abs(x) < MIN_MAGNITUDE:
            self.fail(f"{value} is too small to mean anything: use 0 or a magnitude of at least {MIN_MAGNITUDE:g}", param, ctx)
        return x

    def __repr__(self) -> str:
        return f"BoundedFloat({self.min}, {self.max})"


class BoundedInt(click.ParamType):
    """A whole number in [min, max] and within ±MAX_MAGNITUDE; '1e3' is refused (exit 2), not truncated."""

    name = "integer"

    def __init__(self, min: int | None = None, max: int | None = None, min_open: bool = False, max_open: bool = False) -> None:
        self.min, self.max, self.min_open, self.max_open = min, max, min_open, max_open

    def convert(self, value, param, ctx):
        if isinstance(value, bool):
            self.fail(f"{value!r} is not a whole number", param, ctx)
        if isinstance(value, int):
            x = value
        else:
            try:
                x = int(str(value).strip().replace("_", ""))
            except ValueError:
                self.fail(f"{value!r} is not a whole number", param, ctx)
        lo, hi = self.min, self.max
        if (lo is not None and (x < lo or (self.min_open and x == lo))) or (hi is not None and (x > hi or (self.max_open and x == hi))) \
                or abs(x) > MAX_MAGNITUDE:
            self.fail(f"{value} is out of range: give a whole number {_bounds_text(lo, hi)}", param, ctx)
        return x

    def __repr__(self) -> str:
        return f"BoundedInt({self.min}, {self.max})"


def _bounded(t: click.ParamType) -> click.ParamType | None:
    if isinstance(t, (BoundedFloat, BoundedInt)):
        return None
    rng = (getattr(t, "min", None), getattr(t, "max", None), getattr(t, "min_open", False), getattr(t, "max_open", False))
    if isinstance(t, click.types.FloatParamType):
        return BoundedFloat(*rng)
    if isinstance(t, click.types.IntParamType):
        return BoundedInt(*rng)
    if isinstance(t, click.Tuple):
        inner = [(_bounded(x) or x) for x in t.types]
        if any(a is not b for a, b in zip(inner, t.types)):
            new = click.Tuple([])
            new.types = inner
            return new
    return None


def bound_numeric_options(command: click.Command) -> None:
    """Give every float/int parameter of `command` and its subcommands a BoundedFloat/BoundedInt type with the
    range it declared (FloatRange/IntRange) or the default magnitudes: one rule for every numeric option."""
    for param in command.params:
        new = _bounded(param.type)
        if new is not None:
            param.type = new
    for sub in getattr(command, "commands", {}).values():
        bound_numeric_options(sub)
