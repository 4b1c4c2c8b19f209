"""`ttft-planner sources`: live production sources (the LiteLLM proxy's PostgreSQL, Prometheus, OpenTelemetry
spans), read-only, kept here."""

from __future__ import annotations

import dataclasses
import datetime as dt

import click

from planner.cli._common import echo_json, fail, open_engine, rule_type, store_option
from planner.cli._output import CHANGE, SERVER, Shape, echo_lines, no_json, output_option
from planner.inputs.env_names import EnvNameError, check_env_name, env_name_problem, mask_env_value, shown_env_name
from planner.inputs.urls import UrlError, check_url, redact_url
from planner.inputs.validate import PROMETHEUS_HOURS
from planner.sources import actions
from planner.sources.prometheus import HOUR_MS, PROFILES, PrometheusError, ttft_by_hour
from planner.sources.sync import DEFAULT_PAGE_ROWS
from planner.store.source_hours import production_hours
from planner.store.sources import (
    HourTtft,
    SourceInfo,
    SourceKind,
    SourceNotFound,
    add_source,
    get_source,
    list_sources,
    remove_source,
)

__all__ = ["COMMANDS"]


profile_option = click.option(
    "--profile",
    type=click.Choice(sorted(PROFILES)),
    default="vllm",
    show_default=True,
    help="Prometheus: whose metric names to read (the engine exporting them).",
)


def _when(ms: int | None) -> str:
    return "—" if ms is None else dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _source(engine, name: str, *, to_connect: bool = False):
    """Source `name`; with `to_connect`, refused (never shown) when what it keeps as its variable is no variable's
    name (kept by a version that did not check: most likely the secret itself)."""
    try:
        src = get_source(engine, name)
    except SourceNotFound as exc:
        raise click.BadParameter(str(exc), param_hint="NAME") from None
    if to_connect and src.secret_ref and env_name_problem(src.secret_ref, "") is not None:
        fail(f"{name}: {shown_env_name(src.secret_ref)}")
    return src


@click.group()
def sources() -> None:
    """Live production sources: TTFT and traffic read, read-only, from where they already live.

    \b
    Example (the LiteLLM proxy's PostgreSQL; its URL stays in the environment, never in the store):
      export LITELLM_DSN=postgresql://reader@db.internal/litellm
      ttft-planner sources add prod-proxy --litellm-dsn-env LITELLM_DSN
      ttft-planner sources test prod-proxy && ttft-planner sources sync prod-proxy
    """


@no_json(CHANGE)
@sources.command()
@click.argument("name")
@click.option(
    "--litellm-dsn-env",
    "dsn_env",
    metavar="VAR",
    help="The NAME of the environment variable holding the LiteLLM proxy's PostgreSQL URL (a read-only role is "
    "enough); a URL given here is refused, never stored or shown.",
)
@click.option(
    "--otlp-token-env",
    "token_env",
    metavar="VAR",
    help="An OpenTelemetry source instead: the environment variable holding the bearer token its exporters send "
    "to `ttft-planner sources receive NAME`.",
)
@click.option(
    "--prometheus-url",
    "prom_url",
    metavar="URL",
    help="A Prometheus source instead: its URL (without a password; a bearer token comes from --prometheus-token-env).",
)
@profile_option
@click.option("--model", default=None, help="Prometheus: only this model (the profile's model label).")
@click.option(
    "--metric", "prom_metric", default=None, help="Prometheus: a TTFT histogram of another name (without _bucket)."
)
@click.option(
    "--prometheus-token-env",
    "prom_token_env",
    metavar="VAR",
    default="",
    help="Prometheus: the variable holding a bearer token, where the server wants one.",
)
@store_option
def add(
    name: str,
    dsn_env: str | None,
    token_env: str | None,
    prom_url: str | None,
    profile: str,
    model: str | None,
    prom_metric: str | None,
    prom_token_env: str,
    database_url: str | None,
) -> None:
    """Add a source NAME: the LiteLLM proxy's database (its URL read from $VAR at each sync), an OpenTelemetry
    receiver's (spans pushed to it, with the token in $VAR), or Prometheus scraping the engines (read per hour)."""
    if sum(v is not None for v in (dsn_env, token_env, prom_url)) != 1:
        raise click.UsageError("give one of --litellm-dsn-env VAR, --otlp-token-env VAR or --prometheus-url URL")
    try:  # a secret pasted where its variable's name goes is refused before anything is opened, and never echoed
        dsn_env = None if dsn_env is None else check_env_name(dsn_env, "--litellm-dsn-env")
        token_env = None if token_env is None else check_env_name(token_env, "--otlp-token-env")
        prom_token_env = check_env_name(prom_token_env, "--prometheus-token-env", optional=True)
    except EnvNameError as exc:
        raise click.UsageError(str(exc)) from None
    engine = open_engine(database_url)
    if prom_url is not None:
        try:
            url = check_url(prom_url, what="the Prometheus URL")
            add_source(
                engine,
                name,
                SourceKind.PROMETHEUS,
                prom_token_env,
                url=url,
                profile=profile,
                model_filter=model,
                metric=prom_metric,
            )
        except (UrlError, ValueError) as exc:
            raise click.BadParameter(str(exc)) from None
        token = f", bearer token from ${prom_token_env}" if prom_token_env else ""
        click.echo(f"added source {name} (prometheus {url}, {profile}, model {model or 'every model'}{token})")
        return
    kind, var = (SourceKind.LITELLM, dsn_env) if dsn_env else (SourceKind.OTLP, token_env)
    assert var is not None
    try:
        add_source(engine, name, kind, var)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    what = "URL" if kind is SourceKind.LITELLM else "bearer token"
    click.echo(f"added source {name} ({kind}, {what} from ${var})")


