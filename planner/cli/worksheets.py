"""`ttft-planner worksheets`: list, show and export saved worksheets."""

from __future__ import annotations

import datetime as dt

import click

from planner.cli._common import echo_json, fail, open_engine, store_option
from planner.cli._output import EXPORT, Shape, no_json, output_option
from planner.store.worksheets import WorksheetNotFound, list_worksheets, load_worksheet
from planner.worksheet.report import to_json, to_markdown

__all__ = ["COMMANDS"]


@click.group()
def worksheets() -> None:
    """Saved worksheets (made on the dashboard's Worksheet page)."""


@worksheets.command("list")
@store_option
@output_option(Shape.LIST, "worksheet")
def list_cmd(database_url, as_json) -> None:
    """List saved worksheets, newest first."""
    engine = open_engine(database_url)
    for name, updated_at_ms in list_worksheets(engine):
        if as_json:
            echo_json({"name": name, "updated_at_ms": updated_at_ms})
        else:
            when = dt.datetime.fromtimestamp(updated_at_ms / 1000, tz=dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
            click.echo(f"{when}  {name}")


@no_json(EXPORT)
@worksheets.command("export")
@click.argument("name")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["markdown", "json"]),
    default="markdown",
    show_default=True,
    help="markdown for a design doc; json for its inputs, each with where it came from, and its result.",
)
@store_option
def export_cmd(name, fmt, database_url) -> None:
    """Print the worksheet NAME as Markdown (for design docs) or JSON (inputs with provenance + result)."""
    engine = open_engine(database_url)
    try:
        ws = load_worksheet(engine, name)
    except WorksheetNotFound as exc:
        fail(str(exc.args[0]), code=2)
    click.echo(to_markdown(ws) if fmt == "markdown" else to_json(ws), nl=fmt == "json")


COMMANDS = [worksheets]
