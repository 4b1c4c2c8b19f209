"""The per-vantage lease on SQLite and PostgreSQL (a worker renews it on its own clock), and the worker tables'
model/migration agreement."""

from __future__ import annotations

import threading

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError

from planner.store import database, open_store
from planner.store import leases as lease
from planner.store.requests import ProbeRequestRow
from planner.store.worker import ColdReadingRow, EndpointStatusRow, ProbeRollupRow, WorkerLeaseRow
from tests.support.fake_clock import FakeClock
from tests.support.worker_driver import HANG_GUARD_S, drive, housekeeping_passes, until

T = 1_796_000_000_000


def test_one_holder_per_vantage_until_it_expires_or_is_released(engine):
    assert lease.acquire(engine, "office", "a", T, ttl_s=30)
    assert not lease.acquire(engine, "office", "b", T + 1000, ttl_s=30)  # a is alive
    assert lease.acquire(engine, "cloud", "b", T + 1000, ttl_s=30)  # another vantage runs beside it
    assert lease.acquire(engine, "office", "a", T + 20_000, ttl_s=30)  # a renews
    assert not lease.acquire(engine, "office", "b", T + 45_000, ttl_s=30)  # renewed: still a's
    assert lease.acquire(engine, "office", "b", T + 50_001, ttl_s=30)  # a died: expired, b takes over
    assert not lease.acquire(engine, "office", "a", T + 50_002, ttl_s=30)  # a came back: b holds it now
    lease.release(engine, "office", "b")
    assert lease.acquire(engine, "office", "a", T + 50_003, ttl_s=30)  # released: free at once
    rows = {r["vantage"]: r for r in lease.current(engine)}
    assert rows["office"]["holder"] == "a" and rows["office"]["acquired_at_ms"] == T + 50_003
    assert rows["cloud"]["holder"] == "b"


def test_a_standby_takes_over_from_a_holder_frozen_inside_a_renewal(pg_store_url, monkeypatch):
    """A holder frozen mid-transaction (a paused VM, a machine cut off) keeps its row lock; PostgreSQL ends its session
    after the idle-in-transaction timeout (1 s here), so a standby gets the lease then. Without that timeout it would
    wait until TCP gives up, hours later: the join below is only a guard against that hang."""
    monkeypatch.setattr(database, "PG_IDLE_IN_TRANSACTION_TIMEOUT_S", 1.0)
    eng = open_store(pg_store_url)
    assert lease.acquire(eng, "", "a:1:x", T, ttl_s=1)
    frozen = eng.connect()
    try:
        frozen.begin()
        frozen.execute(sa.text("UPDATE worker_lease SET renewed_at_ms = :t WHERE vantage = ''"), {"t": T + 300})
        got: list[bool] = []
        standby = threading.Thread(target=lambda: got.append(lease.acquire(eng, "", "b:2:y", T + 5_000, ttl_s=1)))
        standby.start()
        standby.join(HANG_GUARD_S)
        assert got == [True], "the standby is still blocked behind the frozen holder's row lock"
        # The server ended the frozen session: its update never landed.
        with pytest.raises(DBAPIError, match="idle-in-transaction timeout"):
            frozen.execute(sa.text("SELECT 1"))
    finally:
        frozen.invalidate()
        frozen.close()
        eng.dispose()
    assert lease.current(open_store(pg_store_url))[0]["holder"] == "b:2:y"


def test_a_worker_renews_its_lease_every_third_of_the_ttl_on_its_clock(engine):
    """Housekeeping counts its periods on the worker's clock: moved to a third of the TTL, the worker renews. (The
    TTL is long, so a worker that counted real seconds would not renew within the hang guard.)"""
    clock, ttl_ms = FakeClock(), 3_000_000
    start = clock.ms

    def held() -> dict:
        return next(r for r in lease.current(engine) if r["vantage"] == "")

    async def body(w):
        first = await until(held, "lease row", in_thread=True)
        clock.advance(ttl_ms // 3 - 1)
        await housekeeping_passes(w)
        early = held()
        clock.advance(1)
        renewed = await until(lambda: (r := held())["renewed_at_ms"] > start and r, "renewal", in_thread=True)
        return first, early, renewed

    first, early, renewed = drive(engine, body, clock=clock, lease_ttl_s=ttl_ms / 1000)
    assert first["renewed_at_ms"] == early["renewed_at_ms"] == start and first["expires_at_ms"] == start + ttl_ms
    assert renewed["renewed_at_ms"] == start + ttl_ms // 3 and renewed["holder"] == first["holder"]
    assert renewed["expires_at_ms"] == start + ttl_ms // 3 + ttl_ms


def test_worker_tables_match_their_migration(engine):
    insp = sa.inspect(engine)
    for model in (WorkerLeaseRow, EndpointStatusRow, ProbeRequestRow, ColdReadingRow, ProbeRollupRow):
        table = model.__table__
        cols = {c["name"]: c for c in insp.get_columns(table.name)}
        assert set(cols) == {c.name for c in table.columns}, table.name
        for c in table.columns:
            assert cols[c.name]["nullable"] == c.nullable, (table.name, c.name)
            if isinstance(c.type, sa.BigInteger):
                assert "BIG" in str(cols[c.name]["type"]).upper(), (table.name, c.name)
        pk = insp.get_pk_constraint(table.name)["constrained_columns"]
        assert sorted(pk) == sorted(c.name for c in table.primary_key.columns), table.name
        db_indexes = {i["name"] for i in insp.get_indexes(table.name)}
        assert {i.name for i in table.indexes} <= db_indexes, table.name
