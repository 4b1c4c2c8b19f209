"""Shared fixtures: real temporary SQLite files and a real local PostgreSQL server.

Empty databases (`sqlite_url`, `pg_url`, `db_url`) are for tests of opening and migrating; everything else starts
from a migrated copy (`store_url`, `sqlite_store_url`, and the `engine` / `sqlite_engine` opened on them), made from
a template migrated once per test process (tests/support/store_template.py, PostgresServer.make_template).
PostgreSQL databases are dropped after their test.
"""

from __future__ import annotations

import itertools
import os

import pytest

from planner.store import open_store
from tests.support.pg import PostgresServer
from tests.support.store_template import migrated_sqlite

_counter = itertools.count()


@pytest.fixture(scope="session")
def pg_server():
    """A private PostgreSQL server for the whole run (see tests/support/pg.py)."""
    server = PostgresServer()
    try:
        server.start()
    except (RuntimeError, OSError) as exc:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip(f"PostgreSQL not available: {exc}")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def pg_template(pg_server) -> str:
    """The name of a database on the test server migrated to the newest revision, for tests to copy."""

    def migrate(url: str) -> None:
        open_store(url).dispose()

    return pg_server.make_template(f"template_{os.getpid()}", migrate)


def _pg_database(pg_server, template: str = "template0"):
    name = f"t{os.getpid()}_{next(_counter)}"
    url = pg_server.fresh_database(name, template=template)
    yield url
    pg_server.drop_database(name)


@pytest.fixture
def sqlite_url(tmp_path) -> str:
    """URL of a fresh, empty SQLite file in the test's temp dir."""
    return f"sqlite:///{tmp_path / 'planner.db'}"


@pytest.fixture
def pg_url(pg_server):
    """URL of a fresh, empty database on the test PostgreSQL server (dropped after the test)."""
    yield from _pg_database(pg_server)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request, tmp_path) -> str:
    """Parametrised: an empty database, a temp SQLite file AND one on the real local PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'planner.db'}"
    return request.getfixturevalue("pg_url")


@pytest.fixture
def sqlite_store_url(tmp_path) -> str:
    """URL of a migrated SQLite store in the test's temp dir."""
    return migrated_sqlite(tmp_path / "planner.db")


@pytest.fixture
def pg_store_url(pg_server, pg_template):
    """URL of a migrated database on the test PostgreSQL server (dropped after the test)."""
    yield from _pg_database(pg_server, pg_template)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_url(request, tmp_path) -> str:
    """Parametrised: a migrated store on a temp SQLite file AND on the real local PostgreSQL."""
    if request.param == "sqlite":
        return migrated_sqlite(tmp_path / "planner.db")
    return request.getfixturevalue("pg_store_url")


@pytest.fixture
def engine(store_url):
    """A migrated store engine on store_url (SQLite and PostgreSQL)."""
    eng = open_store(store_url)
    yield eng
    eng.dispose()


@pytest.fixture
def sqlite_engine(sqlite_store_url):
    """A migrated store engine on a temp SQLite file only."""
    eng = open_store(sqlite_store_url)
    yield eng
    eng.dispose()


def _start_order(item) -> tuple[bool, bool]:
    """Browser tests first, those on the shared Streamlit server (the longest group) before the rest."""
    return "/tests/e2e/" not in str(item.fspath), "app_server" not in getattr(item, "fixturenames", ())


@pytest.hookimpl(trylast=True)  # after pytest-xdist's own (which tags grouped tests) and tests/e2e/conftest.py's
def pytest_collection_modifyitems(config, items):
    """Run the real-browser tests first, and make sure pytest-xdist honours xdist_group.

    Under pytest-xdist work goes out in this order (--no-loadscope-reorder in pyproject.toml): the
    browser modules are the longest units (each a Streamlit server, Chromium, a journey), so they
    start at once, and the many short tests fill the workers around them. (Playwright lives for one
    module, tests/e2e/conftest.py, so the tests a worker runs after a browser module can still call
    asyncio.run().)

    Under --dist loadgroup the run stops when the worker did not tag grouped tests: a pytest
    release once made xdist ignore every xdist_group mark silently (pytest-dev/pytest-xdist#1386),
    and then a module's shared server or seeded store would be built on every worker.
    """
    items.sort(key=_start_order)
    if not getattr(config.option, "loadgroup", False) or not hasattr(config, "workerinput"):
        return
    for item in items:
        if any(item.iter_markers("xdist_group")) and "@" not in item.nodeid.rsplit("]", 1)[-1]:
            raise pytest.UsageError(f"pytest-xdist ignored the xdist_group mark of {item.nodeid}: see pyproject.toml")
