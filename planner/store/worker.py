"""Worker tables: per-vantage leases, endpoint status, dashboard→worker requests, cold readings, hourly rollups.

The worker writes the probe rows of registered endpoints (DESIGN §2) and the server-side RTT samples the Regions
page asks for. The dashboard talks to it through `probe_request` ("probe now", "cold reading") and `rtt_request`
("measure these RTT targets from your vantage"); the worker reports back through the request's status,
`endpoint_status` and `cold_reading`. `worker_lease` keeps two
workers of one vantage from probing the same endpoints; its expiry lets a
successor take over when the holder dies. `probe_rollup` keeps, per endpoint,
vantage and UTC hour, a log-spaced histogram from which percentiles can still
be read after the raw samples are gone (planner.store.rollups).
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Sequence
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Field, SQLModel

from planner.samples import SampleKind
from planner.store.endpoints import EndpointRow
from planner.store.engine import StoreError, redacted, table_of
from planner.store.probes import ProbeSampleRow

__all__ = [
    "ColdReadingRow",
    "ColdState",
    "EndpointState",
    "EndpointStatusRow",
    "ProbeRequestRow",
    "ProbeRollupRow",
    "REQUEST_KINDS",
    "RTT_REQUEST_MAX_N",
    "RTT_REQUEST_MAX_TARGETS",
    "RequestKind",
    "RequestStatus",
    "RttRequestRow",
    "WorkerLeaseRow",
    "abandon_rtt_request",
    "check_writable",
    "claim_requests",
    "claim_rtt_requests",
    "create_request",
    "create_rtt_request",
    "endpoint_statuses",
    "fail_orphaned_requests",
    "finish_request",
    "finish_rtt_request",
    "get_request",
    "get_rtt_request",
    "insert_cold_reading",
    "last_slots",
    "missing_endpoints",
    "rtt_request_targets",
    "update_cold_reading",
    "upsert_statuses",
    "wal_checkpoint",
]


class RequestKind(StrEnum):
    """What a probe_request asks the worker for."""

    PROBE_NOW = "probe_now"  # one manual probe (a kind='manual' sample)
    COLD_READING = "cold_reading"  # the cold-reading state machine (planner.worker.cold)


class RequestStatus(StrEnum):
    """A probe_request's progress: pending → running → done | failed."""

    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


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


#: The stored values of RequestKind.
REQUEST_KINDS: tuple[str, ...] = tuple(k.value for k in RequestKind)

#: Bounds of one rtt_request: targets per request (the catalog has about 90 regions) and samples per target.
RTT_REQUEST_MAX_TARGETS = 500
RTT_REQUEST_MAX_N = 1000


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


class RttRequestRow(SQLModel, table=True):
    """A request from the Regions page to the worker of one vantage: measure these RTT targets, n samples each.

    status pending → running → done | failed, as for probe_request; the samples go to rtt_sample (side 'server')."""

    __tablename__ = "rtt_request"
    __table_args__ = (sa.Index("ix_rtt_request_status_requested", "status", "requested_at_ms"),)

    id: int | None = Field(default=None, primary_key=True)
    vantage: str = Field(default="", max_length=120)  # the worker of exactly this vantage measures it
    targets_json: str = Field(sa_type=sa.Text)  # [[region_id, target], …] (see rtt_request_targets)
    n: int  # kept TCP connects per target
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


def _queue(engine: Engine, table: sa.Table, **values: Any) -> int:
    """Insert one pending request row into `table` (probe_request or rtt_request); returns its id."""
    with engine.begin() as conn:
        res = conn.execute(
            table.insert().values(**values, status=RequestStatus.PENDING.value, requested_at_ms=int(time.time() * 1000))
        )
        key = res.inserted_primary_key
        assert key is not None  # a single-row INSERT reports its key
        return int(key[0])


def create_request(
    engine: Engine, endpoint_id: int, kind: str, *, vantage: str = "", idle_s: float | None = None
) -> int:
    """Queue a request for the worker ("probe_now" or "cold_reading"); returns its id.

    Raises ValueError for an unknown kind or a negative idle time.
    """
    if kind not in REQUEST_KINDS:
        raise ValueError(f"request kind must be one of {', '.join(REQUEST_KINDS)}, got {kind!r}")
    if idle_s is not None and idle_s < 0:
        raise ValueError(f"idle time must be ≥ 0 s, got {idle_s:g}")
    return _queue(
        engine, table_of(ProbeRequestRow), endpoint_id=endpoint_id, vantage=vantage, kind=str(kind), idle_s=idle_s
    )


