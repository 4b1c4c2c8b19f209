"""The endpoint registry: validated add/edit/remove, TOML import/export, the built-in simulated endpoint.

An endpoint is what the worker probes (planner.store.endpoints.EndpointRow, where all its SQL lives). The
API key is referenced by the *name* of an environment variable and never
stored; `key_status` says "key missing" when that variable is not set, and the
worker then reports the endpoint instead of probing it.

Probe intervals have a product minimum of 10 s (a probe every few seconds is
load, not measurement). Tests and demos may lower it with the environment
variable TTFT_PLANNER_MIN_INTERVAL_S (never below 0.2 s).

Every numeric field is finite and keeps its rule in NUMERIC_RULES, which are the
shared rules of planner.inputs.validate (a 9-quintillion-token prompt would be built in
the worker's memory; an infinite interval would stop its schedule), whatever the
entry point: CLI, page, TOML import, and rows an older version stored
(`endpoint_problem`, which the worker checks before scheduling an endpoint).

Over 400 lines: the registry's one validation path (add, edit, import) and the TOML round trip must agree field by
field, so they stay beside each other.
"""

from __future__ import annotations

import importlib.util
import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import tomli_w
from sqlalchemy.engine import Engine

from planner import settings
from planner.endpoints.secrets_file import lookup_key
from planner.errors import PlannerError
from planner.inputs.env_names import env_name_problem
from planner.inputs.urls import UrlError, check_url
from planner.inputs.validate import (
    PROBE_INTERVAL_S,
    PROBE_MAX_TOKENS,
    PROBE_TIMEOUT_S,
    PROMPT_TOKENS,
    SCALE_DOWN_WINDOW_S,
    Rule,
)
from planner.probes.protocols import PROTOCOLS, ProbeProtocol
from planner.store.database import table_of
from planner.store.endpoints import (
    EndpointNameTaken,
    EndpointRow,
    delete_endpoint,
    endpoint_rows,
    find_endpoint,
    has_endpoints,
    insert_endpoint,
    repoint_simulated_endpoint,
    update_endpoint,
)
from planner.store.faults import STORE_FAILURES, describe
from planner.store.text_fields import text_problem

__all__ = [
    "CONNECTION_POLICIES",
    "EDITABLE_FIELDS",
    "FIELD_LABELS",
    "MIN_INTERVAL_ENV",
    "NUMERIC_RULES",
    "PROTOCOLS",
    "SIMULATED_NAME",
    "EndpointError",
    "EndpointNotFound",
    "EndpointRow",
    "ImportResult",
    "add_endpoint",
    "edit_endpoint",
    "endpoint_problem",
    "ensure_simulated_endpoint",
    "export_toml",
    "form_message",
    "get_endpoint",
    "import_toml",
    "key_status",
    "key_status_for",
    "list_endpoints",
    "min_interval_s",
    "remove_endpoint",
    "validate",
]

MIN_INTERVAL_ENV = settings.MIN_INTERVAL_S.name
#: field → its rule, the one planner.inputs.validate states for every entry point (the interval's floor is also
#: min_interval_s(), below: 10 s unless a test lowers it).
NUMERIC_RULES: dict[str, Rule] = {
    "interval_s": PROBE_INTERVAL_S,
    "timeout_s": PROBE_TIMEOUT_S,
    "prompt_tokens": PROMPT_TOKENS,
    "max_tokens": PROBE_MAX_TOKENS,
    "scale_down_window_s": SCALE_DOWN_WINDOW_S,
}
PRODUCT_MIN_INTERVAL_S = 10.0
ABSOLUTE_MIN_INTERVAL_S = PROBE_INTERVAL_S.lo
CONNECTION_POLICIES = ("fresh", "keep-alive")
SIMULATED_NAME = "simulated"

# Field → (type, default). The order is the TOML export's order and the form's.
EDITABLE_FIELDS: dict[str, tuple[type, Any]] = {
    "name": (str, None),
    "provider": (str, ""),
    "region": (str, ""),
    "protocol": (str, ProbeProtocol.OPENAI_CHAT.value),
    "base_url": (str, None),
    "model": (str, None),
    "api_key_env": (str, ""),
    "interval_s": (float, 60.0),
    "timeout_s": (float, 30.0),
    "prompt_tokens": (int, 1000),
    "max_tokens": (int, 64),
    "connection_policy": (str, "fresh"),
    "scale_down_window_s": (float, None),
    "enabled": (bool, True),
    "vantage": (str, ""),
}
_DEFAULT_CREDENTIALS: dict[str, str] = {
    ProbeProtocol.BEDROCK: "AWS credential chain",
    ProbeProtocol.VERTEX: "Application Default Credentials",
}


