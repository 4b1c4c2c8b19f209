"""Live sources (issue 32): a team's own production traffic, read from where it already lives, kept here.

`source` holds each connection's name, kind and the NAME of the environment variable (or secrets key) holding its
credentials — never the credentials — and its sync state: the watermark (the last request's start and id) and what
the last sync did. `source_request` holds the requests read, one row per (source, request id), so a batch read twice
(a sync cut off after storing, an overlap re-read for late rows) is stored once: INSERT … ON CONFLICT DO NOTHING.
A batch and its watermark commit together.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import Field, SQLModel

from planner.errors import PlannerError
from planner.inputs.env_names import check_env_name, mask_env_value
from planner.lazy import lazy_module
from planner.store.database import table_of
from planner.store.text_fields import text_problem

if TYPE_CHECKING:
    import pandas as pd
else:  # imported on first use: the worker stores rows and starts without it
    pd = lazy_module("pandas")

__all__ = [
    "HOUR_MS",
    "HourTtft",
    "SourceHourRow",
    "SourceInfo",
    "SourceKind",
    "SourceNotFound",
    "SourceRequestRow",
    "SourceRow",
    "add_source",
    "get_source",
    "list_sources",
    "load_source_frame",
    "load_source_requests",
    "source_ttft_ms",
    "record_sync_error",
    "remove_source",
    "request_sources",
    "store_batch",
]


HOUR_MS = 3_600_000


class SourceKind(StrEnum):
    LITELLM = "litellm"  # the LiteLLM proxy's PostgreSQL (its LiteLLM_SpendLogs table), synced by the worker
    OTLP = "otlp"  # OpenTelemetry GenAI spans pushed to the receiver (`ttft-planner sources receive`)
    PROMETHEUS = "prometheus"  # the engines' TTFT histograms, read per hour from Prometheus' HTTP API by the worker

    @property
    def short(self) -> str:
        """The kind in a picker's label."""
        return {SourceKind.LITELLM: "LiteLLM", SourceKind.OTLP: "OpenTelemetry", SourceKind.PROMETHEUS: "Prometheus"}[
            self
        ]

    @property
    def origin(self) -> str:
        """Where the requests come from, in a provenance line."""
        return {
            SourceKind.LITELLM: "the LiteLLM proxy",
            SourceKind.OTLP: "OpenTelemetry spans",
            SourceKind.PROMETHEUS: "Prometheus",
        }[self]

    @property
    def pulled(self) -> bool:
        """Read by a sync (the worker's, or Sync now), not pushed to the receiver."""
        return self is not SourceKind.OTLP

    @property
    def per_request(self) -> bool:
        """Keeps one row per request (source_request); a Prometheus source keeps hours (source_hour)."""
        return self is not SourceKind.PROMETHEUS


class SourceRow(SQLModel, table=True):
    """One live source and its sync state."""

    __tablename__ = "source"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=120, unique=True)
    kind: str = Field(max_length=20)  # SourceKind
    secret_ref: str = Field(max_length=200)  # the env var holding the DSN (or a token); never the value; "" for none
    created_at_ms: int = Field(sa_type=sa.BigInteger)
    watermark_ms: int | None = Field(default=None, sa_type=sa.BigInteger)  # the newest request read: its start
    watermark_id: str | None = Field(default=None, max_length=200)  # … and its id (ties at one start)
    synced_at_ms: int | None = Field(default=None, sa_type=sa.BigInteger)
    n_requests: int = 0
    last_error: str | None = Field(default=None, max_length=500)
    url: str | None = Field(default=None, max_length=500)  # Prometheus: its URL (never with a password in it)
    profile: str | None = Field(default=None, max_length=40)  # Prometheus: the metric names' profile (vllm, sglang)
    model_filter: str | None = Field(default=None, max_length=200)  # Prometheus: only this model label (None: all)
    metric: str | None = Field(
        default=None, max_length=200
    )  # Prometheus: a TTFT histogram read instead of the profile's


