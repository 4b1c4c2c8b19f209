"""Request building and event interpretation for the three streaming protocols.

- "openai-chat":        POST {base}/chat/completions, `choices[0].delta`
- "openai-completions": POST {base}/completions, `choices[0].text`
- "anthropic":          POST {base}/v1/messages (or {base}/messages when base ends in /v1),
                        `x-api-key` + `anthropic-version`, typed events

What counts (DESIGN §3): the *first event* is the first one carrying a choices
entry or content block of any kind (often a role-only delta: not a token); a
*token* is a non-empty content, reasoning (`reasoning_content`/`reasoning`) or
tool-call delta, for Anthropic any `content_block_delta`; *visible* content is
non-empty text a user would see (content/text, not reasoning, not tool-call
arguments). Usage-only chunks (`choices: []`) count for none of these.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from planner.probes.errors import ProbeFault
from planner.probes.sse import SseEvent

__all__ = ["ANTHROPIC_VERSION", "PROTOCOLS", "EventInfo", "build_request", "interpret", "request_url"]

PROTOCOLS = ("openai-chat", "openai-completions", "anthropic")
ANTHROPIC_VERSION = "2023-06-01"


@dataclass
class EventInfo:
    """What one SSE event means for the clock."""

    is_first_event: bool = False  # carries a choices entry / content block of any kind
    is_token: bool = False  # content, reasoning or tool-call delta (Anthropic: content_block_delta)
    is_visible: bool = False  # non-empty visible text
    done: bool = False  # [DONE] / message_stop
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None


def request_url(protocol: str, base_url: str) -> str:
    """The full endpoint URL for `protocol` under `base_url`; raises ValueError for an unknown protocol."""
    base = base_url.rstrip("/")
    if protocol == "openai-chat":
        return base + "/chat/completions"
    if protocol == "openai-completions":
        return base + "/completions"
    if protocol == "anthropic":
        return base + ("/messages" if base.endswith("/v1") else "/v1/messages")
    raise ValueError(f"unknown protocol {protocol!r}; expected one of {', '.join(PROTOCOLS)}")


def build_request(protocol: str, model: str, prompt: str, max_tokens: int, api_key: str | None) -> tuple[dict[str, str], dict]:
    """(headers, JSON body) of a streaming request; the key goes only into the auth header."""
    headers = {
        "Accept": "text/event-stream",
        "Accept-Encoding": "identity",  # a compressing proxy would otherwise buffer the stream
        "Content-Type": "application/json",
        "Cache-Control": "no-cache",
    }
    if protocol == "anthropic":
        headers["anthropic-version"] = ANTHROPIC_VERSION
        if api_key:
            headers["x-api-key"] = api_key
        body = {"model": model, "max_tokens": max_tokens, "stream": True, "messages": [{"role": "user", "content": prompt}]}
        return headers, body
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    body = {"model": model, "max_tokens": max_tokens, "stream": True, "stream_options": {"include_usage": True}, "temperature": 0}
    if protocol == "openai-chat":
        body["messages"] = [{"role": "user", "content": prompt}]
    elif protocol == "openai-completions":
        body["prompt"] = prompt
    else:
        raise ValueError(f"unknown protocol {protocol!r}; expected one of {', '.join(PROTOCOLS)}")
    return headers, body


def _load(data: str) -> object:
    try:
        return json.loads(data)
    except ValueError:
        snippet = data if len(data) <= 80 else data[:80] + "…"
        raise ProbeFault("bad_json", f"an SSE event's data is not valid JSON: {snippet!r}") from None


def _stream_error(obj: dict) -> ProbeFault:
    err = obj.get("error")
    kind = err.get("type", "") if isinstance(err, dict) else ""
    msg = err.get("message", "") if isinstance(err, dict) else str(err)
    cls = "rate_limited" if "rate" in str(kind) else "server_error"
    return ProbeFault(cls, f"error event in the stream: {kind} {msg}".strip())


def _usage_openai(usage: dict, info: EventInfo) -> None:
    if not isinstance(usage, dict):
        return
    if isinstance(usage.get("prompt_tokens"), int):
        info.prompt_tokens = usage["prompt_tokens"]
    if isinstance(usage.get("completion_tokens"), int):
        info.output_tokens = usage["completion_tokens"]
    details = usage.get("prompt_tokens_details")
    if isinstance(details, dict) and isinstance(details.get("cached_tokens"), int):
        info.cached_tokens = details["cached_tokens"]


def _openai(protocol: str, ev: SseEvent) -> EventInfo:
    info = EventInfo()
    if ev.data.strip() == "[DONE]":
        info.done = True
        return info
    obj = _load(ev.data)
    if not isinstance(obj, dict):
        raise ProbeFault("bad_json", f"an SSE event's data is JSON but not an object: {ev.data[:80]!r}")
    if "error" in obj and obj["error"]:
        raise _stream_error(obj)
    _usage_openai(obj.get("usage"), info)
    choices = obj.get("choices")
    if not isinstance(choices, list) or not choices:
        return info  # usage-only chunk, or something else without choices
    info.is_first_event = True
    choice = choices[0] if isinstance(choices[0], dict) else {}
    if protocol == "openai-completions":
        text = choice.get("text")
        info.is_token = info.is_visible = isinstance(text, str) and text != ""
        return info
    delta = choice.get("delta") or {}
    if not isinstance(delta, dict):
        return info
    content = delta.get("content")
    visible = isinstance(content, str) and content != ""
    reasoning = any(isinstance(delta.get(k), str) and delta.get(k) != "" for k in ("reasoning_content", "reasoning"))
    tools = bool(delta.get("tool_calls")) or bool(delta.get("function_call"))
    info.is_visible = visible
    info.is_token = visible or reasoning or tools
    return info


def _anthropic(ev: SseEvent) -> EventInfo:
    info = EventInfo()
    kind = ev.event
    if kind == "ping":
        return info
    obj = _load(ev.data) if ev.data else {}
    if not isinstance(obj, dict):
        raise ProbeFault("bad_json", f"an SSE event's data is JSON but not an object: {ev.data[:80]!r}")
    kind = obj.get("type", kind) if kind == "message" else kind
    if kind == "error":
        raise _stream_error(obj)
    if kind == "message_start":
        usage = (obj.get("message") or {}).get("usage") or {}
        _usage_anthropic(usage, info)
    elif kind == "content_block_start":
        info.is_first_event = True
    elif kind == "content_block_delta":
        info.is_first_event = True
        delta = obj.get("delta") or {}
        info.is_token = True
        info.is_visible = delta.get("type") == "text_delta" and bool(delta.get("text"))
    elif kind == "message_delta":
        _usage_anthropic(obj.get("usage") or {}, info)
    elif kind == "message_stop":
        info.done = True
    return info


def _usage_anthropic(usage: dict, info: EventInfo) -> None:
    if not isinstance(usage, dict):
        return
    parts = [usage.get(k) for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")]
    if any(isinstance(p, int) for p in parts):
        info.prompt_tokens = sum(p for p in parts if isinstance(p, int))
    if isinstance(usage.get("cache_read_input_tokens"), int):
        info.cached_tokens = usage["cache_read_input_tokens"]
    if isinstance(usage.get("output_tokens"), int):
        info.output_tokens = usage["output_tokens"]


def interpret(protocol: str, ev: SseEvent) -> EventInfo:
    """What `ev` means for the clock under `protocol`.

    Raises ProbeFault("bad_json") for unparseable data and ProbeFault("server_error"/
    "rate_limited") for an error event inside the stream.
    """
    if protocol == "anthropic":
        return _anthropic(ev)
    return _openai(protocol, ev)
