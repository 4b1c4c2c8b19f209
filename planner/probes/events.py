"""EventInfo: what one streamed event means for the TTFT clock, filled by each wire format's reader (protocols,
gemini, responses, bedrock) and read by the probe; and the two rules every reader applies to a server's JSON, so a
field of the wrong type or an absurd count reads as absent rather than as a crash or a stored figure:
`as_object` (a field that must be an object) and `token_count` (a count of tokens)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_TOKEN_COUNT", "EventInfo", "as_object", "read_openai_usage", "token_count", "token_total"]

#: The most tokens one response's usage may report; more (2^63, 10^400) is no server's figure and fits no column.
MAX_TOKEN_COUNT = 10**9


def as_object(value: object) -> dict[str, Any]:
    """`value` where it is a JSON object, else {}: a field of the wrong type (a string, a number, a list where an
    object belongs) reads as absent."""
    return value if isinstance(value, dict) else {}


def token_count(value: object) -> int | None:
    """`value` where it is a count of tokens (a whole number from 0 to MAX_TOKEN_COUNT, not a boolean), else None."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKEN_COUNT:
        return None
    return value


def token_total(values: Iterable[object]) -> int | None:
    """The sum of the counts among `values` (token_count's rule); None when none is one."""
    counts = [c for c in map(token_count, values) if c is not None]
    return sum(counts) if counts else None


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
    """Fill `info`'s prompt, output and cached token counts from an OpenAI usage object, each only where it is a count
    (token_count): `usage[prompt_key]`, `usage[output_key]` and `usage[details_key]["cached_tokens"]` (Chat Completions:
    prompt_tokens, completion_tokens, prompt_tokens_details; Responses: input_tokens, output_tokens,
    input_tokens_details). A usage that is not an object sets nothing."""
    if not isinstance(usage, dict):
        return
    for name, key in (("prompt_tokens", prompt_key), ("output_tokens", output_key)):
        if (count := token_count(usage.get(key))) is not None:
            setattr(info, name, count)
    if (cached := token_count(as_object(usage.get(details_key)).get("cached_tokens"))) is not None:
        info.cached_tokens = cached
