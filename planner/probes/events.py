"""EventInfo: what one streamed event means for the TTFT clock, filled by each wire format's reader (protocols,
gemini, responses, bedrock) and read by the probe."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["EventInfo", "read_openai_usage"]


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
    server_latency_ms: float | None = None  # the server's own latency figure (Bedrock metadata.metrics.latencyMs)


def read_openai_usage(info: EventInfo, usage: object, *, prompt_key: str, output_key: str, details_key: str) -> None:
    """Fill `info`'s prompt, output and cached token counts from an OpenAI usage object, each only where it is a whole
    number: `usage[prompt_key]`, `usage[output_key]` and `usage[details_key]["cached_tokens"]` (Chat Completions:
    prompt_tokens, completion_tokens, prompt_tokens_details; Responses: input_tokens, output_tokens,
    input_tokens_details). A usage that is not an object sets nothing."""
    if not isinstance(usage, dict):
        return
    if isinstance(usage.get(prompt_key), int):
        info.prompt_tokens = usage[prompt_key]
    if isinstance(usage.get(output_key), int):
        info.output_tokens = usage[output_key]
    details = usage.get(details_key)
    if isinstance(details, dict) and isinstance(details.get("cached_tokens"), int):
        info.cached_tokens = details["cached_tokens"]
