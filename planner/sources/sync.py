"""A source read into the store, a bounded batch at a time: restart-safe, nothing lost, nothing twice.

A LiteLLM source is read by request: each page is read in its own read-only transaction on the source and stored
with the new watermark in one transaction here, so a sync cut off anywhere resumes after the last page stored. Rows
can land in LiteLLM's table after rows that started later (a long request is written when it ends): each sync first
re-reads an overlap window before the watermark, and the store keeps one row per request id.

A Prometheus source is read by the hour (planner.sources.prometheus): the first sync reads the last
PROMETHEUS_BACKFILL_HOURS, each later one from the newest hour stored (it was still filling) to now, and each hour
read replaces the one stored.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from sqlalchemy.engine import Engine

from planner.errors import PlannerError
from planner.sources import litellm, prometheus
from planner.store.source_hours import store_hours
from planner.store.sources import HOUR_MS, SourceInfo, SourceKind, record_sync_error, store_batch

__all__ = [
    "DEFAULT_OVERLAP_MS",
    "PROMETHEUS_BACKFILL_HOURS",
    "SyncReport",
    "describe_prometheus",
    "dsn_of",
    "sync_source",
    "token_of",
]

DEFAULT_OVERLAP_MS = 15 * 60_000  # a request longer than this that ends after a sync is not re-read
DEFAULT_PAGE_ROWS = 5_000
PROMETHEUS_BACKFILL_HOURS = 7 * 24  # a new Prometheus source's first sync reads this far back (its default retention
# is 15 days)


@dataclass(frozen=True)
class SyncReport:
    read: int
    new: int
    left_out: list[tuple[str, str]]
    pages: int
    watermark: tuple[int, str] | None


def dsn_of(source: SourceInfo) -> str:
    """The source's credentials from the environment variable it names; LiteLLMError when unset."""
    dsn = os.environ.get(source.secret_ref, "")
    if not dsn:
        raise litellm.LiteLLMError(f"${source.secret_ref} is not set: it should hold the source's database URL")
    return dsn


def token_of(source: SourceInfo) -> str | None:
    """A Prometheus source's bearer token from the variable it names (None when it names none); PrometheusError when
    the variable is unset."""
    if not source.secret_ref:
        return None
    token = os.environ.get(source.secret_ref, "")
    if not token:
        raise prometheus.PrometheusError(f"${source.secret_ref} is not set: it should hold Prometheus' bearer token")
    return token


def describe_prometheus(source: SourceInfo) -> str:
    """What a Test of a Prometheus source finds, in words ("vllm:time_to_first_token_seconds for m1, m2");
    PrometheusError when it cannot answer, has no such histogram, or no series of the source's model."""
    found = prometheus.models(
        source.url or "",
        profile=source.profile or "vllm",
        metric=source.metric,
        model=source.model_filter,
        bearer_token=token_of(source),
    )
    return prometheus.found_words(source.profile or "vllm", found, source.metric)


def sync_source(
    store: Engine,
    source: SourceInfo,
    *,
    page_rows: int = DEFAULT_PAGE_ROWS,
    max_pages: int | None = None,
    overlap_ms: int = DEFAULT_OVERLAP_MS,
    now_ms: int | None = None,
) -> SyncReport:
    """Read `source` from its watermark (less the overlap) to its newest row, or `max_pages` pages; a Prometheus
    source from its newest hour stored to `now_ms` (the wall clock when None)."""
    if source.kind is SourceKind.PROMETHEUS:
        return _sync_prometheus(store, source, int(time.time() * 1000) if now_ms is None else now_ms)
    if source.kind is not SourceKind.LITELLM:
        raise ValueError(f"no sync for sources of kind {source.kind}")
    try:
        engine = litellm.connect(dsn_of(source))
    except litellm.LiteLLMError as exc:  # no URL, or not a PostgreSQL one: said on the source, as a read failure is
        record_sync_error(store, source.id, str(exc))
        raise
    # from the watermark less the overlap, or from the start (1970: the keyset needs a time PostgreSQL can write)
    after = (max(source.watermark_ms - overlap_ms, 0), "") if source.watermark_ms is not None else (0, "")
    watermark = (source.watermark_ms, source.watermark_id or "") if source.watermark_ms is not None else None
    read = new = pages = 0
    left_out: list[tuple[str, str]] = []
    try:
        while max_pages is None or pages < max_pages:
            page = litellm.read_page(engine, after, page_rows)
            if page.last is None:
                break
            if watermark is None or page.last > watermark:
                watermark = page.last
            new += store_batch(store, source.id, page.rows, watermark)
            read += len(page.rows)
            left_out += page.left_out
            pages += 1
            after = page.last
            if len(page.rows) + len(page.left_out) < page_rows:
                break
        if not pages:  # nothing new: still a sync that worked (its time kept, an earlier error cleared)
            store_batch(store, source.id, [], None)
    except litellm.LiteLLMError as exc:
        record_sync_error(store, source.id, str(exc))
        raise
    finally:
        engine.dispose()
    return SyncReport(read, new, left_out, pages, watermark)


def _sync_prometheus(store: Engine, source: SourceInfo, now_ms: int) -> SyncReport:
    """Read the hours from the newest one stored (or the backfill) to now; each hour read replaces the stored one."""
    start_ms = source.watermark_ms if source.watermark_ms is not None else now_ms - PROMETHEUS_BACKFILL_HOURS * HOUR_MS
    try:
        hours = prometheus.ttft_by_hour(
            source.url or "",
            start_ms,
            now_ms,
            profile=source.profile or "vllm",
            metric=source.metric,
            model=source.model_filter,
            bearer_token=token_of(source),
        )
    except PlannerError as exc:
        record_sync_error(store, source.id, str(exc))
        raise
    busy = store_hours(store, source.id, hours)
    return SyncReport(read=len(hours), new=busy, left_out=[], pages=1, watermark=None)
