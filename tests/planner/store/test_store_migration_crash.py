"""`kill -9` during a schema upgrade (issue 15 item 6): the database always opens afterwards, at the old
revision or the new one, with its rows, and the next start finishes the upgrade.

The upgrade runs in a child that SIGKILLs itself before its Nth SQL statement (tests/support/migration_kill.py);
bench/bench_migration_kill.py does 20 such kills at random points."""

from __future__ import annotations

import random
import shutil

import pytest

from planner.store import open_store
from planner.store.migrate import current_revision, head_revision
from tests.support.migration_kill import run_upgrade, seed, state_after, statement_count


def _copies(db_url: str, tmp_path, pg_server, base_rev: str):
    """A database at base_rev holding one row, made once, and a function returning a fresh copy of it per call."""
    n = iter(range(1_000_000))
    if db_url.startswith("sqlite"):
        base = tmp_path / "base.db"
        seed(f"sqlite:///{base}", base_rev)

        def copy() -> str:
            path = tmp_path / f"kill{next(n)}.db"
            shutil.copyfile(base, path)
            return f"sqlite:///{path}"

        return copy
    base_name = db_url.rsplit("/", 1)[1]
    seed(db_url, base_rev)

    def copy_pg() -> str:
        return pg_server.fresh_database(f"{base_name}_k{next(n)}", template=base_name)

    return copy_pg


@pytest.mark.parametrize("base_rev", ["0004", "0001"])
def test_killed_upgrade_leaves_the_old_or_the_new_revision(db_url, tmp_path, pg_server_or_none, base_rev):
    fresh = _copies(db_url, tmp_path, pg_server_or_none, base_rev)
    counted = fresh()
    total = statement_count(counted)
    assert total >= 3
    points = (
        list(range(1, total + 1)) if base_rev == "0004" else sorted(random.Random(7).sample(range(1, total + 1), 3))
    )
    if not db_url.startswith("sqlite"):
        points = points[:3]
    for k in points:
        url = fresh()
        rc, out = run_upgrade(url, k)
        assert rc == -9, out  # it really was killed part-way
        rev, kept = state_after(url)  # opens: no "table … already exists"
        assert rev in (base_rev, head_revision()) and kept == 1, (k, rev)
        eng = open_store(url)  # the next start completes the upgrade
        assert current_revision(eng) == head_revision()
        eng.dispose()
        _drop(pg_server_or_none, url)
    _drop(pg_server_or_none, counted)


def _drop(pg_server, url: str) -> None:
    if pg_server is not None:  # PostgreSQL: the copies go as they are done with (SQLite's are in tmp_path)
        pg_server.drop_database(url.rsplit("/", 1)[1])


@pytest.fixture
def pg_server_or_none(request, db_url):
    return None if db_url.startswith("sqlite") else request.getfixturevalue("pg_server")
