"""Stored request-log uploads: one log_upload row and one numeric log_request row per request.

Only numbers, timestamps, model names and file names are stored: prompt and completion text
never leave the parser (planner.logs). Per-request rows rather than aggregates, because the
what-if replay and the capacity page need the arrival trace itself, and percentiles are
computed at query time. Saving is one transaction: an upload is stored whole or
not at all; deleting an upload deletes its rows.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import Field, SQLModel

from planner.errors import PlannerError
from planner.lazy import lazy_module
from planner.logs.result import COLUMNS, LogParseResult, empty_frame
from planner.store.database import table_of

if TYPE_CHECKING:
    import pandas as pd
else:  # imported on first use: the worker stores rows and starts without it
    pd = lazy_module("pandas")

__all__ = [
    "LogRequestRow",
    "LogUploadRow",
    "UploadInfo",
    "UploadNotFound",
    "delete_upload",
    "list_uploads",
    "load_upload_frame",
    "save_upload",
    "save_upload_frames",
]

_CHUNK_ROWS = 50_000


class LogUploadRow(SQLModel, table=True):
    """One uploaded (or imported) set of log files."""

    __tablename__ = "log_upload"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=300)
    uploaded_at_ms: int = Field(sa_type=sa.BigInteger)
    n_requests: int
    n_rejected: int
    formats_json: str = Field(sa_type=sa.Text)  # {file name: detected format}
    mapping_json: str = Field(sa_type=sa.Text)  # the column mapping used, {} when none
    tokens_estimated: bool
    first_ts_ms: int | None = Field(default=None, sa_type=sa.BigInteger)
    last_ts_ms: int | None = Field(default=None, sa_type=sa.BigInteger)


class LogRequestRow(SQLModel, table=True):
    """One request of an upload: arrival (UTC epoch ms), model, token counts, timings (ms)."""

    __tablename__ = "log_request"
    __table_args__ = (sa.Index("ix_log_request_upload_ts", "upload_id", "ts_ms"),)

    id: int | None = Field(default=None, primary_key=True)
    upload_id: int = Field(foreign_key="log_upload.id", ondelete="CASCADE")
    source: str = Field(max_length=300)
    ts_ms: int = Field(sa_type=sa.BigInteger)
    model: str = Field(max_length=200)
    prompt_tokens: int
    cached_tokens: int
    output_tokens: int
    ttft_ms: float | None = None
    duration_ms: float | None = None


@dataclass(frozen=True)
class UploadInfo:
    """What list_uploads returns for each upload."""

    id: int
    name: str
    uploaded_at_ms: int
    n_requests: int
    n_rejected: int
    formats: dict[str, str]
    tokens_estimated: bool
    first_ts_ms: int | None
    last_ts_ms: int | None


class UploadNotFound(PlannerError, KeyError):
    """No upload has this id."""


_UPLOAD = table_of(LogUploadRow)
_REQUEST = table_of(LogRequestRow)
_DATA_COLUMNS = list(COLUMNS)  # ts_ms … source


def _records(frame: pd.DataFrame, upload_id: int, start: int = 0, stop: int | None = None) -> list[tuple[Any, ...]]:
    """Insert tuples for rows [start, stop) of the frame (built a chunk at a time, so memory stays bounded)."""
    f = frame.iloc[start:stop]
    ttft = f["ttft_ms"].to_numpy(dtype=np.float64)
    dur = f["duration_ms"].to_numpy(dtype=np.float64)
    cols = (
        f["source"].astype(str).str.slice(0, 300).tolist(),
        f["ts_ms"].to_numpy(dtype=np.int64).tolist(),
        f["model"].astype(str).str.slice(0, 200).tolist(),
        f["prompt_tokens"].to_numpy(dtype=np.int64).tolist(),
        f["cached_tokens"].to_numpy(dtype=np.int64).tolist(),
        f["output_tokens"].to_numpy(dtype=np.int64).tolist(),
        [None if math.isnan(v) else v for v in ttft.tolist()],
        [None if math.isnan(v) else v for v in dur.tolist()],
    )
    return [(upload_id, *vals) for vals in zip(*cols, strict=True)]


_INSERT_COLS = (
    "upload_id",
    "source",
    "ts_ms",
    "model",
    "prompt_tokens",
    "cached_tokens",
    "output_tokens",
    "ttft_ms",
    "duration_ms",
)


def _insert_rows(conn: sa.Connection, rows: list[tuple[Any, ...]]) -> None:
    if conn.dialect.name == "postgresql":
        # COPY is ~10× faster than INSERT for a million rows; it runs inside the same transaction.
        driver = conn.connection.driver_connection
        assert driver is not None  # a checked-out connection always has its psycopg connection
        cursor = driver.cursor()
        with cursor.copy(f"COPY log_request ({', '.join(_INSERT_COLS)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        return
    if conn.dialect.name == "sqlite":
        # The driver's executemany over plain tuples (errors still wrapped as DBAPIError): no dict built per row.
        conn.exec_driver_sql(
            f"INSERT INTO log_request ({', '.join(_INSERT_COLS)}) VALUES ({', '.join('?' * len(_INSERT_COLS))})", rows
        )
        return
    conn.execute(_REQUEST.insert(), [dict(zip(_INSERT_COLS, r, strict=True)) for r in rows])


_EMPTY = "nothing to store: the log has no readable requests"


def _upload_name(name: str) -> str:
    name = (name or "").strip()[:300]
    if not name:
        raise ValueError("an upload needs a name")
    return name


def save_upload(engine: Engine, name: str, result: LogParseResult) -> int:
    """Store a parsed log as a new upload; returns its id.

    All-or-nothing: the upload row and every request row commit together, or nothing is stored
    (the exception propagates). Raises ValueError for an empty name or an empty frame.
    """
    name = _upload_name(name)
    if result.frame.empty:
        raise ValueError(_EMPTY)
    return save_upload_frames(
        engine,
        name,
        [result.frame],
        formats=result.formats,
        mapping=result.mapping,
        n_rejected=result.n_rejected,
        tokens_estimated=result.tokens_estimated,
    )[0]


def save_upload_frames(
    engine: Engine,
    name: str,
    frames: Iterable[pd.DataFrame],
    *,
    formats: Mapping[str, str],
    mapping: Mapping[str, str] | None = None,
    n_rejected: int = 0,
    tokens_estimated: bool = False,
) -> tuple[int, int]:
    """Store a log given as frames of COLUMNS (any number, e.g. a streamed file's batches) as one upload.

    Returns (upload id, requests stored). Only one frame is held at a time, so a log of any size is
    stored in bounded memory. All-or-nothing, in one transaction: an exception from `frames` (or the
    database) stores nothing and propagates. Raises ValueError for an empty name or no requests.
    """
    name = _upload_name(name)
    with engine.begin() as conn:
        upload_id = conn.execute(
            _UPLOAD.insert()
            .values(
                name=name,
                uploaded_at_ms=int(time.time() * 1000),
                n_requests=0,
                n_rejected=int(n_rejected),
                formats_json=json.dumps(dict(formats), sort_keys=True),
                mapping_json=json.dumps(dict(mapping or {}), sort_keys=True),
                tokens_estimated=bool(tokens_estimated),
            )
            .returning(_UPLOAD.c.id)
        ).scalar_one()
        n, first_ms, last_ms = 0, None, None
        for frame in frames:
            if frame.empty:
                continue
            ts = frame["ts_ms"].to_numpy(dtype=np.int64)
            first_ms = int(ts.min()) if first_ms is None else min(first_ms, int(ts.min()))
            last_ms = int(ts.max()) if last_ms is None else max(last_ms, int(ts.max()))
            for start in range(0, len(frame), _CHUNK_ROWS):
                _insert_rows(conn, _records(frame, upload_id, start, start + _CHUNK_ROWS))
            n += len(frame)
        if not n:
            raise ValueError(_EMPTY)  # rolls the upload row back
        conn.execute(
            _UPLOAD.update()
            .where(_UPLOAD.c.id == upload_id)
            .values(n_requests=n, first_ts_ms=first_ms, last_ts_ms=last_ms)
        )
    return int(upload_id), n


def list_uploads(engine: Engine) -> list[UploadInfo]:
    """Every stored upload, newest first."""
    with engine.connect() as conn:
        rows = conn.execute(sa.select(_UPLOAD).order_by(_UPLOAD.c.uploaded_at_ms.desc(), _UPLOAD.c.id.desc())).all()
    return [
        UploadInfo(
            id=r.id,
            name=r.name,
            uploaded_at_ms=r.uploaded_at_ms,
            n_requests=r.n_requests,
            n_rejected=r.n_rejected,
            formats=json.loads(r.formats_json or "{}"),
            tokens_estimated=bool(r.tokens_estimated),
            first_ts_ms=r.first_ts_ms,
            last_ts_ms=r.last_ts_ms,
        )
        for r in rows
    ]


def load_upload_frame(engine: Engine, upload_id: int) -> pd.DataFrame:
    """The upload's requests as a normalised frame (planner.logs COLUMNS), sorted by arrival.

    Raises UploadNotFound for an unknown id.
    """
    with engine.connect() as conn:
        if conn.execute(sa.select(_UPLOAD.c.id).where(_UPLOAD.c.id == upload_id)).first() is None:
            raise UploadNotFound(f"no log upload with id {upload_id}")
        result = conn.execute(
            sa.select(*[_REQUEST.c[c] for c in _DATA_COLUMNS])
            .where(_REQUEST.c.upload_id == upload_id)
            .order_by(_REQUEST.c.ts_ms, _REQUEST.c.id)
        )
        parts: dict[str, list[np.ndarray]] = {c: [] for c in _DATA_COLUMNS}
        shared: dict[str, str] = {}
        while chunk := result.fetchmany(_CHUNK_ROWS):  # columns a chunk at a time: no list of millions of rows
            cols = dict(zip(_DATA_COLUMNS, zip(*chunk, strict=True), strict=True))
            for c in ("ts_ms", "prompt_tokens", "cached_tokens", "output_tokens"):
                parts[c].append(np.asarray(cols[c], dtype=np.int64))
            for c in ("ttft_ms", "duration_ms"):
                parts[c].append(np.asarray([np.nan if v is None else v for v in cols[c]], dtype=np.float64))
            for c in ("model", "source"):  # one string object per distinct name, shared by all its rows
                parts[c].append(np.array([shared.setdefault(v, v) for v in cols[c]], dtype=object))
    if not parts["ts_ms"]:
        return empty_frame()
    return pd.DataFrame(
        {
            "ts_ms": np.concatenate(parts["ts_ms"]),
            "model": pd.array(np.concatenate(parts["model"]), dtype=object),
            "prompt_tokens": np.concatenate(parts["prompt_tokens"]),
            "cached_tokens": np.concatenate(parts["cached_tokens"]),
            "output_tokens": np.concatenate(parts["output_tokens"]),
            "ttft_ms": np.concatenate(parts["ttft_ms"]),
            "duration_ms": np.concatenate(parts["duration_ms"]),
            "source": pd.Series(np.concatenate(parts["source"]), dtype=object).astype(
                "category"
            ),  # as read_logs gives it
        }
    )[list(COLUMNS)]


def delete_upload(engine: Engine, upload_id: int) -> None:
    """Delete an upload and all its request rows; raises UploadNotFound."""
    with engine.begin() as conn:
        conn.execute(_REQUEST.delete().where(_REQUEST.c.upload_id == upload_id))
        gone = conn.execute(_UPLOAD.delete().where(_UPLOAD.c.id == upload_id)).rowcount
        if not gone:
            raise UploadNotFound(f"no log upload with id {upload_id}")