@no_json(SERVER)
@sources.command()
@click.argument("name")
@click.option("--port", type=click.IntRange(1, 65535), default=4318, show_default=True, help="OTLP/HTTP's port.")
@click.option(
    "--address", default="127.0.0.1", show_default=True, help="Listen address (0.0.0.0 for exporters elsewhere)."
)
@store_option
def receive(name: str, port: int, address: str, database_url: str | None) -> None:
    """Receive OpenTelemetry GenAI telemetry for source NAME on http://ADDRESS:PORT (OTLP/HTTP, protobuf or JSON,
    the bearer token from the source's variable) until Ctrl-C: spans at /v1/traces, each model call stored as a
    request; metrics at /v1/metrics, the gen_ai.server.time_to_first_token histogram added up per hour and model."""
    import os

    import uvicorn

    from planner.sources.otlp import receiver_app

    engine = open_engine(database_url)
    src = _source(engine, name, to_connect=True)
    if src.kind is not SourceKind.OTLP:
        raise click.BadParameter(f"{name} is a {src.kind} source, not an OpenTelemetry one", param_hint="NAME")
    token = os.environ.get(src.secret_ref, "")
    if not token:
        fail(f"${src.secret_ref} is not set: it should hold the bearer token the exporters send")
    base = f"http://{address}:{port}"
    click.echo(
        f"receiving OTLP spans at {base}/v1/traces and TTFT metrics at {base}/v1/metrics for {name} (Ctrl-C stops)"
    )
    uvicorn.run(receiver_app(engine, src.id, token), host=address, port=port, log_level="warning", access_log=False)


@sources.command(name="list")
@output_option(Shape.LIST, "source")
@store_option
def list_(as_json: bool, database_url: str | None) -> None:
    """The sources, their sync state and requests kept."""
    rows = [_shown(r) for r in list_sources(open_engine(database_url))]
    if as_json:
        echo_lines({**r.__dict__, "kind": str(r.kind)} for r in rows)
        return
    if not rows:
        click.echo("no sources; add one with `ttft-planner sources add NAME --litellm-dsn-env VAR`")
    for r in rows:
        state = f"error: {r.last_error}" if r.last_error else f"synced {_when(r.synced_at_ms)}"
        where = r.url if r.kind is SourceKind.PROMETHEUS else shown_env_name(r.secret_ref)
        click.echo(f"{r.name}  {r.kind}  {where}  {r.n_requests:,} requests up to {_when(r.watermark_ms)}  {state}")


def _shown(src: SourceInfo) -> SourceInfo:
    """`src` as it may be printed: its variable's name (a stored value that is no name is hidden), its URL without
    credentials, its last error with whatever its variable holds masked (rows kept by older versions)."""
    hidden = src.secret_ref and env_name_problem(src.secret_ref, "") is not None
    return dataclasses.replace(
        src,
        secret_ref=shown_env_name(src.secret_ref) if hidden else src.secret_ref,
        url=redact_url(src.url) if src.url else src.url,
        last_error=mask_env_value(src.last_error, src.secret_ref) if src.last_error else src.last_error,
    )


def _said(outcome) -> None:
    """Print what a Test or a Sync now found (planner.sources.actions), or fail with its first sentence."""
    if not outcome.ok:
        fail(outcome.first)
    for line in outcome.lines:
        click.echo(line.text)


