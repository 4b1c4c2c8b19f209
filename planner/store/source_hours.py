"""Production hours of a live source (issue 32): a source that reports hours (Prometheus' histograms, OpenTelemetry's
TTFT metric) stores them here, and a source that keeps requests is read by the hour here, so a page or a rule asks
one question of every kind of source: requests and TTFT p50/p95 per hour.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from planner.logs.records import FUTURE_SKEW_MS
from planner.percentiles import nearest_rank
from planner.store.database import table_of
from planner.store.sources import HOUR_MS, HourTtft, SourceHourRow, SourceRequestRow, SourceRow

__all__ = ["load_hours", "newest_ms", "newest_request", "production_hours", "request_hours", "store_hours"]

_SOURCE = table_of(SourceRow)
_REQUEST = table_of(SourceRequestRow)
_HOUR = table_of(SourceHourRow)


def store_hours(engine: Engine, source_id: int, hours: Sequence[HourTtft], model: str = "") -> int:
    """Store a source's hours for `model` ("" for every model), each replacing the one stored for the same hour (an
    hour read again while it was still filling), and mark the source synced, in one transaction; returns how many
    hours had requests."""
    with engine.begin() as conn:
        if hours:
            conn.execute(
                _HOUR.delete().where(
                    _HOUR.c.source_id == source_id,
                    _HOUR.c.model == model,
                    _HOUR.c.hour_start_ms.in_([h.hour_start_ms for h in hours]),
                )
            )
            conn.execute(
                _HOUR.insert(),
                [
                    {
                        "source_id": source_id,
                        "hour_start_ms": h.hour_start_ms,
                        "model": model,
                        "requests": float(h.requests),
                        "p50_ms": h.p50_ms,
                        "p95_ms": h.p95_ms,
                        "queue_p95_ms": h.queue_p95_ms,
                        "waiting_mean": h.waiting_mean,
                    }
                    for h in hours
                ],
            )
        total = conn.execute(
            sa.select(sa.func.coalesce(sa.func.sum(_HOUR.c.requests), 0)).where(_HOUR.c.source_id == source_id)
        ).scalar_one()
        values: dict[str, Any] = {
            "synced_at_ms": int(time.time() * 1000),
            "n_requests": int(round(float(total))),
            "last_error": None,
        }
        if hours:
            values["watermark_ms"] = max(h.hour_start_ms for h in hours)
        conn.execute(_SOURCE.update().where(_SOURCE.c.id == source_id).values(**values))
    return sum(1 for h in hours if h.requests > 0)


def load_hours(
    engine: Engine, source_id: int, since_ms: int | None = None, until_ms: int | None = None, model: str = ""
) -> list[HourTtft]:
    """A source's stored hours for `model` ("" for every model) starting in [since_ms, until_ms), by hour."""
    where = [_HOUR.c.source_id == source_id, _HOUR.c.model == model]
    if since_ms is not None:
        where.append(_HOUR.c.hour_start_ms >= since_ms)
    if until_ms is not None:
        where.append(_HOUR.c.hour_start_ms < until_ms)
    cols = [_HOUR.c[f.name] for f in dataclasses.fields(HourTtft)]
    with engine.connect() as conn:
        rows = conn.execute(sa.select(*cols).where(*where).order_by(_HOUR.c.hour_start_ms))
        return [HourTtft(**r._mapping) for r in rows]