def get_request(engine: Engine, request_id: int) -> dict | None:
    """The probe_request row as a dict (status pending | running | done | failed, detail), or None."""
    return _get(engine, table_of(ProbeRequestRow), request_id)


def create_rtt_request(engine: Engine, targets: Sequence[tuple[str, str]], n: int, *, vantage: str = "") -> int:
    """Queue a server-side RTT measurement for the worker of `vantage`: `targets` are (region_id, URL or host:port)
    pairs, `n` the kept TCP connects per target. Returns the request's id.

    Raises ValueError for no targets, more than RTT_REQUEST_MAX_TARGETS, an empty or over-long id or target, or n
    outside 1 … RTT_REQUEST_MAX_N.
    """
    pairs = [(str(region_id), str(target)) for region_id, target in targets]
    if not pairs:
        raise ValueError("an RTT request needs at least one target")
    if len(pairs) > RTT_REQUEST_MAX_TARGETS:
        raise ValueError(f"an RTT request takes at most {RTT_REQUEST_MAX_TARGETS} targets, got {len(pairs)}")
    for region_id, target in pairs:
        if not region_id or not target or len(region_id) > 120 or len(target) > 500:
            raise ValueError(f"RTT target {region_id[:40]!r}: needs an id (≤ 120 characters) and a target (≤ 500)")
    if not 1 <= n <= RTT_REQUEST_MAX_N:
        raise ValueError(f"samples per target must be 1 … {RTT_REQUEST_MAX_N}, got {n}")
    return _queue(engine, table_of(RttRequestRow), vantage=vantage, targets_json=json.dumps(pairs), n=int(n))


def get_rtt_request(engine: Engine, request_id: int) -> dict | None:
    """The rtt_request row as a dict (status pending | running | done | failed, detail, claimed_at_ms …), or None."""
    return _get(engine, table_of(RttRequestRow), request_id)


def rtt_request_targets(request: dict) -> list[tuple[str, str]]:
    """The (region_id, target) pairs of an rtt_request row; raises ValueError when its targets_json is not a list of
    pairs of strings (a row not written by create_rtt_request)."""
    try:
        pairs = json.loads(request["targets_json"])
    except (TypeError, json.JSONDecodeError) as exc:
        raise ValueError(f"the request's target list is not JSON ({exc})") from None
    if not isinstance(pairs, list) or not all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in pairs
    ):
        raise ValueError("the request's target list is not a list of [region id, target] pairs")
    return [(p[0], p[1]) for p in pairs]


def abandon_rtt_request(engine: Engine, request_id: int, detail: str, now_ms: int) -> bool:
    """Fail an rtt_request that no worker has claimed yet (pending → failed, conditional like a claim, so a worker
    claiming it at the same moment either wins and runs it, or finds it gone). True when it was still pending."""
    return _finish(
        engine, table_of(RttRequestRow), request_id, RequestStatus.FAILED, detail, now_ms, only=RequestStatus.PENDING
    )


def fail_orphaned_requests(engine: Engine, live_holders: Collection[str], detail: str, now_ms: int) -> int:
    """Fail the running probe and RTT requests whose claimer holds no live lease (`live_holders`): a worker killed
    mid-request never writes the outcome, and whoever waits on it (the Regions page, the Probes page's cold reading)
    would wait for ever. Each row is failed only while it is still running, and so is the cold reading a failed
    probe request had started. Returns how many requests were failed."""
    failed = 0
    for table in (_REQ, _RTT_REQ):
        gone = sa.or_(table.c.claimed_by.is_(None), table.c.claimed_by.not_in(list(live_holders)))
        with engine.connect() as conn:
            running = list(
                conn.execute(sa.select(table.c.id).where(table.c.status == RequestStatus.RUNNING.value, gone)).scalars()
            )
        orphans = [
            i
            for i in running
            if _finish(engine, table, i, RequestStatus.FAILED, detail, now_ms, only=RequestStatus.RUNNING)
        ]
        if orphans and table is _REQ:
            unfinished = _COLD.c.state.not_in([ColdState.DONE.value, ColdState.FAILED.value])
            with engine.begin() as conn:
                conn.execute(
                    _COLD.update()
                    .where(_COLD.c.request_id.in_(orphans), unfinished)
                    .values(state=ColdState.FAILED.value, detail=detail[:500], completed_at_ms=now_ms)
                )
        failed += len(orphans)
    return failed


