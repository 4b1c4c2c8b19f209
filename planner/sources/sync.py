"""A source read into the store, a bounded batch at a time: restart-safe, nothing lost, nothing twice.

A LiteLLM source is read by request: each page is read in its own read-only transaction on the source and stored
with the new watermark in one transaction here, so a sync cut off anywhere resumes after the last page stored. Rows
can land in LiteLLM's table after rows that started later (a long request is written when it ends): each sync first
re-reads an overlap window before the watermark, and the store keeps one row per request id. Rows are admitted by
planner.sources.admit; the watermark is the newest row read whose START is admissible: a row dated 2999 or `infinity`
is left out with its reason and never moves it, so the next sync still starts at the real newest rows (the page cursor
reads past such a row within a sync; a watermark some older version set ahead of now is replaced by the newest request
stored), while a row left out for its timings (a first token before its start) or counts does, so a long run of them
is never read again and again. A sync starts from the
watermark or now, whichever is earlier, less the overlap: a row dated a few hours ahead (admitted) never makes it skip
rows that land later with an earlier start. One sync stops after the page that crosses DEFAULT_DEADLINE_S (120 s:
about two million rows; each page is bounded by planner.sources.litellm's connect and statement timeouts), keeps what
it read, and says so (SyncReport.stopped); the next sync resumes there.

A Prometheus source is read by the hour (planner.sources.prometheus): the first sync reads the last
PROMETHEUS_BACKFILL_HOURS, each later one from the newest hour stored (it was still filling) to now, and each hour
read replaces the one stored.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy.engine import Engine

from planner.errors import PlannerError
from planner.sources import litellm, prometheus
from planner.sources.admit import FUTURE_SKEW_MS
from planner.store.source_hours import newest_request, store_hours
from planner.store.sources import HOUR_MS, SourceInfo, SourceKind, record_sync_error, store_batch

__all__ = [
    "DEFAULT_DEADLINE_S",
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
DEFAULT_DEADLINE_S = 120.0  # one LiteLLM sync stops after the page that crosses this (monotonic seconds)
PROMETHEUS_BACKFILL_HOURS = 7 * 24  # a new Prometheus source's first sync reads this far back (its default retention
# is 15 days)


@dataclass(frozen=True)
class SyncReport:
    """What one sync did: requests (or hours) read and admitted, how many were new, the rows left out (request id,
    why), pages read, the watermark after it ((start UTC epoch ms, request id) of the newest row read whose start is
    admissible), and
    `stopped`: why it ended before the newest row, in words (None: it read all there was, or its `max_pages`)."""

    read: int
    new: int
    left_out: list[tuple[str, str]]
    pages: int
    watermark: tuple[int, str] | None
    stopped: str | None = None


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
    deadline_s: float | None = DEFAULT_DEADLINE_S,
    clock: Callable[[], float] = time.monotonic,
) -> SyncReport:
    """Read `source` from its watermark (less the overlap) to its newest row, or `max_pages` pages, or the page that
    crosses `deadline_s` seconds on `clock` (None: no deadline); rows admitted as of `now_ms` (UTC epoch ms; the wall
    clock when None). A Prometheus source from its newest hour stored to `now_ms`. Raises LiteLLMError or
    PrometheusError (recorded on the source) when the source cannot be read; what was stored before stays."""
    if source.kind is SourceKind.PROMETHEUS:
        return _sync_prometheus(store, source, int(time.time() * 1000) if now_ms is None else now_ms)
    if source.kind is not SourceKind.LITELLM:
        raise ValueError(f"no sync for sources of kind {source.kind}")
    try:
        engine = litellm.connect(dsn_of(source))
    except litellm.LiteLLMError as exc:  # no URL, or not a PostgreSQL one: said on the source, as a read failure is
        record_sync_error(store, source.id, str(exc))
        raise
    try:
        return _sync_litellm(
            store,
            source,
            engine,
            page_rows=page_rows,
            max_pages=max_pages,
            overlap_ms=overlap_ms,
            now_ms=int(time.time() * 1000) if now_ms is None else now_ms,
            deadline_at=None if deadline_s is None else clock() + deadline_s,
            clock=clock,
        )
    except litellm.LiteLLMError as exc:
        record_sync_error(store, source.id, str(exc))
        raise
    finally:
        engine.dispose()


def _admitted_watermark(store: Engine, source: SourceInfo, now_ms: int) -> tuple[int, str] | None:
    """The watermark a sync starts from: the stored one, or, where an older version stored one later than now plus
    the admitted skew (a row of 2999 taken for the newest), the newest request stored no later than that."""
    if source.watermark_ms is None:
        return None
    if source.watermark_ms <= now_ms + FUTURE_SKEW_MS:
        return source.watermark_ms, source.watermark_id or ""
    return newest_request(store, source.id, now_ms + FUTURE_SKEW_MS)


def _sync_litellm(
    store: Engine,
    source: SourceInfo,
    engine: Engine,
    *,
    page_rows: int,
    max_pages: int | None,
    overlap_ms: int,
    now_ms: int,
    deadline_at: float | None,
    clock: Callable[[], float],
) -> SyncReport:
    """The pages from the watermark (or now, whichever is earlier) less the overlap, each stored with the newest
    position with an admissible start so far; the page cursor goes on past every row, the watermark never past one
    dated outside 1970–2100 or ahead of now."""
    watermark = _admitted_watermark(store, source, now_ms)
    # from the start when there is none (1970: the keyset needs a time PostgreSQL can write)
    after = litellm.position_at(0 if watermark is None else min(watermark[0], now_ms) - overlap_ms)
    read = new = pages = 0
    left_out: list[tuple[str, str]] = []
    stopped = None
    while max_pages is None or pages < max_pages:
        page = litellm.read_page(engine, after, page_rows, now_ms)
        if page.last is None:
            break
        if page.newest is not None and (watermark is None or page.newest > watermark):
            watermark = page.newest
        new += store_batch(store, source.id, page.rows, watermark)
        read += len(page.rows)
        left_out += page.left_out
        pages += 1
        after = page.last
        if len(page.rows) + len(page.left_out) < page_rows:
            break
        if deadline_at is not None and clock() >= deadline_at:
            stopped = f"stopped after {pages:,} pages at the deadline; resumes next sync"
            break
    if not pages:  # nothing new: still a sync that worked (its time kept, an earlier error cleared, the watermark
        store_batch(store, source.id, [], watermark)  # some older version set ahead of now put back)
    return SyncReport(read, new, left_out, pages, watermark, stopped)


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
