"""The simulated endpoint as an ASGI app (Starlette): OpenAI chat, OpenAI completions, Anthropic Messages.

Every response says it is simulated: header `x-simulated: 1`, model echoed as
`simulated/<model>`, `system_fingerprint: "simulated"`. Streams are written one
frame per ASGI message, so each frame is its own TCP write (the server must run
with TCP_NODELAY; `running_simulator` and `ttft-planner simulate` do).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from planner.probes.prompts import count_tokens
from planner.simulator.config import SimulatorConfig
from planner.simulator.timing import SimEngine

__all__ = ["SIMULATED_HEADERS", "build_app"]

SIMULATED_HEADERS = {"x-simulated": "1", "cache-control": "no-cache", "x-accel-buffering": "no"}
_WORDS = " the model is simulated and this text only exists to be timed by a probe".split(" ")[1:]


def _sse(obj: object, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(obj, separators=(',', ':'))}\n\n".encode()


def _prompt_text(body: dict, protocol: str) -> str:
    def text_of(content: object) -> str:
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return " ".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
        return ""

    if protocol == "openai-completions":
        p = body.get("prompt", "")
        return " ".join(p) if isinstance(p, list) else str(p)
    parts = [text_of(body.get("system"))] if protocol == "anthropic" else []
    for m in body.get("messages") or []:
        if isinstance(m, dict):
            parts.append(text_of(m.get("content")))
    return " ".join(p for p in parts if p)


def _error(protocol: str, status: int, message: str, retry_after_s: int | None = None) -> Response:
    headers = dict(SIMULATED_HEADERS)
    if retry_after_s is not None:
        headers["retry-after"] = str(retry_after_s)
    if protocol == "anthropic":
        kind = {
            401: "authentication_error",
            404: "not_found_error",
            429: "rate_limit_error",
            503: "overloaded_error",
        }.get(status, "api_error" if status >= 500 else "invalid_request_error")
        body = {"type": "error", "error": {"type": kind, "message": message}}
    else:
        body = {"error": {"message": message, "type": "simulated_error", "code": status}}
    return JSONResponse(body, status_code=status, headers=headers)


async def _timeline(
    engine: SimEngine, tokens: tuple[str, ...], max_tokens: int, stats: dict, model: str = ""
) -> AsyncIterator[tuple[str, str]]:
    """("role"|"ping"|"token"|"done", text) items at the simulated times; keeps the engine's books and its metrics
    (the first token's time since arrival, under `model`)."""
    cfg = engine.config
    arrived = engine.now_s()
    engine.begin()
    holding = False
    try:
        stats["cached_tokens"] = min(engine.cached_prefix_tokens(tokens), max(0, len(tokens) - 1))
        if cfg.role_chunk_early:
            yield "role", ""
        await engine.sleep(engine.background_wait_s())
        if engine.steps is None:  # a batching engine admits up to `slots` running requests in its scheduler
            await engine.acquire_slot()
            holding = True
        engine.metrics.scheduled(model, engine.now_s() - arrived)
        await engine.sleep(cfg.base_overhead_ms / 1000.0)
        cached = min(engine.cached_prefix_tokens(tokens), max(0, len(tokens) - 1))
        stats["cached_tokens"] = cached
        if engine.steps is not None:  # continuous batching: the scheduler's steps give every token
            async for item in _batched(engine, tokens, cached, max_tokens, stats, model, arrived):
                yield item
            return
        prefill_s = (len(tokens) - cached) / cfg.prefill_tokens_per_s * engine.speed_factor()
        while cfg.ping_interval_s > 0 and prefill_s > cfg.ping_interval_s:
            await engine.sleep(cfg.ping_interval_s)
            prefill_s -= cfg.ping_interval_s
            yield "ping", ""
        await engine.sleep(prefill_s)
        engine.remember(tokens)
        if not cfg.role_chunk_early:
            yield "role", ""
        n = min(max_tokens, cfg.max_output_tokens)
        for i in range(n):
            if i:
                await engine.sleep(engine.speed_factor() / cfg.decode_tokens_per_s)
            else:
                engine.metrics.first_token(model, engine.now_s() - arrived, engine.wall_ms())
            stats["output_tokens"] = i + 1
            yield "token", " " + _WORDS[i % len(_WORDS)]
        yield "done", ""
    finally:
        if holding:
            engine.release_slot()
        engine.end()


async def _batched(
    engine: SimEngine, tokens: tuple[str, ...], cached: int, max_tokens: int, stats: dict, model: str, arrived: float
) -> AsyncIterator[tuple[str, str]]:
    """The rest of _timeline on a batching engine (planner.simulator.batching): each token when its step ends."""
    assert engine.steps is not None
    n = min(max_tokens, engine.config.max_output_tokens)
    seq = engine.steps.join(len(tokens) - cached, n)
    try:
        for i in range(n):
            await seq.tokens.get()
            if i == 0:
                engine.remember(tokens)
                if not engine.config.role_chunk_early:
                    yield "role", ""
                engine.metrics.first_token(model, engine.now_s() - arrived, engine.wall_ms())
            stats["output_tokens"] = i + 1
            yield "token", " " + _WORDS[i % len(_WORDS)]
        yield "done", ""
    finally:
        engine.steps.leave(seq)


async def _frames(
    protocol: str,
    model: str,
    include_usage: bool,
    prompt_tokens: int,
    timeline: AsyncIterator[tuple[str, str]],
    stats: dict,
) -> AsyncIterator[bytes]:
    rid = uuid.uuid4().hex[:16]
    created = int(time.time())
    if protocol == "anthropic":
        started = False
        async for kind, text in timeline:
            if kind == "role":
                cached = stats.get("cached_tokens", 0)
                yield _sse(
                    {
                        "type": "message_start",
                        "message": {
                            "id": f"msg_sim_{rid}",
                            "type": "message",
                            "role": "assistant",
                            "model": model,
                            "content": [],
                            "stop_reason": None,
                            "stop_sequence": None,
                            "usage": {
                                "input_tokens": prompt_tokens - cached,
                                "cache_read_input_tokens": cached,
                                "output_tokens": 1,
                            },
                        },
                    },
                    "message_start",
                )
            elif kind == "ping":
                yield _sse({"type": "ping"}, "ping")
            elif kind == "token":
                if not started:
                    started = True
                    yield _sse(
                        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                        "content_block_start",
                    )
                yield _sse(
                    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
                    "content_block_delta",
                )
            elif kind == "done":
                yield _sse({"type": "content_block_stop", "index": 0}, "content_block_stop")
                yield _sse(
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": "max_tokens", "stop_sequence": None},
                        "usage": {"output_tokens": stats.get("output_tokens", 0)},
                    },
                    "message_delta",
                )
                yield _sse({"type": "message_stop"}, "message_stop")
        return
    chat = protocol == "openai-chat"
    base = {
        "id": f"{'chatcmpl' if chat else 'cmpl'}-sim{rid}",
        "object": "chat.completion.chunk" if chat else "text_completion",
        "created": created,
        "model": model,
        "system_fingerprint": "simulated",
    }

    def chunk(payload: dict, finish: str | None = None) -> bytes:
        choice = {"index": 0, **payload, "finish_reason": finish}
        return _sse({**base, "choices": [choice]})

    async for kind, text in timeline:
        if kind == "role":
            if chat:
                yield chunk({"delta": {"role": "assistant", "content": ""}})
        elif kind == "ping":
            yield b": ping\n\n"
        elif kind == "token":
            yield chunk({"delta": {"content": text}} if chat else {"text": text})
        elif kind == "done":
            yield chunk({"delta": {}} if chat else {"text": ""}, finish="length")
            if include_usage:
                cached = stats.get("cached_tokens", 0)
                out = stats.get("output_tokens", 0)
                yield _sse(
                    {
                        **base,
                        "choices": [],
                        "usage": {
                            "prompt_tokens": prompt_tokens,
                            "completion_tokens": out,
                            "total_tokens": prompt_tokens + out,
                            "prompt_tokens_details": {"cached_tokens": cached},
                        },
                    }
                )
            yield b"data: [DONE]\n\n"


