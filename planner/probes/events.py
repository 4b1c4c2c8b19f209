"""EventInfo: what one streamed event means for the TTFT clock, filled by each wire format's reader (protocols,
gemini, responses, bedrock) and read by the probe."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["EventInfo"]


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
