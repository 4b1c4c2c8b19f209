"""`ttft-planner report`: compare endpoints and write a self-contained HTML report (plus Markdown/CSV)."""

from __future__ import annotations

import datetime as dt
import re
import time
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import click

from planner.capacity.errors import CapacityError
from planner.cli._common import echo_json, fail, open_engine, rule_type, store_option
from planner.cli._output import Shape, output_option
from planner.compare import UnknownEndpoint, compare, cost_basis, report_csv, report_html, report_markdown
from planner.compare.bootstrap import Margin
from planner.compare.data import load_endpoints
from planner.endpoints.registry import list_endpoints
from planner.inputs.validate import EQUIVALENCE_MARGIN_MS, PERCENT, USD_PER_MTOK
from planner.store.worksheets import WorksheetNotFound, load_worksheet
from planner.worksheet.budget import BudgetError

__all__ = ["COMMANDS", "endpoint_names", "parse_when"]

_RELATIVE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([mhdw])\s*$")
_UNIT_MS = {"m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
_EARLIEST_MS, _LATEST_MS = 0, 7_258_118_400_000  # 1970-01-01 … 2200-01-01 UTC: any other window is a typo


def parse_when(text: str, now_ms: int) -> int:
    """UTC epoch ms for '2026-11-27', '2026-11-27T08:00' (UTC unless an offset is given) or '3d'/'12h'/'90m'/'1w' ago.

    Raises ValueError naming the accepted forms, or the range for a time before 1970 or after 2200.
    """
    m = _RELATIVE.match(text)
    if m:
        ms = now_ms - float(m.group(1)) * _UNIT_MS[m.group(2)]
    else:
        try:
            when = dt.datetime.fromisoformat(text.strip())
        except ValueError:
            raise ValueError(
                f"{text!r} is not a date: use YYYY-MM-DD, an ISO date-time, or an age like 3d, 12h, 90m"
            ) from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.UTC)
        ms = when.timestamp() * 1000
    if not _EARLIEST_MS <= ms <= _LATEST_MS:
        raise ValueError(f"{text!r} is outside 1970–2200: give a date or an age within that range")
    return int(ms)


def endpoint_names(values: tuple[str, ...], stored: set[str], whole: tuple[str, ...] = ()) -> list[str]:
    """The endpoint names the options mean, in order without repeats: each --endpoint value (`whole`) as typed, never
    split; then the --endpoints `values`, where a value that is exactly a stored name is that name (commas included)
    and any other value is a comma-separated list."""
    out: list[str] = list(whole)
    for v in values:
        out += [v] if v in stored else [n.strip() for n in v.split(",") if n.strip()]
    return list(dict.fromkeys(out))


def _prices(values: tuple[str, ...]) -> dict[str, float]:
    out = {}
    for v in values:
        name, sep, price = v.rpartition("=")
        try:
            out[name.strip()] = float(price)
            if not sep or not name.strip() or USD_PER_MTOK.problem(out[name.strip()]):  # NaN, 1e-320 fail too
                raise ValueError
        except ValueError:
            raise click.BadParameter(
                f"{v!r}: use ENDPOINT=USD_PER_MTOK, e.g. fast-a=0.35 (the price: {USD_PER_MTOK.describe()})",
                param_hint="--price",
            ) from None
    return out


def _when_ms(text: str | None, now_ms: int, option: str) -> int | None:
    """parse_when for `option` (None when it was not given); a value it cannot read exits 2 naming the option."""
    if text is None:
        return None
    try:
        return parse_when(text, now_ms)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint=option) from None


def _file_option(flag: str, dest: str, help_text: str, *, required: bool = False):
    """An option naming a file the report writes (a Path; None when an optional one is not given)."""
    return click.option(
        flag, dest, type=click.Path(dir_okay=False, path_type=Path), required=required, default=None, help=help_text
    )


