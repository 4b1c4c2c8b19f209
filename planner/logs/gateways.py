"""Gateway and tracing exports: LiteLLM spend logs and Langfuse observations.

Both carry first-token timestamps, so TTFT as users waited for it can be read from them:
ttft_ms = completionStartTime − startTime, duration_ms = endTime − startTime.

LiteLLM spend log (LiteLLM_SpendLogs): request_id, call_type, model, startTime, endTime,
completionStartTime, prompt_tokens (OpenAI semantics: includes cached), completion_tokens,
status, metadata (dict or JSON string; cached tokens under
metadata.additional_usage_values.prompt_tokens_details.cached_tokens when present).
For a non-streaming call LiteLLM sets completionStartTime = endTime, so its "TTFT" is the whole call.

Langfuse observation export: id, traceId, type (GENERATION), startTime, endTime,
completionStartTime, model, usageDetails {input, output, total, input_cached_tokens /
cache_read_input_tokens …} (Langfuse reports `input` without the cached part) or the older
`usage` {input, output, total} / promptTokens, completionTokens.
"""

from __future__ import annotations

import json
import math

from planner.logs.records import Reject, Row, dig, epoch_ms, token_count

__all__ = ["FORMATS", "Skip", "extract_langfuse", "extract_litellm", "looks_like_langfuse", "looks_like_litellm"]

FORMATS = {
    "litellm": "LiteLLM spend logs (startTime, completionStartTime, prompt_tokens, model)",
    "langfuse": "Langfuse observation exports (type GENERATION, startTime, completionStartTime, usageDetails)",
}


class Skip(Reject):
    """A record that is not a model call (e.g. a Langfuse SPAN): left out without counting as an error."""


def looks_like_litellm(rec: dict) -> bool:
    return (
        "startTime" in rec
        and ("prompt_tokens" in rec or "spend" in rec)
        and ("request_id" in rec or "call_type" in rec or "spend" in rec)
    )


def looks_like_langfuse(rec: dict) -> bool:
    return "startTime" in rec and (
        "usageDetails" in rec or "traceId" in rec or "promptTokens" in rec or rec.get("type") == "GENERATION"
    )


def _timings(rec: dict, tz: str) -> tuple[int, float, float]:
    start = epoch_ms(rec.get("startTime"), "startTime", tz)
    ttft = duration = math.nan
    if rec.get("completionStartTime"):
        ttft = float(epoch_ms(rec["completionStartTime"], "completionStartTime", tz) - start)
        if ttft < 0:
            raise Reject(f"completionStartTime is {-ttft:.0f} ms before startTime")
    if rec.get("endTime"):
        duration = float(epoch_ms(rec["endTime"], "endTime", tz) - start)
        if duration < 0:
            raise Reject(f"endTime is {-duration:.0f} ms before startTime")
    return start, ttft, duration


def extract_litellm(rec: dict, tz: str = "UTC") -> Row:
    """Row from one LiteLLM spend-log record; failed calls are rejected."""
    status = str(rec.get("status") or "success").lower()
    if status not in ("success", ""):
        raise Reject(f"call status is {status!r}")
    prompt = token_count(rec.get("prompt_tokens"), "prompt_tokens")
    output = token_count(rec.get("completion_tokens"), "completion_tokens", required=False)
    meta = rec.get("metadata")
    if isinstance(meta, str):
        try:
            meta = json.loads(meta)
        except ValueError:
            meta = None
    cached = 0
    if isinstance(meta, dict):
        raw = dig(meta, "additional_usage_values.prompt_tokens_details.cached_tokens")
        if raw is None:
            raw = dig(meta, "usage_object.prompt_tokens_details.cached_tokens")
        cached = token_count(raw, "metadata…cached_tokens", required=False)
    if cached > prompt:
        raise Reject(f"cached tokens ({cached}) exceed prompt tokens ({prompt})")
    start, ttft, duration = _timings(rec, tz)
    return Row(start, str(rec.get("model") or rec.get("model_group") or ""), prompt, cached, output, ttft, duration)


def extract_langfuse(rec: dict, tz: str = "UTC") -> Row:
    """Row from one Langfuse observation; non-GENERATION observations raise Skip."""
    kind = rec.get("type")
    if kind not in (None, "GENERATION"):
        raise Skip(f"observation type {kind} is not a model call")
    details = rec.get("usageDetails")
    if isinstance(details, dict) and details:
        base = token_count(details.get("input"), "usageDetails.input")
        extra = cached = 0
        for key, value in details.items():
            if key.startswith("input_") or key in ("cache_read_input_tokens", "cache_creation_input_tokens"):
                n = token_count(value, f"usageDetails.{key}", required=False)
                extra += n
                if "cache_read" in key or "cached" in key:
                    cached += n
        prompt = base + extra
        output = token_count(details.get("output"), "usageDetails.output", required=False)
    else:
        raw_usage = rec.get("usage")
        usage = raw_usage if isinstance(raw_usage, dict) else {}
        raw_in = usage.get("input", rec.get("promptTokens"))
        raw_out = usage.get("output", rec.get("completionTokens"))
        prompt = token_count(raw_in, "usage.input")
        output = token_count(raw_out, "usage.output", required=False)
        cached = 0
    start, ttft, duration = _timings(rec, tz)
    if math.isnan(ttft) and rec.get("timeToFirstToken") is not None:
        ttft = float(rec["timeToFirstToken"]) * 1000.0
    return Row(start, str(rec.get("model") or ""), prompt, cached, output, ttft, duration)
