"""`ttft-planner alerts`: SLO alert rules over the stored probes, and over the production requests live sources read
(add, list, test, remove, evaluate, history)."""

from __future__ import annotations

import time

import click

from planner.alerts.evaluate import evaluate_all
from planner.alerts.notify import (
    WEBHOOK_FORMATS,
    DeliveryError,
    Notice,
    channels_of,
    format_value,
    one_line,
    send,
    shown_target,
)
from planner.alerts.rules import AlertKind, AlertState, Rule, SeriesStatus, Transition, build_rule
from planner.alerts.targets import WORKSHEET_PREFIX, p95_targets
from planner.alerts.words import KIND_WHAT
from planner.cli._common import echo_json, fail, open_engine, rule_type, store_option
from planner.cli._output import CHANGE, Shape, echo_lines, no_json, output_option
from planner.endpoints.registry import EndpointNotFound, get_endpoint
from planner.inputs.env_names import EnvNameError, check_env_name
from planner.inputs.validate import (
    ALERT_CLEAR_MARGIN_PCT,
    ALERT_FOR_MIN,
    ALERT_MIN_N,
    ALERT_THRESHOLD,
    ALERT_WINDOW_MIN,
)
from planner.store import alerts as store
from planner.store import audit

__all__ = ["COMMANDS"]

_KIND_HELP = (
    "p95_over: rolling p95 TTFT (ms) over the window exceeds --threshold or the --interaction target; "
    "error_rate_over: failed ÷ attempts (%) exceeds --threshold; no_success: no successful sample for the "
    "whole window; cold_over: the newest cold reading in the window took longer than --threshold s; "
    "production_p95_over: production p95 TTFT (ms) — your users' requests to the endpoint, read by a live source "
    "(Sources page) — over the window exceeds --threshold or the --interaction target."
)


def _now_ms() -> int:
    return int(time.time() * 1000)


@click.group()
def alerts() -> None:
    """SLO alerts: rules over the stored probe samples, evaluated by the worker, notified by webhook or e-mail.

    A rule fires only after its breach has held for --for-min with at least --min-n samples in the window,
    and resolves only when the value is back below the threshold by --clear-margin-pct (hysteresis). Each
    transition notifies once per channel; a failed delivery is retried with backoff and its error is kept.
    A production_p95_over rule watches the production p95 TTFT instead: your users' requests to each endpoint, as a
    live source read them (see `ttft-planner sources`).
    """


