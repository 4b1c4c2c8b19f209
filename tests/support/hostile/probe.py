"""The probe's response parser (planner.probes.ttft.probe_once) against the hostile server: the case as the event
stream of each streaming protocol whose events are JSON (OpenAI chat, Anthropic, OpenAI Responses, Gemini), and as
the JSON body of an error (429, retried once on a clock that never waits).

A value goes in every slot of an event (`STREAM_SLOTS`: a delta's text, the choices, the usage counts, an error…) or
of an error body and its Retry-After headers (`ERROR_SLOTS`); each slot is one request, all of a case's requests
sent at once. A sample is READ when ok with sane figures, REFUSED when it failed with an error class and a detail.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from planner.probes.errors import ERROR_CLASSES
from planner.probes.ttft import ProbeTarget, TtftSample, probe_once
from tests.support.hostile.corpus import API_KEY, HOLE, Case, embed, gzip_bomb, json_text, zstd_bomb
from tests.support.hostile.outcome import READ, REFUSED, WRONG, Env, Outcome, sane_number
from tests.support.hostile.server import Answer

__all__ = ["probe_error_body", "probe_stream", "stream_accepts", "error_accepts"]

# protocol → the good stream's events, (event type, data as a JSON-ready value or text)
_GOOD: dict[str, list[tuple[str, Any]]] = {
    "openai-chat": [
        ("", {"choices": [{"delta": {"role": "assistant"}}]}),
        ("", {"choices": [{"delta": {"content": "Hi"}}]}),
        ("", {"choices": [{"delta": {"content": " there"}}]}),
        ("", {"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 2}}),
        ("", "[DONE]"),
    ],
    "anthropic": [
        ("message_start", {"type": "message_start", "message": {"usage": {"input_tokens": 10, "output_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0}),
        ("content_block_delta", {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "Hi"}}),
        ("message_delta", {"type": "message_delta", "usage": {"output_tokens": 2}}),
        ("message_stop", {"type": "message_stop"}),
    ],
    "openai-responses": [
        ("response.created", {"type": "response.created"}),
        ("response.output_text.delta", {"type": "response.output_text.delta", "delta": "Hi"}),
        ("response.completed", {"type": "response.completed", "response": {"usage": {"input_tokens": 10}}}),
    ],
    "gemini": [
        ("", {"candidates": [{"content": {"parts": [{"text": "Hi"}], "role": "model"}}]}),
        ("", {"candidates": [], "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 2}}),
    ],
}

_H = HOLE
# protocol → (event type, template): one hostile event each, sent after the good stream's tokens
STREAM_SLOTS: dict[str, list[tuple[str, Any]]] = {
    "openai-chat": [
        ("", {"choices": [{"delta": {"content": _H}}]}),
        ("", {"choices": _H}),
        ("", {"choices": [_H]}),
        ("", {"choices": [{"delta": _H}]}),
        ("", {"choices": [{"delta": {"content": "x", "tool_calls": _H, "reasoning": _H}}]}),
        ("", {"choices": [], "usage": _H}),
        ("", {"choices": [], "usage": {"prompt_tokens": _H, "completion_tokens": _H}}),
        ("", {"choices": [], "usage": {"prompt_tokens": 1, "prompt_tokens_details": {"cached_tokens": _H}}}),
        ("", {"choices": [], "usage": {"prompt_tokens": 1, "prompt_tokens_details": _H}}),
        ("", {"error": _H}),
        ("", {"error": {"type": _H, "message": _H}}),
        ("", _H),
    ],
    "anthropic": [
        ("message_start", {"type": "message_start", "message": _H}),
        ("message_start", {"type": "message_start", "message": {"usage": _H}}),
        ("message_start", {"type": "message_start", "message": {"usage": {"input_tokens": _H, "output_tokens": _H}}}),
        ("message_start", {"type": "message_start", "message": {"usage": {"cache_read_input_tokens": _H}}}),
        ("content_block_delta", {"type": "content_block_delta", "delta": _H}),
        ("content_block_delta", {"type": "content_block_delta", "delta": {"type": "text_delta", "text": _H}}),
        ("message_delta", {"type": "message_delta", "usage": _H}),
        ("message_delta", {"type": "message_delta", "usage": {"output_tokens": _H}}),
        ("message", {"type": _H}),
        ("error", {"type": "error", "error": _H}),
        ("message_delta", _H),
    ],
    "openai-responses": [
        ("response.output_text.delta", {"type": "response.output_text.delta", "delta": _H}),
        ("response.completed", {"type": "response.completed", "response": _H}),
        ("response.completed", {"type": "response.completed", "response": {"usage": _H}}),
        ("response.completed", {"type": "response.completed", "response": {"usage": {"input_tokens": _H}}}),
        ("response.failed", {"type": "response.failed", "response": _H}),
        ("response.failed", {"type": "response.failed", "response": {"error": _H}}),
        ("error", {"type": "error", "code": _H, "message": _H}),
        ("message", {"type": _H}),
        ("message", _H),
    ],
    "gemini": [
        ("", {"candidates": _H}),
        ("", {"candidates": [_H]}),
        ("", {"candidates": [{"content": _H}]}),
        ("", {"candidates": [{"content": {"parts": _H}}]}),
        ("", {"candidates": [{"content": {"parts": [_H]}}]}),
        ("", {"candidates": [{"content": {"parts": [{"text": _H, "thought": _H}]}}]}),
        ("", {"usageMetadata": _H}),
        ("", {"usageMetadata": {"promptTokenCount": _H, "candidatesTokenCount": _H, "cachedContentTokenCount": _H}}),
        ("", {"error": _H}),
        ("", {"error": {"status": _H, "message": _H}}),
        ("", [_H]),
        ("", _H),
    ],
}

# (protocol, error body template) with the value in it
ERROR_SLOTS: list[tuple[str, Any]] = [
    ("openai-chat", {"error": _H}),
    ("openai-chat", {"error": {"message": _H, "type": _H, "code": _H}}),
    ("openai-chat", _H),
    ("gemini", {"error": {"status": _H, "details": _H}}),
    ("gemini", {"error": {"details": [_H]}}),
    ("gemini", {"error": {"details": [{"retryDelay": _H}]}}),
    ("gemini", {"error": _H}),
]
_GOOD_ERROR = {"error": {"message": "Rate limit reached", "type": "rate_limit_error", "code": 429}}
_ECHO_ERROR = b'{"error": {"message": "Incorrect API key provided: {echo}", "type": "invalid_request_error"}}'
_SSE = "text/event-stream"


def _frame(event: str, data: str) -> bytes:
    return (f"event: {event}\n" if event else "").encode() + b"data: " + data.encode() + b"\n\n"


def _stream(protocol: str, hostile: bytes = b"") -> bytes:
    """The good stream of `protocol` with `hostile` (framed events) before its last event."""
    frames = [_frame(ev, data if isinstance(data, str) else json.dumps(data)) for ev, data in _GOOD[protocol]]
    return b"".join(frames[:-1]) + hostile + frames[-1]


def stream_accepts(case: Case) -> bool:
    return case.role not in ("time", "dsn", "pasted")  # a stream carries no time of its own


def error_accepts(case: Case) -> bool:
    return case.role not in ("dsn", "pasted")


def _shown(template: Any) -> str:
    """A slot's template in words: its JSON with `…` where the value goes."""
    return json.dumps(template).replace(json.dumps(HOLE), "…")[:160]