class SourceRequestRow(SQLModel, table=True):
    """One production request read from a source: arrival (UTC epoch ms), tokens, timings (ms)."""

    __tablename__ = "source_request"
    __table_args__ = (
        sa.UniqueConstraint("source_id", "request_id", name="uq_source_request"),
        sa.Index("ix_source_request_ts", "source_id", "ts_ms"),
    )

    id: int | None = Field(default=None, primary_key=True)
    source_id: int = Field(foreign_key="source.id", ondelete="CASCADE")
    request_id: str = Field(max_length=200)
    ts_ms: int = Field(sa_type=sa.BigInteger)
    model: str = Field(max_length=200)
    api_base: str = Field(max_length=300)
    prompt_tokens: int
    cached_tokens: int
    output_tokens: int
    ttft_ms: float | None = None
    duration_ms: float | None = None


class SourceHourRow(SQLModel, table=True):
    """One hour (its start, UTC epoch ms) of production TTFT for one model ("" for every model together), as a
    source that reports hours gives it: requests, TTFT p50/p95 and queue-time p95 (ms), mean waiting requests, and
    the bucket counts the percentiles came from (JSON) where the source sends a histogram to add to."""

    __tablename__ = "source_hour"
    __table_args__ = (sa.UniqueConstraint("source_id", "hour_start_ms", "model", name="uq_source_hour"),)

    id: int | None = Field(default=None, primary_key=True)
    source_id: int = Field(foreign_key="source.id", ondelete="CASCADE")
    hour_start_ms: int = Field(sa_type=sa.BigInteger)
    model: str = Field(max_length=200)
    requests: float
    p50_ms: float | None = None
    p95_ms: float | None = None
    queue_p95_ms: float | None = None
    waiting_mean: float | None = None
    buckets_json: str | None = Field(default=None, sa_type=sa.Text)


@dataclass(frozen=True)
class HourTtft:
    """One hour (its start, UTC epoch ms): requests, TTFT p50/p95 (ms; None without requests), mean queue."""

    hour_start_ms: int
    requests: float
    p50_ms: float | None
    p95_ms: float | None
    waiting_mean: float | None
    queue_p95_ms: float | None = None  # time waiting for a slot (the profile's queue histogram), p95


_SOURCE = table_of(SourceRow)
_REQUEST = table_of(SourceRequestRow)
_HOUR = table_of(SourceHourRow)
REQUEST_COLUMNS = tuple(c.name for c in _REQUEST.columns if c.name not in ("id", "source_id"))


class SourceNotFound(PlannerError, KeyError):
    """No source has this name."""


@dataclass(frozen=True)
class SourceInfo:
    id: int
    name: str
    kind: SourceKind
    secret_ref: str
    watermark_ms: int | None
    watermark_id: str | None
    synced_at_ms: int | None
    n_requests: int
    last_error: str | None
    url: str | None = None
    profile: str | None = None
    model_filter: str | None = None
    metric: str | None = None


def _info(row: Any) -> SourceInfo:
    return SourceInfo(
        row.id,
        row.name,
        SourceKind(row.kind),
        row.secret_ref,
        row.watermark_ms,
        row.watermark_id,
        row.synced_at_ms,
        row.n_requests,
        row.last_error,
        row.url,
        row.profile,
        row.model_filter,
        row.metric,
    )


