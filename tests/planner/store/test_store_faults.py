"""planner.store.faults words real driver failures as one sentence: locked, full, read-only, unreachable, refused."""

from __future__ import annotations

import socket
import sqlite3

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError

from planner.store import StoreError, open_store
from planner.store.faults import describe, is_store_failure


def _write(eng, sql: str):
    def run():
        with eng.begin() as conn:
            conn.execute(sa.text(sql))

    return run


def _failure(fn) -> BaseException:
    try:
        fn()
    except Exception as exc:  # noqa: BLE001
        assert is_store_failure(exc), repr(exc)
        return exc
    raise AssertionError("expected a store failure")


def test_locked_sqlite(tmp_path):
    db = tmp_path / "p.db"
    sqlite3.connect(db).execute("CREATE TABLE t (x)").connection.commit()
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    eng = sa.create_engine(f"sqlite:///{db}", connect_args={"timeout": 0.1})
    try:
        exc = _failure(_write(eng, "INSERT INTO t VALUES (1)"))
    finally:
        holder.execute("ROLLBACK")
        eng.dispose()
    text = describe(exc)
    assert text.startswith("the database is locked") and text.endswith("your changes were not saved")
    assert "INSERT" not in text and "\n" not in text


def test_full_sqlite(tmp_path):
    db = tmp_path / "p.db"
    eng = sa.create_engine(f"sqlite:///{db}")
    with eng.begin() as conn:
        conn.execute(sa.text("CREATE TABLE t (x TEXT)"))

    def fill():
        with eng.begin() as conn:
            pages = conn.execute(sa.text("PRAGMA page_count")).scalar()
            conn.execute(sa.text(f"PRAGMA max_page_count = {pages}"))  # the disk is now full for this connection
            conn.execute(sa.text("INSERT INTO t VALUES (:x)"), [{"x": "y" * 4000}] * 50)

    exc = _failure(fill)
    eng.dispose()
    assert describe(exc).startswith("the database's disk is full")


def test_read_only_sqlite(tmp_path):
    db = tmp_path / "p.db"
    open_store(f"sqlite:///{db}").dispose()
    eng = sa.create_engine(f"sqlite:///file:{db}?mode=ro&uri=true")
    exc = _failure(_write(eng, "DELETE FROM endpoint"))
    eng.dispose()
    assert describe(exc).startswith("the database is read-only")


def test_unreachable_postgres():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    exc = _failure(lambda: open_store(f"postgresql+psycopg://u:pw@127.0.0.1:{port}/x"))
    assert isinstance(exc, StoreError) and describe(exc).startswith("the database is not available")
    eng = sa.create_engine(f"postgresql+psycopg://u:pw@127.0.0.1:{port}/x", connect_args={"connect_timeout": 2})
    exc = _failure(lambda: eng.connect())
    assert describe(exc).startswith("the database is unreachable")


@pytest.mark.postgres
def test_postgres_refuses_a_value(pg_store_url):
    eng = open_store(pg_store_url)
    with pytest.raises(SQLAlchemyError) as info:
        with eng.begin() as conn:  # below the validation: what an older writer could send
            conn.execute(
                sa.text(
                    "INSERT INTO endpoint (name, provider, region, protocol, base_url, model, api_key_env, "
                    "interval_s, timeout_s, prompt_tokens, max_tokens, connection_policy, enabled, vantage, "
                    "simulated, created_at_ms, updated_at_ms) VALUES (:n, '', '', 'openai-chat', 'http://x', "
                    ":m, '', 60, 30, 1000, 64, 'fresh', true, '', false, 0, 0)"
                ),
                {"n": "x", "m": "m" * 5000},
            )
    eng.dispose()
    assert is_store_failure(info.value)
    assert describe(info.value).startswith("the database refused a value")


def test_programming_errors_are_not_store_failures():
    assert not is_store_failure(ValueError("x")) and not is_store_failure(KeyError("k"))
