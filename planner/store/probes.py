"""The probe_sample table: raw TTFT samples (one row per attempt outcome); the endpoints are planner.store.endpoints.

Raw samples are the source of truth: UTC epoch ms, every phase
timing in ms from send, failures stored with an error class and never used
in percentiles. Skipped schedule slots are rows too (kind='skipped', their cause in
skip_cause: a planner.endpoints.samples.SkipCause value; NULL for a skip stored before
migration 0011 whose words did not say it).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import fields
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine
from sqlmodel import Field, SQLModel

from planner.endpoints.samples import SampleKind
from planner.store.database import table_of
from planner.store.endpoints import EndpointRow  # the table probe_sample.endpoint_id references

if TYPE_CHECKING:
    from planner.probes.ttft import TtftSample

__all__ = [
    "ProbeSampleRow",
    "SAMPLE_KINDS",
    "insert_samples",
    "prefill_points",
    "sample_row",
]

#: The stored values of SampleKind (planner.endpoints.samples), for messages and checks.
SAMPLE_KINDS: tuple[str, ...] = tuple(k.value for k in SampleKind)


class ProbeSampleRow(SQLModel, table=True):
    """One TTFT probe outcome. Timings are ms from just before the request was sent."""

    __tablename__ = "probe_sample"
    __table_args__ = (
        sa.Index("ix_probe_sample_endpoint_started", "endpoint_id", "started_at_ms"),
        sa.Index("ix_probe_sample_vantage_endpoint_started", "vantage", "endpoint_id", "started_at_ms"),
        # A restarted worker re-inserting a slot it already stored is a no-op, not a duplicate.
        sa.UniqueConstraint("endpoint_id", "vantage", "kind", "scheduled_at_ms", name="uq_probe_sample_slot"),
    )

    id: int | None = Field(default=None, primary_key=True)
    endpoint_id: int = Field(foreign_key=f"{EndpointRow.__tablename__}.id", ondelete="CASCADE")
    vantage: str = Field(default="", max_length=120)
    kind: str = Field(default="scheduled", max_length=20)
    scheduled_at_ms: int = Field(sa_type=sa.BigInteger)  # the slot (UTC epoch ms); manual runs use their send time
    started_at_ms: int = Field(sa_type=sa.BigInteger)
    ok: bool = False
    error_class: str | None = Field(default=None, max_length=40)
    error_detail: str | None = Field(default=None, max_length=500)
    status_code: int | None = None
    http_version: str | None = Field(default=None, max_length=20)
    attempts: int = 1
    retry_wait_ms: float = 0.0
    conn_reused: bool = False
    remote_ip: str | None = Field(default=None, max_length=64)
    proxy: str | None = Field(default=None, max_length=200)
    dns_ms: float | None = None
    connect_ms: float | None = None
    tls_ms: float | None = None
    headers_ms: float | None = None
    first_event_ms: float | None = None
    ttft_ms: float | None = None
    first_content_ms: float | None = None
    total_ms: float | None = None
    output_tokens: int | None = None
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    prompt_tokens_requested: int | None = None
    idle_gap_ms: float | None = None
    buffered: bool = False
    cached_series: bool = False  # the prompt was repeated on purpose (--cached)
    server_latency_ms: float | None = None  # the endpoint's own latency figure, where it reports one (Bedrock)
    # A skipped row's cause: a SkipCause value (planner.endpoints.samples); None for any other row.
    skip_cause: str | None = Field(default=None, max_length=20)


def sample_row(
    sample: TtftSample,
    endpoint_id: int,
    vantage: str,
    kind: SampleKind | str,
    scheduled_at_ms: int,
    idle_gap_ms: float | None = None,
) -> ProbeSampleRow:
    """The probe_sample row of one probe outcome (a planner.probes.ttft.TtftSample) for `endpoint_id`.

    Raises ValueError when `kind` is not a SampleKind value.
    """
    try:
        kind = SampleKind(kind)
    except ValueError:
        raise ValueError(f"kind must be one of {', '.join(SAMPLE_KINDS)}, got {kind!r}") from None
    return ProbeSampleRow(
        endpoint_id=endpoint_id,
        vantage=vantage,
        kind=kind.value,
        scheduled_at_ms=int(scheduled_at_ms),
        idle_gap_ms=idle_gap_ms,
        **{f.name: getattr(sample, f.name) for f in fields(sample)},
    )


_SLOT_KEY = ("endpoint_id", "vantage", "kind", "scheduled_at_ms")
_INSERT_BATCH_ROWS = 500  # slot keys per IN list (3 bound parameters each)


def _column_array(rows: list[ProbeSampleRow], column: sa.Column[Any]) -> list[Any]:
    """One column's values as a PostgreSQL array parameter: of one Python type (a float column may hold ints, e.g.
    ``ttft_ms=5000``, and psycopg cannot send a list that mixes them)."""
    values = [getattr(r, column.name) for r in rows]
    if isinstance(column.type, sa.Float):
        return [None if v is None else float(v) for v in values]
    return values


def _one_outcome_per_slot(rows: list[ProbeSampleRow]) -> list[ProbeSampleRow]:
    """Drop "skipped" rows whose slot has a "scheduled" row in the same batch."""
    probed = {(r.endpoint_id, r.vantage, r.scheduled_at_ms) for r in rows if r.kind == "scheduled"}
    return [r for r in rows if r.kind != "skipped" or (r.endpoint_id, r.vantage, r.scheduled_at_ms) not in probed]


def _probed_slots(conn: sa.Connection, table: sa.Table, skipped: list[ProbeSampleRow]) -> set[tuple[int, str, int]]:
    out: set[tuple[int, str, int]] = set()
    for i in range(0, len(skipped), _INSERT_BATCH_ROWS):
        keys = [(r.endpoint_id, r.vantage, r.scheduled_at_ms) for r in skipped[i : i + _INSERT_BATCH_ROWS]]
        q = sa.select(table.c.endpoint_id, table.c.vantage, table.c.scheduled_at_ms).where(
            table.c.kind == "scheduled",
            sa.tuple_(table.c.endpoint_id, table.c.vantage, table.c.scheduled_at_ms).in_(keys),
        )
        out |= {(int(a), str(b), int(c)) for a, b, c in conn.execute(q)}
    return out


# pg_advisory_xact_lock key for sample writes (the migration lock in migrations/env.py is 7102026).
_SAMPLE_WRITE_LOCK = 7102027


def insert_samples(engine: Engine, rows: list[ProbeSampleRow]) -> int:
    """Insert probe samples; a row whose slot (endpoint_id, vantage, kind, scheduled_at_ms) exists is skipped.

    A slot has exactly one outcome: a "skipped" row is not stored for a slot that has a "scheduled" row,
    and a "scheduled" row replaces a "skipped" one (two workers of a vantage overlapping after one was
    paused: the probe is what happened).

    Idempotent on SQLite and PostgreSQL (INSERT … ON CONFLICT DO NOTHING), so a
    restarted worker re-sending a slot never duplicates it. Returns the number
    of rows actually inserted. Raises sqlalchemy errors for a missing endpoint
    (foreign key) or an unreachable database; nothing is half-written then.
    """
    if not rows:
        return 0
    table = table_of(ProbeSampleRow)
    cols = [c.name for c in table.columns if c.name != "id"]
    dialect = engine.dialect.name
    if dialect not in ("sqlite", "postgresql"):
        raise NotImplementedError(f"insert_samples supports SQLite and PostgreSQL, not {dialect}")
    rows = _one_outcome_per_slot(rows)
    inserted = 0
    with engine.begin() as conn:
        if dialect == "postgresql":
            # Check-then-write below must not interleave with another worker's (a paused holder and its standby):
            # under READ COMMITTED neither would see the other's uncommitted probe/skip of the same slot.
            # SQLite serialises writers already.
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _SAMPLE_WRITE_LOCK})
        skipped = [r for r in rows if r.kind == "skipped"]
        if skipped:  # a slot that was probed (by any worker of the vantage) is not also "skipped"
            probed = _probed_slots(conn, table, skipped)
            rows = [
                r for r in rows if r.kind != "skipped" or (r.endpoint_id, r.vantage, r.scheduled_at_ms) not in probed
            ]
        scheduled = [r for r in rows if r.kind == "scheduled"]
        for i in range(0, len(scheduled), _INSERT_BATCH_ROWS):  # and a probe replaces a skip stored earlier
            part = scheduled[i : i + _INSERT_BATCH_ROWS]
            conn.execute(
                table.delete().where(
                    table.c.kind == "skipped",
                    sa.tuple_(table.c.endpoint_id, table.c.vantage, table.c.scheduled_at_ms).in_(
                        [(r.endpoint_id, r.vantage, r.scheduled_at_ms) for r in part]
                    ),
                )
            )
        if rows:
            stmt: sa.Insert
            if dialect == "postgresql":
                # One array per column, zipped back into rows by unnest: one short statement whatever the row count
                # (psycopg parses the text of a multi-row VALUES statement on every execution: most of the time of
                # a large insert).
                stmt = postgresql.insert(table).from_select(
                    cols,
                    sa.select(
                        *(
                            sa.func.unnest(
                                sa.cast(
                                    sa.bindparam(c, _column_array(rows, table.c[c])), postgresql.ARRAY(table.c[c].type)
                                )
                            ).label(c)
                            for c in cols
                        )
                    ),
                )
                params = None
            else:
                # A list of parameter sets: compiled once (cached) and sent as multi-row VALUES batches; a
                # .values(list) statement was compiled afresh, 18,500 bind parameters, for every 500 rows.
                stmt, params = sqlite.insert(table), [{c: getattr(r, c) for c in cols} for r in rows]
            # RETURNING counts what was really inserted (ON CONFLICT DO NOTHING returns no row for a stored slot).
            stmt = stmt.on_conflict_do_nothing(index_elements=list(_SLOT_KEY)).returning(table.c.id)
            inserted = len(conn.execute(stmt, params).all())
    return inserted


def prefill_points(engine: Engine, since_ms: int | None = None) -> Iterator[tuple[str, float, float, int]]:
    """(endpoint name, uncached prompt tokens, TTFT ms, started at UTC epoch ms) of every sample a prefill slope may
    use: successful, cache-busting (not a deliberate cached series, not a cold reading), with a TTFT and a prompt
    length (the provider's count, else the requested one; less its cached tokens). `since_ms`: newer ones only."""
    s, e = table_of(ProbeSampleRow), table_of(EndpointRow)
    q = (
        sa.select(
            e.c.name, s.c.prompt_tokens, s.c.cached_tokens, s.c.prompt_tokens_requested, s.c.ttft_ms, s.c.started_at_ms
        )
        .join(e, e.c.id == s.c.endpoint_id)
        .where(s.c.ok.is_(True), s.c.cached_series.is_(False), s.c.kind != "cold", s.c.ttft_ms.is_not(None))
    )
    if since_ms is not None:
        q = q.where(s.c.started_at_ms >= since_ms)
    with engine.connect() as conn:
        for name, prompt, cached, requested, ttft, started in conn.execute(q):
            tokens = prompt if prompt is not None else requested
            if tokens is not None:
                yield name, float(tokens - (cached or 0)), float(ttft), int(started)
