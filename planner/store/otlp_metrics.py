"""OpenTelemetry TTFT metrics (issue 32): what the OTLP receiver's /v1/metrics keeps, and all its SQL.

`otlp_metric_series` holds, per source and series (a hash of the metric, its resource, scope and point attributes),
the last cumulative point read: its start, its time and its bucket bounds and counts (JSON), so a cumulative export
read again, by this receiver or by a new one after a restart, adds only what it gained. The hours themselves are
`source_hour` rows (store/sources.py), one per hour and model and one for every model together (model "").

`merge_metric_export` is one export's read-modify-write: it first marks the source synced (an UPDATE, which takes
the source's row lock on PostgreSQL and SQLite's write lock, so two exports of one source never interleave), reads the
series states and hours the export touches, hands them to the caller's `plan` (pure: planner/sources/otlp_metrics.py
decides what the points add) and writes back what the plan returns, all in one transaction.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlmodel import Field, SQLModel

from planner.store.database import table_of
from planner.store.sources import SourceHourRow, SourceNotFound, SourceRow

__all__ = [
    "HourKey",
    "HourState",
    "MetricPlan",
    "OtlpMetricSeriesRow",
    "SeriesState",
    "load_hour_buckets",
    "load_series_states",
    "merge_metric_export",
]


class OtlpMetricSeriesRow(SQLModel, table=True):
    """The last cumulative point of one series of a source's TTFT metric: where the next point's gain starts."""

    __tablename__ = "otlp_metric_series"
    __table_args__ = (sa.UniqueConstraint("source_id", "series_key", name="uq_otlp_metric_series"),)

    id: int | None = Field(default=None, primary_key=True)
    source_id: int = Field(foreign_key="source.id", ondelete="CASCADE")
    series_key: str = Field(max_length=64)  # sha256 (hex) of metric, unit, resource, scope and point attributes
    start_ns: int = Field(sa_type=sa.BigInteger)  # the point's startTimeUnixNano (0: not given)
    time_ns: int = Field(sa_type=sa.BigInteger)  # its timeUnixNano
    buckets_json: str = Field(sa_type=sa.Text)  # its bucket bounds (ms) and cumulative counts


@dataclass(frozen=True)
class SeriesState:
    """A series' last cumulative point: start and time (UTC epoch ns), bounds and counts as JSON."""

    start_ns: int
    time_ns: int
    buckets_json: str


@dataclass(frozen=True)
class HourState:
    """One source_hour row as the metrics write it: the summed buckets (JSON) and what they give."""

    buckets_json: str | None
    requests: float
    p50_ms: float | None
    p95_ms: float | None


HourKey = tuple[int, str]  # (hour_start_ms, model); model "" for every model together
#: (stored series states, stored hours) → (series states to write, hours to write); called inside the transaction.
MetricPlan = Callable[
    [Mapping[str, SeriesState], Mapping[HourKey, HourState]],
    tuple[Mapping[str, SeriesState], Mapping[HourKey, HourState]],
]

_SOURCE = table_of(SourceRow)
_HOUR = table_of(SourceHourRow)
_SERIES = table_of(OtlpMetricSeriesRow)
_CHUNK = 500  # values per IN (…): well under every back end's limit on bound parameters

_T = TypeVar("_T")


def _chunks(items: Sequence[_T]) -> Iterator[Sequence[_T]]:
    for i in range(0, len(items), _CHUNK):
        yield items[i : i + _CHUNK]


def _series(conn: Connection, source_id: int, keys: Sequence[str]) -> dict[str, tuple[int, SeriesState]]:
    out: dict[str, tuple[int, SeriesState]] = {}
    for part in _chunks(keys):
        rows = conn.execute(
            sa.select(
                _SERIES.c.id, _SERIES.c.series_key, _SERIES.c.start_ns, _SERIES.c.time_ns, _SERIES.c.buckets_json
            ).where(_SERIES.c.source_id == source_id, _SERIES.c.series_key.in_(part))
        )
        for row_id, key, start, at, buckets in rows:
            out[str(key)] = (int(row_id), SeriesState(int(start), int(at), str(buckets)))
    return out


