"""Anthropic Messages responses (and Message Batches result lines).

`usage.input_tokens` counts only the uncached part of the prompt; the whole prompt is
input_tokens + cache_read_input_tokens + cache_creation_input_tokens, and the cache hits are
cache_read_input_tokens. A Messages response carries no timestamp, so a log line must add one
(`timestamp`, `created_at`, `request_time`, or a wrapper `{"timestamp": …, "response": {…}}`).
"""

from __future__ import annotations

from planner.logs.records import Reject, Row, epoch_ms, token_count

__all__ = ["FORMATS", "extract", "looks_like"]

FORMATS = {"anthropic": "Anthropic Messages responses (usage.input_tokens, cache_read_input_tokens) with a timestamp"}

_TIME_KEYS = ("timestamp", "created_at", "request_time", "start_time", "time")


def _message(rec: dict) -> dict | None:
    if rec.get("type") == "message":
        return rec
    for key in ("response", "message", "body"):
        inner = rec.get(key)
        if isinstance(inner, dict) and inner.get("type") == "message":
            return inner
    result = rec.get("result")  # Message Batches: {"custom_id", "result": {"type": "succeeded", "message": {...}}}
    if isinstance(result, dict) and isinstance(result.get("message"), dict):
        return result["message"]
    return None


def looks_like(rec: dict) -> bool:
    msg = _message(rec)
    if msg is not None:
        return True
    usage = rec.get("usage")
    return (
        isinstance(usage, dict)
        and "input_tokens" in usage
        and ("cache_read_input_tokens" in usage or "cache_creation_input_tokens" in usage)
    )


def extract(rec: dict, tz: str = "UTC") -> Row:
    """Row from a Messages response (bare or wrapped); raises Reject."""
    result = rec.get("result")
    if isinstance(result, dict) and result.get("type") not in (None, "succeeded"):
        raise Reject(f"batch result is {result.get('type')!r}, not succeeded")
    msg = _message(rec) or rec
    usage = msg.get("usage")
    if not isinstance(usage, dict):
        raise Reject("no usage object")
    uncached = token_count(usage.get("input_tokens"), "usage.input_tokens")
    read = token_count(usage.get("cache_read_input_tokens"), "usage.cache_read_input_tokens", required=False)
    created = token_count(usage.get("cache_creation_input_tokens"), "usage.cache_creation_input_tokens", required=False)
    output = token_count(usage.get("output_tokens"), "usage.output_tokens")
    for holder in (rec, msg):
        for key in _TIME_KEYS:
            if holder.get(key) is not None:
                ts = epoch_ms(holder[key], key, tz)
                break
        else:
            continue
        break
    else:
        raise Reject("no timestamp (Anthropic responses carry none: log a 'timestamp' field beside each)")
    return Row(ts, str(msg.get("model") or ""), uncached + read + created, read, output)
