"""`kill -9` during a schema upgrade (issue 15 item 6): the database always opens afterwards, at the old
revision or the new one, with its rows, and the next start finishes the upgrade.

The upgrade runs in a child that SIGKILLs itself before its Nth SQL statement (tests/support/migration_kill.py);
bench/bench_migration_kill.py does 20 such kills at random points."""

from __future__ import annotations

import random

import pytest

from planner.store import open_store
from planner.store.migrate import current_revision, head_revision
from tests.support.migration_kill import run_upgrade, seed, state_after, statement_count


def _fresh(db_url: str, tmp_path, n: int, base_rev: str) -> str:
    """A new database at base_rev (SQLite: a new file; PostgreSQL: the fixture's database, reset by seeding)."""
    if db_url.startswith("sqlite"):
        db_url = f"sqlite:///{tmp_path}/kill{n}.db"
    seed(db_url, base_rev)
    return db_url


@pytest.mark.parametrize("base_rev", ["0004", "0001"])
def test_killed_upgrade_leaves_the_old_or_the_new_revision(db_url, tmp_path, pg_server_or_none, base_rev):
    if not db_url.startswith("sqlite"):
        db_url = pg_server_or_none.fresh_database(f"mk_count_{base_rev}")
    total = statement_count(_fresh(db_url, tmp_path, 0, base_rev))
    assert total >= 3
    points = (
        list(range(1, total + 1)) if base_rev == "0004" else sorted(random.Random(7).sample(range(1, total + 1), 3))
    )
    if not db_url.startswith("sqlite"):
        points = points[:3]
    for i, k in enumerate(points, start=1):
        url = db_url if db_url.startswith("sqlite") else pg_server_or_none.fresh_database(f"mk_{base_rev}_{k}")
        url = _fresh(url, tmp_path, i, base_rev)
        rc, out = run_upgrade(url, k)
        assert rc == -9, out  # it really was killed part-way
        rev, kept = state_after(url)  # opens: no "table … already exists"
        assert rev in (base_rev, head_revision()) and kept == 1, (k, rev)
        eng = open_store(url)  # the next start completes the upgrade
        assert current_revision(eng) == head_revision()
        eng.dispose()


@pytest.fixture
def pg_server_or_none(request, db_url):
    return None if db_url.startswith("sqlite") else request.getfixturevalue("pg_server")
