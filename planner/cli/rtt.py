"""`ttft-planner rtt` (server-side RTT probe)
and `ttft-planner regions add|list|remove` (the catalog and custom targets)."""

from __future__ import annotations

from typing import Any

import click

from planner import present
from planner.cli._common import echo_json, fail, open_engine, rule_type, store_option
from planner.cli._output import CHANGE, Shape, echo_lines, no_json, output_option
from planner.cli._renamed import renamed_option
from planner.inputs.urls import UrlError, check_url, redact_url
from planner.inputs.validate import LATITUDE_DEG, LONGITUDE_DEG, RTT_INTERVAL_S, RTT_SAMPLES
from planner.probes.rtt import RTT_ERROR_CLASSES, VANTAGE_ENV, RttResult, default_vantage, probe_rtt_many
from planner.probes.rtt_rank import ranked, row_note
from planner.regions.catalog import CatalogError, catalog, find_region, merge_custom, parse_target
from planner.settings import vantage_name
from planner.store.audit import record_cli
from planner.store.rtt import (
    TargetExists,
    TargetNotFound,
    add_target,
    insert_rtt_samples,
    list_targets,
    remove_target,
)

__all__ = ["COMMANDS"]


def _print_table(results: list[RttResult], anycast_ids: set[str]) -> None:
    click.echo(f"{'region':<30} {'min':>7} {'median':>7} {'p90':>7} {'n':>3} {'dns':>6} {'tls':>7} {'ttfb':>7}  note")
    for r in ranked(results, median_ms=lambda r: r.stats.median_ms, label=lambda r: r.region_id):
        s = r.stats
        note = row_note(r.error_class, r.error_detail, anycast=r.region_id in anycast_ids, proxy=r.proxy)
        click.echo(
            f"{r.region_id[:30]:<30} {present.number(s.min_ms, 1):>7} {present.number(s.median_ms, 1):>7} "
            f"{present.number(s.p90_ms, 1):>7} {s.n:>3} {present.number(r.dns_ms, 1):>6} "
            f"{present.number(r.tls_ms, 1):>7} {present.number(r.ttfb_ms, 1):>7}  {note}"
        )
    click.echo("ms; min ≈ path RTT (TCP connect = 1 round trip, first connect dropped); p90 needs n ≥ 10.")
    notes = sorted({n for r in results for n in r.notes if not n.startswith("TCP connect figures are to the proxy")})
    for n in notes:
        click.echo(f"note: {n}")