@sources.command()
@click.argument("name")
@output_option(Shape.OBJECT)
@store_option
def test(name: str, as_json: bool, database_url: str | None) -> None:
    """Connect to NAME read-only and say what it holds (rows, first and last request); nothing is stored."""
    engine = open_engine(database_url)
    outcome = actions.test_source(engine, _source(engine, name), when=_when)
    if as_json and outcome.ok:
        echo_json({"source": name, **outcome.facts})
        return
    _said(outcome)


@sources.command()
@click.argument("name")
@click.option(
    "--page-rows",
    type=click.IntRange(1, 1_000_000),
    default=DEFAULT_PAGE_ROWS,
    show_default=True,
    help="Requests read (and stored) per transaction.",
)
@output_option(Shape.OBJECT)
@store_option
def sync(name: str, page_rows: int, as_json: bool, database_url: str | None) -> None:
    """Read NAME's new requests into the store (from its watermark; restart-safe), then print production TTFT."""
    engine = open_engine(database_url)
    src = _source(engine, name)
    outcome = actions.sync_now(engine, src, when=_when, page_rows=page_rows)
    if not outcome.ok:
        fail(outcome.first)
    hours = production_hours(engine, src.id) if src.kind is SourceKind.PROMETHEUS else None
    if as_json:
        echo_json(outcome.facts if hours is None else {**outcome.facts, "hours": [h.__dict__ for h in hours]})
        return
    if hours is not None:
        _print_hours(hours, lead=outcome.first)
        return
    _said(outcome)


@sources.command()
@click.argument("url")
@profile_option
@click.option("--metric", default=None, help="A TTFT histogram of another name (without _bucket).")
@click.option("--model", default=None, help="Only this model (the profile's model label).")
@click.option(
    "--hours", type=rule_type(PROMETHEUS_HOURS), default=24, show_default=True, help="The hours up to now to read."
)
@output_option(Shape.LIST, "hour")
def prometheus(url: str, profile: str, metric: str | None, model: str | None, hours: int, as_json: bool) -> None:
    """Production TTFT p50/p95 per hour from the engines' histograms in Prometheus at URL (its HTTP API),
    with requests, the queue-time p95 (the worksheet's queueing segment) and the mean waiting requests per hour.

    \b
    Example: ttft-planner sources prometheus http://prometheus:9090 --model qwen2.5-coder-32b --hours 48
    """
    import time

    now_ms = int(time.time() * 1000)
    try:
        got = ttft_by_hour(url, now_ms - hours * HOUR_MS, now_ms, profile=profile, metric=metric, model=model)
    except PrometheusError as exc:
        fail(str(exc))
    if as_json:
        echo_lines(h.__dict__ for h in got)
        return
    _print_hours(got)


def _print_hours(hours: list[HourTtft], lead: str = "") -> None:
    if lead:
        click.echo(lead)
    click.echo("hour (UTC)            requests   TTFT p50   TTFT p95  queue p95  waiting")
    for h in hours:
        p50, p95, qp95 = ("—" if v is None else f"{v:,.0f} ms" for v in (h.p50_ms, h.p95_ms, h.queue_p95_ms))
        waiting = "—" if h.waiting_mean is None else f"{h.waiting_mean:.1f}"
        click.echo(f"{_when(h.hour_start_ms)[:16]}  {h.requests:>10,.0f}  {p50:>9}  {p95:>9}  {qp95:>9}  {waiting:>7}")


@sources.command()
@click.argument("name")
@click.option(
    "--hours", type=rule_type(PROMETHEUS_HOURS), default=24, show_default=True, help="The hours up to the newest."
)
@output_option(Shape.LIST, "hour")
@store_option
def hours(name: str, hours: int, as_json: bool, database_url: str | None) -> None:
    """Production TTFT per hour as stored for NAME (any kind): requests and TTFT p50/p95 per hour with requests,
    over the HOURS hours up to its newest request."""
    engine = open_engine(database_url)
    got = production_hours(engine, _source(engine, name).id, hours)
    if as_json:
        echo_lines(h.__dict__ for h in got)
        return
    if not got:
        click.echo(f"{name}: no requests stored yet (`ttft-planner sources sync {name}`, or the receiver)")
        return
    _print_hours(got)


@no_json(CHANGE)
@sources.command()
@click.argument("name")
@store_option
def remove(name: str, database_url: str | None) -> None:
    """Remove source NAME and the requests read from it (the source's own database is not touched)."""
    engine = open_engine(database_url)
    try:
        remove_source(engine, name)
    except SourceNotFound as exc:
        raise click.BadParameter(str(exc), param_hint="NAME") from None
    click.echo(f"removed source {name}")


COMMANDS = [sources]
