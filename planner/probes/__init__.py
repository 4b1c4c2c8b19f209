"""Probes: one TTFT sample over a streaming LLM endpoint, its SSE parsing, protocols, prompts and fits.

Public surface (import from the submodules or from here):
`ProbeTarget`, `TtftSample`, `probe_once`, `resolve_api_key`, `MissingApiKey` (ttft),
`ERROR_CLASSES` (errors), `SseParser` (sse), `build_prompt` (prompts), `fit_prefill` (fit).
"""

from planner.probes.errors import ERROR_CLASSES, MissingApiKey
from planner.probes.fit import PrefillFit, fit_prefill
from planner.probes.prompts import build_prompt, count_tokens
from planner.probes.sse import SseEvent, SseParser
from planner.probes.ttft import ProbeTarget, TtftSample, parse_retry_after, probe_once, resolve_api_key

__all__ = [
    "ERROR_CLASSES",
    "MissingApiKey",
    "PrefillFit",
    "ProbeTarget",
    "SseEvent",
    "SseParser",
    "TtftSample",
    "build_prompt",
    "count_tokens",
    "fit_prefill",
    "parse_retry_after",
    "probe_once",
    "resolve_api_key",
]
