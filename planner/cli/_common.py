"""Helpers shared by CLI modules: JSON output, store opening, error reporting."""

from __future__ import annotations

import json
import math
import sys
from typing import Any, NoReturn

import click
from sqlalchemy.engine import Engine

from planner.store import StoreError, open_store

__all__ = ["echo_json", "fail", "json_default", "open_engine", "store_option"]


def json_default(obj: Any) -> Any:
    """JSON encoder for dataclasses, enums, and non-finite floats (→ null)."""
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    if hasattr(obj, "__dataclass_fields__"):
        from dataclasses import asdict

        return asdict(obj)
    return str(obj)


def _finite(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def echo_json(obj: Any) -> None:
    """Print one JSON object on one line (NaN/inf become null, so the output is valid JSON)."""
    click.echo(json.dumps(_finite(json.loads(json.dumps(obj, default=json_default))), allow_nan=False))


def fail(message: str, code: int = 1) -> NoReturn:
    """Print `error: message` to stderr and exit with `code`."""
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


store_option = click.option(
    "--database-url",
    envvar="TTFT_PLANNER_DATABASE_URL",
    default=None,
    show_envvar=True,
    help="SQLAlchemy URL of the store (default: SQLite under the data directory).",
)


def open_engine(database_url: str | None) -> Engine:
    """open_store(), turning StoreError into a clean exit 1 with the message."""
    try:
        return open_store(database_url)
    except StoreError as exc:
        fail(str(exc))