def add_source(
    engine: Engine,
    name: str,
    kind: SourceKind,
    secret_ref: str,
    *,
    url: str | None = None,
    profile: str | None = None,
    model_filter: str | None = None,
    metric: str | None = None,
) -> int:
    """A new source; ValueError for an empty or taken name, a name with a control character or longer than its
    column, a secret reference that is not a variable's NAME (planner.inputs.env_names; the message never shows what was
    given: it may be the secret), an empty one (a Prometheus source may have none: its server may need no
    credentials) or a Prometheus source without a URL."""
    name, secret_ref = name.strip(), secret_ref.strip()
    if not name:
        raise ValueError("a source needs a name")
    for field, value in (("name", name), ("model_filter", model_filter or ""), ("metric", metric or "")):
        if problem := text_problem(_SOURCE, field, value):
            raise ValueError(f"the source's {problem}")
    if not secret_ref and kind is not SourceKind.PROMETHEUS:
        raise ValueError("a source needs the name of the variable holding its credentials")
    check_env_name(secret_ref, "the variable holding the source's credentials", optional=True)
    if kind is SourceKind.PROMETHEUS and not (url or "").strip():
        raise ValueError("a Prometheus source needs its URL")
    try:
        with engine.begin() as conn:
            got = conn.execute(
                _SOURCE.insert().values(
                    name=name,
                    kind=str(kind),
                    secret_ref=secret_ref,
                    created_at_ms=int(time.time() * 1000),
                    url=(url or "").strip() or None,
                    profile=profile,
                    model_filter=(model_filter or "").strip() or None,
                    metric=(metric or "").strip() or None,
                )
            )
    except sa.exc.IntegrityError:
        raise ValueError(f"a source named {name!r} exists already") from None
    key = got.inserted_primary_key
    assert key is not None  # an INSERT of one row
    return int(key[0])


def list_sources(engine: Engine) -> list[SourceInfo]:
    with engine.connect() as conn:
        return [_info(r) for r in conn.execute(sa.select(_SOURCE).order_by(_SOURCE.c.name))]


def request_sources(engine: Engine) -> list[SourceInfo]:
    """The sources holding requests to read as a log (a LiteLLM proxy, OpenTelemetry spans) with at least one: what a
    log picker offers. A Prometheus source keeps hours, not requests, and is never one."""
    return [s for s in list_sources(engine) if s.kind.per_request and s.n_requests]


def get_source(engine: Engine, name: str) -> SourceInfo:
    with engine.connect() as conn:
        row = conn.execute(sa.select(_SOURCE).where(_SOURCE.c.name == name)).first()
    if row is None:
        raise SourceNotFound(f"no source named {name!r}")
    return _info(row)


def remove_source(engine: Engine, name: str) -> None:
    """Remove a source and the requests read from it."""
    src = get_source(engine, name)
    with engine.begin() as conn:
        conn.execute(_REQUEST.delete().where(_REQUEST.c.source_id == src.id))
        conn.execute(_HOUR.delete().where(_HOUR.c.source_id == src.id))
        conn.execute(_SOURCE.delete().where(_SOURCE.c.id == src.id))


def _insert_ignoring_duplicates(engine: Engine) -> Any:
    if engine.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert(_REQUEST).on_conflict_do_nothing(constraint="uq_source_request")
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    return sqlite_insert(_REQUEST).on_conflict_do_nothing(index_elements=["source_id", "request_id"])


def store_batch(
    engine: Engine, source_id: int, rows: Sequence[dict[str, Any]], watermark: tuple[int, str] | None
) -> int:
    """Store a batch of requests (dicts of REQUEST_COLUMNS) and move the watermark, in one transaction; returns how
    many were new (a request already stored is left as it is)."""
    with engine.begin() as conn:
        new = 0
        if rows:
            stmt = _insert_ignoring_duplicates(engine).returning(_REQUEST.c.id)  # a row back for each one inserted
            new = len(conn.execute(stmt, [{**r, "source_id": source_id} for r in rows]).all())
        values: dict[str, Any] = {
            "synced_at_ms": int(time.time() * 1000),
            "n_requests": _SOURCE.c.n_requests + new,
            "last_error": None,
        }
        if watermark is not None:
            values.update(watermark_ms=watermark[0], watermark_id=watermark[1])
        conn.execute(_SOURCE.update().where(_SOURCE.c.id == source_id).values(**values))
    return new


def record_sync_error(engine: Engine, source_id: int, message: str) -> None:
    """Keep `message` as the source's last error (at most 500 characters), with every secret the variable the source
    names holds masked first (planner.inputs.env_names.mask_env_value): a driver's message can quote the database URL,
    or a piece of its password read as the host."""
    with engine.begin() as conn:
        ref = conn.execute(sa.select(_SOURCE.c.secret_ref).where(_SOURCE.c.id == source_id)).scalar()
        message = mask_env_value(message, ref or "")
        conn.execute(_SOURCE.update().where(_SOURCE.c.id == source_id).values(last_error=message[:500]))


