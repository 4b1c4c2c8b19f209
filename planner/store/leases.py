"""The per-vantage lease: at most one worker probes for a vantage at a time.

One row per vantage in `worker_lease`. A worker takes the lease when the row is
absent, already its own, or expired, in one conditional UPDATE (atomic on SQLite
and PostgreSQL alike), and renews it well before it expires (every ttl/3). If
the holder dies (`kill -9`, a lost machine) nobody renews, the lease expires
after `ttl_s` and a standby worker of the same vantage takes over — except that
a lease whose holder ran on this host under a pid that no longer exists (this
worker's own predecessor, killed) is taken at once rather than after the TTL.
Workers with different vantages hold different rows and run side by side.

Clock: expiry compares epoch ms written by the workers themselves, so workers
of one vantage on different machines need clocks within a fraction of the TTL
(NTP); the default TTL of 30 s leaves ample room.
"""

from __future__ import annotations

import os
import socket
import uuid
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from planner.pids import pid_alive
from planner.store.database import table_of
from planner.store.worker import WorkerLeaseRow

__all__ = ["DEFAULT_LEASE_TTL_S", "acquire", "current", "holder_id", "holder_is_dead", "live_leases", "release"]

DEFAULT_LEASE_TTL_S = 30.0

_T = table_of(WorkerLeaseRow)


def holder_id() -> str:
    """A unique holder name: host:pid:random (readable in the Endpoints page)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def acquire(engine: Engine, vantage: str, holder: str, now_ms: int, ttl_s: float = DEFAULT_LEASE_TTL_S) -> bool:
    """Take or renew the lease of `vantage` for `holder` until now_ms + ttl; True when held.

    Returns False while another live holder has it. Database errors propagate
    (sqlalchemy.exc.OperationalError for a locked or unreachable database).
    """
    expires = now_ms + int(ttl_s * 1000)
    with engine.begin() as conn:
        res = conn.execute(
            _T.update()
            .where(_T.c.vantage == vantage)
            .where(sa.or_(_T.c.holder == holder, _T.c.expires_at_ms < now_ms))
            .values(
                holder=holder,
                expires_at_ms=expires,
                renewed_at_ms=now_ms,
                acquired_at_ms=sa.case((_T.c.holder == holder, _T.c.acquired_at_ms), else_=now_ms),
            )
        )
        if res.rowcount == 1:
            return True
        row = conn.execute(sa.select(_T.c.holder).where(_T.c.vantage == vantage)).first()
        if row is not None and holder_is_dead(row[0]):
            # A worker of this host that died (kill -9, OOM): nobody will renew it; do not wait out its TTL.
            res = conn.execute(
                _T.update()
                .where(_T.c.vantage == vantage, _T.c.holder == row[0])
                .values(holder=holder, expires_at_ms=expires, renewed_at_ms=now_ms, acquired_at_ms=now_ms)
            )
            return res.rowcount == 1
    if row is not None:
        return False
    try:
        with engine.begin() as conn:
            conn.execute(
                _T.insert().values(
                    vantage=vantage, holder=holder, acquired_at_ms=now_ms, renewed_at_ms=now_ms, expires_at_ms=expires
                )
            )
        return True
    except IntegrityError:  # another worker inserted it first
        return False


def holder_is_dead(holder: str) -> bool:
    """True when `holder` (host:pid:random) names this host and a pid that is not running."""
    host, _, rest = holder.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    return pid != os.getpid() and not pid_alive(pid)


def release(engine: Engine, vantage: str, holder: str) -> None:
    """Give the lease up (clean shutdown) so a standby can take over at once; no-op if not held."""
    with engine.begin() as conn:
        conn.execute(_T.update().where(_T.c.vantage == vantage).where(_T.c.holder == holder).values(expires_at_ms=0))


def current(engine: Engine) -> list[dict[str, Any]]:
    """Every lease row as a dict (vantage, holder, acquired_at_ms, renewed_at_ms, expires_at_ms), by vantage."""
    with engine.connect() as conn:
        rows = conn.execute(sa.select(_T).order_by(_T.c.vantage)).mappings().all()
    return [dict(r) for r in rows]


def live_leases(leases: list[dict[str, Any]], now_ms: int, vantage: str | None = None) -> list[dict[str, Any]]:
    """The rows of `leases` (from current()) that have not expired at now_ms; only `vantage`'s when given.

    A released lease has expires_at_ms 0, so it is never live.
    """
    return [r for r in leases if r["expires_at_ms"] > now_ms and (vantage is None or r["vantage"] == vantage)]