@no_json(CHANGE)
@alerts.command("add")
@click.argument("name")
@click.option(
    "--kind",
    type=click.Choice([k.value for k in AlertKind]),
    default=AlertKind.P95_OVER.value,
    show_default=True,
    help=_KIND_HELP,
)
@click.option("--endpoint", default=None, help="Endpoint name to watch (default: every endpoint).")
@click.option(
    "--interaction",
    default=None,
    help="p95_over, production_p95_over: use this interaction type's p95 target as the threshold (inline, chat, "
    "agent, …).",
)
@click.option(
    "--worksheet",
    default=None,
    help="p95_over, production_p95_over: use this saved worksheet's p95 target (for its interaction type) as the "
    "threshold.",
)
@click.option(
    "--threshold",
    type=rule_type(ALERT_THRESHOLD),
    default=None,
    help="ms for p95_over and production_p95_over, % for error_rate_over, s for cold_over (no_success uses the "
    "window).",
)
@click.option(
    "--window-min",
    type=rule_type(ALERT_WINDOW_MIN),
    default=15.0,
    show_default=True,
    help="Rolling window in minutes.",
)
@click.option(
    "--for-min",
    type=rule_type(ALERT_FOR_MIN),
    default=5.0,
    show_default=True,
    help="Minutes the breach must hold before the rule fires.",
)
@click.option(
    "--min-n",
    type=rule_type(ALERT_MIN_N),
    default=20,
    show_default=True,
    help="Fewest samples (attempts for error_rate_over, production requests for production_p95_over) in the window "
    "for a breach to count.",
)
@click.option(
    "--clear-margin-pct",
    type=rule_type(ALERT_CLEAR_MARGIN_PCT),
    default=10.0,
    show_default=True,
    help="A firing rule resolves once the value is this far below the threshold.",
)
@click.option("--webhook-env", default="", help="NAME of the variable holding the webhook URL (never stored).")
@click.option(
    "--webhook-format",
    type=click.Choice(WEBHOOK_FORMATS),
    default="json",
    show_default=True,
    help="Body of the webhook: generic JSON, Slack or Microsoft Teams.",
)
@click.option("--email", "email_to", default="", help="Comma-separated addresses (SMTP from the SMTP_* settings).")
@store_option
def add_cmd(
    name,
    kind,
    endpoint,
    interaction,
    worksheet,
    threshold,
    window_min,
    for_min,
    min_n,
    clear_margin_pct,
    webhook_env,
    webhook_format,
    email_to,
    database_url,
) -> None:
    """Add a rule NAME."""
    if interaction and worksheet:
        fail("give --interaction or --worksheet, not both", 2)
    try:  # a webhook URL (it holds a token) pasted where its variable's name goes: refused, never echoed
        webhook_env = check_env_name(webhook_env, "--webhook-env", optional=True)
    except EnvNameError as exc:
        fail(str(exc), 2)
    engine = open_engine(database_url)
    endpoint_id = None
    if endpoint:
        try:
            endpoint_id = get_endpoint(engine, endpoint).id
        except EndpointNotFound as exc:
            fail(str(exc.args[0]), 2)
    try:
        rule = build_rule(
            name,
            kind,
            threshold=threshold,
            window_min=window_min,
            for_min=for_min,
            min_n=min_n,
            clear_margin_pct=clear_margin_pct,
            endpoint_id=endpoint_id,
            interaction=interaction or (WORKSHEET_PREFIX + worksheet if worksheet else ""),
            targets_ms=p95_targets(engine),
            webhook_env=webhook_env,
            webhook_format=webhook_format,
            email_to=email_to,
        )
    except ValueError as exc:
        fail(str(exc), 2)
    if not rule.webhook_env and not rule.email_to:
        click.echo("note: no --webhook-env or --email: the rule's state shows on the Alerts page only", err=True)
    try:
        store.add_rule(engine, rule, _now_ms())
    except ValueError as exc:
        fail(str(exc), 2)
    audit.record_cli(
        engine, "alert.write", rule.name, f"created: {rule.kind} > {format_value(rule.kind, rule.threshold)}"
    )
    click.echo(f"added alert rule {rule.name!r}")


def _rule_dict(rule: Rule, series: dict[tuple[int, int, str], SeriesStatus]) -> dict:
    states = [
        {"endpoint_id": e, "vantage": v, "state": str(st.state), "value": st.value, "n": st.n}
        for (r, e, v), st in sorted(series.items())
        if r == rule.id
    ]
    return {
        "name": rule.name,
        "kind": str(rule.kind),
        "what": KIND_WHAT[rule.kind],
        "threshold": rule.threshold,
        "unit": rule.unit,
        "window_s": rule.window_s,
        "for_s": rule.for_s,
        "min_n": rule.min_n,
        "clear_margin": rule.clear_margin,
        "endpoint_id": rule.endpoint_id,
        "interaction": rule.interaction,
        "webhook_env": shown_target("webhook", rule.webhook_env) if rule.webhook_env else rule.webhook_env,
        "webhook_format": rule.webhook_format,
        "email_to": rule.email_to,
        "series": states,
    }


@alerts.command("list")
@output_option(Shape.LIST, "rule")
@store_option
def list_cmd(as_json, database_url) -> None:
    """Rules and the state of each series they watch."""
    engine = open_engine(database_url)
    series = store.series_states(engine)
    rules = store.load_rules(engine)
    if as_json:
        echo_lines(_rule_dict(r, series) for r in rules)
        return
    if not rules:
        click.echo("no alert rules (add one with `ttft-planner alerts add`)")
    for r in rules:
        d = _rule_dict(r, series)
        worst = max(
            (AlertState(s["state"]) for s in d["series"]),
            default=AlertState.OK,
            key=[AlertState.OK, AlertState.PENDING, AlertState.FIRING].index,
        )
        click.echo(
            f"{one_line(r.name)}: {r.kind} > {format_value(r.kind, r.threshold)} ({KIND_WHAT[r.kind]}) over "
            f"{r.window_s / 60:g} min, for {r.for_s / 60:g} min, min n {r.min_n} · {worst} "
            f"({len(d['series'])} series) · channels: "
            f"{', '.join(f'{c} {shown_target(c, t)}' for c, t in channels_of(r)) or 'none'}"
        )


