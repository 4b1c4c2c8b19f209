"""The log-input options every command that reads request logs shares: `logs summarize`, `logs import`, `whatif`.

Inputs are files, directories (their log files) or glob patterns; .gz and .zst are unwrapped and Parquet
is read by columns. --format, --map, --start and --prefix-cache-blocks mean the same everywhere.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import click

from planner.cli._common import rule_type
from planner.inputs.validate import KV_CACHE_BLOCKS
from planner.logs import FORMATS
from planner.logs.inputs import expand_inputs
from planner.logs.prefix import DEFAULT_CACHE_BLOCKS
from planner.logs.traces import DEFAULT_START, start_ms

__all__ = [
    "ByteProgress",
    "checked_value",
    "format_option",
    "input_paths",
    "map_option",
    "prefix_option",
    "progress_bar",
    "progress_option",
    "start_option",
]


def _mapping(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, str] | None:
    out = {}
    for item in values:
        field, sep, column = item.partition("=")
        if not sep or not field or not column:
            raise click.BadParameter(f"{item!r} is not FIELD=COLUMN (e.g. ts=started_at)")
        out[field.strip()] = column.strip()
    return out or None


def checked_value(check: Callable[[str], object], value: str) -> str:
    """`value` as given, once `check(value)` has accepted it (an option callback's body): the ValueError it raises
    becomes a usage error naming the option (exit 2)."""
    try:
        check(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    return value


def _start(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    return None if value is None else checked_value(lambda v: start_ms(v, "UTC"), value)


def input_paths(items: tuple[str, ...], hint: str) -> list[Path]:
    """The files named by FILE / DIR / GLOB arguments; a usage error (exit 2) naming one that names none."""
    try:
        return expand_inputs(items)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint=hint) from None


format_option = click.option(
    "--format",
    "fmt",
    type=click.Choice(list(FORMATS)),
    default="auto",
    show_default=True,
    help="Log format; auto detects it from the content (public traces by their columns).",
)
map_option = click.option(
    "--map",
    "mapping",
    multiple=True,
    callback=_mapping,
    metavar="FIELD=COLUMN",
    help="Map a column (CSV, Parquet) or dotted path (JSON) to a field: ts, ts_relative_s, "
    "ts_relative_ms, prompt_tokens, cached_tokens, output_tokens, model, ttft_ms, hash_ids, … "
    "Repeatable.",
)
start_option = click.option(
    "--start",
    default=None,
    callback=_start,
    metavar="DATE",
    help=f"Start date (YYYY-MM-DD[THH:MM], in --tz) for traces whose times count from their "
    f"start (BurstGPT, Mooncake); default {DEFAULT_START}, and the output says so.",
)
prefix_option = click.option(
    "--prefix-cache-blocks",
    "cache_blocks",
    type=rule_type(KV_CACHE_BLOCKS),
    default=DEFAULT_CACHE_BLOCKS,
    show_default=True,
    help="Prefix-cache size (blocks of 512 tokens) under which cached tokens are derived from a trace's hash_ids "
    "(Mooncake/AIPerf), evicting as vLLM does (a request's blocks tail first); with whatif's routing=, each "
    "replica's.",
)
progress_option = click.option(
    "--progress/--no-progress",
    "show_progress",
    default=None,
    help="A progress line on stderr that moves by bytes read (default: only on a terminal); "
    "stdout, --json included, is unchanged.",
)


class ByteProgress:
    """A progress line on stderr, moved by the fraction of input bytes read; close() clears it."""

    def __init__(self) -> None:
        self.last_pct = -1

    def __call__(self, frac: float, msg: str) -> None:
        pct = int(frac * 100)
        if pct != self.last_pct:
            self.last_pct = pct
            click.echo(f"\r{pct:3d}% {msg[:60]:<60}", nl=False, err=True)

    def close(self) -> None:
        click.echo("\r" + " " * 66 + "\r", nl=False, err=True)


def progress_bar(show: bool | None) -> ByteProgress | None:
    """A ByteProgress when asked (--progress), or by default when stderr is a terminal; None otherwise."""
    return ByteProgress() if (sys.stderr.isatty() if show is None else show) else None
