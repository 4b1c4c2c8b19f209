"""The endpoint table (the registry the worker probes) and all its SQL.

Validation and the domain API (add/edit/remove with errors naming the field, TOML import/export, the simulated
endpoint) are planner.endpoints.registry; this module stores what that validated, and the disabled "manual:" endpoints
that `probe --store` files one-off samples under. Names are unique: a write that would repeat one raises
EndpointNameTaken, whoever got there first.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Field, Session, SQLModel, col, select
from sqlmodel.sql.expression import SelectOfScalar

from planner.errors import PlannerError
from planner.store.database import session, table_of

__all__ = [
    "MANUAL_PROVIDER",
    "EndpointNameTaken",
    "EndpointRow",
    "delete_endpoint",
    "endpoint_rows",
    "find_endpoint",
    "get_or_create_manual_endpoint",
    "has_endpoints",
    "insert_endpoint",
    "repoint_simulated_endpoint",
    "update_endpoint",
]

#: provider label of the endpoints `probe --store` creates (disabled: the worker never schedules them).
MANUAL_PROVIDER = "manual"


class EndpointRow(SQLModel, table=True):
    """A streaming endpoint to probe. The API key is referenced by env var name, never stored."""

    __tablename__ = "endpoint"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=120, unique=True, index=True)
    provider: str = Field(default="", max_length=120)
    region: str = Field(default="", max_length=120)
    protocol: str = Field(default="openai-chat", max_length=40)  # a ProbeProtocol value (planner.probes.protocols)
    base_url: str = Field(max_length=500)
    model: str = Field(max_length=200)
    api_key_env: str = Field(default="", max_length=120)
    interval_s: float = 60.0
    timeout_s: float = 30.0
    prompt_tokens: int = 1000
    max_tokens: int = 64
    connection_policy: str = Field(default="fresh", max_length=20)  # fresh | keep-alive
    scale_down_window_s: float | None = None
    enabled: bool = True
    vantage: str = Field(default="", max_length=120)  # "" = any vantage probes it
    simulated: bool = False
    created_at_ms: int = Field(sa_type=sa.BigInteger)
    updated_at_ms: int = Field(sa_type=sa.BigInteger)


class EndpointNameTaken(PlannerError, ValueError):
    """Another endpoint already has this name; `.name` is the name."""

    def __init__(self, name: str) -> None:
        super().__init__(f"an endpoint named {name!r} already exists")
        self.name = name


def _now_ms() -> int:
    return int(time.time() * 1000)


def _named(name: str) -> SelectOfScalar[EndpointRow]:
    return select(EndpointRow).where(EndpointRow.name == name)


def _name_taken(s: Session, name: str) -> bool:
    return s.exec(_named(name)).first() is not None


def endpoint_rows(engine: Engine, *, enabled_only: bool = False, vantage: str | None = None) -> list[EndpointRow]:
    """Endpoints by name; with `vantage`, only those probed from it (their vantage is '' or equal)."""
    q = select(EndpointRow).order_by(EndpointRow.name)
    if enabled_only:
        q = q.where(EndpointRow.enabled == sa.true())
    if vantage is not None:
        q = q.where(sa.or_(col(EndpointRow.vantage) == "", col(EndpointRow.vantage) == vantage))
    with session(engine) as s:
        return list(s.exec(q).all())


def find_endpoint(engine: Engine, name: str) -> EndpointRow | None:
    """The endpoint named `name`, or None."""
    with session(engine) as s:
        return s.exec(_named(name)).first()


def has_endpoints(engine: Engine) -> bool:
    """Whether the registry holds any endpoint at all (manual and simulated ones included)."""
    with session(engine) as s:
        return s.exec(select(EndpointRow.id)).first() is not None


def insert_endpoint(engine: Engine, fields: Mapping[str, Any], *, simulated: bool = False) -> EndpointRow:
    """Store a new endpoint from already validated `fields` (planner.endpoints.registry.validate); raises
    EndpointNameTaken."""
    now = _now_ms()
    try:
        with session(engine) as s:
            if _name_taken(s, fields["name"]):
                raise EndpointNameTaken(fields["name"])
            row = EndpointRow(**fields, simulated=simulated, created_at_ms=now, updated_at_ms=now)
            s.add(row)
            s.flush()
            s.refresh(row)
    except IntegrityError:  # the same name inserted concurrently
        raise EndpointNameTaken(fields["name"]) from None
    return row


def update_endpoint(engine: Engine, name: str, fields: Mapping[str, Any]) -> EndpointRow | None:
    """Overwrite the endpoint `name` with already validated `fields` (a new name included); None when no endpoint
    has that name. Raises EndpointNameTaken when the new name is another endpoint's."""
    try:
        with session(engine) as s:
            row = s.exec(_named(name)).first()
            if row is None:
                return None
            new_name = fields.get("name", name)
            if new_name != name and _name_taken(s, new_name):
                raise EndpointNameTaken(new_name)
            for f, v in fields.items():
                setattr(row, f, v)
            row.updated_at_ms = _now_ms()
            s.add(row)
            s.flush()
            s.refresh(row)
    except IntegrityError:  # renamed to a name inserted concurrently
        raise EndpointNameTaken(fields.get("name", name)) from None
    return row


def delete_endpoint(engine: Engine, name: str) -> bool:
    """Delete the endpoint `name` and (cascade) its samples; False when no endpoint has that name."""
    with engine.begin() as conn:
        if conn.dialect.name == "sqlite":
            conn.exec_driver_sql("PRAGMA foreign_keys=ON")
        t = table_of(EndpointRow)
        return conn.execute(sa.delete(t).where(t.c.name == name)).rowcount > 0


def repoint_simulated_endpoint(engine: Engine, base_url: str) -> EndpointRow | None:
    """Point the simulated endpoint at `base_url` (trailing / dropped); None when there is no simulated endpoint."""
    with session(engine) as s:
        row = s.exec(select(EndpointRow).where(EndpointRow.simulated == sa.true())).first()
        if row is None:
            return None
        row.base_url, row.updated_at_ms = base_url.rstrip("/"), _now_ms()
        s.add(row)
        s.flush()
        s.refresh(row)
        return row


def _manual_name(base_url: str, model: str, protocol: str) -> str:
    name = f"manual: {model} @ {base_url} ({protocol})"
    if len(name) <= 120:
        return name
    digest = hashlib.sha1(name.encode()).hexdigest()[:10]
    return name[:108] + "… " + digest


def get_or_create_manual_endpoint(
    engine: Engine, base_url: str, model: str, protocol: str, *, simulated: bool = False, api_key_env: str = ""
) -> EndpointRow:
    """The endpoint row that `probe --store` files manual samples under, created on first use.

    One row per (base_url, model, protocol), named "manual: <model> @ <base_url> (<protocol>)",
    provider "manual", disabled so the worker never schedules it; its samples show on the
    Probes page next to scheduled ones. `api_key_env` stores only the variable's name.
    """
    name = _manual_name(base_url, model, protocol)
    fields = {
        "name": name,
        "provider": MANUAL_PROVIDER,
        "protocol": protocol,
        "base_url": base_url,
        "model": model,
        "api_key_env": api_key_env,
        "enabled": False,
    }
    for _ in range(2):
        row = find_endpoint(engine, name)
        if row is not None:
            return row
        try:
            return insert_endpoint(engine, fields, simulated=simulated)
        except EndpointNameTaken:  # created concurrently: read it back
            continue
    raise RuntimeError(f"could not create or read endpoint {name!r}")
