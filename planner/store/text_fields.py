"""What a text column accepts: at most its declared length, and no control characters (PostgreSQL refuses NUL;
line breaks and escape codes forge terminal and log output). Checked before writing so that a bad value is a
clear message naming the field on SQLite and PostgreSQL alike, never a driver error."""

from __future__ import annotations

import re

import sqlalchemy as sa

__all__ = ["text_problem"]

_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")


def text_problem(table: sa.Table, field: str, value: str) -> str | None:
    """None when `value` fits `table.c[field]`, else a sentence naming the field and what is wrong."""
    limit = getattr(table.c[field].type, "length", None)
    if limit is not None and len(value) > limit:
        return f"{field} can have at most {limit} characters, got {len(value):,}"
    bad = _CONTROL_CHARS.search(value)
    if bad:
        return f"{field} contains a control character ({bad.group()!r}); use plain one-line text"
    return None