class EndpointError(PlannerError, ValueError):
    """Invalid endpoint input; `.field` names the offending field ('' for the whole record)."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.field = field


class EndpointNotFound(PlannerError, KeyError):
    """No endpoint has this name."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "endpoint not found"


#: Each field as the Endpoints page's form labels it: a message names a field the way the form does.
FIELD_LABELS: dict[str, str] = {
    "name": "Name",
    "provider": "Provider",
    "region": "Region",
    "base_url": "Base URL",
    "model": "Model",
    "api_key_env": "API key env var",
    "protocol": "Protocol",
    "interval_s": "Probe interval",
    "timeout_s": "Timeout",
    "prompt_tokens": "Prompt tokens",
    "max_tokens": "Max tokens",
    "connection_policy": "Connection",
    "scale_down_window_s": "Scale-down window",
    "vantage": "Vantage",
    "enabled": "Enabled",
}


def form_message(exc: Exception) -> str:
    """An EndpointError as the form speaks: 'Timeout (25 s) must be shorter than Probe interval (20 s)'.

    Every field name in the message becomes its FIELD_LABELS label (longest first, whole words only), the first
    letter is capitalised, and the offending field's label leads unless the message already starts with it.
    """
    text = str(exc)
    for name in sorted(FIELD_LABELS, key=len, reverse=True):
        text = re.sub(rf"\b{name}\b", FIELD_LABELS[name], text)
    label = FIELD_LABELS.get(getattr(exc, "field", "") or "", "")
    text = text[:1].upper() + text[1:]
    return text if not label or text.startswith(label) else f"{label}: {text}"


def min_interval_s() -> float:
    """The smallest accepted probe interval (s): 10, or $TTFT_PLANNER_MIN_INTERVAL_S (≥ 0.2) for tests."""
    raw = settings.MIN_INTERVAL_S.raw()
    if not raw:
        return PRODUCT_MIN_INTERVAL_S
    try:
        return max(ABSOLUTE_MIN_INTERVAL_S, float(raw))
    except ValueError:
        return PRODUCT_MIN_INTERVAL_S


def _coerce(name: str, value: Any) -> Any:
    typ, default = EDITABLE_FIELDS[name]
    if value is None or (isinstance(value, str) and value.strip() == "" and typ is not str):
        if default is None and name != "scale_down_window_s":
            raise EndpointError(f"{name} is required", name)
        return default
    try:
        if typ is bool:
            if isinstance(value, str):
                if value.strip().lower() in ("1", "true", "yes", "on"):
                    return True
                if value.strip().lower() in ("0", "false", "no", "off"):
                    return False
                raise ValueError(value)
            return bool(value)
        if typ is int:
            if isinstance(value, float) and not math.isfinite(value):
                raise EndpointError(f"{name} must be a finite number, got {value!r}", name)
            if isinstance(value, float) and not value.is_integer():
                raise ValueError(value)
            return int(value)
        if typ is float:
            out = float(value)
            if not math.isfinite(out):
                raise EndpointError(f"{name} must be a finite number, got {value!r}", name)
            return out
        if isinstance(value, (dict, list)):
            raise ValueError(value)
        return str(value).strip()
    except EndpointError:
        raise
    except (TypeError, ValueError, OverflowError):  # OverflowError: a whole number past any float (10**400)
        raise EndpointError(f"{name} must be a {typ.__name__}, got {value!r}", name) from None


