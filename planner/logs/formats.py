"""The log formats the readers know, and detection of a file's format from its records."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable

from planner.logs import anthropic, gateways, openai, otel
from planner.logs.records import Row

__all__ = ["EXTRACTORS", "FORMAT_NAMES", "FORMATS", "classify", "detect", "expected_text"]

FORMATS: dict[str, str] = {
    "auto": "detect from the content",
    **openai.FORMATS,
    **anthropic.FORMATS,
    **gateways.FORMATS,
    **otel.FORMATS,
    "azure": "Azure LLM inference trace 2023/2024 (TIMESTAMP, ContextTokens, GeneratedTokens)",
    "burstgpt": "BurstGPT trace (Timestamp in s since start, Request tokens, Response tokens)",
    "mooncake": "Mooncake / AIPerf trace JSONL (timestamp in ms since start, input_length, output_length, hash_ids)",
    "csv": "CSV with a header row; columns mapped by name or by you",
    "mapped": "JSON records with fields mapped by you (dotted paths)",
}
FORMAT_NAMES = tuple(FORMATS)

# Record-level recognisers, most specific first.
_CHECKS: tuple[tuple[str, Callable[[dict], bool]], ...] = (
    ("otel", otel.looks_like),
    ("openai_batch", openai.looks_like_batch),
    ("anthropic", anthropic.looks_like),
    ("litellm", gateways.looks_like_litellm),
    ("langfuse", gateways.looks_like_langfuse),
    ("openai_chat", openai.looks_like_chat),
)

EXTRACTORS: dict[str, Callable[[dict, str], Row]] = {
    "openai_chat": openai.extract_chat,
    "openai_batch": openai.extract_batch,
    "anthropic": anthropic.extract,
    "litellm": gateways.extract_litellm,
    "langfuse": gateways.extract_langfuse,
}


def classify(rec: dict) -> str | None:
    """The format one JSON record looks like, or None."""
    for name, check in _CHECKS:
        try:
            if check(rec):
                return name
        except (AttributeError, TypeError):
            continue
    return None


def detect(records: Iterable[dict]) -> str | None:
    """The most common recognised format among `records` (a sample of the file), or None."""
    votes = Counter(f for f in (classify(r) for r in records) if f is not None)
    return votes.most_common(1)[0][0] if votes else None


def expected_text() -> str:
    """One line listing the formats, for 'nothing parsed' messages."""
    return "; ".join(f"{k}: {v}" for k, v in FORMATS.items() if k != "auto")
