"""Worker tables: per-vantage leases, endpoint status, cold readings, hourly rollups, and the worker's own SQL.

The worker writes the probe rows of registered endpoints and reports back to the dashboard through
`endpoint_status` and `cold_reading`; the requests it runs (`probe_request`, `rtt_request`) are
planner.store.requests'. `worker_lease` keeps two workers of one vantage from probing the same endpoints; its expiry
lets a successor take over when the holder dies. `probe_rollup` keeps, per endpoint, vantage and UTC hour, a
log-spaced histogram from which percentiles can still be read after the raw samples are gone (planner.store.rollups).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Field, SQLModel

from planner.endpoints.samples import SampleKind
from planner.store.database import StoreError, redacted, table_of
from planner.store.endpoints import EndpointRow
from planner.store.probes import ProbeSampleRow

__all__ = [
    "ColdReadingRow",
    "ColdState",
    "EndpointState",
    "EndpointStatusRow",
    "ProbeRollupRow",
    "WorkerLeaseRow",
    "check_writable",
    "endpoint_statuses",
    "insert_cold_reading",
    "last_slots",
    "missing_endpoints",
    "update_cold_reading",
    "upsert_statuses",
    "wal_checkpoint",
]


class EndpointState(StrEnum):
    """What the worker of a vantage last knew about an endpoint (endpoint_status.state)."""

    OK = "ok"
    FAILING = "failing"  # the last probe failed (consecutive_failures counts them)
    KEY_MISSING = "key missing"  # its API key variable is set nowhere
    PAUSED = "paused"  # a cold reading is idling it
    ERROR = "error"  # its stored settings cannot be probed (detail says why)


class ColdState(StrEnum):
    """A cold reading's progress: idle → cold → done | failed (planner.worker.cold)."""

    IDLE = "idle"
    COLD = "cold"
    WARM = "warm"
    DONE = "done"
    FAILED = "failed"


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


def endpoint_statuses(engine: Engine) -> dict[int, list[dict[str, Any]]]:
    """endpoint id → the status rows its workers reported (one per vantage)."""
    t = table_of(EndpointStatusRow)
    out: dict[int, list[dict[str, Any]]] = {}
    with engine.connect() as conn:
        for r in conn.execute(sa.select(t).order_by(t.c.vantage)).mappings():
            out.setdefault(r["endpoint_id"], []).append(dict(r))
    return out


# ------------------------------------------------------------------ the worker's own reads and writes

_COLD = table_of(ColdReadingRow)
_STATUS = table_of(EndpointStatusRow)
_LEASE = table_of(WorkerLeaseRow)
_SAMPLE = table_of(ProbeSampleRow)
_ENDPOINT = table_of(EndpointRow)


def check_writable(engine: Engine) -> None:
    """Raise StoreError when the database refuses writes (a read-only file, database or role).

    Any other failure (locked, down) is an outage a worker rides out, so it is not raised.
    """
    try:
        with engine.begin() as conn:
            # A write that matches no row: refused all the same by a read-only file, database or role.
            conn.execute(_LEASE.update().where(_LEASE.c.vantage == "\n(write check)\n").values(holder=""))
    except SQLAlchemyError as exc:
        text = str(getattr(exc, "orig", exc)).strip().splitlines()[0] if str(exc) else type(exc).__name__
        low = text.lower().replace("-", "")
        if "readonly" in low or "read only" in low or "permission denied" in low:
            raise StoreError(
                f"database {redacted(str(engine.url))} is read-only ({text}): the worker must "
                "write its samples; fix the file's permissions or the role's privileges"
            ) from None


def missing_endpoints(engine: Engine, ids: set[int]) -> set[int]:
    """The ids among `ids` that name no endpoint (removed while a probe of theirs was in flight)."""
    with engine.connect() as conn:
        present = {r[0] for r in conn.execute(sa.select(_ENDPOINT.c.id).where(_ENDPOINT.c.id.in_(ids)))}
    return ids - present


def last_slots(engine: Engine, vantage: str) -> dict[int, int]:
    """endpoint id → the latest scheduled or skipped slot (epoch ms) stored for `vantage` (where a restart resumes)."""
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(_SAMPLE.c.endpoint_id, sa.func.max(_SAMPLE.c.scheduled_at_ms))
            .where(
                _SAMPLE.c.vantage == vantage, _SAMPLE.c.kind.in_((SampleKind.SCHEDULED.value, SampleKind.SKIPPED.value))
            )
            .group_by(_SAMPLE.c.endpoint_id)
        ).all()
    return {int(e): int(m) for e, m in rows}


def upsert_statuses(engine: Engine, vantage: str, statuses: dict[int, dict[str, Any]], now_ms: int) -> None:
    """Write the endpoint_status rows of `vantage`: endpoint id → state, detail, consecutive_failures,
    last_probe_at_ms, next_slot_at_ms. An endpoint removed meanwhile is skipped."""
    with engine.begin() as conn:
        for eid, st in statuses.items():
            values = dict(
                state=str(st["state"]),
                detail=st.get("detail"),
                consecutive_failures=st.get("consecutive_failures", 0),
                last_probe_at_ms=st.get("last_probe_at_ms"),
                next_slot_at_ms=st.get("next_slot_at_ms"),
                updated_at_ms=now_ms,
            )
            key = sa.and_(_STATUS.c.endpoint_id == eid, _STATUS.c.vantage == vantage)
            if conn.execute(_STATUS.update().where(key).values(**values)).rowcount == 0:
                if conn.execute(sa.select(_ENDPOINT.c.id).where(_ENDPOINT.c.id == eid)).first():
                    conn.execute(_STATUS.insert().values(endpoint_id=eid, vantage=vantage, **values))


def insert_cold_reading(
    engine: Engine, endpoint_id: int, vantage: str, request: dict[str, Any], idle_s: float, idle_until_ms: int
) -> int:
    """Start a cold_reading row (state idle) for `request`; returns its id."""
    with engine.begin() as conn:
        res = conn.execute(
            _COLD.insert().values(
                endpoint_id=endpoint_id,
                vantage=vantage,
                request_id=request["id"],
                state=ColdState.IDLE.value,
                idle_s=idle_s,
                requested_at_ms=request["requested_at_ms"],
                idle_until_ms=idle_until_ms,
                cold_attempts=0,
                cold_status_503=0,
            )
        )
        key = res.inserted_primary_key
        assert key is not None  # a single-row INSERT reports its key
        return int(key[0])


def update_cold_reading(engine: Engine, reading_id: int, **values: Any) -> None:
    """Set columns of one cold_reading row (state, timings, detail)."""
    if "state" in values:
        values["state"] = ColdState(values["state"]).value
    with engine.begin() as conn:
        conn.execute(_COLD.update().where(_COLD.c.id == reading_id).values(**values))


def wal_checkpoint(engine: Engine) -> None:
    """Fold SQLite's write-ahead log back into the database file (PASSIVE: never waits for readers); no-op elsewhere."""
    if engine.dialect.name != "sqlite":
        return
    with engine.connect() as conn:
        conn.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)")
