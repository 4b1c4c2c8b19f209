"""The OpenAI Responses API stream (`POST {base}/responses`, typed SSE events).

What counts (as for chat): `response.created`, `response.in_progress`
and `response.queued` are metadata — neither the first event nor a token; the
first event is the first `output_item.added`/`content_part.added` or delta; a
token is a non-empty text, refusal, reasoning (summary or raw) or function/tool
call argument delta; visible is text or refusal. Usage arrives only at the end,
in `response.completed` (or `response.incomplete`).
"""

from __future__ import annotations

import json
from typing import Any

from planner.probes.errors import ProbeFault
from planner.probes.events import EventInfo, as_object, read_openai_usage

__all__ = ["MIN_OUTPUT_TOKENS", "TOKEN_EVENTS", "VISIBLE_EVENTS", "build_body", "interpret_event"]

#: The API rejects max_output_tokens below 16; a smaller max_tokens is sent as 16.
MIN_OUTPUT_TOKENS = 16
VISIBLE_EVENTS = frozenset({"response.output_text.delta", "response.refusal.delta"})
TOKEN_EVENTS = VISIBLE_EVENTS | {
    "response.reasoning_summary_text.delta",
    "response.reasoning_text.delta",
    "response.function_call_arguments.delta",
    "response.custom_tool_call_input.delta",
    "response.mcp_call_arguments.delta",
}
_FIRST_EVENTS = frozenset(
    {"response.output_item.added", "response.content_part.added", "response.reasoning_summary_part.added"}
)


def build_body(model: str, prompt: str, max_tokens: int) -> dict[str, Any]:
    """The JSON body: `store: false`, so probe prompts are not kept as the account's stored responses."""
    return {
        "model": model,
        "input": prompt,
        "max_output_tokens": max(MIN_OUTPUT_TOKENS, max_tokens),
        "stream": True,
        "store": False,
    }


def _fault(kind: str, code: object, message: object) -> ProbeFault:
    cls = "rate_limited" if "rate" in str(code) or "rate" in str(kind) else "server_error"
    return ProbeFault(cls, f"error event in the stream: {code or kind} {message or ''}".strip())


def interpret_event(event: str, data: str, info: EventInfo) -> None:
    """Fill `info` from one Responses event; raises ProbeFault for error events."""
    try:
        obj = json.loads(data) if data else {}
    except ValueError:
        snippet = data if len(data) <= 80 else data[:80] + "…"
        raise ProbeFault("bad_json", f"an SSE event's data is not valid JSON: {snippet!r}") from None
    if not isinstance(obj, dict):
        raise ProbeFault("bad_json", f"an SSE event's data is JSON but not an object: {data[:80]!r}")
    kind = obj.get("type") if isinstance(obj.get("type"), str) else event
    if kind == "error":
        raise _fault(kind, obj.get("code"), obj.get("message"))
    if kind == "response.failed":
        err = as_object(obj.get("response")).get("error") or {}
        if not isinstance(err, dict):
            err = {"message": err}
        raise _fault(kind, err.get("code"), err.get("message"))
    if kind in _FIRST_EVENTS:
        info.is_first_event = True
    elif kind in TOKEN_EVENTS:
        info.is_first_event = True
        delta = obj.get("delta")
        info.is_token = isinstance(delta, str) and delta != ""
        info.is_visible = info.is_token and kind in VISIBLE_EVENTS
    elif kind in ("response.completed", "response.incomplete"):
        info.done = True
        read_openai_usage(
            info,
            as_object(obj.get("response")).get("usage"),
            prompt_key="input_tokens",
            output_key="output_tokens",
            details_key="input_tokens_details",
        )
