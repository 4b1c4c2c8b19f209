"""How RTT targets rank and what each row says: one rule for the Regions page's table and `ttft-planner rtt`'s.

Fastest median first; a target without a median (nothing measured, or every connect failed) last; ties by label.
A row's note names its failure ("class: detail") and what its figures measure when that is not the region itself:
a proxy (the TCP connects went to it) or an anycast front door (the nearest edge).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import TypeVar

__all__ = [
    "ANYCAST_NOTE",
    "failure_text",
    "proxy_note",
    "rank_key",
    "ranked",
    "row_note",
    "row_outcome",
    "row_status",
    "target_notes",
]

T = TypeVar("T")

#: What an anycast target's figures are: the nearest edge of a global front door, not the serving region.
ANYCAST_NOTE = "anycast front door: measures the nearest edge"


def proxy_note(proxy: str) -> str:
    """What a proxied target's figures are: TCP connects to the proxy, not to the target."""
    return f"TCP figures are to the proxy {proxy}"


def _missing(v: float | None) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def rank_key(median_ms: float | None, label: str) -> tuple[bool, float, str]:
    """The sort key of one target: no median last, then the fastest median, then the label."""
    missing = _missing(median_ms)
    return (missing, 0.0 if missing else float(median_ms or 0.0), label)


def ranked(items: Iterable[T], *, median_ms: Callable[[T], float | None], label: Callable[[T], str]) -> list[T]:
    """`items` in rank order (rank_key of each item's median in ms, None or NaN for none, and its label)."""
    return sorted(items, key=lambda it: rank_key(median_ms(it), label(it)))


def failure_text(error_class: str | None, error_detail: str | None) -> str:
    """'class: detail' of the newest failure ('' when there is none)."""
    if not error_class:
        return ""
    return f"{error_class}: {error_detail or ''}".strip()


def target_notes(*, anycast: bool, proxy: str | None) -> list[str]:
    """What the figures measure when it is not the region itself: the proxy first, then an anycast edge."""
    notes = []
    if proxy:
        notes.append(proxy_note(proxy))
    if anycast:
        notes.append(ANYCAST_NOTE)
    return notes


def row_outcome(error_class: str | None, n: int) -> str:
    """A row's outcome in a word: its failure class, else 'ok', or 'no samples' when nothing was measured."""
    return error_class or ("ok" if n else "no samples")


def row_status(error_class: str | None, error_detail: str | None, n: int, *, anycast: bool, proxy: str | None) -> str:
    """The whole status of a ranked row: 'ok', 'no samples' or the failure, then its notes in parentheses."""
    status = failure_text(error_class, error_detail) or row_outcome(None, n)
    notes = target_notes(anycast=anycast, proxy=proxy)
    return f"{status} ({'; '.join(notes)})" if notes else status


def row_note(error_class: str | None, error_detail: str | None, *, anycast: bool, proxy: str | None) -> str:
    """A row's note column where a fine row says nothing: the failure and the notes, '; '-separated."""
    return "; ".join(
        p for p in (failure_text(error_class, error_detail), *target_notes(anycast=anycast, proxy=proxy)) if p
    )