@renamed_option("--timeout", "--timeout-s")
@click.command()
@click.option(
    "--region",
    "region_ids",
    multiple=True,
    metavar="ID",
    help="Catalog or custom region id (repeatable); see `ttft-planner regions list`.",
)
@click.option(
    "--url", "urls", multiple=True, metavar="URL", help="A URL (https://host/path) or host:port to probe (repeatable)."
)
@click.option("--all", "all_catalog", is_flag=True, help="Every catalog region plus custom targets.")
@click.option(
    "-n",
    "n",
    type=rule_type(RTT_SAMPLES),
    default=10,
    show_default=True,
    help="TCP connects kept per target (one more is made and dropped).",
)
@click.option(
    "--timeout-s",
    "timeout_s",
    type=click.FloatRange(min=0.05, max=120),
    default=3.0,
    show_default=True,
    help="Per socket operation (s).",
)
@click.option(
    "--proxy",
    default=None,
    metavar="URL",
    help="Measure through this http://host:port CONNECT proxy (default: direct; HTTPS_PROXY is ignored).",
)
@click.option(
    "--vantage",
    default=None,
    envvar=VANTAGE_ENV,
    show_envvar=True,
    help="Label of the machine measuring (default: none — the default vantage, as the worker's).",
)
@click.option(
    "--concurrency", type=click.IntRange(min=1, max=32), default=4, show_default=True, help="Targets probed at once."
)
@click.option(
    "--store/--no-store",
    "store",
    default=False,
    help="Store the samples in the database (the Regions page shows them).",
)
@store_option
@output_option(Shape.OBJECT)
def rtt(region_ids, urls, all_catalog, n, timeout_s, proxy, vantage, concurrency, store, database_url, as_json) -> None:
    """Round-trip time from this machine to regions: DNS (timed once), n TCP connects, TLS, one HTTPS TTFB.

    Reports min (≈ path RTT), median, p90 and spread per target. Anycast front doors measure
    the nearest edge, not the region. Examples:

      ttft-planner rtt --region aws-us-east-1 --region aws-eu-west-1

      ttft-planner rtt --url https://api.example.com/health -n 20 --json
    """
    if not (region_ids or urls or all_catalog):
        raise click.UsageError("give --region ID, --url URL or --all (see `ttft-planner regions list`)")
    if proxy is not None:
        try:  # a proxy may need user:password@ — accepted, never printed (redact_url)
            proxy = check_url(proxy, what="--proxy", schemes=("http",), allow_credentials=True)
        except UrlError as exc:
            raise click.BadParameter(
                f"{exc} (give an http://host:port CONNECT proxy URL)", param_hint="--proxy"
            ) from None
    vantage = vantage or default_vantage()
    engine = open_engine(database_url) if (store or region_ids or all_catalog) else None
    regions = merge_custom(catalog(), list_targets(engine)) if engine is not None else catalog()
    pairs: list[tuple[str, str]] = []
    if all_catalog:
        pairs += [(r.id, r.probe_url) for r in regions]
    for rid in region_ids:
        try:
            r = find_region(rid, regions)
        except KeyError as exc:
            raise click.BadParameter(exc.args[0], param_hint="--region") from None
        pairs.append((r.id, r.probe_url))
    for u in urls:
        try:
            t = parse_target(u)
        except CatalogError as exc:
            raise click.BadParameter(str(exc), param_hint="--url") from None
        pairs.append((t.host if t.scheme != "tcp" else str(t), u))
    results = probe_rtt_many(
        list(dict.fromkeys(pairs)), n=n, vantage=vantage, timeout_s=timeout_s, proxy=proxy, concurrency=concurrency
    )
    if store and engine is not None:
        insert_rtt_samples(engine, [rec for r in results for rec in r.records()])
    if as_json:
        echo_json(
            {
                "vantage": vantage,
                "n": n,
                "stored": bool(store),
                "results": [r.to_dict() for r in results],
                "error_classes": RTT_ERROR_CLASSES,
            }
        )
    else:
        route = "direct" if proxy is None else "via proxy " + redact_url(proxy)
        click.echo(f"RTT from {vantage_name(vantage)} ({route}):")
        _print_table(results, {r.id for r in regions if r.anycast})
    if results and all(not r.ok for r in results):
        raise SystemExit(1)


@click.group()
def regions() -> None:
    """The region catalog (assets/regions.toml) and your own RTT targets."""


@regions.command("list")
@click.option("--provider", default=None, help="Only this provider (case-insensitive substring).")
@store_option
@output_option(Shape.LIST, "region")
def regions_list(provider, database_url, as_json) -> None:
    """Catalog regions and custom targets, with probe URL, anycast flag and scheduling."""
    engine = open_engine(database_url)
    rows = {r.region_id: r for r in list_targets(engine)}
    items = merge_custom(catalog(), rows.values())
    if provider:
        items = tuple(r for r in items if provider.lower() in r.provider.lower())
    out: list[dict[str, Any]] = []
    for r in items:
        row = rows.get(r.id)
        out.append(
            {
                "id": r.id,
                "provider": r.provider,
                "name": r.name,
                "city": r.city,
                "lat": r.lat,
                "lon": r.lon,
                "probe_url": row.target if row else r.probe_url,
                "anycast": r.anycast,
                "custom": r.custom,
                "scheduled": bool(row and row.enabled),
                "interval_s": row.interval_s if row else None,
                "source": r.source,
                "as_of": r.as_of,
            }
        )
    if as_json:
        echo_lines(out)
        return
    for d in out:
        flags = " ".join(
            f
            for f, on in (
                ("anycast", d["anycast"]),
                ("custom", d["custom"]),
                (f"every {d['interval_s']:g}s" if d["scheduled"] else "", d["scheduled"]),
            )
            if on
        )
        click.echo(f"{d['id']:<36} {d['provider']:<14} {d['name'][:34]:<34} {d['probe_url']}  {flags}".rstrip())
    click.echo(f"{len(out)} regions. Anycast entries measure the nearest edge, not the serving region.")


