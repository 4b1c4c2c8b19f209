"""`ttft-planner logs`: summarise request logs, and keep uploads in the store (numbers only)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import click

from planner import present
from planner.cli._common import echo_json, open_engine, store_option
from planner.cli._log_input import (
    checked_value,
    format_option,
    input_paths,
    map_option,
    prefix_option,
    progress_bar,
    progress_option,
    start_option,
)
from planner.cli._output import CHANGE, Shape, echo_lines, no_json, output_option
from planner.logs import LogFormatError, TokenCounter, read_logs
from planner.logs.exposure import P95_COLD_THRESHOLD
from planner.logs.records import zone
from planner.logs.summary import DEFAULT_WORKDAY, busiest_hour_words, parse_workday, span_words

__all__ = ["COMMANDS"]

_SHOWN_REJECTS = 5


def _workday(ctx: click.Context, param: click.Parameter, value: str) -> str:
    return checked_value(parse_workday, value)


def _tz(ctx: click.Context, param: click.Parameter, value: str) -> str:
    return checked_value(zone, value)


file_args = click.argument("files", nargs=-1, required=True, metavar="FILE|DIR|GLOB|S3-URL...")
tz_option = click.option(
    "--tz",
    default="UTC",
    show_default=True,
    callback=_tz,
    help="Time zone for hours of day, the working day and times written without a zone.",
)


def _tokenizer(ctx: click.Context, param: click.Parameter, value: Path | None) -> TokenCounter | None:
    if value is None:
        return None
    try:
        return TokenCounter.from_tokenizer_json(value.read_bytes(), value.name)
    except (ValueError, RuntimeError) as exc:
        raise click.BadParameter(str(exc)) from None


tokenizer_option = click.option(
    "--tokenizer",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    callback=_tokenizer,
    help="A Hugging Face tokenizer.json to count tokens in logs that have text but no counts "
    "(default: an estimate of ~4 characters per token, labelled as such).",
)


def _read(files, fmt, mapping, tz, tokenizer=None, start=None, cache_blocks=None, show_progress=None, sink=None):
    paths = input_paths(files, "FILES")
    bar = progress_bar(show_progress)
    try:
        kw = {} if cache_blocks is None else {"cache_blocks": cache_blocks}
        return read_logs(
            paths, fmt=fmt, mapping=mapping, tz=tz, tokenizer=tokenizer, start=start, progress=bar, sink=sink, **kw
        )
    except LogFormatError as exc:
        raise click.BadParameter(str(exc), param_hint="FILES") from None
    finally:
        if bar is not None:
            bar.close()


def _per_hour(rate_per_s: float) -> str:
    """A rate per hour: '9,240/h', '2.38/h', '—' when unknown (fewer than two requests)."""
    per_h = rate_per_s * 3600
    if per_h != per_h:  # NaN
        return "—"
    return f"{per_h:,.0f}/h" if per_h >= 100 else f"{per_h:.3g}/h"


@click.group()
def logs() -> None:
    """Request logs: prompt-token percentiles, cache share, traffic shape, cold-start exposure."""


@logs.command()
@file_args
@format_option
@map_option
@click.option(
    "--workday",
    default=DEFAULT_WORKDAY,
    show_default=True,
    callback=_workday,
    help="Local working-day window, Mon–Fri (22:00-06:00: a night shift, each weekday evening to the next morning).",
)
@tz_option
@start_option
@prefix_option
@tokenizer_option
@progress_option
@output_option(Shape.OBJECT)
def summarize(files, fmt, mapping, workday, tz, start, cache_blocks, tokenizer, show_progress, as_json) -> None:
    """Summarise FILE… (CSV, JSON Lines, JSON, Parquet; optionally .gz/.zst; directories, globs and
    s3://bucket/prefix/*.parquet too): p50/p90/p95/p99 prompt tokens, cache share, traffic per hour, the
    busiest clock hour and cold-start exposure: the figures the Logs page shows. Public traces (Azure 2023/2024,
    BurstGPT, Mooncake/AIPerf) are recognised by their columns. Files are read through DuckDB; a bad line is named
    (file:line: why) and the rest is read. S3 objects are fetched to a private temporary folder first (credentials
    from the usual AWS sources; an S3-compatible endpoint from AWS_ENDPOINT_URL).

    Example: ttft-planner logs summarize 'logs/*.jsonl.gz' --tz Europe/Berlin --workday 09:00-18:00
    """
    from planner.logs import summarize
    from planner.logs.load import RequestTable, connect

    # The requests go into DuckDB a batch at a time and every figure is computed there (the Logs page's summary):
    # only results come back.
    table = RequestTable(connect())
    res = _read(files, fmt, mapping, tz, tokenizer, start, cache_blocks, show_progress, sink=table)
    s = summarize(table, tz=tz, workday=workday)
    if as_json:
        echo_json(
            {
                **s.to_dict(),
                "formats": res.formats,
                "mapping": res.mapping,
                "n_rejected": res.n_rejected,
                "n_skipped": res.n_skipped,
                "rejected": _rejected_json(res.rejected),
                "tokens_estimated": res.tokens_estimated,
                "token_counter": res.token_counter,
                "notes": res.notes,
            }
        )
        return
    fmt_list = ", ".join(f"{k} ({v})" for k, v in res.formats.items())
    click.echo(f"{s.n:,} request{'' if s.n == 1 else 's'} from {fmt_list}")
    if res.n_rejected:
        click.echo(
            f"{res.n_rejected:,} line{'' if res.n_rejected == 1 else 's'} rejected, first: "
            + "; ".join(str(r) for r in res.rejected[:_SHOWN_REJECTS])
        )
    if res.tokens_estimated:
        click.echo(f"token counts are an {res.token_counter}")
    for note in res.notes:
        click.echo(f"note: {note}")
    when = lambda ms: dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")  # noqa: E731
    click.echo(f"span: {when(s.first_ts_ms)} → {when(s.last_ts_ms)}; times in {tz}")
    for title, pcs in (
        (f"prompt tokens (all, n={s.prompt['p50'].n})", s.prompt),
        (f"prompt tokens (working day {workday} Mon–Fri, n={s.prompt_workday['p50'].n})", s.prompt_workday),
        (f"output tokens (n={s.output['p50'].n})", s.output),
    ):
        cells = "  ".join(f"{k} {present.too_few(present.number(v.value), v.reliable)}" for k, v in pcs.items())
        click.echo(f"{title}: {cells}")
    if s.ttft["p50"].n:
        cells = "  ".join(f"{k} {present.too_few(present.number(v.value), v.reliable)}" for k, v in s.ttft.items())
        click.echo(f"production TTFT ms (n={s.ttft['p50'].n}): {cells}")
    if s.cache_known:
        click.echo(
            f"cached share: {s.cached['token_fraction']:.1%} of prompt tokens, "
            f"{s.cached['request_fraction']:.1%} of requests had a cache hit"
        )
    else:
        click.echo("cached share: — (no request records a cached token: no cache column, or nothing hit)")
    click.echo(f"arrival rate: mean {_per_hour(s.mean_rate_per_s)} over {span_words(s.span_s)}")
    click.echo(f"busiest clock hour: {busiest_hour_words(s)}")
    click.echo("cold-start exposure (one scale-to-zero replica): window → trace / Poisson e^(−λW)")
    for r in s.tables["cold"].records:
        trace, poisson = r["trace_cold_fraction"], r["poisson_cold_fraction"]
        flag = "  ← cold starts in the p95" if trace > P95_COLD_THRESHOLD else ""
        click.echo(f"  {r['window_s']:>6.0f} s  {trace:7.2%}  {'—' if poisson is None else f'{poisson:7.2%}'}{flag}")


@logs.command(name="import")
@file_args
@format_option
@map_option
@tz_option
@start_option
@prefix_option
@click.option("--name", default=None, help="Name of the upload (default: the first file's name).")
@progress_option
@output_option(Shape.OBJECT)
@store_option
def import_(files, fmt, mapping, tz, start, cache_blocks, name, show_progress, as_json, database_url) -> None:
    """Parse FILE|DIR|GLOB… and store the numbers (no prompt text) as one upload; prints its id.

    Every file is read through DuckDB into a table that spills to disk (as `logs summarize` reads it), then stored
    a batch at a time, so a log of any size fits in memory; a bad line is named and the rest stored.
    """
    from planner.logs.load import RequestTable, connect
    from planner.store.audit import record_cli
    from planner.store.logs import save_upload_frames

    con = connect(keep_order=True)  # stored in file order: rows at one instant as the page's frame has them
    try:
        table = RequestTable(con)
        res = _read(files, fmt, mapping, tz, None, start, cache_blocks, show_progress, sink=table)
        engine = open_engine(database_url)
        name = name or next(iter(res.formats), Path(str(files[0])).name)
        upload_id, n = save_upload_frames(
            engine,
            name,
            table.batches(),
            formats=res.formats,
            mapping=res.mapping,
            n_rejected=res.n_rejected,
            tokens_estimated=res.tokens_estimated,
        )
    finally:
        con.close()
    record_cli(engine, "logs.upload", name, f"stored upload {upload_id}: {n:,} requests")
    _say_stored(as_json, upload_id, name, n, res.rejected, res.n_rejected)


def _rejected_json(rejected) -> list[dict]:
    """The first rejected lines, as --json names them (file, line number, why)."""
    return [{"source": r.source, "line_no": r.line_no, "reason": r.reason} for r in rejected[:20]]


def _say_stored(as_json: bool, upload_id: int, name: str, n_requests: int, rejected, n_rejected: int) -> None:
    """What `logs import` stored: its id, requests and rejected lines (the first named), in words or as --json."""
    if as_json:
        echo_json(
            {
                "upload_id": upload_id,
                "name": name,
                "n_requests": n_requests,
                "n_rejected": n_rejected,
                "rejected": _rejected_json(rejected),
            }
        )
        return
    click.echo(f"stored upload {upload_id}: {n_requests:,} requests, {n_rejected:,} rejected")
    if n_rejected:
        click.echo("first rejected: " + "; ".join(str(r) for r in rejected[:_SHOWN_REJECTS]))


@logs.command(name="list")
@store_option
@output_option(Shape.LIST, "upload")
def list_(database_url, as_json) -> None:
    """List stored uploads."""
    from planner.store.logs import list_uploads

    uploads = list_uploads(open_engine(database_url))
    if as_json:
        echo_lines(uploads)
        return
    for u in uploads:
        click.echo(
            f"{u.id}\t{u.name}\t{u.n_requests:,} requests\t{u.n_rejected:,} rejected\t"
            f"{', '.join(set(u.formats.values()))}"
        )


@no_json(CHANGE)
@logs.command()
@click.argument("upload_id", type=int)
@store_option
def delete(upload_id, database_url) -> None:
    """Delete a stored upload and all its rows."""
    from planner.store.audit import record_cli
    from planner.store.logs import UploadNotFound, delete_upload, list_uploads

    engine = open_engine(database_url)
    name = next((u.name for u in list_uploads(engine) if u.id == upload_id), str(upload_id))
    try:
        delete_upload(engine, upload_id)
    except UploadNotFound as exc:
        raise click.BadParameter(str(exc.args[0]), param_hint="UPLOAD_ID") from None
    record_cli(engine, "logs.delete", name, f"deleted upload {upload_id}")
    click.echo(f"deleted upload {upload_id}")


COMMANDS = [logs]
