"""`ttft-planner endpoints add|list|edit|remove|import|export`: the endpoint registry from the shell."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import click

from planner.cli._common import echo_json, fail, open_engine, store_option
from planner.cli._output import CHANGE, EXPORT, Shape, no_json, output_option
from planner.endpoints.providers import (
    CatalogError,
    catalog,
    endpoint_fields,
    find_provider,
    parse_spec,
)
from planner.endpoints.registry import (
    EDITABLE_FIELDS,
    EndpointError,
    EndpointNotFound,
    add_endpoint,
    edit_endpoint,
    export_toml,
    import_toml,
    key_status,
    key_status_for,
    list_endpoints,
    remove_endpoint,
)
from planner.probes.protocols import PROTOCOLS
from planner.store.audit import record_cli

__all__ = ["COMMANDS", "MAX_IMPORT_BYTES"]

MAX_IMPORT_BYTES = 16 << 20  # an endpoints file holds ~300 bytes an endpoint: one this large is something else


def _field_options(required: bool):
    """Click options for every editable field (--base-url, --interval-s, …)."""
    helps = {
        "name": "Unique name.",
        "provider": "Provider label.",
        "region": "Region label.",
        "protocol": " | ".join(PROTOCOLS) + ".",
        "base_url": "http(s) base URL, e.g. https://api.example.com/v1.",
        "model": "Model name sent in requests.",
        "api_key_env": "NAME of the env var holding the API key (never the key).",
        "interval_s": "Probe interval (s); minimum 10 s ($TTFT_PLANNER_MIN_INTERVAL_S lowers it for tests).",
        "timeout_s": "Probe timeout (s), shorter than the interval.",
        "prompt_tokens": "Prompt length (tokens).",
        "max_tokens": "max_tokens of each probe.",
        "connection_policy": "fresh | keep-alive.",
        "scale_down_window_s": "The provider's idle scale-down window (s), if known.",
        "enabled": "Probe it (true/false).",
        "vantage": "Only workers with this --vantage probe it ('' = any).",
    }

    def deco(f):
        for name in reversed(list(EDITABLE_FIELDS)):
            if name == "name":
                continue
            typ = EDITABLE_FIELDS[name][0]
            flag = "--" + name.replace("_", "-")
            ctype = {bool: click.BOOL, float: click.FLOAT, int: click.INT}.get(typ, click.STRING)
            f = click.option(
                flag,
                name,
                type=ctype,
                default=None,
                required=required and name in ("base_url", "model"),
                help=helps[name],
            )(f)
        return f

    return deco


def _raise_bad(exc: EndpointError) -> None:
    hint = (
        "--" + exc.field.replace("_", "-")
        if exc.field and exc.field != "name"
        else ("NAME" if exc.field == "name" else None)
    )
    raise click.BadParameter(str(exc), param_hint=hint)


@click.group()
def endpoints() -> None:
    """The endpoints the worker probes (name, URL, model, key env var, interval, …)."""


def _from_catalog(spec: str, params: tuple[str, ...]) -> dict[str, str]:
    """Endpoint fields from a catalog spec PROVIDER:MODEL[@REGION] and --param NAME=VALUE pairs."""
    pairs = {}
    for text in params:
        name, eq, value = text.partition("=")
        if not eq or not name.strip():
            raise click.BadParameter(f"expected NAME=VALUE, got {text!r}", param_hint="--param")
        pairs[name.strip()] = value.strip()
    try:
        key, model, region = parse_spec(spec)
        return endpoint_fields(find_provider(key), model, region, pairs)
    except CatalogError as exc:
        raise click.BadParameter(str(exc), param_hint="--from") from None


@no_json(CHANGE)
@endpoints.command("add")
@click.argument("name", required=False)
@click.option(
    "--from",
    "from_spec",
    metavar="PROVIDER:MODEL[@REGION]",
    default=None,
    help="Fill every field from assets/providers.toml (e.g. bedrock:amazon.nova-lite-v1:0@eu-central-1); "
    "other options override it. `endpoints catalog` lists the rows.",
)
@click.option(
    "--param",
    "params",
    multiple=True,
    metavar="NAME=VALUE",
    help="A catalog base-URL value (Vertex project, Azure resource, self-hosted host); repeatable.",
)
@_field_options(required=False)
@store_option
def add_cmd(name, from_spec, params, database_url, **fields) -> None:
    """Add an endpoint. Example: ttft-planner endpoints add eu-llama --base-url https://api.example.com/v1
    --model llama-3.1-8b --api-key-env EXAMPLE_API_KEY --interval-s 60, or from the provider catalog:
    ttft-planner endpoints add --from bedrock:amazon.nova-lite-v1:0@eu-central-1"""
    given = {k: v for k, v in fields.items() if v is not None}
    if from_spec:
        given = {**_from_catalog(from_spec, params), **given}
    elif params:
        raise click.UsageError("--param only goes with --from")
    else:
        for opt in ("base_url", "model"):
            if opt not in given:
                raise click.UsageError(f"Missing option '--{opt.replace('_', '-')}' (or use --from PROVIDER:MODEL)")
    name = name or given.pop("name", None)
    given.pop("name", None)
    if not name:
        raise click.UsageError("Missing argument 'NAME' (or use --from, which names the endpoint)")
    engine = open_engine(database_url)
    try:
        row = add_endpoint(engine, {"name": name, **given})
    except EndpointError as exc:
        _raise_bad(exc)
    record_cli(engine, "endpoint.write", row.name, f"created: {row.protocol} {row.model}")
    click.echo(
        f"added {row.name} ({row.base_url}, model {row.model}, every {row.interval_s:g} s); key: {key_status(row)}"
    )


@no_json(CHANGE)
@endpoints.command("edit")
@click.argument("name")
@click.option("--rename", default=None, help="New name.")
@_field_options(required=False)
@store_option
def edit_cmd(name, rename, database_url, **fields) -> None:
    """Change fields of an endpoint (only the options given)."""
    engine = open_engine(database_url)
    changes = {k: v for k, v in fields.items() if v is not None}
    if rename:
        changes["name"] = rename
    if not changes:
        raise click.UsageError("nothing to change: give at least one option, e.g. --interval-s 120")
    try:
        row = edit_endpoint(engine, name, changes)
    except EndpointNotFound as exc:
        raise click.BadParameter(str(exc), param_hint="NAME") from None
    except EndpointError as exc:
        _raise_bad(exc)
    renamed = f"; renamed from {name}" if row.name != name else ""
    record_cli(engine, "endpoint.write", row.name, f"changed: {', '.join(sorted(changes))}{renamed}")
    click.echo(f"updated {row.name}")


@no_json(CHANGE)
@endpoints.command("remove")
@click.argument("name")
@click.option("--yes", is_flag=True, help="Do not ask; its samples are deleted too.")
@store_option
def remove_cmd(name, yes, database_url) -> None:
    """Remove an endpoint and its samples."""
    engine = open_engine(database_url)
    if not yes:
        click.confirm(f"remove {name} and all its samples?", abort=True)
    try:
        remove_endpoint(engine, name)
    except EndpointNotFound as exc:
        raise click.BadParameter(str(exc), param_hint="NAME") from None
    record_cli(engine, "endpoint.write", name, "deleted with its samples")
    click.echo(f"removed {name}")


@endpoints.command("list")
@output_option(Shape.LIST, "endpoint")
@store_option
def list_cmd(as_json, database_url) -> None:
    """List endpoints with their key status ("key missing" when the env var is not set here)."""
    engine = open_engine(database_url)
    rows = list_endpoints(engine)
    for r in rows:
        rec = {f: getattr(r, f) for f in EDITABLE_FIELDS} | {"simulated": r.simulated, "key": key_status(r)}
        if as_json:
            echo_json(rec)
        else:
            state = "enabled" if r.enabled else "disabled"
            click.echo(
                f"{r.name:<24} {r.base_url:<40} {r.model:<20} every {r.interval_s:g} s  {state}  {rec['key']}"
                + (f"  vantage={r.vantage}" if r.vantage else "")
            )
    if not rows and not as_json:
        click.echo("no endpoints yet: ttft-planner endpoints add NAME --base-url URL --model MODEL")


@no_json(EXPORT)
@endpoints.command("export")
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, writable=True), default="-", help="File (default stdout)."
)
@store_option
def export_cmd(output, database_url) -> None:
    """Write every endpoint as TOML ([[endpoint]] tables) — keep the list in git. Env var names only, never keys."""
    text = export_toml(open_engine(database_url))
    if output == "-":
        click.echo(text, nl=False)
    else:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)
        click.echo(f"wrote {output}", err=True)


def _read_capped(path: str) -> bytes:
    """The bytes of `path` ("-": stdin), at most MAX_IMPORT_BYTES. ValueError for a path that is not a regular file
    (a named pipe nobody writes would be waited on forever, /dev/zero read without end) or one over the cap."""
    if path == "-":
        data = sys.stdin.buffer.read(MAX_IMPORT_BYTES + 1)
    else:
        if not stat.S_ISREG(os.stat(path).st_mode):  # stat never waits on a pipe; open would
            raise ValueError("not a regular file (a pipe, a device or a folder): save the endpoints to a file")
        with open(path, "rb") as fh:
            data = fh.read(MAX_IMPORT_BYTES + 1)
    if len(data) > MAX_IMPORT_BYTES:
        raise ValueError(f"more than {MAX_IMPORT_BYTES >> 20} MB: not an endpoints file")
    return data


@endpoints.command("import")
@click.argument("path", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--no-update", is_flag=True, help="Reject records whose name exists instead of updating them.")
@output_option(Shape.OBJECT)
@store_option
def import_cmd(path, no_update, as_json, database_url) -> None:
    """Add or update endpoints from a TOML file of [[endpoint]] tables, at most 16 MB (exit 1 if any record was
    rejected)."""
    engine = open_engine(database_url)
    try:
        data = _read_capped(path)
        text = data.decode("utf-8")
    except OSError as exc:
        raise click.BadParameter(f"cannot read {path}: {exc.strerror}", param_hint="PATH") from None
    except UnicodeDecodeError as exc:
        raise click.BadParameter(
            f"{path} is not UTF-8 text (byte {exc.start:,} is {data[exc.start]:#04x}): is it a binary file?",
            param_hint="PATH",
        ) from None
    except ValueError as exc:  # not a regular file, or larger than an endpoints file is
        raise click.BadParameter(f"{path}: {exc}", param_hint="PATH") from None
    try:
        res = import_toml(engine, text, update=not no_update)
    except EndpointError as exc:
        raise click.BadParameter(f"{path}: {exc}", param_hint="PATH") from None
    if res.added or res.updated:
        record_cli(
            engine,
            "endpoint.write",
            "stdin" if path == "-" else Path(path).name,
            f"imported: added {len(res.added)} ({', '.join(res.added) or '-'}), "
            f"updated {len(res.updated)} ({', '.join(res.updated) or '-'}), rejected {len(res.rejected)}",
        )
    if as_json:
        echo_json(
            {
                "added": list(res.added),
                "updated": list(res.updated),
                "rejected": [{"record": i, "name": name, "reason": msg} for i, name, msg in res.rejected],
            }
        )
    else:
        click.echo(f"added {len(res.added)}, updated {len(res.updated)}, rejected {len(res.rejected)}")
        for i, name, msg in res.rejected:
            click.echo(f"  {path}: endpoint #{i} {name!r}: {msg}", err=True)
    if res.rejected:
        fail(f"{len(res.rejected)} record(s) rejected")


@endpoints.command("catalog")
@output_option(Shape.LIST, "provider")
def catalog_cmd(as_json) -> None:
    """The provider catalog (assets/providers.toml): what `endpoints add --from KEY:MODEL[@REGION]` can fill,
    with each row's key variable "key set"/"key missing" here (its name only, never a value)."""
    for p in catalog():
        key = key_status_for(p.key_env, p.protocol)
        if as_json:
            echo_json(
                {
                    "key": p.key,
                    "provider": p.provider,
                    "protocol": p.protocol,
                    "key_env": p.key_env,
                    "key_status": key,
                    "models": list(p.models),
                    "regions": dict(p.regions),
                    "front_door": p.front_door,
                    "scale_to_zero": p.scale_to_zero,
                    "source": p.source,
                    "as_of": p.as_of,
                }
            )
        else:
            where = f"{len(p.regions)} region(s)" if p.front_door == "regional" else p.front_door
            click.echo(
                f"{p.key:<18} {p.protocol:<18} {p.key_env or '-':<22} {key:<31} {where:<14} {', '.join(p.models[:2])}"
            )


COMMANDS = [endpoints]
