"""Stored uploads on a real SQLite file and a real PostgreSQL: numbers only, whole or nothing, deletable."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import psycopg
import pytest
import sqlalchemy as sa

from planner.logs import read_logs
from planner.store.logs import (
    LogRequestRow,
    LogUploadRow,
    UploadNotFound,
    delete_upload,
    list_uploads,
    load_upload_frame,
    save_upload,
)

SAMPLES = Path(__file__).resolve().parents[3] / "assets" / "sample_logs"


def test_round_trip_keeps_every_number(engine):
    res = read_logs([SAMPLES / "litellm_spend_logs.json", SAMPLES / "openai_chat_completions.jsonl"])
    upload_id = save_upload(engine, "team logs", res)
    [info] = list_uploads(engine)
    assert (info.id, info.name, info.n_requests) == (upload_id, "team logs", 650)
    assert info.formats == {"litellm_spend_logs.json": "litellm", "openai_chat_completions.jsonl": "openai_chat"}
    back = load_upload_frame(engine, upload_id)
    pd.testing.assert_frame_equal(back.reset_index(drop=True), res.frame.reset_index(drop=True), check_dtype=False)
    assert back["ts_ms"].dtype == np.int64 and back["ttft_ms"].dtype == np.float64


def test_no_text_reaches_the_database(engine):
    res = read_logs([SAMPLES / "langfuse_observations.json"])
    save_upload(engine, "lf", res)
    with engine.connect() as conn:
        dump = " ".join(
            str(row) for t in ("log_upload", "log_request") for row in conn.execute(sa.text(f"SELECT * FROM {t}"))
        )
    assert "Refactor" not in dump and "Here is the change" not in dump and "coding agent" not in dump


def test_delete_removes_the_rows_and_leaves_other_uploads(engine):
    a = save_upload(engine, "a", read_logs([SAMPLES / "requests.csv"]))
    b = save_upload(engine, "b", read_logs([SAMPLES / "otel_genai_spans.jsonl"]))
    delete_upload(engine, a)
    assert [u.id for u in list_uploads(engine)] == [b]
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM log_request WHERE upload_id = :a"), {"a": a}).scalar() == 0
        assert conn.execute(sa.text("SELECT count(*) FROM log_request")).scalar() == 200
    with pytest.raises(UploadNotFound):
        delete_upload(engine, a)
    with pytest.raises(UploadNotFound):
        load_upload_frame(engine, a)


def test_saving_is_all_or_nothing(engine):
    res = read_logs([SAMPLES / "requests.csv"])
    if engine.dialect.name == "postgresql":
        res.frame.loc[399, "prompt_tokens"] = 2**40  # past PostgreSQL's integer: the last row fails
    else:  # SQLite stores any integer, so a trigger makes the last row fail instead
        res.frame.loc[399, "prompt_tokens"] = 424242
        with engine.begin() as conn:
            conn.execute(
                sa.text(
                    "CREATE TRIGGER boom BEFORE INSERT ON log_request WHEN NEW.prompt_tokens = 424242 "
                    "BEGIN SELECT RAISE(ABORT, 'disk full'); END"
                )
            )
    with pytest.raises((sa.exc.DBAPIError, psycopg.Error)):  # SQLAlchemy's, or psycopg's own from COPY
        save_upload(engine, "broken", res)
    assert list_uploads(engine) == []
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM log_request")).scalar() == 0


def test_empty_name_or_frame_is_refused(sqlite_engine):
    res = read_logs([SAMPLES / "requests.csv"])
    with pytest.raises(ValueError, match="needs a name"):
        save_upload(sqlite_engine, "  ", res)
    res.requests = res.frame.iloc[:0]
    with pytest.raises(ValueError, match="nothing to store"):
        save_upload(sqlite_engine, "x", res)


def test_table_definitions_match_the_migration(engine):
    inspector = sa.inspect(engine)
    for model in (LogUploadRow, LogRequestRow):
        table = model.__table__
        migrated = {c["name"]: c for c in inspector.get_columns(table.name)}
        assert set(migrated) == set(table.columns.keys()), table.name
        for col in table.columns:
            m = migrated[col.name]
            assert bool(m["nullable"]) == bool(col.nullable) or col.primary_key, (table.name, col.name)
            assert type(m["type"]).__name__.upper().startswith(
                {"BigInteger": "BIGINT", "Integer": "INTEGER", "Float": ("FLOAT", "DOUBLE", "REAL")}.get(
                    type(col.type).__name__, type(m["type"]).__name__.upper()
                )
            ) or isinstance(col.type, (sa.String, sa.Text, sa.Boolean, sa.Float)), (table.name, col.name, m["type"])
    fks = inspector.get_foreign_keys("log_request")
    assert fks[0]["referred_table"] == "log_upload" and fks[0]["options"].get("ondelete") == "CASCADE"
    assert any(ix["name"] == "ix_log_request_upload_ts" for ix in inspector.get_indexes("log_request"))
