"""OpenAI-shaped records: chat-completion (and Responses API) objects, and Batch API output lines.

Chat completion: `created` (epoch s), `model`, `usage.prompt_tokens` (includes cached tokens),
`usage.prompt_tokens_details.cached_tokens`, `usage.completion_tokens`.
Responses API: `created_at`, `usage.input_tokens` (includes cached), `usage.input_tokens_details.cached_tokens`,
`usage.output_tokens`.
Batch output line: `{"id", "custom_id", "response": {"status_code", "request_id", "body": <completion>}, "error"}`;
the batch file carries no arrival time of its own beyond the body's `created`.
"""

from __future__ import annotations

from typing import Any

from planner.logs.records import Reject, Row, dig, epoch_ms, token_count

__all__ = ["FORMATS", "extract_batch", "extract_chat", "looks_like_batch", "looks_like_chat"]

FORMATS = {
    "openai_chat": "OpenAI chat-completion / Responses objects (usage, created)",
    "openai_batch": "OpenAI Batch API output lines (custom_id, response.body)",
}

# Wrappers some loggers add around the response body; used when the body has no time of its own.
_WRAPPER_TIME_KEYS = ("timestamp", "request_time", "start_time", "created_at", "time")


def looks_like_chat(rec: dict) -> bool:
    obj = rec.get("object")
    if obj in ("chat.completion", "text_completion", "response"):
        return True
    usage = rec.get("usage")
    return isinstance(usage, dict) and "prompt_tokens" in usage and "created" in rec


def looks_like_batch(rec: dict) -> bool:
    return "custom_id" in rec and isinstance(rec.get("response"), dict) and "body" in rec["response"]


def extract_chat(rec: dict, tz: str = "UTC", outer: dict | None = None) -> Row:
    """Row from a chat-completion (or Responses API) object; raises Reject."""
    usage = rec.get("usage")
    if not isinstance(usage, dict):
        raise Reject("no usage object (was the request streamed without stream_options.include_usage?)")
    if rec.get("object") == "response":
        prompt = token_count(usage.get("input_tokens"), "usage.input_tokens")
        cached = token_count(
            dig(usage, "input_tokens_details.cached_tokens"), "usage.input_tokens_details.cached_tokens", required=False
        )
        output = token_count(usage.get("output_tokens"), "usage.output_tokens")
        ts_value, ts_field = rec.get("created_at"), "created_at"
    else:
        prompt = token_count(usage.get("prompt_tokens"), "usage.prompt_tokens")
        cached = token_count(
            dig(usage, "prompt_tokens_details.cached_tokens"),
            "usage.prompt_tokens_details.cached_tokens",
            required=False,
        )
        output = token_count(usage.get("completion_tokens"), "usage.completion_tokens")
        ts_value, ts_field = rec.get("created"), "created"
    if ts_value is None:
        for key in _WRAPPER_TIME_KEYS:
            for holder in (rec, outer or {}):
                if holder.get(key) is not None:
                    ts_value, ts_field = holder[key], key
                    break
            if ts_value is not None:
                break
    if cached > prompt:
        raise Reject(f"cached tokens ({cached}) exceed prompt tokens ({prompt})")
    return Row(epoch_ms(ts_value, ts_field, tz), str(rec.get("model") or ""), prompt, cached, output)


def extract_batch(rec: dict, tz: str = "UTC") -> Row:
    """Row from one Batch API output line; failed requests (error or status ≠ 200) are rejected."""
    response: Any = rec.get("response")
    if rec.get("error"):
        code = dig(rec, "error.code") or dig(rec, "error.message") or "error"
        raise Reject(f"batch request failed ({str(code)[:60]})")
    status = response.get("status_code") if isinstance(response, dict) else None
    if status is not None and status != 200:
        raise Reject(f"batch request returned HTTP {status}")
    body = response.get("body") if isinstance(response, dict) else None
    if not isinstance(body, dict):
        raise Reject("batch line has no response.body")
    return extract_chat(body, tz, outer=rec)
