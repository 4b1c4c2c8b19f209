"""Worker tables: per-vantage leases, endpoint status, dashboard→worker requests, cold readings, hourly rollups.

The worker is the only writer of probe rows (DESIGN §2). The dashboard talks to
it through `probe_request` ("probe now", "cold reading"); the worker reports
back through `endpoint_status` and `cold_reading`. `worker_lease` keeps two
workers of one vantage from probing the same endpoints; its expiry lets a
successor take over when the holder dies. `probe_rollup` keeps, per endpoint,
vantage and UTC hour, a log-spaced histogram from which percentiles can still
be read after the raw samples are gone (planner.store.rollups).
"""

from __future__ import annotations

import time

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import Field, SQLModel

__all__ = [
    "ColdReadingRow",
    "EndpointStatusRow",
    "ProbeRequestRow",
    "ProbeRollupRow",
    "REQUEST_KINDS",
    "WorkerLeaseRow",
    "create_request",
    "endpoint_statuses",
    "get_request",
]

# probe_now: one manual probe (kind='manual'); cold_reading: the cold-reading state machine.
REQUEST_KINDS = ("probe_now", "cold_reading")


class WorkerLeaseRow(SQLModel, table=True):
    """Who probes for a vantage, until when. A holder renews before expires_at_ms or loses the lease."""

    __tablename__ = "worker_lease"

    vantage: str = Field(primary_key=True, max_length=120)
    holder: str = Field(max_length=200)
    acquired_at_ms: int = Field(sa_type=sa.BigInteger)
    renewed_at_ms: int = Field(sa_type=sa.BigInteger)
    expires_at_ms: int = Field(sa_type=sa.BigInteger)


class EndpointStatusRow(SQLModel, table=True):
    """What the worker of one vantage last knew about one endpoint (shown on the Endpoints page)."""

    __tablename__ = "endpoint_status"

    endpoint_id: int = Field(primary_key=True, foreign_key="endpoint.id", ondelete="CASCADE")
    vantage: str = Field(primary_key=True, max_length=120)
    state: str = Field(max_length=20)  # ok | failing | key missing | paused (cold reading) | error
    detail: str | None = Field(default=None, max_length=500)
    consecutive_failures: int = 0
    last_probe_at_ms: int | None = Field(default=None, sa_type=sa.BigInteger)
    next_slot_at_ms: int | None = Field(default=None, sa_type=sa.BigInteger)
    updated_at_ms: int = Field(sa_type=sa.BigInteger)


class ProbeRequestRow(SQLModel, table=True):
    """A request from the dashboard or CLI to the worker: status pending → running → done | failed."""

    __tablename__ = "probe_request"
    __table_args__ = (sa.Index("ix_probe_request_status_requested", "status", "requested_at_ms"),)

    id: int | None = Field(default=None, primary_key=True)
    endpoint_id: int = Field(foreign_key="endpoint.id", ondelete="CASCADE")
    vantage: str = Field(default="", max_length=120)  # "" = whichever worker probes the endpoint
    kind: str = Field(max_length=20)
    idle_s: float | None = None
    status: str = Field(default="pending", max_length=20)
    detail: str | None = Field(default=None, max_length=500)
    requested_at_ms: int = Field(sa_type=sa.BigInteger)
    claimed_by: str | None = Field(default=None, max_length=200)
    claimed_at_ms: int | None = Field(default=None, sa_type=sa.BigInteger)
    done_at_ms: int | None = Field(default=None, sa_type=sa.BigInteger)


class ColdReadingRow(SQLModel, table=True):
    """One cold reading: idle past the scale-down window, one cold probe, one immediate warm probe."""

    __tablename__ = "cold_reading"
    __table_args__ = (sa.Index("ix_cold_reading_endpoint_requested", "endpoint_id", "requested_at_ms"),)

    id: int | None = Field(default=None, primary_key=True)
    endpoint_id: int = Field(foreign_key="endpoint.id", ondelete="CASCADE")
    vantage: str = Field(default="", max_length=120)
    request_id: int | None = None
    state: str = Field(max_length=20)  # idle | cold | warm | done | failed
    detail: str | None = Field(default=None, max_length=500)
    idle_s: float
    requested_at_ms: int = Field(sa_type=sa.BigInteger)
    idle_until_ms: int | None = Field(default=None, sa_type=sa.BigInteger)
    cold_started_at_ms: int | None = Field(default=None, sa_type=sa.BigInteger)
    cold_ttft_ms: float | None = None  # time to the first token of the first success, 503s and retries included
    cold_attempts: int = 0
    cold_status_503: int = 0
    warm_ttft_ms: float | None = None
    cold_minus_warm_ms: float | None = None
    completed_at_ms: int | None = Field(default=None, sa_type=sa.BigInteger)


class ProbeRollupRow(SQLModel, table=True):
    """Samples of one endpoint, vantage and UTC hour, folded into counts and a log-spaced TTFT histogram."""

    __tablename__ = "probe_rollup"
    __table_args__ = (sa.UniqueConstraint("endpoint_id", "vantage", "hour_start_ms", name="uq_probe_rollup_hour"),)

    id: int | None = Field(default=None, primary_key=True)
    endpoint_id: int = Field(foreign_key="endpoint.id", ondelete="CASCADE")
    vantage: str = Field(default="", max_length=120)
    hour_start_ms: int = Field(sa_type=sa.BigInteger)
    n_ok: int = 0
    n_failed: int = 0
    n_skipped: int = 0
    ttft_min_ms: float | None = None
    ttft_max_ms: float | None = None
    ttft_sum_ms: float = 0.0
    hist_json: str = Field(sa_type=sa.Text)  # {"bucket index": count}; see planner.store.rollups


def create_request(engine: Engine, endpoint_id: int, kind: str, *, vantage: str = "", idle_s: float | None = None) -> int:
    """Queue a request for the worker ("probe_now" or "cold_reading"); returns its id.

    Raises ValueError for an unknown kind or a negative idle time.
    """
    if kind not in REQUEST_KINDS:
        raise ValueError(f"request kind must be one of {', '.join(REQUEST_KINDS)}, got {kind!r}")
    if idle_s is not None and idle_s < 0:
        raise ValueError(f"idle time must be ≥ 0 s, got {idle_s:g}")
    t = ProbeRequestRow.__table__
    with engine.begin() as conn:
        res = conn.execute(t.insert().values(endpoint_id=endpoint_id, vantage=vantage, kind=kind, idle_s=idle_s,
                                             status="pending", requested_at_ms=int(time.time() * 1000)))
        return int(res.inserted_primary_key[0])


def get_request(engine: Engine, request_id: int) -> dict | None:
    """The request row as a dict (status pending | running | done | failed, detail), or None."""
    t = ProbeRequestRow.__table__
    with engine.connect() as conn:
        row = conn.execute(sa.select(t).where(t.c.id == request_id)).mappings().first()
    return dict(row) if row else None


def endpoint_statuses(engine: Engine) -> dict[int, list[dict]]:
    """endpoint id → the status rows its workers reported (one per vantage)."""
    t = EndpointStatusRow.__table__
    out: dict[int, list[dict]] = {}
    with engine.connect() as conn:
        for r in conn.execute(sa.select(t).order_by(t.c.vantage)).mappings():
            out.setdefault(r["endpoint_id"], []).append(dict(r))
    return out
