"""One record of a prefix trace, field by field: its arrival, its block hashes, its token counts and its session.

Each reader returns the field's value or raises planner.logs.records.Reject with a reason that names the field and
what it held (`hash_ids holds "a", not a whole number`); planner.kvcache.chains turns that into a rejected line
(file:line: reason) and reads on, as the log reader does.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from typing import Any

from planner.logs.records import MAX_EPOCH_MS, Reject, token_count

__all__ = ["TIME_KEYS", "arrival_ms", "block_hashes", "counts", "session_of"]

TIME_KEYS = ("timestamp", "created", "startTime")  # the first one present is the arrival
_SESSION_KEYS = ("session_id", "conversation_id", "thread_id")  # top level or under `metadata`
_SHOWN_CHARS = 40  # of a bad value, quoted in its reason


def _shown(value: Any) -> str:
    """A JSON value as the trace wrote it (null, "a", 1.5), cut to _SHOWN_CHARS characters."""
    try:
        text = json.dumps(value, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 1] + "…"


def arrival_ms(rec: dict[str, Any]) -> int:
    """The record's arrival (ms, from 0 up to 2100-01-01 in epoch ms): a number in ms (Mooncake counts from the
    trace's start) or in epoch seconds (told apart by magnitude, as before), or an ISO time (UTC unless it says).

    Raises Reject naming the field when it is missing, not a time, not finite or outside that range.
    """
    key = next((k for k in TIME_KEYS if rec.get(k) is not None), None)
    if key is None:
        raise Reject(f"no timestamp ({', '.join(TIME_KEYS)})")
    value = rec[key]
    if isinstance(value, bool):
        raise Reject(f"{key} is {_shown(value)}, not a time")
    if isinstance(value, (int, float)):
        try:
            v = float(value)
        except OverflowError:  # a JSON integer beyond any float (10^400)
            raise Reject(f"{key} is {_shown(value)}, not a time") from None
        if not math.isfinite(v):
            raise Reject(f"{key} is {_shown(value)}, not a finite number")
        ms = v if v > 1e11 or v < 1e9 else v * 1000  # seconds since 1970, or ms (Mooncake: ms from its start)
    elif isinstance(value, str):
        try:
            when = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise Reject(f"{key} {_shown(value)} is not a number or an ISO time") from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.UTC)
        try:
            ms = when.timestamp() * 1000
        except (OverflowError, OSError, ValueError):
            raise Reject(f"{key} {_shown(value)} is outside 1970–2100") from None
    else:
        raise Reject(f"{key} is {_shown(value)}, not a time")
    if not 0 <= ms < MAX_EPOCH_MS:
        raise Reject(f"{key} {_shown(value)} is outside 1970–2100 (or, from a trace's start, negative)")
    return int(ms)


def _hash(h: Any) -> int:
    """One block hash as an int: a whole number (an integral float, or a string of digits, as some exports write
    it); raises Reject quoting anything else."""
    if isinstance(h, int) and not isinstance(h, bool):
        return h
    if isinstance(h, float) and math.isfinite(h) and h == int(h):
        return int(h)
    if isinstance(h, str) and h.strip().lstrip("-").isdecimal() and len(h) <= _SHOWN_CHARS:
        return int(h)
    raise Reject(f"hash_ids holds {_shown(h)}, not a whole number")


def block_hashes(value: Any) -> tuple[int, ...]:
    """A record's `hash_ids` (Mooncake / AIPerf: one hash per 512-token block of its prompt), each a whole number.

    Raises Reject when it is not a list, or naming the first element that is not a whole number.
    """
    if not isinstance(value, list):
        raise Reject(f"hash_ids is {_shown(value)}, not a list of whole numbers")
    return tuple(_hash(h) for h in value)


def counts(rec: dict[str, Any], prompt_key: str | None, output_keys: tuple[str, ...]) -> tuple[int, int]:
    """(prompt tokens or 0 without `prompt_key`, output tokens) of a record: the first of `output_keys` present, 0
    when none is; each a token count (planner.logs.records.token_count). Raises Reject naming a bad one."""
    prompt = token_count(rec.get(prompt_key), prompt_key, required=False) if prompt_key else 0
    out_key = next((k for k in output_keys if rec.get(k) is not None), output_keys[0])
    return prompt, token_count(rec.get(out_key), out_key, required=False)


def session_of(rec: dict[str, Any]) -> str | None:
    """The record's session: session_id / conversation_id / thread_id, top level or under `metadata`; None when it
    has none."""
    meta = rec.get("metadata")
    for where in (rec, meta if isinstance(meta, dict) else {}):
        for key in _SESSION_KEYS:
            value = where.get(key)
            if value not in (None, ""):
                return str(value)
    return None