def _behaviour(case: Case, env: Env, answer: Answer) -> str:
    """The base URL for a behaviour case, with `answer` (status, head) as the server's part of it."""
    if case.behaviour == "black_hole":
        return f"http://127.0.0.1:{env.black_hole.port}"
    if case.behaviour == "never_accepts":
        return f"http://127.0.0.1:{env.never_accepts}"
    if case.behaviour in ("drip", "huge"):
        answer.stream = case.behaviour
    elif case.behaviour in ("gzip_bomb", "zstd_bomb"):
        answer.body = gzip_bomb() if case.behaviour == "gzip_bomb" else zstd_bomb()
        answer.headers["content-encoding"] = "gzip" if case.behaviour == "gzip_bomb" else "zstd"
    return env.server.serve(answer)


def _stream_urls(case: Case, env: Env) -> list[tuple[str, str, str]]:
    """(protocol, base URL, what it holds) of every request the case makes of the stream reader."""
    serve = env.server.serve
    chat = "openai-chat"
    if case.role == "body":
        assert case.body is not None
        framed = _frame("", case.body.decode("utf-8", "replace"))
        return [
            (chat, serve(Answer(case.body, content_type=_SSE)), "the body as the stream"),
            (chat, serve(Answer(framed, content_type=_SSE)), "the body as an event's data"),
        ]
    if case.role == "transform":
        assert case.transform is not None
        return [(p, serve(Answer(case.transform(_stream(p)), content_type=_SSE)), "the stream") for p in _GOOD]
    if case.role == "value":
        return [
            (p, serve(Answer(_stream(p, _frame(ev, embed(t, case.value))), content_type=_SSE)), _shown(t))
            for p, slots in STREAM_SLOTS.items()
            for ev, t in slots
        ]
    if case.role == "echo":
        hostile = _frame("", '{"error": {"type": "invalid_key", "message": "key {echo} refused"}}')
        answer = Answer(_stream(chat, hostile), content_type=_SSE, echo=case.echo)
        return [(chat, serve(answer), "an error event echoing the key")]
    head = _frame("", json.dumps({"choices": [{"delta": {"role": "assistant"}}]}))
    filler = _frame("", json.dumps({"choices": []}))
    return [(chat, _behaviour(case, env, Answer(head, content_type=_SSE, filler=filler)), str(case.behaviour))]


