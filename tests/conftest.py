"""Shared fixtures: real temporary SQLite files and a real local PostgreSQL server."""

from __future__ import annotations

import itertools
import os

import pytest

from planner.store import open_store
from tests.support.pg import PostgresServer

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


@pytest.fixture
def sqlite_url(tmp_path) -> str:
    """URL of a fresh SQLite file in the test's temp dir."""
    return f"sqlite:///{tmp_path / 'planner.db'}"


@pytest.fixture
def pg_url(pg_server) -> str:
    """URL of a fresh, empty database on the test PostgreSQL server."""
    return pg_server.fresh_database(f"t{os.getpid()}_{next(_counter)}")


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request, tmp_path) -> str:
    """Parametrised: each test using it runs on a temp SQLite file AND on the real local PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'planner.db'}"
    return request.getfixturevalue("pg_url")


@pytest.fixture
def engine(db_url):
    """A migrated store engine on db_url (SQLite and PostgreSQL)."""
    eng = open_store(db_url)
    yield eng
    eng.dispose()


@pytest.fixture
def sqlite_engine(sqlite_url):
    """A migrated store engine on a temp SQLite file only."""
    eng = open_store(sqlite_url)
    yield eng
    eng.dispose()


def pytest_collection_modifyitems(config, items):
    """Run the real-browser tests last.

    Playwright's sync API keeps an asyncio loop running in the main thread for the whole
    session once a browser is up; tests that call asyncio.run() must come before it.
    """
    items.sort(key=lambda item: "/tests/e2e/" in str(item.fspath))
