"""The table of requests the log summary is computed over: a DuckDB table filled a batch at a time.

The table has the columns of planner.logs.COLUMNS (ts_ms, model, prompt_tokens, cached_tokens, output_tokens,
ttft_ms, duration_ms; NULL for a timing not logged); readers append frames, or have DuckDB insert a file's rows
itself (chat JSON Lines, mapped CSV and Parquet). planner.logs.engine summarises it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from planner.lazy import lazy_module

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
else:  # imported on first use: `logs summarize` reads through DuckDB alone
    np, pd = lazy_module("numpy"), lazy_module("pandas")

__all__ = ["COLUMNS", "RequestTable", "connect"]

COLUMNS = ("ts_ms", "model", "prompt_tokens", "cached_tokens", "output_tokens", "ttft_ms", "duration_ms")


def connect(keep_order: bool = False):
    """A DuckDB connection for summarising logs (planner.logs.duckpath.connect), insertion order not kept unless
    asked (RequestTable.frame keeps file order for rows at the same instant): no summary needs it."""
    from planner.logs.duckpath import MEMORY_LIMIT
    from planner.logs.duckpath import connect as duck_connect

    return duck_connect(keep_order=keep_order, memory_limit=MEMORY_LIMIT)


class RequestTable:
    """A DuckDB table of requests filled a batch (a frame of planner.logs.COLUMNS) at a time.

    Batches are inserted about a million rows at a time (each INSERT has a fixed cost of some milliseconds);
    flush() inserts what is pending, and is done by mark(), rollback() and summarize_table.
    """

    FLUSH_ROWS = 1 << 20

    def __init__(self, con, name: str = "requests") -> None:
        self.con, self.name, self.n = con, name, 0
        self._pending: list = []  # Arrow tables not inserted yet
        self._pending_rows = 0
        con.execute(
            # counts are at most 10⁹ (planner.logs.records.MAX_TOKENS): 4 bytes each
            f"CREATE OR REPLACE TABLE {name} (ts_ms BIGINT, model VARCHAR, prompt_tokens INTEGER, "
            "cached_tokens INTEGER, output_tokens INTEGER, ttft_ms DOUBLE, duration_ms DOUBLE)"
        )

    def append(self, frame: pd.DataFrame) -> None:
        if not len(frame):
            return
        import pyarrow as pa

        # As Arrow: DuckDB scans it column by column (a pandas frame with object columns is sniffed row by row).
        types = (pa.int64(), pa.string(), pa.int64(), pa.int64(), pa.int64(), pa.float64(), pa.float64())
        schema = pa.schema(list(zip(COLUMNS, types, strict=True)))
        self._pending.append(pa.Table.from_pandas(frame[list(COLUMNS)], preserve_index=False).cast(schema))
        self._pending_rows += len(frame)
        self.n += len(frame)
        if self._pending_rows >= self.FLUSH_ROWS:
            self.flush()

    def flush(self) -> None:
        if not self._pending:
            return
        import pyarrow as pa

        batch = pa.concat_tables(self._pending)
        self._pending, self._pending_rows = [], 0
        self.con.register("_batch", batch)
        try:
            self.con.execute(
                f"INSERT INTO {self.name} SELECT ts_ms, model::VARCHAR, prompt_tokens, cached_tokens, output_tokens, "
                "CASE WHEN isnan(ttft_ms) THEN NULL ELSE ttft_ms END, "
                "CASE WHEN isnan(duration_ms) THEN NULL ELSE duration_ms END FROM _batch"
            )
        finally:
            self.con.unregister("_batch")

    def insert_chat(self, path: Path) -> int:
        """An OpenAI chat JSON Lines file's requests inserted by DuckDB alone (planner.logs.duckpath.insert_chat)."""
        from planner.logs.duckpath import insert_chat

        got = insert_chat(self.con, self.name, path)
        self.n += got
        return got

    def insert_chat_tolerant(self, path: Path) -> tuple[int, list[int], int]:
        """A chat JSON Lines file with bad lines inserted by DuckDB alone but for the rows it does not vouch for:
        (inserted, their places among its rows, its rows) (planner.logs.duckpath.insert_chat_tolerant)."""
        from planner.logs.duckpath import insert_chat_tolerant

        self.flush()
        got = insert_chat_tolerant(self.con, self.name, path)
        self.n += got[0]
        return got

    def insert_mapped(self, source: str, params: dict, mapping: Mapping[str, str], start_ms: int, tz: str) -> int:
        """The rows of a table source (read_csv / read_parquet SQL) under a plain mapping, inserted by DuckDB alone
        (planner.logs.sqlmap); the number inserted.

        All or nothing: raises Doubt (nothing inserted) when the mapping or a column's type is not a plain case,
        or at the first row that fails a check or that DuckDB cannot read; the batch reader then names it.
        """
        import duckdb

        from planner.logs.duckpath import Doubt
        from planner.logs.sqlmap import mapped_select

        self.flush()
        try:
            self.con.execute("SET TimeZone = '" + tz.replace("'", "''") + "'")  # times without a zone are in it
            described = self.con.execute(f"DESCRIBE SELECT * FROM {source}", params).fetchall()
            rows = mapped_select(mapping, {r[0]: str(r[1]) for r in described}, start_ms)
            if rows is None:
                raise Doubt("not a plain mapping for the engine")
            doubt = "'a row the engine does not vouch for'"
            inserted = self.con.execute(
                f"""INSERT INTO {self.name} SELECT {rows.select} FROM ({rows.over(f"SELECT * FROM {source}")})
                WHERE CASE WHEN {rows.ok} THEN true ELSE error({doubt}) END""",
                params,
            ).fetchall()[0][0]
        except duckdb.Error as exc:
            raise Doubt(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
        self.n += int(inserted)
        return int(inserted)

    def parquet_columns(self, path: Path) -> list[str] | None:
        """A Parquet file's top-level column names as its schema writes them (a repeated name twice: DuckDB's own
        scan would rename one), in order, read by DuckDB; None when it cannot read the file (the caller's own reader
        then says why)."""
        import duckdb

        try:
            q = "SELECT name, num_children FROM parquet_schema($path)"
            rows = self.con.execute(q, {"path": str(path)}).fetchall()
        except duckdb.Error:
            return None
        names: list[str] = []
        left = [rows[0][1] or 0] if rows else [0]  # children still to come at each depth, the root's first
        for column, children in rows[1:]:
            if len(left) == 1:
                names.append(str(column))
            left[-1] -= 1
            if children:
                left.append(int(children))
            while len(left) > 1 and left[-1] == 0:
                left.pop()
        return names

    def insert_csv(self, path: Path, header: list[str], delimiter: str, rows, tz: str):
        """A CSV file's rows inserted by the engine, the lines it does not vouch for returned with their text
        (planner.logs.csvengine.insert_csv); None (nothing kept) when it cannot place them."""
        from planner.logs.csvengine import insert_csv

        mark = self.mark()
        got = insert_csv(self.con, self.name, path, header, delimiter, rows, tz, lambda: self.rollback(mark))
        if got is not None:
            self.n += got.inserted
        return got

    def frame(self) -> pd.DataFrame:
        """The rows as a frame of planner.logs.COLUMNS' dtypes (without `source`; the model a category), sorted by
        arrival; rows at the same instant in the order they were appended when the connection keeps insertion order
        (connect(keep_order=True)), as the readers' frames are."""
        self.flush()
        got = self.con.sql(f"SELECT * FROM {self.name} ORDER BY ts_ms, rowid").to_arrow_table()
        frame = got.to_pandas(strings_to_categorical=True)
        for col in ("prompt_tokens", "cached_tokens", "output_tokens"):
            frame[col] = frame[col].astype(np.int64)
        return frame

    def zero_output_since(self, mark: int) -> int:
        """Rows appended since mark() with 0 output tokens (BurstGPT's failed requests)."""
        self.flush()
        q = f"SELECT count(*) FROM {self.name} WHERE rowid >= {int(mark)} AND output_tokens = 0"
        return int(self.con.execute(q).fetchall()[0][0])

    def mark(self) -> int:
        """A point to roll back to: the next row id."""
        self.flush()
        return int(self.con.execute(f"SELECT coalesce(max(rowid) + 1, 0) FROM {self.name}").fetchall()[0][0])

    def rollback(self, mark: int) -> int:
        """Drop the rows appended since mark(); returns how many."""
        self.flush()
        gone = self.con.execute(f"SELECT count(*) FROM {self.name} WHERE rowid >= {int(mark)}").fetchall()[0][0]
        self.con.execute(f"DELETE FROM {self.name} WHERE rowid >= {int(mark)}")
        self.n -= gone
        return int(gone)