def _header_text(value: Any) -> str | None:
    """`value` as a header's text where a server could send it (Latin-1, no control characters)."""
    text = value if isinstance(value, str) else json_text(value)
    if len(text) > 1000 or any(ord(c) < 32 or ord(c) > 255 for c in text):
        return None
    return text


def _http_date(epoch_s: float) -> str:
    """An HTTP-date where the year is one datetime can write, else the seconds as a number."""
    try:
        return email.utils.format_datetime(datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=epoch_s), usegmt=True)
    except (OverflowError, ValueError):
        return repr(epoch_s)


def _error_urls(case: Case, env: Env) -> list[tuple[str, str, str]]:
    """(protocol, base URL, what it holds) of every request the case makes of the error-body reader."""
    good = json.dumps(_GOOD_ERROR).encode()
    serve = env.server.serve
    chat = "openai-chat"
    if case.role == "body":
        assert case.body is not None
        return [
            (chat, serve(Answer(case.body, status=429)), "a 429's body"),
            (chat, serve(Answer(case.body)), "a 200's body that is not a stream"),
        ]
    if case.role == "transform":
        assert case.transform is not None
        return [(chat, serve(Answer(case.transform(good), status=429)), "a 429's body")]
    if case.role == "value":
        urls = [(p, serve(Answer(embed(t, case.value).encode(), status=429)), _shown(t)) for p, t in ERROR_SLOTS]
        text = _header_text(case.value)
        if text is not None:
            for header in ("retry-after", "retry-after-ms"):
                urls.append((chat, serve(Answer(good, status=429, headers={header: text})), header))
        return urls
    if case.role == "time":
        assert case.epoch_s is not None
        date = _http_date(case.epoch_s)
        return [(chat, serve(Answer(good, status=429, headers={"retry-after": date})), f"retry-after: {date}")]
    if case.role == "echo":
        return [(chat, serve(Answer(_ECHO_ERROR, status=401, echo=case.echo)), "a 401 echoing the key")]
    return [(chat, _behaviour(case, env, Answer(b'{"error": ', status=429)), str(case.behaviour))]


async def _no_wait(_s: float) -> None:
    return None


def _sample_outcome(sample: TtftSample) -> Outcome:
    if not sample.ok:
        if sample.error_class not in ERROR_CLASSES or not sample.error_detail:
            return Outcome(WRONG, f"a failed sample without its class or detail: {sample.error_class!r}")
        return Outcome(REFUSED, f"{sample.error_class}: {sample.error_detail}")
    counts = (sample.prompt_tokens, sample.output_tokens, sample.cached_tokens)
    if not all(sane_number(c, whole=True, top=2**62) and not isinstance(c, float) for c in counts):
        return Outcome(WRONG, f"an ok sample with counts {counts!r}: not whole numbers a row can hold")
    if sample.ttft_ms is None or not sane_number(sample.ttft_ms) or not sane_number(sample.total_ms):
        return Outcome(WRONG, f"an ok sample with TTFT {sample.ttft_ms!r} ms, total {sample.total_ms!r} ms")
    return Outcome(READ, f"ok: TTFT {sample.ttft_ms:.1f} ms, {sample.output_tokens} tokens")


def _probe_all(urls: list[tuple[str, str, str]], deadline_s: float) -> list[Outcome]:
    """Probe every (protocol, base URL, what it holds) at once; the first exception raised (naming what the request
    held) once all are done."""

    async def one(protocol: str, base: str) -> TtftSample:
        target = ProbeTarget(base + "/v1", "m", protocol=protocol, timeout_s=deadline_s, max_tokens=8)
        return await probe_once(target, api_key=API_KEY, max_attempts=2, sleep=_no_wait)

    async def every() -> list[TtftSample | BaseException]:
        return list(await asyncio.gather(*(one(p, u) for p, u, _ in urls), return_exceptions=True))

    samples = asyncio.run(every())
    for (protocol, _, held), got in zip(urls, samples, strict=True):
        if isinstance(got, BaseException):
            got.add_note(f"the probe of a {protocol} answer holding {held}")
            raise got
    return [_sample_outcome(s) for s in samples if isinstance(s, TtftSample)]


def probe_stream(case: Case, env: Env, deadline_s: float) -> list[Outcome]:
    """The case as the event stream of a 200 answer."""
    return _probe_all(_stream_urls(case, env), deadline_s)


def probe_error_body(case: Case, env: Env, deadline_s: float) -> list[Outcome]:
    """The case as an error answer's body or headers (429, retried once), or as a 200 that is not a stream."""
    return _probe_all(_error_urls(case, env), deadline_s)