def load_source_requests(engine: Engine, source_id: int) -> list[dict[str, Any]]:
    """The requests read from a source, by arrival."""
    cols = [_REQUEST.c[c] for c in REQUEST_COLUMNS]
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(*cols).where(_REQUEST.c.source_id == source_id).order_by(_REQUEST.c.ts_ms, _REQUEST.c.id)
        )
        return [dict(r._mapping) for r in rows]


def load_source_frame(engine: Engine, source_id: int) -> pd.DataFrame:
    """The requests read from a source as a normalised request frame (planner.logs.COLUMNS), sorted by arrival, as a
    stored upload gives it: every page that reads a log reads a source too. `source` holds each request's API base."""
    from planner.logs.result import COLUMNS

    cols = [_REQUEST.c[c] for c in COLUMNS if c != "source"] + [_REQUEST.c.api_base.label("source")]
    query = sa.select(*cols).where(_REQUEST.c.source_id == source_id).order_by(_REQUEST.c.ts_ms, _REQUEST.c.id)
    with engine.connect() as conn:
        frame = pd.read_sql_query(query, conn)
    for c in ("ts_ms", "prompt_tokens", "cached_tokens", "output_tokens"):
        frame[c] = frame[c].astype(np.int64)
    for c in ("ttft_ms", "duration_ms"):
        frame[c] = frame[c].astype(np.float64)
    frame["model"] = frame["model"].astype(object)
    frame["source"] = frame["source"].astype("category")
    return frame[list(COLUMNS)]


def source_ttft_ms(engine: Engine, source_id: int) -> list[float]:
    """The TTFTs (ms) of the requests read from a source, one column, in order: for percentiles without the rows."""
    with engine.connect() as conn:
        got = conn.execute(
            sa.select(_REQUEST.c.ttft_ms)
            .where(_REQUEST.c.source_id == source_id, _REQUEST.c.ttft_ms.is_not(None))
            .order_by(_REQUEST.c.ttft_ms)
        )
        return [float(v) for (v,) in got]


def _in_window(source_id: int, since_ms: int | None, until_ms: int | None) -> list[sa.ColumnElement[bool]]:
    where = [_REQUEST.c.source_id == source_id]
    if since_ms is not None:
        where.append(_REQUEST.c.ts_ms >= since_ms)
    if until_ms is not None:
        where.append(_REQUEST.c.ts_ms < until_ms)
    return where


def source_routes(
    engine: Engine, source_id: int, since_ms: int | None = None, until_ms: int | None = None
) -> dict[tuple[str, str], int]:
    """Each (API base, model) the source's requests were sent to (as stored), with how many requests; only those
    arriving in [since_ms, until_ms) when given."""
    n = sa.func.count().label("n")
    cols = (_REQUEST.c.api_base, _REQUEST.c.model)
    with engine.connect() as conn:
        got = conn.execute(sa.select(*cols, n).where(*_in_window(source_id, since_ms, until_ms)).group_by(*cols))
        return {(str(base), str(model)): int(count) for base, model, count in got}


def source_route_ttft_ms(
    engine: Engine, source_id: int, routes: Sequence[tuple[str, str]], since_ms: int | None, until_ms: int | None
) -> list[float]:
    """The TTFTs (ms, one sorted column) of the source's requests arriving in [since_ms, until_ms) that were sent to
    one of `routes` ((API base, model) pairs as stored); [] for no routes."""
    if not routes:
        return []
    where = [*_in_window(source_id, since_ms, until_ms), _REQUEST.c.ttft_ms.is_not(None)]
    where.append(sa.tuple_(_REQUEST.c.api_base, _REQUEST.c.model).in_(list(routes)))
    query = sa.select(_REQUEST.c.ttft_ms).where(*where).order_by(_REQUEST.c.ttft_ms)
    with engine.connect() as conn:
        return [float(v) for (v,) in conn.execute(query)]