def validate(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Check and normalise one endpoint record; returns the clean dict of EDITABLE_FIELDS.

    Raises EndpointError naming the field: unknown fields, a missing name/base_url/model,
    a URL that is not http(s)://host, an unknown protocol or connection policy, an interval
    below min_interval_s(), a timeout not below the interval, non-positive token counts,
    an env var name that is not a valid identifier.
    """
    unknown = sorted(set(fields) - set(EDITABLE_FIELDS))
    if unknown:
        raise EndpointError(f"unknown field(s): {', '.join(unknown)}; known: {', '.join(EDITABLE_FIELDS)}", unknown[0])
    out = {name: _coerce(name, fields.get(name, EDITABLE_FIELDS[name][1])) for name in EDITABLE_FIELDS}
    for name in ("name", "base_url", "model"):
        if not out[name]:
            raise EndpointError(f"{name} is required", name)
    for name, value in out.items():
        problem = (
            text_problem(table_of(EndpointRow), name, value) if isinstance(value, str) and name != "base_url" else None
        )
        if problem:  # base_url: the URL validator below
            raise EndpointError(problem, name)
    try:
        out["base_url"] = check_url(out["base_url"], what="base_url").rstrip("/")
    except UrlError as exc:
        raise EndpointError(str(exc), "base_url") from None
    if out["protocol"] not in PROTOCOLS:
        raise EndpointError(f"protocol must be one of {', '.join(PROTOCOLS)}, got {out['protocol']!r}", "protocol")
    if out["connection_policy"] not in CONNECTION_POLICIES:
        raise EndpointError(
            f"connection_policy must be one of {', '.join(CONNECTION_POLICIES)}, got {out['connection_policy']!r}",
            "connection_policy",
        )
    low = min_interval_s()
    if out["interval_s"] < low:
        raise EndpointError(f"interval_s must be at least {low:g} s, got {out['interval_s']:g}", "interval_s")
    for name, rule in NUMERIC_RULES.items():
        value = out[name]
        if value is None:
            continue
        try:
            shown = f"{value:g}" if isinstance(value, float) or abs(value) >= 10**15 else str(value)
        except OverflowError:  # a whole number past any float (10**400)
            shown = f"a {len(str(abs(value)))}-digit number"
        problem = rule.problem(value, shown)
        if problem is not None:
            raise EndpointError(f"{name} {problem}", name)
    if out["timeout_s"] >= out["interval_s"]:
        raise EndpointError(
            f"timeout_s ({out['timeout_s']:g} s) must be shorter than interval_s ({out['interval_s']:g} s)", "timeout_s"
        )
    if out["api_key_env"] and (problem := env_name_problem(out["api_key_env"], "api_key_env")):
        raise EndpointError(problem, "api_key_env")  # never quotes what was typed: it may be the key itself
    return out


def endpoint_problem(row: EndpointRow) -> str | None:
    """Why a stored endpoint cannot be probed as it is (a value out of range, e.g. written by an older
    version or straight into the database), naming the field; None when it is valid."""
    try:
        validate({name: getattr(row, name) for name in EDITABLE_FIELDS})
    except EndpointError as exc:
        return str(exc)
    return None


def key_status(row: EndpointRow, env: Mapping[str, str] | None = None) -> str:
    """'no key needed', 'key set' or 'key missing' (api_key_env names no value in the environment or a
    Streamlit secrets file; with `env`, only that mapping is consulted). Without a variable, a Bedrock endpoint
    says 'AWS credential chain' and a Vertex one 'Application Default Credentials' (looked up when probing; 'key
    missing' while the google-auth package that reads them is not installed)."""
    return key_status_for(row.api_key_env, row.protocol, env)


def _has_google_auth() -> bool:
    """Whether google-auth (which reads Application Default Credentials) is installed; nothing is imported."""
    try:
        return importlib.util.find_spec("google.auth") is not None
    except ModuleNotFoundError:  # no `google` package at all
        return False


def key_status_for(api_key_env: str, protocol: str, env: Mapping[str, str] | None = None) -> str:
    """key_status for an endpoint not stored yet (a form, a catalog row): the same answers."""
    if not api_key_env:
        if protocol == ProbeProtocol.VERTEX and not _has_google_auth():
            return "key missing (Application Default Credentials need `pip install google-auth`)"
        return _DEFAULT_CREDENTIALS.get(protocol, "no key needed")
    if env is not None:
        return "key set" if env.get(api_key_env) else "key missing"
    return "key set" if lookup_key(api_key_env) else "key missing"


def list_endpoints(engine: Engine, *, enabled_only: bool = False, vantage: str | None = None) -> list[EndpointRow]:
    """Endpoints by name; with `vantage`, only those probed from it (their vantage is '' or equal)."""
    return endpoint_rows(engine, enabled_only=enabled_only, vantage=vantage)


def get_endpoint(engine: Engine, name: str) -> EndpointRow:
    """The endpoint named `name`; raises EndpointNotFound."""
    row = find_endpoint(engine, name)
    if row is None:
        raise EndpointNotFound(f"no endpoint named {name!r}")
    return row


def add_endpoint(engine: Engine, fields: Mapping[str, Any], *, simulated: bool = False) -> EndpointRow:
    """Validate and store a new endpoint; raises EndpointError (field 'name' for a duplicate)."""
    clean = validate(fields)
    try:
        return insert_endpoint(engine, clean, simulated=simulated)
    except EndpointNameTaken as exc:
        raise EndpointError(str(exc), "name") from None


def edit_endpoint(engine: Engine, name: str, changes: Mapping[str, Any]) -> EndpointRow:
    """Apply `changes` to the endpoint `name` (renaming included); raises EndpointNotFound / EndpointError."""
    current = get_endpoint(engine, name)
    merged = {f: getattr(current, f) for f in EDITABLE_FIELDS} | dict(changes)
    clean = validate(merged)
    try:
        row = update_endpoint(engine, name, clean)
    except EndpointNameTaken as exc:
        raise EndpointError(str(exc), "name") from None
    if row is None:  # removed meanwhile
        raise EndpointNotFound(f"no endpoint named {name!r}")
    return row


def remove_endpoint(engine: Engine, name: str) -> None:
    """Delete the endpoint `name` and (cascade) its samples; raises EndpointNotFound."""
    if not delete_endpoint(engine, name):
        raise EndpointNotFound(f"no endpoint named {name!r}")


def export_toml(engine: Engine) -> str:
    """Every endpoint as TOML (`[[endpoint]]` tables), for keeping the list in git. No keys: only env var names."""
    out = []
    for row in list_endpoints(engine):
        if row.simulated:
            continue  # its URL is local and changes each run; `serve` registers it
        rec = {f: getattr(row, f) for f in EDITABLE_FIELDS if getattr(row, f) is not None}
        out.append(rec)
    return tomli_w.dumps({"endpoint": out})


@dataclass
class ImportResult:
    """What import_toml did: names added, names updated, and (index, name, message) rejections."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    rejected: list[tuple[int, str, str]] = field(default_factory=list)


def import_toml(engine: Engine, text: str, *, update: bool = True) -> ImportResult:
    """Add the `[[endpoint]]` records of a TOML document; existing names are updated (or rejected
    with update=False). Invalid records are reported in .rejected and the rest still imported.
    Raises EndpointError for a document that is not TOML or has no `endpoint` array."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise EndpointError(f"not valid TOML: {exc}") from None
    except RecursionError:
        raise EndpointError("not usable TOML: arrays or tables are nested too deeply") from None
    records = doc.get("endpoint")
    if not isinstance(records, list):
        raise EndpointError("expected an array of tables [[endpoint]]")
    result = ImportResult()
    for i, rec in enumerate(records, start=1):
        name = str(rec.get("name", "")) if isinstance(rec, dict) else ""
        try:
            if not isinstance(rec, dict):
                raise EndpointError("not a table")
            try:
                get_endpoint(engine, name)
                exists = True
            except EndpointNotFound:
                exists = False
            if exists and update:
                edit_endpoint(engine, name, rec)
                result.updated.append(name)
            else:
                add_endpoint(engine, rec)
                result.added.append(name)
        except EndpointError as exc:
            where = f" ({exc.field})" if exc.field else ""
            result.rejected.append((i, name, f"{exc}{where}"))
        except STORE_FAILURES as exc:  # this record only: the database refused it (e.g. a value PostgreSQL rejects)
            result.rejected.append((i, name, describe(exc, consequence="this record was not imported")))
    return result


def ensure_simulated_endpoint(engine: Engine, base_url: str, *, model: str = "sim-1") -> EndpointRow | None:
    """Register the built-in simulated endpoint on first run, or point it at `base_url` now.

    On an empty registry it adds `simulated` (60 s interval, scale-down window 300 s);
    if the simulated endpoint exists its base_url is updated. If the registry has
    endpoints but the simulated one was removed, nothing is added (returns None).
    """
    row = repoint_simulated_endpoint(engine, base_url)
    if row is not None or has_endpoints(engine):
        return row
    return add_endpoint(
        engine,
        {
            "name": SIMULATED_NAME,
            "provider": "built-in simulator",
            "region": "local",
            "base_url": base_url,
            "model": model,
            "interval_s": max(60.0, min_interval_s()),
            "timeout_s": 30.0,
            "prompt_tokens": 1000,
            "max_tokens": 32,
            "scale_down_window_s": 300.0,
        },
        simulated=True,
    )
