"""Helpers shared by CLI modules: JSON output, store opening, error reporting, bounded numeric options."""

from __future__ import annotations

import json
import math
import sys
from typing import TYPE_CHECKING, Any, NoReturn

import click

from planner import settings
from planner.inputs.validate import MAX_MAGNITUDE, MIN_MAGNITUDE, OutOfRange, Rule, parse_list

if TYPE_CHECKING:  # the store (SQLAlchemy, ~0.25 s to import) only for the commands that open it
    from sqlalchemy.engine import Engine

__all__ = [
    "MAX_MAGNITUDE",
    "MIN_MAGNITUDE",
    "BoundedFloat",
    "BoundedInt",
    "NumberList",
    "bound_numeric_options",
    "echo_json",
    "fail",
    "json_default",
    "open_engine",
    "rule_type",
    "store_option",
]

# Every numeric option is finite and within planner.inputs.validate's MAX_MAGNITUDE unless it declares a tighter range:
# larger values are never a plan (1e12 tokens, $1e12/h) and overflow the arithmetic downstream; smaller non-zero
# ones (1e-320, MIN_MAGNITUDE) are denormals that turn a division into inf.


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
    """Print one JSON object on one line (NaN/inf become null, so the output is valid JSON): one line of `--json`'s
    output (planner/cli/_output.py). Raises TypeError for anything that is not an object once encoded (a list is
    printed one object a line, by _output.echo_lines)."""
    data = _finite(json.loads(json.dumps(obj, default=json_default)))
    if not isinstance(data, dict):
        raise TypeError(f"--json prints one object a line, not a {type(data).__name__}")
    click.echo(json.dumps(data, allow_nan=False))


def fail(message: str, code: int = 1) -> NoReturn:
    """Print `error: message` to stderr and exit with `code`."""
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


store_option = click.option(
    "--database-url",
    envvar=settings.DATABASE_URL.name,
    default=None,
    show_envvar=True,
    help="SQLAlchemy URL of the store (default: SQLite under the data directory).",
)


def open_engine(database_url: str | None) -> Engine:
    """open_store(), turning StoreError into a clean exit 1 with the message."""
    from planner.store import StoreError, open_store
    from planner.store.faults import describe

    try:
        return open_store(database_url)
    except StoreError as exc:
        fail(describe(exc, consequence="nothing was read or changed"))


def _rule_of(t: click.FloatRange | click.IntRange, integer: bool) -> Rule:
    """The planner.inputs.validate Rule for a click range: its ends (open or closed), within ±MAX_MAGNITUDE."""
    lo = -MAX_MAGNITUDE if t.min is None else max(float(t.min), -MAX_MAGNITUDE)
    hi = MAX_MAGNITUDE if t.max is None else min(float(t.max), MAX_MAGNITUDE)
    return Rule(
        lo, hi, integer=integer, lo_open=t.min is not None and t.min_open, hi_open=t.max is not None and t.max_open
    )


def _shown(value: Any) -> str | None:
    return repr(value.strip()) if isinstance(value, str) else None


def _convert_in_range(
    t: click.FloatRange | click.IntRange, base: click.ParamType, value, param, ctx, *, integer: bool
) -> Any:
    """`value` converted by click's `base` type, then kept by the Rule of range `t`: one line naming the option and
    the range (t.fail, exit 2) when it breaks it."""
    x = base.convert(value, param, ctx)
    why = _rule_of(t, integer=integer).problem(x, _shown(value))
    if why is not None:
        t.fail(why, param, ctx)
    return x


class BoundedFloat(click.FloatRange):
    """click's FloatRange kept by a planner.inputs.validate Rule: also finite (no NaN, no ±inf), within ±MAX_MAGNITUDE,
    and never a non-zero value smaller than MIN_MAGNITUDE. Bad input exits 2 with one line naming the option and
    the range; --help shows the declared range."""

    name = "float"

    def convert(self, value, param, ctx):
        return _convert_in_range(self, click.FLOAT, value, param, ctx, integer=False)

    def _describe_range(self) -> str:
        return "finite" if self.min is None and self.max is None else super()._describe_range()


class BoundedInt(click.IntRange):
    """click's IntRange kept by a planner.inputs.validate Rule: also within ±MAX_MAGNITUDE ('1e3' is refused, not
    truncated). Bad input exits 2 with one line naming the option and the range."""

    name = "integer"

    def convert(self, value, param, ctx):
        return _convert_in_range(self, click.INT, value, param, ctx, integer=True)

    def _describe_range(self) -> str:
        return f"|x|<={MAX_MAGNITUDE:g}" if self.min is None and self.max is None else super()._describe_range()


def rule_type(rule: Rule) -> BoundedFloat | BoundedInt:
    """The click type of an option that follows `rule` (planner.inputs.validate): --help shows its range, a value
    outside it exits 2 with one line naming the option. A rule whose top is MAX_MAGNITUDE shows no top ("x>=0", not
    "0<=x<=1000000000000.0"): the bounded type keeps every option within it anyway."""
    hi = None if rule.hi >= MAX_MAGNITUDE else rule.hi
    if rule.integer:
        return BoundedInt(int(rule.lo), None if hi is None else int(hi), min_open=rule.lo_open, max_open=rule.hi_open)
    return BoundedFloat(rule.lo, hi, min_open=rule.lo_open, max_open=rule.hi_open)


class NumberList(click.ParamType):
    """A comma-separated list of numbers ('1,2,4'), each kept by `rule`; the option gets them as a tuple without
    repeats, ascending (`keep_order`: as given). An empty, bad or out-of-range item exits 2 naming the option and
    the item."""

    name = "numbers"

    def __init__(self, rule: Rule, max_items: int = 100, keep_order: bool = False) -> None:
        self.rule = rule
        self.max_items = max_items
        self.keep_order = keep_order

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        try:
            return parse_list(str(value), self.rule, max_items=self.max_items, keep_order=self.keep_order)
        except OutOfRange as exc:
            self.fail(exc.reason, param, ctx)

    def get_metavar(self, param, ctx) -> str:
        return "N,N,…"


def _bounded(t: click.ParamType) -> click.ParamType | None:
    if isinstance(t, (BoundedFloat, BoundedInt)):
        return None
    rng: dict[str, Any] = dict(
        min=getattr(t, "min", None),
        max=getattr(t, "max", None),
        min_open=getattr(t, "min_open", False),
        max_open=getattr(t, "max_open", False),
        clamp=getattr(t, "clamp", False),
    )
    if isinstance(t, click.types.FloatParamType):
        return BoundedFloat(**rng)
    if isinstance(t, click.types.IntParamType):
        return BoundedInt(**rng)
    if isinstance(t, click.Tuple):
        inner = [(_bounded(x) or x) for x in t.types]
        if any(a is not b for a, b in zip(inner, t.types, strict=True)):
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