def endpoint_statuses(engine: Engine) -> dict[int, list[dict]]:
    """endpoint id → the status rows its workers reported (one per vantage)."""
    t = table_of(EndpointStatusRow)
    out: dict[int, list[dict]] = {}
    with engine.connect() as conn:
        for r in conn.execute(sa.select(t).order_by(t.c.vantage)).mappings():
            out.setdefault(r["endpoint_id"], []).append(dict(r))
    return out


# ------------------------------------------------------------------ the worker's own reads and writes

_REQ = table_of(ProbeRequestRow)
_RTT_REQ = table_of(RttRequestRow)
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


def claim_requests(engine: Engine, endpoint_ids: list[int], vantage: str, holder: str, now_ms: int) -> list[dict]:
    """Claim the pending requests for `endpoint_ids` meant for `vantage` (or any vantage), oldest first.

    Each claim is a conditional UPDATE (pending → running), so of two workers exactly one gets a request.
    Returns the claimed rows as dicts."""
    if not endpoint_ids:
        return []
    where = [_REQ.c.endpoint_id.in_(endpoint_ids), sa.or_(_REQ.c.vantage == "", _REQ.c.vantage == vantage)]
    return _claim(engine, _REQ, where, holder, now_ms)


def claim_rtt_requests(engine: Engine, vantage: str, holder: str, now_ms: int) -> list[dict]:
    """Claim the pending rtt_requests of exactly `vantage` (an RTT figure is only true of where it was measured),
    oldest first, each by a conditional UPDATE (pending → running) as in claim_requests. Returns the rows as dicts."""
    return _claim(engine, _RTT_REQ, [_RTT_REQ.c.vantage == vantage], holder, now_ms)


def finish_request(engine: Engine, request_id: int, status: RequestStatus, detail: str | None, now_ms: int) -> None:
    """Record a probe_request's outcome (done or failed) with a one-line detail (cut to 500 characters)."""
    _finish(engine, _REQ, request_id, status, detail, now_ms)


def finish_rtt_request(engine: Engine, request_id: int, status: RequestStatus, detail: str | None, now_ms: int) -> None:
    """Record an rtt_request's outcome (done or failed) with a one-line detail (cut to 500 characters)."""
    _finish(engine, _RTT_REQ, request_id, status, detail, now_ms)


def _get(engine: Engine, table: sa.Table, request_id: int) -> dict | None:
    with engine.connect() as conn:
        row = conn.execute(sa.select(table).where(table.c.id == request_id)).mappings().first()
    return dict(row) if row else None


def _claim(engine: Engine, table: sa.Table, where: list[Any], holder: str, now_ms: int) -> list[dict]:
    """Claim the pending rows of a request table that match `where`, oldest first, one conditional UPDATE each."""
    pending = table.c.status == RequestStatus.PENDING.value
    with engine.connect() as conn:
        rows = conn.execute(sa.select(table).where(pending, *where).order_by(table.c.id)).mappings().all()
    claimed = []
    for r in rows:
        with engine.begin() as conn:
            got = conn.execute(
                table.update()
                .where(table.c.id == r["id"], pending)
                .values(status=RequestStatus.RUNNING.value, claimed_by=holder, claimed_at_ms=now_ms)
            )
        if got.rowcount == 1:
            claimed.append(dict(r))
    return claimed


def _finish(
    engine: Engine,
    table: sa.Table,
    request_id: int,
    status: RequestStatus,
    detail: str | None,
    now_ms: int,
    *,
    only: RequestStatus | None = None,
) -> bool:
    """Set a request row's outcome; with `only`, only while its status is still that. True when a row changed."""
    where = [table.c.id == request_id]
    if only is not None:
        where.append(table.c.status == only.value)
    with engine.begin() as conn:
        res = conn.execute(
            table.update()
            .where(*where)
            .values(status=RequestStatus(status).value, detail=(detail or None) and detail[:500], done_at_ms=now_ms)
        )
    return res.rowcount == 1


def insert_cold_reading(
    engine: Engine, endpoint_id: int, vantage: str, request: dict, idle_s: float, idle_until_ms: int
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
