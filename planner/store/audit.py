"""The audit log: who created, changed or deleted endpoints, RTT targets, worksheets, uploads and alert rules, and when.

Written by the dashboard (the signed-in user's e-mail) and by every CLI write (`cli:<os user>`, record_cli); shown on
the Admin page.
Never a secret: the object's name and a short detail only.
"""

from __future__ import annotations

import getpass
import os
import time
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import Field, SQLModel

from planner.lazy import lazy_module
from planner.store.database import session, table_of

if TYPE_CHECKING:
    import pandas as pd
else:  # imported on first use: the worker stores rows and starts without it
    pd = lazy_module("pandas")

__all__ = ["AuditRow", "audit_log", "cli_actor", "record", "record_cli"]


class AuditRow(SQLModel, table=True):
    __tablename__ = "audit_event"

    id: int | None = Field(default=None, primary_key=True)
    at_ms: int = Field(sa_type=sa.BigInteger, index=True)
    actor: str = Field(max_length=200)
    role: str = Field(default="", max_length=20)
    action: str = Field(max_length=60)  # a key of planner.team.roles.ACTIONS, e.g. endpoint.write
    object_name: str = Field(max_length=200)
    detail: str = Field(default="", max_length=500)


def record(
    engine: Engine, *, actor: str, role: str, action: str, object_name: str, detail: str = "", at_ms: int | None = None
) -> None:
    with session(engine) as s:
        s.add(
            AuditRow(
                at_ms=int(time.time() * 1000) if at_ms is None else at_ms,
                actor=actor[:200],
                role=role[:20],
                action=action[:60],
                object_name=object_name[:200],
                detail=detail[:500],
            )
        )


def cli_actor() -> str:
    """The actor of a write made from the command line: `cli:<OS user>` (`cli:uid <n>` where the OS names none)."""
    try:
        user = getpass.getuser()
    except (OSError, KeyError):  # no USER/LOGNAME and no passwd entry (a bare container)
        user = f"uid {os.getuid()}" if hasattr(os, "getuid") else "unknown"
    return f"cli:{user}"


def record_cli(engine: Engine, action: str, object_name: str, detail: str = "") -> None:
    """One audit row for a write made from the command line, by cli_actor() (the shell has no dashboard role).

    `action` is a key of planner.team.roles.ACTIONS (endpoint.write, logs.upload, …), as the page that makes the same
    write records it; `detail` names what changed, never a secret.
    """
    record(engine, actor=cli_actor(), role="", action=action, object_name=object_name, detail=detail)


def audit_log(engine: Engine, limit: int = 500) -> pd.DataFrame:
    """Newest first."""
    t = table_of(AuditRow)
    with engine.connect() as conn:
        rows = conn.execute(sa.select(t).order_by(t.c.at_ms.desc(), t.c.id.desc()).limit(limit)).mappings().all()
    return pd.DataFrame(rows, columns=[c.name for c in t.columns])