@alerts.command("test")
@click.argument("name")
@output_option(Shape.LIST, "channel")
@store_option
def test_cmd(name, as_json, database_url) -> None:
    """Send a test notification of rule NAME through each of its channels now; exit 1 if one fails."""
    engine = open_engine(database_url)
    rule = store.rule_by_name(engine, name)
    if rule is None:
        fail(f"no alert rule named {name!r}", 2)
    channels = channels_of(rule)
    if not channels:
        fail(f"rule {name!r} has no channel: give it --webhook-env or --email", 2)
    notice = Notice(rule, Transition.FIRING, "test-endpoint", "test", rule.threshold, rule.min_n, _now_ms(), test=True)
    failed = 0
    for channel, target in channels:
        shown = shown_target(channel, target)
        try:
            send(channel, target, notice)
            error = None
        except DeliveryError as exc:  # whatever failed, one line (planner.alerts.notify.send)
            failed += 1
            error = str(exc)
        if as_json:
            echo_json({"channel": channel, "target": shown, "delivered": error is None, "error": error})
        elif error is None:
            click.echo(f"{channel} {shown}: delivered")
        else:
            click.echo(f"{channel} {shown}: failed: {error}", err=True)
    if failed:
        raise SystemExit(1)


@no_json(CHANGE)
@alerts.command("remove")
@click.argument("name")
@store_option
def remove_cmd(name, database_url) -> None:
    """Delete rule NAME with its state and history."""
    engine = open_engine(database_url)
    if not store.remove_rule(engine, name):
        fail(f"no alert rule named {name!r}", 2)
    audit.record_cli(engine, "alert.write", name, "deleted")
    click.echo(f"removed alert rule {name!r}")


@alerts.command("evaluate")
@output_option(Shape.OBJECT)
@store_option
def evaluate_cmd(as_json, database_url) -> None:
    """Evaluate every rule once now and send the notifications that are due (the worker does this on its own); the
    sends run side by side, and the pass ends by its deadline however slowly the receivers answer."""
    engine = open_engine(database_url)
    now = _now_ms()
    result = evaluate_all(engine, now)
    if as_json:
        echo_json(
            {
                "series": result.series,
                "transitions": result.transitions,
                "delivered": result.delivered,
                "failed": result.failed,
                "unfinished": result.unfinished,
            }
        )
        return
    click.echo(f"evaluated {result.series} series")
    for rule, where, transition in result.transitions:
        click.echo(f"{transition}: {rule} on {where}")
    click.echo(f"notifications delivered: {result.delivered}")
    for f in result.failed:
        click.echo(f"delivery failed (will retry unless given up): {f}", err=True)
    if result.unfinished:
        click.echo(
            f"{result.unfinished} notification(s) still sending or not started when the pass's deadline ran out: "
            "what is not delivered is retried by the next pass",
            err=True,
        )


@alerts.command("history")
@click.option(
    "--limit", type=click.IntRange(1, 100_000), default=50, show_default=True, help="The newest transitions shown."
)
@output_option(Shape.LIST, "transition")
@store_option
def history_cmd(limit, as_json, database_url) -> None:
    """The newest firing and resolved transitions, with their numbers."""
    df = store.alert_history(open_engine(database_url), limit)
    if as_json:
        echo_lines(df.to_dict("records"))
        return
    if df.empty:
        click.echo("no alert has fired yet")
    for row in df.itertuples():
        click.echo(f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(row.at_ms / 1000))} UTC {row.message}")


COMMANDS = [alerts]
