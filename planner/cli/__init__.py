"""`ttft-planner`: the command line over the planner library.

Every command is listed once, in `REGISTRY` below: its name, the module and attribute that define it, and the one
line `ttft-planner --help` shows. A command's module is imported only when that command runs (or its own --help is
asked for), so `ttft-planner --help` imports none of them. Adding a command means adding its module and one line
here; tests/planner/cli/test_cli_registry.py fails when a module's `COMMANDS` is not listed or a line drifts from the
command's own help.
The output contract (which commands take `--json`, and its one shape per kind) is planner/cli/_output.py's; old
spellings of renamed options and commands live one release in planner/cli/_renamed.py; docs/cli.md is generated
from this tree's --help by scripts/gen_cli_reference.py.
Usage errors (bad flags, bad values, a number that is not finite or out of range) exit with code 2;
runtime failures exit 1. A database that is locked, full, read-only or unreachable is one line on
stderr and exit 1 under every command, never a traceback.
"""

from __future__ import annotations

import importlib
from typing import NamedTuple

import click

from planner import __version__
from planner.cli._renamed import RENAMED_COMMANDS, note_renamed

__all__ = ["REGISTRY", "Registered", "cli", "main"]


class Registered(NamedTuple):
    """Where a command lives and the line the root --help shows for it (`fixed`: shown whole, as its short_help)."""

    module: str
    attribute: str
    summary: str
    fixed: bool = False


_C = "planner.cli"
#: Every command of `ttft-planner`, by name.
REGISTRY: dict[str, Registered] = {
    "alerts": Registered(
        f"{_C}.alerts",
        "alerts",
        "SLO alerts: rules over the stored probe samples, evaluated by the worker, notified by webhook or e-mail.",
    ),
    "budget": Registered(
        f"{_C}.budget",
        "budget",
        "Prefill budget = target − (queueing + cold start + network), and whether the p95 prompt fits.",
    ),
    "calibrate": Registered(
        f"{_C}.calibrate",
        "calibrate",
        "Measure prefill (on the server's counted tokens), decode and effective parallelism; "
        "print a `dedicated:` spec.",
    ),
    "capacity": Registered(
        f"{_C}.capacity",
        "capacity",
        "Capacity & cost models: break-even cost, weight loading, GPU fit, prefill rate, warm-pool sizing.",
    ),
    "cold-reading": Registered(
        f"{_C}.worker",
        "cold_reading",
        "Ask the worker for a cold reading of ENDPOINT: pause its probes, idle past the "
        "scale-down window, time one cold probe (503s and retries included) then one warm "
        "probe.",
    ),
    "endpoints": Registered(
        f"{_C}.endpoints", "endpoints", "The endpoints the worker probes (name, URL, model, key env var, interval, …)."
    ),
    "logs": Registered(
        f"{_C}.logs", "logs", "Request logs: prompt-token percentiles, cache share, traffic shape, cold-start exposure."
    ),
    "prefix": Registered(
        f"{_C}.prefix",
        "prefix",
        "Prefix reuse under memory pressure: KV cache hit rate, uncached p95 and prefill p95 by routing and replicas.",
    ),
    "probe": Registered(
        f"{_C}.probe",
        "probe",
        "Measure TTFT of a streaming endpoint: per sample and as p50 / p95 / max with n and failures.",
    ),
    "regions": Registered(f"{_C}.rtt", "regions", "The region catalog (assets/regions.toml) and your own RTT targets."),
    "report": Registered(
        f"{_C}.report", "report", "Compare endpoints side by side and write a report a buyer can forward."
    ),
    "rtt": Registered(
        f"{_C}.rtt",
        "rtt",
        "Round-trip time from this machine to regions: DNS (timed once), n TCP connects, TLS, one HTTPS TTFB.",
    ),
    "serve": Registered(
        f"{_C}.worker",
        "serve",
        "Start the dashboard, the probe worker and the simulated endpoint together; Ctrl-C stops them together.",
    ),
    "simulate": Registered(
        f"{_C}.simulate",
        "simulate",
        "Serve a SIMULATED streaming LLM endpoint (OpenAI chat/completions and Anthropic Messages) "
        "for demos and tests.",
    ),
    "sources": Registered(
        f"{_C}.sources",
        "sources",
        "Live production sources: TTFT and traffic read, read-only, from where they already live.",
    ),
    "sweep": Registered(
        f"{_C}.sweep",
        "sweep",
        "TTFT p50/p95/p99 of an endpoint at a list of loads, and the knee where p95 leaves a target.",
    ),
    "whatif": Registered(
        f"{_C}.whatif",
        "whatif",
        "Predict TTFT p50/p95/p99 (overall and per hour of day) and cost for each candidate deployment.",
    ),
    "worker": Registered(
        f"{_C}.worker",
        "worker",
        "Probe every enabled endpoint of this vantage on its own schedule until SIGTERM/SIGINT.",
    ),
    "worksheets": Registered(
        f"{_C}.worksheets", "worksheets", "Saved worksheets (made on the dashboard's Worksheet page)."
    ),
}


class _Cli(click.Group):
    """The root group: commands load from REGISTRY on first use; a store failure anywhere below becomes
    `error: <one sentence>` and exit 1."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(REGISTRY)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            entry = REGISTRY.get(cmd_name)
            if entry is None:
                return None
            from planner.cli._common import bound_numeric_options

            command = getattr(importlib.import_module(entry.module), entry.attribute)
            bound_numeric_options(command)
            self.add_command(command, cmd_name)
        return self.commands[cmd_name]

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """A command by name; an old top-level name (planner.cli._renamed.RENAMED_COMMANDS) runs the command it is
        now, after a one-line note on stderr."""
        if args and args[0] in RENAMED_COMMANDS:
            *groups, name = RENAMED_COMMANDS[args[0]]
            command: click.Command | None = self
            for part in (*groups, name):
                assert isinstance(command, click.Group)  # every step but the last is a group
                command = command.get_command(ctx, part)
            note_renamed(f"`ttft-planner {args[0]}`", "`ttft-planner " + " ".join((*groups, name)) + "`")
            return args[0], command, args[1:]
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from REGISTRY's summaries, laid out as click lays it out, without importing a command."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = []
        for n in names:
            entry = REGISTRY[n]
            stand_in = click.Command(n, help=entry.summary, short_help=entry.summary if entry.fixed else None)
            rows.append((n, stand_in.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise  # click's own exits (--help, a usage error): no store is involved, and none is imported
        except Exception as exc:  # noqa: BLE001 - only store failures are handled; the rest re-raise unchanged
            from planner.cli._common import fail
            from planner.store.faults import describe, is_store_failure

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


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="ttft-planner")