@renamed_option("--interval", "--interval-s")
@no_json(CHANGE)
@regions.command("add")
@click.argument("region_id")
@click.argument("target", required=False)
@click.option("--name", default="", help="Display name (default: the id).")
@click.option("--provider", default="custom", show_default=True, help="Provider label (the map's colour).")
@click.option("--city", default="", help="City shown on the map and in the list.")
@click.option("--lat", type=rule_type(LATITUDE_DEG), default=None, help="Latitude (degrees) for the map.")
@click.option("--lon", type=rule_type(LONGITUDE_DEG), default=None, help="Longitude (degrees) for the map.")
@click.option("--anycast", is_flag=True, help="The host is a global front door (measures the edge).")
@click.option(
    "--interval-s",
    "interval_s",
    type=rule_type(RTT_INTERVAL_S),
    default=300,
    show_default=True,
    help="Seconds between scheduled probes.",
)
@click.option(
    "--schedule/--no-schedule", default=True, show_default=True, help="Let the worker probe it every --interval-s."
)
@click.option("--vantage", default="", help="Only the worker with this vantage probes it (default: every worker).")
@store_option
def regions_add(
    region_id, target, name, provider, city, lat, lon, anycast, interval_s, schedule, vantage, database_url
) -> None:
    """Add a custom target (ID plus URL or host:port), or schedule a catalog region (ID alone).

    Examples: ttft-planner regions add acme-eu https://eu.api.acme.dev/health --lat 50.1 --lon 8.7

              ttft-planner regions add aws-eu-west-1 --interval-s 600
    """
    if (lat is None) != (lon is None):
        raise click.UsageError("give --lat and --lon together (or neither)")
    known = {r.id: r for r in catalog()}
    if target is None:
        if region_id not in known:
            raise click.UsageError(
                f"{region_id!r} is not a catalog region: give a TARGET (URL or host:port) for a custom one"
            )
        r = known[region_id]
        target, name, provider, city, lat, lon, anycast = (
            r.probe_url,
            r.name,
            r.provider,
            r.city,
            r.lat,
            r.lon,
            r.anycast,
        )
    try:
        parse_target(target)
    except CatalogError as exc:
        raise click.BadParameter(str(exc), param_hint="TARGET") from None
    engine = open_engine(database_url)
    try:
        row = add_target(
            engine,
            region_id,
            target,
            name=name,
            provider=provider,
            city=city,
            lat=lat,
            lon=lon,
            anycast=anycast,
            interval_s=interval_s,
            enabled=schedule,
            vantage=vantage,
        )
    except (TargetExists, ValueError) as exc:
        raise click.BadParameter(str(exc), param_hint="REGION_ID") from None
    when = f"probed by the worker every {row.interval_s:g} s" if row.enabled else "not scheduled"
    record_cli(engine, "region.write", row.region_id, f"added RTT target {redact_url(row.target)} ({when})")
    click.echo(f"added {row.region_id} → {row.target} ({when})")


@no_json(CHANGE)
@regions.command("remove")
@click.argument("region_id")
@store_option
def regions_remove(region_id, database_url) -> None:
    """Remove a custom target or stop scheduling a catalog region (its samples stay as history)."""
    engine = open_engine(database_url)
    try:
        remove_target(engine, region_id)
    except TargetNotFound as exc:
        fail(exc.args[0], code=2)
    record_cli(engine, "region.write", region_id, "removed RTT target")
    click.echo(f"removed {region_id}")


COMMANDS = [rtt, regions]
