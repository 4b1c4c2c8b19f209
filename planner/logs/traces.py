"""Public production traces, recognised by their columns: Azure LLM inference 2023/2024, BurstGPT, Mooncake/AIPerf.

Each profile is a column mapping (planner.logs.mapped) that applies when every one of its columns
is present (names compared without case, spaces or underscores). Traces with times relative to
their start (BurstGPT: seconds; Mooncake: ms) map them to `ts_relative_s` / `ts_relative_ms`, and
the reader places them from a start date (given, or DEFAULT_START, labelled as defaulted).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from planner.logs.records import zone

__all__ = ["DEFAULT_START", "PROFILES", "TraceProfile", "guess_table_mapping", "match_profile", "start_ms"]

DEFAULT_START = "2024-01-01"  # a Monday: relative traces start at its midnight unless told otherwise


@dataclass(frozen=True)
class TraceProfile:
    name: str
    label: str
    columns: tuple[str, ...]  # as published
    mapping: dict[str, str]  # canonical field → published column


PROFILES: tuple[TraceProfile, ...] = (
    TraceProfile(
        "mooncake",
        "Mooncake / AIPerf trace (JSONL, ms since start, hash_ids)",
        ("timestamp", "input_length", "output_length"),
        {
            "ts_relative_ms": "timestamp",
            "prompt_tokens": "input_length",
            "output_tokens": "output_length",
            "hash_ids": "hash_ids",
        },
    ),
    TraceProfile(
        "burstgpt",
        "BurstGPT (s since start; failed requests have 0 response tokens)",
        ("Timestamp", "Model", "Request tokens", "Response tokens", "Total tokens", "Log Type"),
        {
            "ts_relative_s": "Timestamp",
            "model": "Model",
            "prompt_tokens": "Request tokens",
            "output_tokens": "Response tokens",
        },
    ),
    TraceProfile(
        "azure",
        "Azure LLM inference trace 2023/2024",
        ("TIMESTAMP", "ContextTokens", "GeneratedTokens"),
        {"ts": "TIMESTAMP", "prompt_tokens": "ContextTokens", "output_tokens": "GeneratedTokens"},
    ),
)


def _norm(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


def match_profile(columns: Sequence[str]) -> tuple[TraceProfile, dict[str, str]] | None:
    """(profile, mapping onto the file's own column names) when the columns are a known public trace's."""
    by_norm: dict[str, str] = {}
    for col in columns:
        by_norm.setdefault(_norm(col), col)
    for prof in PROFILES:
        if all(_norm(c) in by_norm for c in prof.columns):
            mapping = {f: by_norm[_norm(c)] for f, c in prof.mapping.items() if _norm(c) in by_norm}
            return prof, mapping
    return None


def guess_table_mapping(columns: Sequence[str]) -> dict[str, str]:
    """The mapping the reader would try for these columns: a public trace's, else one guessed from the names."""
    from planner.logs.mapped import guess_mapping

    found = match_profile(columns)
    return found[1] if found else guess_mapping(columns)


def start_ms(start: str | None, tz: str) -> tuple[int, bool]:
    """(UTC epoch ms of the start date/time in `tz`, whether it was defaulted); raises ValueError naming a bad date."""
    text = (start or DEFAULT_START).strip()
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"start {text!r} is not a date (YYYY-MM-DD or YYYY-MM-DDTHH:MM)") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=zone(tz))
    return int(when.timestamp() * 1000), start is None or not start.strip()