def request_hours(engine: Engine, source_id: int, since_ms: int, until_ms: int) -> list[HourTtft]:
    """The hours of a source that keeps requests, starting in [since_ms, until_ms) (whole hours): requests and the
    nearest-rank TTFT p50/p95 of those with a first-token time; hours without requests are left out."""
    hour = (_REQUEST.c.ts_ms - _REQUEST.c.ts_ms % HOUR_MS).label("hour")
    with engine.connect() as conn:
        counts: dict[int, int] = dict(
            conn.execute(
                sa.select(hour, sa.func.count())
                .where(_REQUEST.c.source_id == source_id, _REQUEST.c.ts_ms >= since_ms, _REQUEST.c.ts_ms < until_ms)
                .group_by(hour)
            ).all()
        )
        ttfts: dict[int, list[float]] = {}
        for h, v in conn.execute(
            sa.select(hour, _REQUEST.c.ttft_ms)
            .where(
                _REQUEST.c.source_id == source_id,
                _REQUEST.c.ts_ms >= since_ms,
                _REQUEST.c.ts_ms < until_ms,
                _REQUEST.c.ttft_ms.is_not(None),
            )
            .order_by(hour, _REQUEST.c.ttft_ms)
        ):
            ttfts.setdefault(int(h), []).append(float(v))
    out = []
    for h in sorted(counts):
        values = ttfts.get(int(h), [])
        p50 = nearest_rank(values, 0.5) if values else None
        p95 = nearest_rank(values, 0.95) if values else None
        out.append(HourTtft(int(h), float(counts[h]), p50, p95, None))
    return out


def newest_request(engine: Engine, source_id: int, until_ms: int | None = None) -> tuple[int, str] | None:
    """The source's newest stored request arriving no later than `until_ms` (UTC epoch ms; None: any): (arrival,
    request id), or None before any. A row dated far ahead (stored before planner.sources.admit refused such rows)
    is left out by an `until_ms` of now plus the admitted skew."""
    where = [_REQUEST.c.source_id == source_id]
    if until_ms is not None:
        where.append(_REQUEST.c.ts_ms <= until_ms)
    query = sa.select(_REQUEST.c.ts_ms, _REQUEST.c.request_id).where(*where)
    with engine.connect() as conn:
        row = conn.execute(query.order_by(_REQUEST.c.ts_ms.desc(), _REQUEST.c.request_id.desc()).limit(1)).first()
    return None if row is None else (int(row[0]), str(row[1]))


def newest_ms(engine: Engine, source_id: int, now_ms: int | None = None) -> int | None:
    """When the source's newest request arrived, or the start of its newest hour with requests where it reports
    hours (Prometheus, OpenTelemetry's TTFT metric), whichever is later; None before any. A row or an hour later than
    `now_ms` (UTC epoch ms; the wall clock when None) plus planner.logs.records.FUTURE_SKEW_MS is not the newest: a
    bad row some older version stored (dated 2098, say) would otherwise hide every real hour."""
    until_ms = (int(time.time() * 1000) if now_ms is None else now_ms) + FUTURE_SKEW_MS
    request = newest_request(engine, source_id, until_ms)
    with engine.connect() as conn:
        hour = conn.execute(
            sa.select(sa.func.max(_HOUR.c.hour_start_ms)).where(
                _HOUR.c.source_id == source_id,
                _HOUR.c.model == "",
                _HOUR.c.requests > 0,
                _HOUR.c.hour_start_ms <= until_ms,
            )
        ).scalar_one_or_none()
    known = [int(v) for v in (None if request is None else request[0], hour) if v is not None]
    return max(known) if known else None


def production_hours(engine: Engine, source_id: int, hours: int = 24, now_ms: int | None = None) -> list[HourTtft]:
    """The source's hours with requests among the `hours` hours up to its newest (newest_ms as of `now_ms`, UTC
    epoch ms; the wall clock when None): requests and TTFT p50/p95 per hour. An hour with stored requests is read
    from them; another from the hour the source reported (every model together), so a source sending both spans and
    the TTFT metric is not counted twice."""
    newest = newest_ms(engine, source_id, now_ms)
    if newest is None:
        return []
    until_ms = newest - newest % HOUR_MS + HOUR_MS
    since_ms = until_ms - hours * HOUR_MS
    by_hour = {h.hour_start_ms: h for h in load_hours(engine, source_id, since_ms, until_ms) if h.requests > 0}
    by_hour.update((h.hour_start_ms, h) for h in request_hours(engine, source_id, since_ms, until_ms))
    return [by_hour[k] for k in sorted(by_hour)]
