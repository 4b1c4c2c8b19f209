"""The store on a temp SQLite file and on the real local PostgreSQL: worksheets, migrations, bad URLs."""

import importlib
import pkgutil
import sqlite3

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlmodel import SQLModel

import planner.store
from planner.store import StoreError, open_store
from planner.store.migrate import current_revision, head_revision
from planner.store.worksheets import (
    NameTaken,
    WorksheetNotFound,
    delete_worksheet,
    duplicate_worksheet,
    list_worksheets,
    load_worksheet,
    save_worksheet,
)
from planner.worksheet.budget import Worksheet
from planner.worksheet.provenance import Figure, Source


def test_save_reopen_duplicate_delete(engine):
    ws = Worksheet(name="Provider A · eu", interaction="inline").with_figure(
        "network_ms", Figure(38.0, "ms", Source.RTT, detail="eu-central-1", n=30)
    )
    save_worksheet(engine, ws)
    assert load_worksheet(engine, "Provider A · eu") == ws
    duplicate_worksheet(engine, "Provider A · eu", "Provider B · eu")
    assert {n for n, _ in list_worksheets(engine)} == {"Provider A · eu", "Provider B · eu"}
    assert load_worksheet(engine, "Provider B · eu").network_ms.n == 30
    delete_worksheet(engine, "Provider A · eu")
    with pytest.raises(WorksheetNotFound):
        load_worksheet(engine, "Provider A · eu")


def test_existing_name_is_refused_and_nothing_saved_is_lost(engine):
    save_worksheet(engine, Worksheet(name="main").with_figure("queue_ms", Figure.typed(90, "ms")))
    with pytest.raises(NameTaken, match="already exists"):
        save_worksheet(engine, Worksheet(name="main").with_figure("queue_ms", Figure.typed(5, "ms")))
    assert load_worksheet(engine, "main").queue_ms.value == 90
    save_worksheet(engine, Worksheet(name="main").with_figure("queue_ms", Figure.typed(5, "ms")), overwrite=True)
    assert load_worksheet(engine, "main").queue_ms.value == 5


def test_blank_name_is_refused(engine):
    with pytest.raises(ValueError, match="needs a name"):
        save_worksheet(engine, Worksheet(name="  "))


def test_migration_upgrades_an_old_database_in_place(db_url):
    old = open_store(db_url, revision="0001")
    assert current_revision(old) == "0001"
    save_worksheet(old, Worksheet(name="made by version 1"))
    assert "probe_sample" not in sa.inspect(old).get_table_names()
    old.dispose()
    new = open_store(db_url)
    assert current_revision(new) == head_revision()
    assert load_worksheet(new, "made by version 1").name == "made by version 1"
    assert "probe_sample" in sa.inspect(new).get_table_names()
    new.dispose()


def test_opening_twice_is_idempotent(db_url):
    open_store(db_url).dispose()
    eng = open_store(db_url)
    assert current_revision(eng) == head_revision()
    eng.dispose()


def test_migrated_schema_matches_the_models(db_url):
    for info in pkgutil.iter_modules(planner.store.__path__):
        importlib.import_module(f"planner.store.{info.name}")
    eng = open_store(db_url)
    with eng.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"compare_type": False})
        diff = [
            d
            for d in compare_metadata(ctx, SQLModel.metadata)
            if not (d[0] == "remove_table" and d[1].name == "alembic_version")
        ]
    eng.dispose()
    assert diff == []


def test_sqlite_connections_use_wal_and_busy_timeout(sqlite_url):
    eng = open_store(sqlite_url)
    with eng.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 5000
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL
    eng.dispose()


def test_corrupt_sqlite_file_is_a_clear_error_and_is_left_alone(tmp_path):
    path = tmp_path / "planner.db"
    path.write_bytes(b"this is not a database" * 100)
    before = path.read_bytes()
    with pytest.raises(StoreError, match="cannot open database"):
        open_store(f"sqlite:///{path}")
    assert path.read_bytes() == before


def test_unreachable_postgres_names_the_url_without_the_password():
    with pytest.raises(StoreError) as info:
        open_store("postgresql+psycopg://planner:s3cret@127.0.0.1:1/planner")
    assert "127.0.0.1:1" in str(info.value) and "s3cret" not in str(info.value)


def test_unparseable_url_is_a_clear_error():
    with pytest.raises(StoreError, match="not a valid SQLAlchemy URL"):
        open_store("not a url")


def test_data_dir_setting_places_the_default_database(tmp_path, monkeypatch):
    monkeypatch.delenv("TTFT_PLANNER_DATABASE_URL", raising=False)
    monkeypatch.setenv("TTFT_PLANNER_DATA_DIR", str(tmp_path / "data"))
    eng = open_store()
    save_worksheet(eng, Worksheet(name="x"))
    eng.dispose()
    assert sqlite3.connect(tmp_path / "data" / "planner.db").execute("select name from worksheet").fetchall() == [
        ("x",)
    ]
