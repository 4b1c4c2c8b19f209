"""Request building and event interpretation for every streaming protocol.

- "openai-chat":        POST {base}/chat/completions, `choices[0].delta`
- "openai-completions": POST {base}/completions, `choices[0].text`
- "anthropic":          POST {base}/v1/messages (or {base}/messages when base ends in /v1),
                        `x-api-key` + `anthropic-version`, typed events
- "openai-responses":   POST {base}/responses, typed `response.*` events (planner.probes.responses)
- "azure-openai":       POST {deployment}/chat/completions?api-version=…, `api-key` or Entra ID bearer
                        (planner.probes.azure); chat chunks
- "gemini" / "vertex":  POST {base}/models/{model}:streamGenerateContent?alt=sse (planner.probes.gemini)
- "bedrock":            POST {base}/model/{model}/converse-stream, SigV4 or a Bedrock API key, binary
                        event-stream frames (planner.probes.bedrock)

What counts: the *first event* is the first one carrying a choices
entry or content block of any kind (often a role-only delta: not a token); a
*token* is a non-empty content, reasoning (`reasoning_content`/`reasoning`) or
tool-call delta, for Anthropic any `content_block_delta`; *visible* content is
non-empty text a user would see (content/text, not reasoning, not tool-call
arguments). Usage-only chunks (`choices: []`) count for none of these.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from planner.probes import azure, bedrock, gemini, responses
from planner.probes.errors import ProbeFault, parse_retry_after
from planner.probes.events import EventInfo, as_object, read_openai_usage, token_count, token_total
from planner.probes.sse import SseEvent, SseParser

if TYPE_CHECKING:  # botocore ships no types: reads as Any
    from botocore.eventstream import EventStreamMessage

__all__ = [
    "ANTHROPIC_VERSION",
    "PROTOCOLS",
    "EventInfo",
    "ProbeProtocol",
    "Signer",
    "build_request",
    "default_auth",
    "interpret",
    "new_decoder",
    "request_url",
    "retry_after_s",
    "stream_content_type",
]


class ProbeProtocol(StrEnum):
    """The wire protocol of an endpoint (the stored value is the member's value: endpoint.protocol, endpoints.toml,
    the provider catalog, URLs and `--protocol`). Named so as not to clash with typing.Protocol."""

    OPENAI_CHAT = "openai-chat"
    OPENAI_COMPLETIONS = "openai-completions"
    ANTHROPIC = "anthropic"
    OPENAI_RESPONSES = "openai-responses"
    AZURE_OPENAI = "azure-openai"
    GEMINI = "gemini"
    VERTEX = "vertex"
    BEDROCK = "bedrock"


_P = ProbeProtocol
#: Every protocol's value, in the order the form and `--help` list them (plain strings: click.Choice and the
#: endpoint form show them as they are).
PROTOCOLS: tuple[str, ...] = tuple(p.value for p in ProbeProtocol)
ANTHROPIC_VERSION = "2023-06-01"
# Adds authentication headers in place to a request about to go: (method, url, headers, body); Bedrock's SigV4.
Signer = Callable[[str, str, dict[str, str], bytes], None]


def request_url(protocol: str, base_url: str, model: str = "") -> str:
    """The full endpoint URL for `protocol` under `base_url` (Gemini, Vertex and Bedrock put `model` in the path);
    raises ValueError for an unknown protocol."""
    base = base_url.rstrip("/")
    if protocol == _P.OPENAI_RESPONSES:
        return base + "/responses"
    if protocol == _P.AZURE_OPENAI:
        return azure.request_url(base_url)
    if protocol in (_P.GEMINI, _P.VERTEX):
        return gemini.request_url(base, model)
    if protocol == _P.BEDROCK:
        return bedrock.request_url(base, model)
    if protocol == _P.OPENAI_CHAT:
        return base + "/chat/completions"
    if protocol == _P.OPENAI_COMPLETIONS:
        return base + "/completions"
    if protocol == _P.ANTHROPIC:
        return base + ("/messages" if base.endswith("/v1") else "/v1/messages")
    raise ValueError(f"unknown protocol {protocol!r}; expected one of {', '.join(PROTOCOLS)}")


def build_request(
    protocol: str, model: str, prompt: str, max_tokens: int, api_key: str | None
) -> tuple[dict[str, str], dict[str, Any]]:
    """(headers, JSON body) of a streaming request; the key goes only into the auth header."""
    headers = {
        "Accept": "text/event-stream",
        "Accept-Encoding": "identity",  # a compressing proxy would otherwise buffer the stream
        "Content-Type": "application/json",
        "Cache-Control": "no-cache",
    }
    if protocol == _P.ANTHROPIC:
        headers["anthropic-version"] = ANTHROPIC_VERSION
        if api_key:
            headers["x-api-key"] = api_key
        body = {
            "model": model,
            "max_tokens": max_tokens,
            "stream": True,
            "messages": [{"role": "user", "content": prompt}],
        }
        return headers, body
    if protocol in (_P.GEMINI, _P.VERTEX, _P.BEDROCK):
        if protocol == _P.BEDROCK:
            headers["Accept"] = bedrock.CONTENT_TYPE
        if api_key:
            auth = {"x-goog-api-key": api_key} if protocol == _P.GEMINI else {"Authorization": f"Bearer {api_key}"}
            headers.update(auth)
        build = bedrock.build_body if protocol == _P.BEDROCK else gemini.build_body
        body = build(prompt, max_tokens)
        return headers, body
    if protocol == _P.AZURE_OPENAI:
        headers.update(azure.auth_headers(api_key))
    elif api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    if protocol == _P.OPENAI_RESPONSES:
        return headers, responses.build_body(model, prompt, max_tokens)
    body = {
        "model": model,
        "max_tokens": max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": 0,
    }
    if protocol in (_P.OPENAI_CHAT, _P.AZURE_OPENAI):
        body["messages"] = [{"role": "user", "content": prompt}]
    elif protocol == _P.OPENAI_COMPLETIONS:
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


def _stream_error(obj: dict[str, Any]) -> ProbeFault:
    err = obj.get("error")
    kind = err.get("type", "") if isinstance(err, dict) else ""
    msg = err.get("message", "") if isinstance(err, dict) else str(err)
    cls = "rate_limited" if "rate" in str(kind) else "server_error"
    return ProbeFault(cls, f"error event in the stream: {kind} {msg}".strip())


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
    read_openai_usage(
        info,
        obj.get("usage"),
        prompt_key="prompt_tokens",
        output_key="completion_tokens",
        details_key="prompt_tokens_details",
    )
    choices = obj.get("choices")
    if not isinstance(choices, list) or not choices:
        return info  # usage-only chunk, or something else without choices
    info.is_first_event = True
    choice = choices[0] if isinstance(choices[0], dict) else {}
    if protocol == _P.OPENAI_COMPLETIONS:
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
        _usage_anthropic(as_object(as_object(obj.get("message")).get("usage")), info)
    elif kind == "content_block_start":
        info.is_first_event = True
    elif kind == "content_block_delta":
        info.is_first_event = True
        delta = as_object(obj.get("delta"))
        info.is_token = True
        text = delta.get("text")
        info.is_visible = delta.get("type") == "text_delta" and isinstance(text, str) and text != ""
    elif kind == "message_delta":
        _usage_anthropic(as_object(obj.get("usage")), info)
    elif kind == "message_stop":
        info.done = True
    return info


def _usage_anthropic(usage: dict[str, Any], info: EventInfo) -> None:
    parts = [usage.get(k) for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")]
    if (prompt := token_total(parts)) is not None:
        info.prompt_tokens = prompt
    if (cached := token_count(usage.get("cache_read_input_tokens"))) is not None:
        info.cached_tokens = cached
    if (output := token_count(usage.get("output_tokens"))) is not None:
        info.output_tokens = output


def interpret(protocol: str, ev: SseEvent | EventStreamMessage) -> EventInfo:
    """What `ev` (an SseEvent; for "bedrock" a botocore EventStreamMessage) means for the clock under `protocol`.

    Raises ProbeFault("bad_json") for unparseable data and ProbeFault("server_error"/
    "rate_limited") for an error event inside the stream.
    """
    if protocol == _P.ANTHROPIC:
        return _anthropic(ev)
    info = EventInfo()
    if protocol == _P.OPENAI_RESPONSES:
        responses.interpret_event(ev.event, ev.data, info)
        return info
    if protocol in (_P.GEMINI, _P.VERTEX):
        gemini.interpret_data(ev.data, info)
        return info
    if protocol == _P.BEDROCK:
        bedrock.interpret_message(ev, info)
        return info
    return _openai(_P.OPENAI_CHAT if protocol == _P.AZURE_OPENAI else protocol, ev)


def stream_content_type(protocol: str) -> str:
    """The content type a streaming answer under `protocol` carries."""
    return bedrock.CONTENT_TYPE if protocol == _P.BEDROCK else "text/event-stream"


def new_decoder(protocol: str) -> SseParser | bedrock.EventStreamDecoder:
    """A fresh incremental decoder for the response bytes: SseParser, or for Bedrock an event-stream decoder
    (both: `feed(bytes) -> list of events`, `bytes_seen`)."""
    return bedrock.EventStreamDecoder() if protocol == _P.BEDROCK else SseParser()


def default_auth(protocol: str, url: str, api_key: str | None) -> tuple[str | None, Signer | None]:
    """(api_key, signer) for a request whose endpoint names no key variable: Vertex takes an Application Default
    Credentials token, Bedrock a SigV4 signer over the AWS credential chain; others are unchanged.

    Called before a sample's clock starts (credential look-ups can take a while). Raises MissingApiKey
    (naming what is missing, never a value) when the cloud's default credentials are not there."""
    if protocol == _P.BEDROCK:
        bedrock.preload()  # botocore's decoder imported now, not between the response headers and the first frame
    if api_key:
        return api_key, None
    if protocol == _P.VERTEX:
        token = gemini.adc_token()
        if not token:
            raise gemini.MissingGoogleCredentials()
        return token, None
    if protocol == _P.BEDROCK:
        return None, bedrock.sigv4_signer(url)
    return api_key, None


def retry_after_s(protocol: str, headers: Mapping[str, str], body: str) -> float | None:
    """Seconds an error response asks to wait: `retry-after-ms` (Azure, OpenAI), `Retry-After`, or a Gemini
    RetryInfo `retryDelay` in the body; None when it says nothing."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            value = float(ms)
            if value >= 0:
                return value / 1000.0
        except ValueError:
            pass
    seconds = parse_retry_after(headers.get("retry-after"))
    if seconds is None and protocol in (_P.GEMINI, _P.VERTEX):
        seconds = gemini.retry_delay_s(body)
    return seconds
