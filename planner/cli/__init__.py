"""`ttft-planner`: the command line over the planner library.

Each module in this package defines `COMMANDS`, a list of click commands or
groups; they are collected here, so adding a command means adding a module.
Usage errors (bad flags, bad values, a number that is not finite or out of range) exit with code 2;
runtime failures exit 1. A database that is locked, full, read-only or unreachable is one line on
stderr and exit 1 under every command, never a traceback.
"""

from __future__ import annotations

import importlib
import pkgutil

import click

from planner import __version__
from planner.cli._common import bound_numeric_options, fail
from planner.store.faults import describe, is_store_failure

__all__ = ["cli", "main"]


class _Cli(click.Group):
    """The root group: turns a store failure anywhere below into `error: <one sentence>` and exit 1."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except Exception as exc:  # noqa: BLE001 - only store failures are handled; the rest re-raise unchanged
            if not is_store_failure(exc):
                raise
            fail(describe(exc))


@click.group(cls=_Cli, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="ttft-planner")
def cli() -> None:
    """Plan, measure and compare time-to-first-token (TTFT) for coding agents on hosted LLMs.

    TTFT splits into four segments: admission/queueing, weight loading (cold start),
    prefill and network. Subtract queueing, cold start and network from your p95
    target: what is left is the prefill budget.

    The database is SQLite under $TTFT_PLANNER_DATA_DIR by default;
    set TTFT_PLANNER_DATABASE_URL=postgresql+psycopg://… for PostgreSQL.
    """


def _register() -> None:
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for command in getattr(module, "COMMANDS", ()):
            cli.add_command(command)
    bound_numeric_options(cli)


_register()


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="ttft-planner")