def _endpoint(protocol: str):
    async def handle(request: Request) -> Response:
        engine: SimEngine = request.app.state.engine
        cfg = engine.config
        try:
            body = json.loads(await request.body())
            if not isinstance(body, dict):
                raise ValueError
        except ValueError:
            return _error(protocol, 400, "request body must be a JSON object")
        if cfg.api_key:
            given = (
                request.headers.get("x-api-key")
                or request.headers.get("authorization", "").removeprefix("Bearer ").strip()
            )
            if given != cfg.api_key:
                return _error(protocol, 401, "missing or invalid API key (simulated endpoint)")
        model = body.get("model")
        if not isinstance(model, str) or not model:
            return _error(protocol, 400, "'model' is required")
        if cfg.models is not None and model not in cfg.models:
            return _error(
                protocol, 404, f"model {model!r} not found (simulated endpoint serves {', '.join(cfg.models)})"
            )
        try:
            max_tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
        except (TypeError, ValueError):
            return _error(protocol, 400, "'max_tokens' must be an integer")
        if max_tokens < 1:
            return _error(protocol, 400, "'max_tokens' must be ≥ 1")
        injected = engine.inject_error() or engine.admit_cold()
        if injected is not None:
            return _error(protocol, injected.status, injected.message, injected.retry_after_s)
        await (
            engine.wait_until_loaded()
        )  # without cold_503 the request is held, before any byte, while the weights load
        await engine.sleep(cfg.network_delay_ms / 1000.0)
        text = _prompt_text(body, protocol)
        tokens = tuple(text.split())
        echo = f"simulated/{model}"
        stats: dict = {}
        include_usage = protocol != "anthropic" and bool((body.get("stream_options") or {}).get("include_usage"))
        timeline = _timeline(engine, tokens, max_tokens, stats, model)
        if body.get("stream"):
            frames = _frames(protocol, echo, include_usage, count_tokens(text), timeline, stats)
            return StreamingResponse(frames, media_type="text/event-stream", headers=SIMULATED_HEADERS)
        out = "".join([t async for kind, t in timeline if kind == "token"])
        n_prompt, cached, n_out = len(tokens), stats.get("cached_tokens", 0), stats.get("output_tokens", 0)
        payload: dict[str, Any]
        if protocol == "anthropic":
            payload = {
                "id": f"msg_sim_{uuid.uuid4().hex[:16]}",
                "type": "message",
                "role": "assistant",
                "model": echo,
                "content": [{"type": "text", "text": out}],
                "stop_reason": "max_tokens",
                "usage": {"input_tokens": n_prompt - cached, "cache_read_input_tokens": cached, "output_tokens": n_out},
            }
        else:
            choice = {"index": 0, "finish_reason": "length"}
            choice.update(
                {"message": {"role": "assistant", "content": out}} if protocol == "openai-chat" else {"text": out}
            )
            payload = {
                "id": f"sim-{uuid.uuid4().hex[:16]}",
                "object": "chat.completion" if protocol == "openai-chat" else "text_completion",
                "created": int(time.time()),
                "model": echo,
                "system_fingerprint": "simulated",
                "choices": [choice],
                "usage": {
                    "prompt_tokens": n_prompt,
                    "completion_tokens": n_out,
                    "total_tokens": n_prompt + n_out,
                    "prompt_tokens_details": {"cached_tokens": cached},
                },
            }
        return JSONResponse(payload, headers=SIMULATED_HEADERS)

    return handle