@click.command()
@click.option(
    "--endpoints",
    "endpoint_args",
    multiple=True,
    metavar="NAMES",
    help="Endpoint names, comma-separated (fast-a,slow-b), repeatable; a value that is exactly a stored name is taken "
    "whole. 2–5 is typical.",
)
@click.option(
    "--endpoint",
    "endpoint_whole",
    multiple=True,
    metavar="NAME",
    help="One endpoint by its full name, never split (repeatable): the way to choose a name with a comma "
    "(--endpoint 'eu, fast' --endpoint slow-b). Combines with --endpoints.",
)
@click.option("--since", default=None, help="Start of the window: YYYY-MM-DD, ISO date-time (UTC), or an age like 3d.")
@click.option("--until", default=None, help="End of the window (exclusive), same forms as --since. Default: now.")
@click.option("--vantage", default=None, help="Only samples from this vantage (default: all vantages).")
@_file_option("--out", "out_path", "Where to write the self-contained HTML report.", required=True)
@_file_option("--markdown", "md_path", "Also write the tables as Markdown.")
@_file_option("--csv", "csv_path", "Also write the decision table and per-endpoint figures as CSV.")
@click.option("--tz", default="UTC", show_default=True, help="Time zone for the hour-of-day curves (IANA name).")
@click.option(
    "--worksheet",
    "worksheet_name",
    default=None,
    help="Saved worksheet whose targets, prefill rate, prompt and cache hit to use (default: built-in defaults).",
)
@click.option(
    "--price",
    "prices",
    multiple=True,
    metavar="ENDPOINT=USD_PER_MTOK",
    help="Blended price for an endpoint (repeatable); else a matching preset.",
)
@click.option(
    "--tokens-per-month",
    type=click.FloatRange(min=0),
    default=None,
    help="The team's traffic (all tokens a month) for the cost column (default: 1e9).",
)
@click.option(
    "--margin-ms",
    type=rule_type(EQUIVALENCE_MARGIN_MS),
    default=5.0,
    show_default=True,
    help="Practical-equivalence margin, at least this many ms: two p95s whose whole 95% interval of the "
    "difference lies within ±margin are 'practically equivalent'; one is 'faster' only beyond it.",
)
@click.option(
    "--margin-pct",
    type=rule_type(PERCENT),
    default=3.0,
    show_default=True,
    help="…or this percentage of the faster p95, whichever is larger.",
)
@output_option(Shape.OBJECT)
@store_option
def report(
    endpoint_args,
    endpoint_whole,
    since,
    until,
    vantage,
    out_path,
    md_path,
    csv_path,
    tz,
    worksheet_name,
    prices,
    tokens_per_month,
    margin_ms,
    margin_pct,
    as_json,
    database_url,
) -> None:
    """Compare endpoints side by side and write a report a buyer can forward.

    The HTML file embeds its interactive charts and plotly.js (no network needed to open it) with the
    decision table, CI statements, worksheets and the method.

    Example: ttft-planner report --endpoints fast-a,slow-b --since 3d --out report.html --markdown report.md
    """
    if not endpoint_args and not endpoint_whole:  # before the store is opened: nothing to read
        raise click.UsageError("name the endpoints to compare: --endpoints a,b or --endpoint NAME (repeatable)")
    now_ms = int(time.time() * 1000)
    since_ms = _when_ms(since, now_ms, "--since")
    until_ms = _when_ms(until, now_ms, "--until")
    if since_ms is not None and until_ms is not None and since_ms >= until_ms:
        raise click.UsageError("--since must be before --until")
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise click.BadParameter(
            f"unknown time zone {tz!r} (use an IANA name like Europe/Berlin)", param_hint="--tz"
        ) from None
    typed_prices = _prices(prices)
    engine = open_engine(database_url)
    names = endpoint_names(endpoint_args, {e.name for e in list_endpoints(engine)}, endpoint_whole)
    if not names:
        engine.dispose()
        raise click.BadParameter("name at least one endpoint", param_hint="--endpoints or --endpoint")
    try:
        worksheet = load_worksheet(engine, worksheet_name) if worksheet_name else None
        infos = load_endpoints(engine, names)
        cost = cost_basis(infos, None, typed_prices, tokens_per_month=tokens_per_month)
        cmp = compare(
            engine,
            names,
            since_ms=since_ms,
            until_ms=until_ms,
            vantage=vantage,
            tz=tz,
            worksheet=worksheet,
            cost=cost,
            now_ms=now_ms,
            margin=Margin(abs_ms=margin_ms, fraction=margin_pct / 100),
        )
    except UnknownEndpoint as exc:
        raise click.BadParameter(str(exc), param_hint="--endpoints") from None
    except WorksheetNotFound as exc:
        raise click.BadParameter(str(exc.args[0]), param_hint="--worksheet") from None
    except (BudgetError, CapacityError) as exc:
        raise click.UsageError(str(exc)) from None
    finally:
        engine.dispose()
    written = []
    try:
        for path, text in (
            (out_path, report_html(cmp)),
            (md_path, report_markdown(cmp) if md_path else None),
            (csv_path, report_csv(cmp) if csv_path else None),
        ):
            if path is not None:
                path.write_text(text, encoding="utf-8")
                written.append(str(path))
    except OSError as exc:
        fail(f"cannot write {exc.filename}: {exc.strerror}")
    summary: dict[str, Any] = {
        "files": written,
        "window": cmp.window,
        "ranking": [
            {
                "rank": r.rank,
                "endpoint": r.metrics.name,
                "ttft_p95_ms": r.metrics.ttft["p95"].value,
                "n": r.metrics.n_ok,
                "vs_leader": None if r.vs_leader is None else r.vs_leader.verdict,
            }
            for r in cmp.ranked
        ],
        "differences": [d.statement() for d in cmp.differences],
    }
    if as_json:
        echo_json(summary)
        return
    for r in summary["ranking"]:
        p95 = "—" if r["ttft_p95_ms"] is None else f"{r['ttft_p95_ms']:,.0f} ms"
        click.echo(f"{r['rank']}. {r['endpoint']:<24} p95 {p95:>10}  n={r['n']}")
    for line in summary["differences"]:
        click.echo(f"- {line}")
    click.echo("wrote " + ", ".join(written))


COMMANDS = [report]
