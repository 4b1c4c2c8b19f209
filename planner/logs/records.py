"""Check: the one rule for a log's values, and the normalised row it makes.

A reader turns one parsed record (a dict) into a `Row` of numbers and a model name, or raises `Reject` with a reason
a user can act on. Prompt and completion text are never copied into a Row: they stay inside the reader.

The rule: a token count is a whole number from 0 to MAX_TOKENS (10⁹); an arrival is a time from 1970 to 2100
(MAX_EPOCH_MS); a timing (TTFT, duration) is a finite number of ms from 0 to MAX_TIMING_MS (a week, as the live
sources take it: planner.sources.admit). Anything else — non-finite, negative, past int64 or 2^53, out of range — is
a named rejection. A time written without a zone is read in the log's zone; where that zone's clock repeats (a DST
end) or skips (a DST start) the smaller UTC offset is taken, as DuckDB does (planner.logs.sqlmap applies the same
rule in SQL), and `TimeNotes` counts such times for the summary's note.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, NamedTuple
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from planner.errors import PlannerError

__all__ = [
    "FUTURE_SKEW_MS",
    "MAX_EPOCH_MS",
    "MAX_NAMED",
    "MAX_TIMING_MS",
    "MAX_TOKENS",
    "Reject",
    "RejectedLine",
    "Rejections",
    "Row",
    "TimeNotes",
    "dig",
    "epoch_ms",
    "first_present",
    "non_negative",
    "shown",
    "timing_ms",
    "shift_hours",
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
    """A line (or record, or Parquet row) that was left out: the file (its path relative to the files read
    together), 1-based line number (0 = the whole file), reason; `unit` says what line_no counts."""

    source: str
    line_no: int
    reason: str
    unit: str = "line"  # "line" (text files), "record" (a JSON array's element), "row" (Parquet)

    def __str__(self) -> str:
        if self.line_no == 0:
            return f"{self.source}: {self.reason}"
        where = f"{self.source}:{self.line_no}" if self.unit == "line" else f"{self.source} {self.unit} {self.line_no}"
        return f"{where}: {self.reason}"


@dataclass
class Rejections:
    """What a reader left out: every rejection counted, the first MAX_NAMED named."""

    rejected: list[RejectedLine] = field(default_factory=list)
    n_rejected: int = 0

    def reject(self, source: str, line_no: int, reason: str, unit: str = "line") -> None:
        self.n_rejected += 1
        if len(self.rejected) < MAX_NAMED:
            self.rejected.append(RejectedLine(source, line_no, reason, unit))


MAX_NAMED = 1000  # rejections named by line (the count is exact)
MAX_TOKENS = 1_000_000_000  # a count above this is not a request's token count (and would overflow int64 sums)
MAX_EPOCH_MS = 4_102_444_800_000  # 2100-01-01T00:00:00Z: an arrival from 1970 up to here is a time, beyond is not
FUTURE_SKEW_MS = 24 * 3_600_000  # a live request dated further ahead of now is a bad row (planner.sources.admit)
MAX_TIMING_MS = 7 * 24 * 3_600_000  # a week: no request waits longer for its first token or its end


@dataclass
class TimeNotes:
    """How many times a reading took without a zone (read in the log's zone), of those how many fell where the
    clock repeats or skips (a DST change), and how many carried a zone; and how many JSON records named a key
    twice (the first value read, as DuckDB reads it), the first such key."""

    zoneless: int = 0
    ambiguous: int = 0
    zoned: int = 0
    twice: int = 0
    twice_key: str = ""


#: Where epoch_ms counts what it read (None: nowhere); a reader sets it for the records it reads in Python.
TIME_NOTES: ContextVar[TimeNotes | None] = ContextVar("TIME_NOTES", default=None)


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


def shown(value: Any) -> str:
    """A value for a message as the log wrote it: text and numbers quoted (the first 40 characters), JSON's
    true/false/null, "a JSON object" / "a JSON array" (never a Python repr of a record)."""
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    if isinstance(value, dict | list):
        kind = "a JSON object" if isinstance(value, dict) else "a JSON array"
        inner, depth = value, 0
        while isinstance(inner, dict | list) and inner and depth < 100:  # down its first members, iteratively
            inner, depth = next(iter(inner.values())) if isinstance(inner, dict) else inner[0], depth + 1
        return kind + (" nested too deeply" if depth >= 100 else "")
    return repr(str(value)[:40])


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
        raise Reject(f"{field} is not a number: {shown(value)}")
    if isinstance(value, int):
        n = value
    else:
        try:
            f = float(value)
        except (TypeError, ValueError):
            raise Reject(f"{field} is not a number: {shown(value)}") from None
        if not math.isfinite(f) or f != int(f):
            raise Reject(f"{field} is not a whole number: {shown(value)}")
        n = int(f)
    if n < 0:
        raise Reject(f"{field} is negative ({n})")
    if n > MAX_TOKENS:
        raise Reject(f"{field} is {str(value)[:40]}, over 10⁹: not a token count")
    return n


@functools.cache
def shift_hours(tz: str) -> tuple[int, ...]:
    """The local hours (0–23) in which the zone's clock repeats or skips at some time from 1970 to 2100 (a DST
    change): only wall times in them can be ambiguous. Raises ValueError for an unknown zone."""
    z = zone(tz)
    hours: set[int] = set()
    t, end, week = dt.datetime(1970, 1, 1, tzinfo=dt.UTC), dt.datetime(2100, 1, 1, tzinfo=dt.UTC), dt.timedelta(7)
    before = t.astimezone(z).utcoffset()
    while t < end:
        after = (t + week).astimezone(z).utcoffset()
        if after != before and before is not None and after is not None:
            lo, hi = t, t + week
            while hi - lo > dt.timedelta(minutes=1):
                mid = lo + (hi - lo) / 2
                lo, hi = (mid, hi) if mid.astimezone(z).utcoffset() == before else (lo, mid)
            first, last = sorted(((hi + before).replace(tzinfo=None), (hi + after).replace(tzinfo=None)))
            while first < last:
                hours.add(first.hour)
                first += dt.timedelta(minutes=15)
        before, t = after, t + week
    return tuple(sorted(hours))


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
        raise Reject(f"{_called(field)} is outside 1970–2100: {shown(value)}")
    return ms


def _epoch_ms(value: Any, field: str, tz: str) -> int:
    """A timestamp as UTC epoch ms; raises Reject naming `field` when missing or unparseable.

    Numbers are epoch seconds, ms, µs or ns (told apart by magnitude); strings are ISO 8601
    ('2026-11-20T09:14:03.120Z', '2026-11-20 09:14:03'), or numeric strings. A time without a
    zone is read in `tz` (the time zone the log was written in).
    """
    if value is None or value == "":
        raise Reject(f"missing {_called(field)}")
    if isinstance(value, bool):
        raise Reject(f"{_called(field)} is not a time: {shown(value)}")
    if isinstance(value, str):
        text = value.strip()
        try:
            value = int(text) if text.isdigit() else float(text)  # int keeps ns exact
        except ValueError:
            try:
                parsed = dt.datetime.fromisoformat(text)
            except (ValueError, OverflowError):
                raise Reject(f"{_called(field)} is not ISO 8601 or epoch: {text[:40]!r}") from None
            notes = TIME_NOTES.get()
            if parsed.tzinfo is None:
                parsed = _local(parsed, zone(tz), notes)
            elif notes is not None:
                notes.zoned += 1
            try:
                return int(round(parsed.timestamp() * 1000))
            except (OverflowError, OSError, ValueError):
                raise Reject(f"{_called(field)} is outside 1970–2100: {text[:40]!r}") from None
    if isinstance(value, int) and value >= 100_000_000_000_000:  # µs / ns: integer maths, no float rounding
        return value // 1000 if value < 100_000_000_000_000_000 else value // 1_000_000
    if isinstance(value, (int, float)):
        f = float(value)
        if not math.isfinite(f) or f <= 0:
            raise Reject(f"{_called(field)} is not a time: {shown(value)}")
        if f < 1e11:  # seconds (until year 5138)
            return int(round(f * 1000))
        if f < 1e14:
            return int(round(f))
        if f < 1e17:
            return int(f // 1000)
        return int(f // 1_000_000)
    raise Reject(f"{_called(field)} is not a time: {shown(value)}")


def _called(field: str) -> str:
    """A time field as a message names it: 'timestamp created', but 'timestamp' alone for a field so named."""
    return field if field.lower() in ("timestamp", "time", "ts") else f"timestamp {field}"


def _local(wall: dt.datetime, tz: dt.tzinfo, notes: TimeNotes | None) -> dt.datetime:
    """A wall-clock time in `tz`; where the clock repeats or skips, the smaller of the two UTC offsets."""
    first, second = wall.replace(tzinfo=tz, fold=0), wall.replace(tzinfo=tz, fold=1)
    off0, off1 = first.utcoffset(), second.utcoffset()
    if notes is not None:
        notes.zoneless += 1
        notes.ambiguous += off0 != off1
    return second if off0 is not None and off1 is not None and off1 < off0 else first


def non_negative(value: Any, field: str) -> float:
    """`value` as a finite number ≥ 0; raises Reject naming `field` when it is not a number, not finite or
    negative."""
    if isinstance(value, bool):
        raise Reject(f"{field} is not a number: {shown(value)}")
    try:
        f = float(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: a whole number past any float (10**400)
        raise Reject(f"{field} is not a number: {shown(value)}") from None
    if not math.isfinite(f):
        raise Reject(f"{field} is not finite: {shown(value)}")
    if f < 0:
        raise Reject(f"{field} is negative: {shown(value)}")
    return f


def timing_ms(value: Any, field: str, scale: float = 1.0) -> float:
    """A TTFT or duration in ms (value × scale: 1000 for seconds): a finite number from 0 to MAX_TIMING_MS; raises
    Reject naming `field` otherwise."""
    f = non_negative(value, field)
    if f * scale > MAX_TIMING_MS:
        raise Reject(f"{field} is {str(value)[:40]}, over a week: not a timing")
    return f * scale
