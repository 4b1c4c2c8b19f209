"""Saved worksheets: a name and the worksheet's inputs as JSON.

The inputs live in one JSON column so that later figures (with provenance)
can be added to the worksheet model without a schema change.
"""

from __future__ import annotations

import json
import time

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Field, Session, SQLModel, col, select

from planner.errors import PlannerError
from planner.store.database import session
from planner.worksheet.budget import Worksheet

__all__ = [
    "NameTaken",
    "WorksheetNotFound",
    "WorksheetRow",
    "delete_worksheet",
    "duplicate_worksheet",
    "list_worksheets",
    "load_worksheet",
    "save_worksheet",
]


class WorksheetRow(SQLModel, table=True):
    __tablename__ = "worksheet"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=200, unique=True, index=True)
    data_json: str = Field(sa_type=sa.Text)
    created_at_ms: int = Field(sa_type=sa.BigInteger)
    updated_at_ms: int = Field(sa_type=sa.BigInteger)


class NameTaken(PlannerError, ValueError):
    """A worksheet with this name exists and overwrite was not asked for."""


class WorksheetNotFound(PlannerError, KeyError):
    """No worksheet has this name."""


def _now_ms() -> int:
    return int(time.time() * 1000)


def _clean_name(name: str) -> str:
    name = (name or "").strip()
    if not name:
        raise ValueError("a worksheet needs a name")
    if len(name) > 200:
        raise ValueError("a worksheet name can have at most 200 characters")
    return name


def save_worksheet(engine: Engine, ws: Worksheet, *, overwrite: bool = False) -> Worksheet:
    """Store `ws` under ws.name. Raises NameTaken if the name exists and overwrite is False."""
    name = _clean_name(ws.name)
    data = json.dumps({**ws.to_dict(), "name": name}, sort_keys=True)
    now = _now_ms()
    try:
        with session(engine) as s:
            row = s.exec(select(WorksheetRow).where(WorksheetRow.name == name)).first()
            if row is not None and not overwrite:
                raise NameTaken(f"a worksheet named {name!r} already exists; pick another name or overwrite it")
            if row is None:
                s.add(WorksheetRow(name=name, data_json=data, created_at_ms=now, updated_at_ms=now))
            else:
                row.data_json, row.updated_at_ms = data, now
                s.add(row)
    except IntegrityError:  # a concurrent save won the race for this name
        raise NameTaken(f"a worksheet named {name!r} already exists; pick another name or overwrite it") from None
    return Worksheet.from_dict(json.loads(data))


def _worksheet_row(s: Session, name: str) -> WorksheetRow:
    """The row of the worksheet saved as `name`, in session `s`; raises WorksheetNotFound."""
    row = s.exec(select(WorksheetRow).where(WorksheetRow.name == name)).first()
    if row is None:
        raise WorksheetNotFound(f"no worksheet named {name!r}")
    return row


def load_worksheet(engine: Engine, name: str) -> Worksheet:
    """The worksheet saved as `name`; raises WorksheetNotFound."""
    with session(engine) as s:
        row = _worksheet_row(s, name)
    return Worksheet.from_dict(json.loads(row.data_json))


def list_worksheets(engine: Engine) -> list[tuple[str, int]]:
    """(name, updated_at_ms) of every saved worksheet, newest first."""
    with session(engine) as s:
        rows = s.exec(
            select(WorksheetRow.name, WorksheetRow.updated_at_ms).order_by(col(WorksheetRow.updated_at_ms).desc())
        ).all()
    return [(r[0], r[1]) for r in rows]


def duplicate_worksheet(engine: Engine, name: str, new_name: str) -> Worksheet:
    """Save a copy of `name` as `new_name`; raises WorksheetNotFound or NameTaken."""
    ws = load_worksheet(engine, name)
    return save_worksheet(engine, Worksheet.from_dict({**ws.to_dict(), "name": new_name}))


def delete_worksheet(engine: Engine, name: str) -> None:
    """Delete the worksheet `name`; raises WorksheetNotFound."""
    with session(engine) as s:
        s.delete(_worksheet_row(s, name))
