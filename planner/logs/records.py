"""Shared pieces of every log reader: the normalised row, rejections, timestamps and counts.

A reader turns one parsed record (a dict) into a `Row` of numbers and a model
name, or raises `Reject` with a reason a user can act on. Prompt and completion
text are never copied into a Row: they stay inside the reader.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import Any, NamedTuple
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from planner.errors import PlannerError

__all__ = [
    "FUTURE_SKEW_MS",
    "MAX_EPOCH_MS",
    "MAX_TOKENS",
    "Reject",
    "RejectedLine",
    "Row",
    "dig",
    "epoch_ms",
    "first_present",
    "token_count",
    "zone",
]


class Row(NamedTuple):
    """One request: arrival (UTC epoch ms), model, token counts, and timings in ms (NaN when unknown)."""

    ts_ms: int
    model: str
    prompt_tokens: int
    cached_tokens: int
    output_tokens: int
    ttft_ms: float = math.nan
    duration_ms: float = math.nan


@dataclass(frozen=True)
class RejectedLine:
    """A line (or record) that did not parse: file name, 1-based line number (0 = whole file), reason."""

    source: str
    line_no: int
    reason: str

    def __str__(self) -> str:
        where = f"{self.source}" if self.line_no == 0 else f"{self.source}:{self.line_no}"
        return f"{where}: {self.reason}"


MAX_TOKENS = 1_000_000_000  # a count above this is not a request's token count (and would overflow int64 sums)
MAX_EPOCH_MS = 4_102_444_800_000  # 2100-01-01T00:00:00Z: an arrival from 1970 up to here is a time, beyond is not
FUTURE_SKEW_MS = 24 * 3_600_000  # a live request dated further ahead of now is a bad row (planner.sources.admit)


class Reject(PlannerError, ValueError):
    """Raised by a reader for a record it cannot use; the message is the reason shown to the user."""


_MISSING = object()


def dig(rec: Any, path: str, default: Any = None) -> Any:
    """rec['a']['b'] for path 'a.b' (None-safe); `default` when any step is missing."""
    cur = rec
    for key in path.split("."):
        if not isinstance(cur, dict):
            return default
        cur = cur.get(key, _MISSING)
        if cur is _MISSING:
            return default
    return default if cur is None else cur


def first_present(rec: Any, paths: tuple[str, ...]) -> tuple[str | None, Any]:
    """(path, value) of the first path present and not None in rec, else (None, None)."""
    for path in paths:
        value = dig(rec, path)
        if value is not None:
            return path, value
    return None, None


def token_count(value: Any, field: str, *, required: bool = True) -> int:
    """A token count as a non-negative int; raises Reject naming `field` when missing, non-numeric or negative.

    Integer-valued strings ("123", as in OTLP intValue) and floats with no fraction are accepted.
    A missing optional count is 0.
    """
    if value is None or value == "":
        if required:
            raise Reject(f"missing {field}")
        return 0
    if isinstance(value, bool):
        raise Reject(f"{field} is not a number: {value!r}")
    if isinstance(value, int):
        n = value
    else:
        try:
            f = float(value)
        except (TypeError, ValueError):
            raise Reject(f"{field} is not a number: {str(value)[:40]!r}") from None
        if not math.isfinite(f) or f != int(f):
            raise Reject(f"{field} is not a whole number: {str(value)[:40]!r}")
        n = int(f)
    if n < 0:
        raise Reject(f"{field} is negative ({n})")
    if n > MAX_TOKENS:
        raise Reject(f"{field} is {str(value)[:40]}, over 10⁹: not a token count")
    return n


def zone(tz: str) -> dt.tzinfo:
    """The tzinfo for an IANA name; raises ValueError naming it when unknown."""
    if tz in ("UTC", "utc", ""):
        return dt.UTC
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {tz!r} (use an IANA name such as Europe/Berlin)") from None


def epoch_ms(value: Any, field: str, tz: str = "UTC") -> int:
    """A timestamp as UTC epoch ms from 1970 to 2100; raises Reject naming `field` when missing, unparseable or
    outside that range (see _epoch_ms for the forms read)."""
    ms = _epoch_ms(value, field, tz)
    if not 0 < ms < MAX_EPOCH_MS:
        raise Reject(f"timestamp {field} is outside 1970–2100: {str(value)[:40]!r}")
    return ms


def _epoch_ms(value: Any, field: str, tz: str) -> int:
    """A timestamp as UTC epoch ms; raises Reject naming `field` when missing or unparseable.

    Numbers are epoch seconds, ms, µs or ns (told apart by magnitude); strings are ISO 8601
    ('2026-11-20T09:14:03.120Z', '2026-11-20 09:14:03'), or numeric strings. A time without a
    zone is read in `tz` (the time zone the log was written in).
    """
    if value is None or value == "":
        raise Reject(f"missing timestamp {field}")
    if isinstance(value, bool):
        raise Reject(f"timestamp {field} is not a time: {value!r}")
    if isinstance(value, str):
        text = value.strip()
        try:
            value = int(text) if text.isdigit() else float(text)  # int keeps ns exact
        except ValueError:
            try:
                parsed = dt.datetime.fromisoformat(text)
            except (ValueError, OverflowError):
                raise Reject(f"timestamp {field} is not ISO 8601 or epoch: {text[:40]!r}") from None
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=zone(tz))
            try:
                return int(round(parsed.timestamp() * 1000))
            except (OverflowError, OSError, ValueError):
                raise Reject(f"timestamp {field} is outside 1970–2100: {text[:40]!r}") from None
    if isinstance(value, int) and value >= 100_000_000_000_000:  # µs / ns: integer maths, no float rounding
        return value // 1000 if value < 100_000_000_000_000_000 else value // 1_000_000
    if isinstance(value, (int, float)):
        f = float(value)
        if not math.isfinite(f) or f <= 0:
            raise Reject(f"timestamp {field} is not a time: {value!r}")
        if f < 1e11:  # seconds (until year 5138)
            return int(round(f * 1000))
        if f < 1e14:
            return int(round(f))
        if f < 1e17:
            return int(f // 1000)
        return int(f // 1_000_000)
    raise Reject(f"timestamp {field} is not a time: {str(value)[:40]!r}")
