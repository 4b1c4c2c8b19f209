"""The production sources a team keeps: add, list, remove them, how far each has been read, and its production TTFT
per hour as stored (the Sources page, and the Logs, Capacity and What-if pages' pickers).

The public surface the fronts use; the tables and SQL are planner.store.sources' and planner.store.source_hours'.
Times are UTC epoch ms, TTFT in ms. remove_source raises SourceNotFound for an unknown name; the store's errors pass
through.
"""

from __future__ import annotations

from sqlalchemy.engine import Engine

from planner.store.source_hours import newest_ms, production_hours
from planner.store.sources import (
    HourTtft,
    SourceInfo,
    SourceKind,
    SourceNotFound,
    add_source,
    list_sources,
    remove_source,
)

__all__ = [
    "HourTtft",
    "SourceInfo",
    "SourceKind",
    "SourceNotFound",
    "add_source",
    "list_sources",
    "production_hours",
    "read_up_to_ms",
    "remove_source",
]


def read_up_to_ms(engine: Engine, source: SourceInfo) -> int | None:
    """How far `source` has been read (UTC epoch ms), None before anything: a LiteLLM source's sync watermark (it
    reads the proxy's table in order); for a source whose data is sent or reported by hour (OpenTelemetry,
    Prometheus), its newest stored request or hour."""
    return source.watermark_ms if source.kind is SourceKind.LITELLM else newest_ms(engine, source.id)