async def _models(request: Request) -> Response:
    cfg: SimulatorConfig = request.app.state.engine.config
    names = cfg.models or ("sim-model",)
    return JSONResponse(
        {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "simulated"} for m in names]},
        headers=SIMULATED_HEADERS,
    )


async def _metrics(request: Request) -> Response:
    return Response(request.app.state.engine.metrics.exposition(), media_type="text/plain; version=0.0.4")


async def _health(request: Request) -> Response:
    return JSONResponse({"status": "ok", **request.app.state.engine.stats()}, headers=SIMULATED_HEADERS)


def build_app(
    config: SimulatorConfig | None = None,
    *,
    clock: Callable[[], float] = time.monotonic,
    wall_clock: Callable[[], float] = time.time,
) -> Starlette:
    """An ASGI app serving /v1/chat/completions, /v1/completions, /v1/messages, /v1/models, /health and /metrics
    (vLLM-named Prometheus metrics: planner.simulator.vllm_metrics).

    State (slots, queue, prefix cache, warm/cold) lives on `app.state.engine`. `clock` and `wall_clock` are the
    engine's (SimEngine): a virtual-time loop's clock runs the model in virtual time (planner.simulator.virtual).
    """
    app = Starlette(
        routes=[
            Route("/v1/chat/completions", _endpoint("openai-chat"), methods=["POST"]),
            Route("/v1/completions", _endpoint("openai-completions"), methods=["POST"]),
            Route("/v1/messages", _endpoint("anthropic"), methods=["POST"]),
            Route("/v1/models", _models, methods=["GET"]),
            Route("/health", _health, methods=["GET"]),
            Route("/metrics", _metrics, methods=["GET"]),
        ]
    )
    app.state.engine = SimEngine(config or SimulatorConfig(), clock=clock, wall_clock=wall_clock)
    return app