def _hours(conn: Connection, source_id: int, keys: Collection[HourKey]) -> dict[HourKey, tuple[int, HourState]]:
    wanted = set(keys)
    out: dict[HourKey, tuple[int, HourState]] = {}
    for part in _chunks(sorted({h for h, _ in wanted})):
        rows = conn.execute(
            sa.select(
                _HOUR.c.id,
                _HOUR.c.hour_start_ms,
                _HOUR.c.model,
                _HOUR.c.buckets_json,
                _HOUR.c.requests,
                _HOUR.c.p50_ms,
                _HOUR.c.p95_ms,
            ).where(_HOUR.c.source_id == source_id, _HOUR.c.hour_start_ms.in_(part))
        )
        for row_id, hour, model, buckets, requests, p50, p95 in rows:
            key = (int(hour), str(model))
            if key in wanted:
                out[key] = (int(row_id), HourState(buckets, float(requests), p50, p95))
    return out


def merge_metric_export(
    engine: Engine,
    source_id: int,
    series_keys: Collection[str],
    hour_keys: Collection[HourKey],
    plan: MetricPlan,
) -> None:
    """One export's read-modify-write in one transaction: lock the source, read the series `series_keys` and the
    hours `hour_keys` as stored (those not stored are absent), call `plan` with them and store what it returns (a
    series or hour it leaves out is left as it is). SourceNotFound when the source is gone."""
    with engine.begin() as conn:
        # The first statement writes: it takes the lock that keeps another export of this source out until commit.
        touched = conn.execute(
            _SOURCE.update()
            .where(_SOURCE.c.id == source_id)
            .values(synced_at_ms=int(time.time() * 1000), last_error=None)
        ).rowcount
        if touched == 0:
            raise SourceNotFound(f"no source has id {source_id}")
        series = _series(conn, source_id, sorted(set(series_keys)))
        hours = _hours(conn, source_id, hour_keys)
        new_series, new_hours = plan({k: s for k, (_, s) in series.items()}, {k: h for k, (_, h) in hours.items()})
        for key, state in new_series.items():
            values = {"start_ns": state.start_ns, "time_ns": state.time_ns, "buckets_json": state.buckets_json}
            if key in series:
                conn.execute(_SERIES.update().where(_SERIES.c.id == series[key][0]).values(**values))
            else:
                conn.execute(_SERIES.insert().values(source_id=source_id, series_key=key, **values))
        for (hour, model), h in new_hours.items():
            values2 = {"buckets_json": h.buckets_json, "requests": h.requests, "p50_ms": h.p50_ms, "p95_ms": h.p95_ms}
            if (hour, model) in hours:
                conn.execute(_HOUR.update().where(_HOUR.c.id == hours[(hour, model)][0]).values(**values2))
            else:
                conn.execute(_HOUR.insert().values(source_id=source_id, hour_start_ms=hour, model=model, **values2))


def load_series_states(engine: Engine, source_id: int) -> dict[str, SeriesState]:
    """Every series state kept for a source, by series key."""
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(_SERIES.c.series_key, _SERIES.c.start_ns, _SERIES.c.time_ns, _SERIES.c.buckets_json).where(
                _SERIES.c.source_id == source_id
            )
        )
        return {str(k): SeriesState(int(s), int(t), str(b)) for k, s, t, b in rows}


def load_hour_buckets(engine: Engine, source_id: int, hour_start_ms: int, model: str = "") -> str | None:
    """The summed buckets (JSON) stored for one hour and model of a source; None when the hour has none."""
    with engine.connect() as conn:
        got = conn.execute(
            sa.select(_HOUR.c.buckets_json).where(
                _HOUR.c.source_id == source_id, _HOUR.c.hour_start_ms == hour_start_ms, _HOUR.c.model == model
            )
        ).scalar_one_or_none()
    return None if got is None else str(got)
