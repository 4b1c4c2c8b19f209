"""RTT tables: custom/scheduled RTT targets and raw RTT samples, with their queries.

Raw samples are the source of truth: one row per measured round
trip or per failed attempt, UTC epoch ms, the vantage that measured it and the
side ('server' or 'browser'). Percentiles are computed at query time, nearest
rank via planner.percentiles, always with n; failures are rows with an error class
and never enter a percentile.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Field, Session, SQLModel, col, select

from planner.errors import PlannerError
from planner.lazy import lazy_module
from planner.percentiles import percentile
from planner.probes.rtt_record import SampleRecord
from planner.regions.catalog import RttMethod, check_rtt_interval_s
from planner.store.database import session, table_of
from planner.store.text_fields import text_problem

if TYPE_CHECKING:
    import pandas as pd
else:  # imported on first use: the worker, which stores samples and never reads them as frames, starts without it
    pd = lazy_module("pandas")

__all__ = [
    "METHODS",
    "RTT_METHOD_BY_SIDE",
    "SIDES",
    "RttSampleRow",
    "RttTargetRow",
    "SampleRecord",
    "TargetExists",
    "TargetNotFound",
    "add_target",
    "get_target",
    "insert_rtt_samples",
    "list_targets",
    "load_samples",
    "remove_target",
    "rtt_summary",
    "scheduled_rtt_targets",
    "set_target_enabled",
]

SIDES = ("server", "browser")
# dns is stored with the server side's run so a row shows where the time went; it is never an RTT figure.
METHODS: tuple[str, ...] = tuple(m.value for m in RttMethod)
# Which method is "the RTT" of each side, in order of preference: a TCP connect costs exactly one
# round trip (SYN → SYN/ACK); in a browser, Resource Timing's responseStart − requestStart on a warm
# connection is one request round trip, while performance.now() around fetch adds 8–15 ms of browser
# overhead, so it is only the labelled fallback.
RTT_METHOD_BY_SIDE: dict[str, tuple[RttMethod, ...]] = {
    "server": (RttMethod.TCP_CONNECT,),
    "browser": (RttMethod.RESOURCE_TIMING, RttMethod.FETCH_PERFORMANCE_NOW),
}


class RttTargetRow(SQLModel, table=True):
    """A region or custom host the user wants to measure (and, when enabled, the worker schedules).

    `region_id` is the catalog id (assets/regions.toml) or a custom id; `target` is the URL
    or host:port that is probed.
    """

    __tablename__ = "rtt_target"

    id: int | None = Field(default=None, primary_key=True)
    region_id: str = Field(max_length=120, unique=True, index=True)
    name: str = Field(default="", max_length=200)
    provider: str = Field(default="custom", max_length=120)
    target: str = Field(max_length=500)
    city: str = Field(default="", max_length=120)
    lat: float | None = None
    lon: float | None = None
    anycast: bool = False
    interval_s: float = 300.0
    enabled: bool = False  # scheduled by the worker
    vantage: str = Field(default="", max_length=120)  # "" = every worker measures it
    created_at_ms: int = Field(sa_type=sa.BigInteger)
    updated_at_ms: int = Field(sa_type=sa.BigInteger)


class RttSampleRow(SQLModel, table=True):
    """One RTT measurement or one failed attempt (rtt_ms NULL, error_class set)."""

    __tablename__ = "rtt_sample"
    __table_args__ = (
        sa.Index("ix_rtt_sample_region_vantage_measured", "region_id", "vantage", "measured_at_ms"),
        sa.Index("ix_rtt_sample_measured", "measured_at_ms"),
    )

    id: int | None = Field(default=None, primary_key=True)
    region_id: str = Field(max_length=120)
    target: str = Field(max_length=500)
    vantage: str = Field(default="", max_length=120)
    side: str = Field(max_length=10)  # server | browser
    method: str = Field(max_length=30)  # an RttMethod (see METHODS)
    run_id: str = Field(default="", max_length=40)  # samples of one probe run share it
    rtt_ms: float | None = None
    error_class: str | None = Field(default=None, max_length=40)
    error_detail: str | None = Field(default=None, max_length=500)
    remote_ip: str | None = Field(default=None, max_length=64)
    proxy: str | None = Field(default=None, max_length=200)  # set when the figure is to a proxy
    measured_at_ms: int = Field(sa_type=sa.BigInteger)


class TargetExists(PlannerError, ValueError):
    """An RTT target with this region id already exists."""


class TargetNotFound(PlannerError, KeyError):
    """No RTT target has this region id."""


def _now_ms() -> int:
    return int(time.time() * 1000)


def add_target(
    engine: Engine,
    region_id: str,
    target: str,
    *,
    name: str = "",
    provider: str = "custom",
    city: str = "",
    lat: float | None = None,
    lon: float | None = None,
    anycast: bool = False,
    interval_s: float = 300.0,
    enabled: bool = False,
    vantage: str = "",
) -> RttTargetRow:
    """Store a target to measure; `enabled` asks the worker to measure it every `interval_s` seconds.

    Validation of `target` (URL or host:port) belongs to planner.regions.catalog.parse_target; this
    function checks only what the table needs. Raises TargetExists when `region_id` is taken,
    ValueError for an empty id/target or an interval below 10 s.
    """
    region_id, target = (region_id or "").strip(), (target or "").strip()
    if not region_id:
        raise ValueError("an RTT target needs an id (e.g. 'acme-eu-west')")
    if not target:
        raise ValueError(f"RTT target {region_id!r} needs a URL or host:port")
    interval_s = check_rtt_interval_s(region_id, interval_s)
    for field, value in (
        ("region_id", region_id),
        ("name", name),
        ("provider", provider),
        ("target", target),
        ("city", city),
        ("vantage", vantage),
    ):
        problem = text_problem(table_of(RttTargetRow), field, value or "")
        if problem:
            raise ValueError(f"RTT target {region_id[:40]!r}: {problem}")
    now = _now_ms()
    row = RttTargetRow(
        region_id=region_id,
        name=name or region_id,
        provider=provider,
        target=target,
        city=city,
        lat=lat,
        lon=lon,
        anycast=anycast,
        interval_s=float(interval_s),
        enabled=enabled,
        vantage=vantage,
        created_at_ms=now,
        updated_at_ms=now,
    )
    try:
        with session(engine) as s:
            if s.exec(select(RttTargetRow).where(RttTargetRow.region_id == region_id)).first() is not None:
                raise TargetExists(
                    f"an RTT target with id {region_id!r} already exists; remove it first or pick another id"
                )
            s.add(row)
            s.flush()
            s.refresh(row)
    except IntegrityError:
        raise TargetExists(f"an RTT target with id {region_id!r} already exists") from None
    return row


def list_targets(engine: Engine) -> list[RttTargetRow]:
    """Every stored RTT target, by region id."""
    with session(engine) as s:
        return list(s.exec(select(RttTargetRow).order_by(RttTargetRow.region_id)).all())


def _target_row(s: Session, region_id: str) -> RttTargetRow:
    """The row of the target stored as `region_id`, in session `s`; raises TargetNotFound."""
    row = s.exec(select(RttTargetRow).where(RttTargetRow.region_id == region_id)).first()
    if row is None:
        raise TargetNotFound(f"no RTT target with id {region_id!r}")
    return row


def get_target(engine: Engine, region_id: str) -> RttTargetRow:
    """The target stored as `region_id`; raises TargetNotFound."""
    with session(engine) as s:
        return _target_row(s, region_id)


def remove_target(engine: Engine, region_id: str) -> None:
    """Delete the target `region_id` (its samples stay: they are history). Raises TargetNotFound."""
    with session(engine) as s:
        s.delete(_target_row(s, region_id))


def set_target_enabled(engine: Engine, region_id: str, enabled: bool, interval_s: float | None = None) -> RttTargetRow:
    """Turn scheduling of `region_id` on or off (and optionally change its interval). Raises TargetNotFound."""
    if interval_s is not None:
        interval_s = check_rtt_interval_s(region_id, interval_s)
    with session(engine) as s:
        row = _target_row(s, region_id)
        row.enabled = enabled
        if interval_s is not None:
            row.interval_s = float(interval_s)
        row.updated_at_ms = _now_ms()
        s.add(row)
    return row


def scheduled_rtt_targets(engine: Engine, vantage: str | None = None) -> list[RttTargetRow]:
    """Enabled targets the worker should measure (rows with .id, .region_id, .target, .interval_s).

    With `vantage`, targets pinned to another vantage are left out (an empty pin means any vantage).
    """
    stmt = select(RttTargetRow).where(RttTargetRow.enabled == sa.true()).order_by(col(RttTargetRow.id))
    if vantage is not None:
        stmt = stmt.where(sa.or_(col(RttTargetRow.vantage) == "", col(RttTargetRow.vantage) == vantage))
    with session(engine) as s:
        return list(s.exec(stmt).all())


def insert_rtt_samples(engine: Engine, samples: Iterable[SampleRecord]) -> int:
    """Store samples in one transaction; returns how many. Raises ValueError on an unknown side or method."""
    rows = []
    for r in samples:
        if r.side not in SIDES:
            raise ValueError(f"RTT sample side must be one of {SIDES}, got {r.side!r}")
        if r.method not in METHODS:
            raise ValueError(f"RTT sample method must be one of {METHODS}, got {r.method!r}")
        rows.append(
            RttSampleRow(
                region_id=r.region_id[:120],
                target=r.target[:500],
                vantage=(r.vantage or "")[:120],
                side=r.side,
                method=r.method,
                run_id=r.run_id[:40],
                rtt_ms=None if r.rtt_ms is None else float(r.rtt_ms),
                error_class=r.error_class,
                error_detail=(r.error_detail or None) and r.error_detail[:500],
                remote_ip=r.remote_ip,
                proxy=r.proxy,
                measured_at_ms=int(r.measured_at_ms),
            )
        )
    if rows:
        with session(engine) as s:
            s.add_all(rows)
    return len(rows)


_SAMPLE_COLUMNS = [c.name for c in table_of(RttSampleRow).columns]


def load_samples(
    engine: Engine,
    *,
    region_ids: Sequence[str] | None = None,
    vantage: str | None = None,
    side: str | None = None,
    since_ms: int | None = None,
    limit: int = 200_000,
) -> pd.DataFrame:
    """Raw samples (one row per sample, columns as in rtt_sample), oldest first, newest `limit` kept."""
    t = table_of(RttSampleRow)
    stmt = sa.select(t)
    if region_ids is not None:
        stmt = stmt.where(t.c.region_id.in_(list(region_ids)))
    if vantage is not None:
        stmt = stmt.where(t.c.vantage == vantage)
    if side is not None:
        stmt = stmt.where(t.c.side == side)
    if since_ms is not None:
        stmt = stmt.where(t.c.measured_at_ms >= since_ms)
    stmt = stmt.order_by(t.c.measured_at_ms.desc(), t.c.id.desc()).limit(limit)
    with engine.connect() as conn:
        rows = conn.execute(stmt).mappings().all()
    df = pd.DataFrame([dict(r) for r in rows], columns=_SAMPLE_COLUMNS)
    return df.iloc[::-1].reset_index(drop=True)


SUMMARY_COLUMNS = [
    "region_id",
    "vantage",
    "side",
    "method",
    "median_ms",
    "min_ms",
    "p90_ms",
    "n",
    "n_errors",
    "last_error_class",
    "last_error_detail",
    "last_measured_at_ms",
    "proxy",
]


def rtt_summary(engine: Engine, vantage: str | None = None, since_ms: int | None = None) -> pd.DataFrame:
    """One row per (region_id, vantage, side): the RTT figure from that vantage.

    Columns: region_id, vantage, side, method (tcp-connect for the server side; resource-timing,
    else the labelled fetch-performance-now fallback, for the browser), median_ms, min_ms, p90_ms
    (nearest rank, planner.percentiles; None when n = 0), n, n_errors, last_error_class/last_error_detail
    (of the newest failure, if the newest outcome failed), last_measured_at_ms, proxy (set when the
    figures are to a proxy). Rows are sorted by median_ms, failures last.
    """
    df = load_samples(engine, vantage=vantage, since_ms=since_ms)
    out: list[dict[str, Any]] = []
    if not df.empty:
        for (region_id, vant, side), g in df.groupby(["region_id", "vantage", "side"], sort=True):
            prefs = RTT_METHOD_BY_SIDE.get(str(side), ())
            ok = g[g["rtt_ms"].notna() & g["error_class"].isna()]
            method = next((m for m in prefs if (ok["method"] == m).any()), prefs[0] if prefs else "")
            values = ok.loc[ok["method"] == method, "rtt_ms"].astype(float).tolist()
            errors = g[g["error_class"].notna()]
            newest = g.iloc[-1]
            failed_last = newest["error_class"] is not None and not pd.isna(newest["error_class"])
            p50, p90 = percentile(values, 0.5), percentile(values, 0.9)
            proxies = g["proxy"].dropna()
            out.append(
                {
                    "region_id": region_id,
                    "vantage": vant,
                    "side": side,
                    "method": method,
                    "median_ms": p50.value,
                    "min_ms": min(values) if values else None,
                    "p90_ms": p90.value,
                    "n": len(values),
                    "n_errors": len(errors),
                    "last_error_class": newest["error_class"] if failed_last else None,
                    "last_error_detail": newest["error_detail"] if failed_last else None,
                    "last_measured_at_ms": int(g["measured_at_ms"].max()),
                    "proxy": proxies.iloc[-1] if len(proxies) else None,
                }
            )
    res = pd.DataFrame(out, columns=SUMMARY_COLUMNS)
    for name in ("last_error_class", "last_error_detail", "proxy"):  # missing text is None, not NaN
        res[name] = pd.Series([None if pd.isna(v) else v for v in res[name]], index=res.index, dtype=object)
    if not res.empty:
        res = res.sort_values(["median_ms", "region_id"], na_position="last", kind="stable").reset_index(drop=True)
    return res
