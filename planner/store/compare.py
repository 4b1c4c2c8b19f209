"""The comparison's reads (planner.compare.data): endpoint names, vantages, raw samples, cold samples (its cold
readings are planner.endpoints.cold_readings').

Only the SQL lives here; planner.compare.data turns the rows into its own values (EndpointInfo, ColdReading, the
samples frame). Raw samples are the source of truth: nothing here aggregates them.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from planner.store.database import session, table_of
from planner.store.endpoints import EndpointRow
from planner.store.probes import ProbeSampleRow

__all__ = [
    "cold_warm_samples",
    "endpoint_names",
    "endpoints_named",
    "sample_rows",
    "sample_span",
    "sample_vantages",
]


def endpoint_names(engine: Engine) -> list[str]:
    """Every registered endpoint's name, sorted."""
    with session(engine) as s:
        return sorted(s.exec(select(EndpointRow.name)).all())


def sample_vantages(engine: Engine) -> list[str]:
    """Every vantage that has stored samples, sorted ("" is the unlabelled vantage)."""
    with session(engine) as s:
        return sorted(s.exec(select(ProbeSampleRow.vantage).distinct()).all())


def endpoints_named(engine: Engine, names: Collection[str]) -> dict[str, EndpointRow]:
    """The registered endpoints among `names`, by name (unknown names are absent)."""
    with session(engine) as s:
        return {r.name: r for r in s.exec(select(EndpointRow).where(col(EndpointRow.name).in_(names))).all()}


def sample_span(engine: Engine, endpoint_ids: Collection[int]) -> tuple[int, int] | None:
    """(first, last) started_at_ms over the endpoints' samples (UTC epoch ms), None when there are none."""
    t = table_of(ProbeSampleRow)
    q = sa.select(sa.func.min(t.c.started_at_ms), sa.func.max(t.c.started_at_ms)).where(
        t.c.endpoint_id.in_(list(endpoint_ids))
    )
    with engine.connect() as conn:
        lo, hi = conn.execute(q).one()
    return None if lo is None else (int(lo), int(hi))


def sample_rows(
    engine: Engine,
    endpoint_ids: Collection[int],
    columns: Sequence[str],
    *,
    since_ms: int | None = None,
    until_ms: int | None = None,
    vantage: str | None = None,
) -> list[Sequence[Any]]:
    """(endpoint_id, *columns) of the endpoints' probe_sample rows with started_at_ms in [since_ms, until_ms) from
    `vantage` (None = all), oldest first."""
    t = table_of(ProbeSampleRow)
    q = sa.select(t.c.endpoint_id, *[t.c[c] for c in columns]).where(t.c.endpoint_id.in_(list(endpoint_ids)))
    if since_ms is not None:
        q = q.where(t.c.started_at_ms >= since_ms)
    if until_ms is not None:
        q = q.where(t.c.started_at_ms < until_ms)
    if vantage is not None:
        q = q.where(t.c.vantage == vantage)
    q = q.order_by(t.c.started_at_ms)
    with engine.connect() as conn:
        return list(conn.execute(q).all())


def cold_warm_samples(
    engine: Engine, endpoint_ids: Collection[int], *, vantage: str | None = None
) -> list[tuple[int, str, int, float | None]]:
    """(endpoint_id, kind, started_at_ms, ttft_ms) of the endpoints' successful kind='cold' and kind='warm'
    samples from `vantage` (None = all), oldest first."""
    t = table_of(ProbeSampleRow)
    q = sa.select(t.c.endpoint_id, t.c.kind, t.c.started_at_ms, t.c.ttft_ms).where(
        t.c.endpoint_id.in_(list(endpoint_ids)), t.c.kind.in_(("cold", "warm")), t.c.ok.is_(True)
    )
    if vantage is not None:
        q = q.where(t.c.vantage == vantage)
    with engine.connect() as conn:
        return [
            (e, kind, started, ttft) for e, kind, started, ttft in conn.execute(q.order_by(t.c.started_at_ms)).all()
        ]
