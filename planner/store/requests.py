"""Requests from the dashboard and the CLI to the worker: `probe_request` and `rtt_request`, and their SQL.

The dashboard never probes an endpoint or measures a server-side RTT itself (the worker writes those rows): it queues
a `probe_request` ("probe now", "cold reading"; create_request) or an `rtt_request` ("measure these RTT targets from
your vantage"; create_rtt_request) and reads it back (get_request / get_rtt_request). The worker of a matching vantage
claims a pending row by a conditional UPDATE (pending → running, so exactly one worker runs it) and records the outcome
(done | failed, finish_request / finish_rtt_request); planner.worker.requests runs them. A request whose claimer holds
no live lease is failed (fail_orphaned_requests), with the cold reading it had started (planner.store.worker).
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Sequence
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import Field, SQLModel

from planner.store.database import table_of
from planner.store.worker import ColdReadingRow, ColdState

__all__ = [
    "ProbeRequestRow",
    "REQUEST_KINDS",
    "RTT_REQUEST_MAX_N",
    "RTT_REQUEST_MAX_TARGETS",
    "RequestKind",
    "RequestStatus",
    "RttRequestRow",
    "abandon_rtt_request",
    "claim_requests",
    "claim_rtt_requests",
    "create_request",
    "create_rtt_request",
    "fail_orphaned_requests",
    "finish_request",
    "finish_rtt_request",
    "get_request",
    "get_rtt_request",
    "rtt_request_targets",
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


#: The stored values of RequestKind.
REQUEST_KINDS: tuple[str, ...] = tuple(k.value for k in RequestKind)

#: Bounds of one rtt_request: targets per request (the catalog has about 90 regions) and samples per target.
RTT_REQUEST_MAX_TARGETS = 500
RTT_REQUEST_MAX_N = 1000


class _RequestProgress(SQLModel):
    """The columns both request tables share: progress (RequestStatus), its one-line detail, and who ran it when."""

    status: str = Field(default="pending", max_length=20)
    detail: str | None = Field(default=None, max_length=500)
    requested_at_ms: int = Field(sa_type=sa.BigInteger)
    claimed_by: str | None = Field(default=None, max_length=200)
    claimed_at_ms: int | None = Field(default=None, sa_type=sa.BigInteger)
    done_at_ms: int | None = Field(default=None, sa_type=sa.BigInteger)


class ProbeRequestRow(_RequestProgress, table=True):
    """A request from the dashboard or CLI to the worker: status pending → running → done | failed."""

    __tablename__ = "probe_request"
    __table_args__ = (sa.Index("ix_probe_request_status_requested", "status", "requested_at_ms"),)

    id: int | None = Field(default=None, primary_key=True)
    endpoint_id: int = Field(foreign_key="endpoint.id", ondelete="CASCADE")
    vantage: str = Field(default="", max_length=120)  # "" = whichever worker probes the endpoint
    kind: str = Field(max_length=20)
    idle_s: float | None = None


class RttRequestRow(_RequestProgress, table=True):
    """A request from the Regions page to the worker of one vantage: measure these RTT targets, n samples each.

    status pending → running → done | failed, as for probe_request; the samples go to rtt_sample (side 'server')."""

    __tablename__ = "rtt_request"
    __table_args__ = (sa.Index("ix_rtt_request_status_requested", "status", "requested_at_ms"),)

    id: int | None = Field(default=None, primary_key=True)
    vantage: str = Field(default="", max_length=120)  # the worker of exactly this vantage measures it
    targets_json: str = Field(sa_type=sa.Text)  # [[region_id, target], …] (see rtt_request_targets)
    n: int  # kept TCP connects per target


_REQ = table_of(ProbeRequestRow)
_RTT_REQ = table_of(RttRequestRow)
_COLD = table_of(ColdReadingRow)


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


def get_request(engine: Engine, request_id: int) -> dict[str, Any] | None:
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


def get_rtt_request(engine: Engine, request_id: int) -> dict[str, Any] | None:
    """The rtt_request row as a dict (status pending | running | done | failed, detail, claimed_at_ms …), or None."""
    return _get(engine, table_of(RttRequestRow), request_id)


def rtt_request_targets(request: dict[str, Any]) -> list[tuple[str, str]]:
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


def claim_requests(
    engine: Engine, endpoint_ids: list[int], vantage: str, holder: str, now_ms: int
) -> list[dict[str, Any]]:
    """Claim the pending requests for `endpoint_ids` meant for `vantage` (or any vantage), oldest first.

    Each claim is a conditional UPDATE (pending → running), so of two workers exactly one gets a request.
    Returns the claimed rows as dicts."""
    if not endpoint_ids:
        return []
    where = [_REQ.c.endpoint_id.in_(endpoint_ids), sa.or_(_REQ.c.vantage == "", _REQ.c.vantage == vantage)]
    return _claim(engine, _REQ, where, holder, now_ms)


def claim_rtt_requests(engine: Engine, vantage: str, holder: str, now_ms: int) -> list[dict[str, Any]]:
    """Claim the pending rtt_requests of exactly `vantage` (an RTT figure is only true of where it was measured),
    oldest first, each by a conditional UPDATE (pending → running) as in claim_requests. Returns the rows as dicts."""
    return _claim(engine, _RTT_REQ, [_RTT_REQ.c.vantage == vantage], holder, now_ms)


def finish_request(engine: Engine, request_id: int, status: RequestStatus, detail: str | None, now_ms: int) -> None:
    """Record a probe_request's outcome (done or failed) with a one-line detail (cut to 500 characters)."""
    _finish(engine, _REQ, request_id, status, detail, now_ms)


def finish_rtt_request(engine: Engine, request_id: int, status: RequestStatus, detail: str | None, now_ms: int) -> None:
    """Record an rtt_request's outcome (done or failed) with a one-line detail (cut to 500 characters)."""
    _finish(engine, _RTT_REQ, request_id, status, detail, now_ms)


def _get(engine: Engine, table: sa.Table, request_id: int) -> dict[str, Any] | None:
    with engine.connect() as conn:
        row = conn.execute(sa.select(table).where(table.c.id == request_id)).mappings().first()
    return dict(row) if row else None


def _claim(engine: Engine, table: sa.Table, where: list[Any], holder: str, now_ms: int) -> list[dict[str, Any]]:
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
