"""Load: a log file's rows into the table of requests, by DuckDB — the one engine every file goes through.

`RequestTable` is the DuckDB table the summary is computed over (planner.logs.summary_sql): the columns of
planner.logs.COLUMNS (ts_ms, model, prompt_tokens, cached_tokens, output_tokens, ttft_ms, duration_ms; NULL for a
timing not logged), and while a file loads a row's `flag` (planner.logs.sqlmap). `load` runs one INSERT of a file's
mapped rows (read_json / read_csv / read_parquet under sqlmap.mapped_rows) in the file's order, moving a progress bar
by DuckDB's own progress, and returns the file's `Verdicts`: the time notes, and the places of the rows DuckDB did
not read (BAD: the first MAX_NAMED of them; DOUBT: all), which it then deletes; for CSV, the offsets of the
records its CSV layer refused. A row's place is its row id less the file's first: DuckDB inserts in order in
parallel (preserve_insertion_order), where numbering the rows in the scan (WITH ORDINALITY) would run the whole
mapping in the scan's one thread. Nothing is read twice: the Python record reader sees only those rows' text
(planner.logs.split.locate, planner.logs.fallback).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from planner.lazy import lazy_module
from planner.logs.records import MAX_NAMED
from planner.logs.sqlmap import AMBIGUOUS, BAD, DOUBT, ZONED, ZONELESS

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
else:  # imported on first use: `logs summarize` reads through DuckDB alone
    np, pd = lazy_module("numpy"), lazy_module("pandas")

__all__ = [
    "COLUMNS",
    "MAX_NAMED",
    "SUMMARY_MEMORY_LIMIT",
    "RequestTable",
    "Verdicts",
    "connect",
    "load",
    "return_freed_heap",
    "spill_folder",
]

COLUMNS = ("ts_ms", "model", "prompt_tokens", "cached_tokens", "output_tokens", "ttft_ms", "duration_ms")
MEMORY_LIMIT = "640MB"  # DuckDB's share of a 1 GB budget; past it, sorts and tables spill to a private folder
# DuckDB's share once the files are read (the readers' buffers handed back): the summary's working memory beside a
# table of 10 M requests (about 620 MB), which under MEMORY_LIMIT each query would push out to disk and read again
SUMMARY_MEMORY_LIMIT = "800MB"
_SPILL: list[str] = []


def spill_folder() -> str:
    """A private temporary folder for this process (DuckDB's spill files, an upload's copy), removed at exit."""
    import atexit
    import shutil
    import tempfile

    if not _SPILL:
        _SPILL.append(tempfile.mkdtemp(prefix="ttft-planner-duckdb-"))
        atexit.register(shutil.rmtree, _SPILL[0], True)
    return _SPILL[0]


def connect(keep_order: bool = False, memory_limit: str = MEMORY_LIMIT):
    """A DuckDB connection whose memory is capped at memory_limit, spilling into spill_folder(). keep_order: rows
    inserted in file order (rows at the same instant then keep it)."""
    import duckdb

    con = duckdb.connect(
        config={"memory_limit": memory_limit, "temp_directory": spill_folder(), "preserve_insertion_order": keep_order}
    )
    con.execute("SET enable_progress_bar = true; SET enable_progress_bar_print = false")  # read by load()
    return con


@dataclass
class Verdicts:
    """What loading one file left to say: its time notes, the rows it did not read, the records its CSV layer
    refused."""

    read: int = 0  # rows inserted
    zoneless: int = 0
    ambiguous: int = 0
    zoned: int = 0
    n_bad: int = 0  # rows the rule refuses (all counted, the first MAX_NAMED placed)
    places: list[tuple[int, int]] = field(default_factory=list)  # (place, BAD or DOUBT), ascending
    refused: list[tuple[int, str]] = field(default_factory=list)  # (byte offset, DuckDB's error type) of a record


class RequestTable:
    """A DuckDB table of requests: files loaded by DuckDB (load), frames of planner.logs.COLUMNS appended.

    Frames are inserted about a million rows at a time (each INSERT has a fixed cost of some milliseconds);
    flush() inserts what is pending, and is done by mark(), rollback() and summarize_table.
    """

    FLUSH_ROWS = 1 << 20

    def __init__(self, con, name: str = "requests") -> None:
        self.con, self.name, self.n = con, name, 0
        self.files: list[tuple[int, str]] = []  # (first row id, the name messages give the file) of each file read
        self._pending: list = []  # Arrow tables not inserted yet
        self._pending_rows = 0
        con.execute(
            # counts are at most 10⁹ (planner.logs.records.MAX_TOKENS): 4 bytes each
            f"CREATE OR REPLACE TABLE {name} (ts_ms BIGINT, model VARCHAR, prompt_tokens INTEGER, "
            "cached_tokens INTEGER, output_tokens INTEGER, ttft_ms DOUBLE, duration_ms DOUBLE, flag TINYINT)"
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
                f"INSERT INTO {self.name} ({', '.join(COLUMNS)}) SELECT ts_ms, model::VARCHAR, prompt_tokens, "
                "cached_tokens, output_tokens, CASE WHEN isnan(ttft_ms) THEN NULL ELSE ttft_ms END, "
                "CASE WHEN isnan(duration_ms) THEN NULL ELSE duration_ms END FROM _batch"
            )
        finally:
            self.con.unregister("_batch")

    def begin(self, source: str) -> None:
        """The rows loaded from here on come from `source` (the file's name in messages; `frame` gives it)."""
        self.files.append((self.mark(), source))

    def _frame(self, table) -> pd.DataFrame:
        """An Arrow table of COLUMNS and rowid as a frame of planner.logs.COLUMNS' dtypes, `source` included."""
        frame = table.to_pandas(strings_to_categorical=True)
        for col in ("prompt_tokens", "cached_tokens", "output_tokens"):
            frame[col] = frame[col].astype(np.int64)
        model = frame["model"].array  # a few names shared by every row: one string object each
        frame["model"] = pd.array(np.asarray(model.categories, dtype=object)[model.codes], dtype=object)
        unique = list(dict.fromkeys(name for _, name in self.files)) or [""]
        code_of = np.asarray([unique.index(name) for _, name in self.files] or [0], dtype=np.int32)
        starts = np.asarray([start for start, _ in self.files] or [0], dtype=np.int64)
        at = np.maximum(np.searchsorted(starts, frame.pop("rowid").to_numpy(), side="right") - 1, 0)
        frame["source"] = pd.Categorical.from_codes(code_of[at], categories=pd.Index(unique))
        return frame

    def frame(self) -> pd.DataFrame:
        """The rows as a frame of planner.logs.COLUMNS (the source a category), sorted by arrival; rows at the same
        instant in the order they were loaded."""
        self.flush()
        cols = ", ".join(COLUMNS)
        return self._frame(
            self.con.sql(f"SELECT {cols}, rowid FROM {self.name} ORDER BY ts_ms, rowid").to_arrow_table()
        )

    def batches(self, rows: int = 1 << 18):
        """The rows as frames of planner.logs.COLUMNS a batch at a time, in the order they were loaded (to store
        a log of any size in bounded memory)."""
        self.flush()
        reader = self.con.sql(f"SELECT {', '.join(COLUMNS)}, rowid FROM {self.name} ORDER BY rowid").to_arrow_reader(
            rows
        )
        for batch in reader:
            yield self._frame(batch)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The rows' arrival (UTC epoch ms), prompt, cached (at most the prompt) and output tokens as float64
        arrays in arrival order, ties in load order: what a replay needs, and nothing else, out of DuckDB."""
        self.flush()
        got = self.con.execute(
            f"SELECT ts_ms::DOUBLE, prompt_tokens::DOUBLE, least(cached_tokens, prompt_tokens)::DOUBLE, "
            f"output_tokens::DOUBLE FROM {self.name} ORDER BY ts_ms, rowid"
        ).fetchnumpy()
        a, p, c, o = (np.asarray(v, dtype=np.float64) for v in got.values())
        return a, p, c, o

    def zero_output_since(self, mark: int) -> int:
        """Rows loaded since mark() with 0 output tokens (BurstGPT's failed requests)."""
        self.flush()
        q = f"SELECT count(*) FROM {self.name} WHERE rowid >= {int(mark)} AND output_tokens = 0"
        return int(self.con.execute(q).fetchall()[0][0])

    def mark(self) -> int:
        """A point to roll back to: the next row id."""
        self.flush()
        return int(self.con.execute(f"SELECT coalesce(max(rowid) + 1, 0) FROM {self.name}").fetchall()[0][0])

    def rollback(self, mark: int) -> int:
        """Drop the rows loaded since mark(); returns how many."""
        self.flush()
        gone = self.con.execute(f"SELECT count(*) FROM {self.name} WHERE rowid >= {int(mark)}").fetchall()[0][0]
        self.con.execute(f"DELETE FROM {self.name} WHERE rowid >= {int(mark)}")
        self.n -= gone
        return int(gone)


def return_freed_heap() -> None:
    """Hand the heap pages the readers freed back to the OS (glibc's malloc_trim; elsewhere nothing).

    Freed batches below glibc's mmap threshold stay with the process, on top of whatever comes next (the what-if
    replay's own arrays): at 10 M requests about 0.3 GB of the peak.
    """
    import ctypes

    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return
    trim(0)


def _run(con, sql: str, tick: Callable[[float], None] | None) -> None:
    """Execute sql on con, calling tick(fraction done) from DuckDB's progress meanwhile."""
    if tick is None:
        con.execute(sql)
        return
    failed: list[BaseException] = []

    def work() -> None:
        try:
            con.execute(sql)
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            failed.append(exc)

    worker = threading.Thread(target=work, name="log-load", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(0.2)
        done = con.query_progress()
        if done >= 0:
            tick(min(done / 100.0, 0.99))
    if failed:
        raise failed[0]


def load(table: RequestTable, rows_sql: str, tick: Callable[[float], None] | None = None) -> Verdicts:
    """Insert the rows of `rows_sql` (planner.logs.sqlmap.mapped_rows) into the table in their order; their
    Verdicts, the rows DuckDB did not read deleted (their places: 0-based among the rows of `rows_sql`). Raises
    duckdb.Error when DuckDB cannot read the file at all."""
    con, name = table.con, table.name
    start = table.mark()
    con.execute("DROP TABLE IF EXISTS reject_errors; DROP TABLE IF EXISTS reject_scans")
    kept = con.execute("SELECT current_setting('preserve_insertion_order')").fetchall()[0][0]
    con.execute("SET preserve_insertion_order = true")
    try:
        _run(con, f"INSERT INTO {name} {rows_sql}", tick)
    finally:
        con.execute(f"SET preserve_insertion_order = {bool(kept)}")
    where = f"rowid >= {start} AND flag IS NOT NULL"
    counts = dict(con.execute(f"SELECT flag, count(*) FROM {name} WHERE {where} GROUP BY flag").fetchall())
    got = Verdicts(
        zoneless=counts.get(ZONELESS, 0) + counts.get(AMBIGUOUS, 0),
        ambiguous=counts.get(AMBIGUOUS, 0),
        zoned=counts.get(ZONED, 0),
        n_bad=counts.get(BAD, 0),
    )
    there = con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'reject_errors'").fetchall()[0][0]
    if there:
        got.refused = [
            (int(at), str(kind))
            for at, kind in con.execute(
                "SELECT line_byte_position, any_value(error_type::VARCHAR) FROM reject_errors "
                "GROUP BY line_byte_position ORDER BY line_byte_position"
            ).fetchall()
        ]
    if counts.get(BAD) or counts.get(DOUBT):
        # the file's first row id: rows deleted at the end of the file before may leave a gap after mark()
        first = con.execute(f"SELECT min(rowid) FROM {name} WHERE rowid >= {start}").fetchall()[0][0]
        places = con.execute(
            f"""SELECT rowid - {first} AS place, flag FROM {name} WHERE {where} AND flag >= {BAD}
                QUALIFY flag = {DOUBT} OR row_number() OVER (PARTITION BY flag ORDER BY rowid) <= {MAX_NAMED}
                ORDER BY place"""
        ).fetchall()
        got.places = [(int(p), int(f)) for p, f in places]
        con.execute(f"DELETE FROM {name} WHERE {where} AND flag >= {BAD}")
    got.read = int(con.execute(f"SELECT count(*) FROM {name} WHERE rowid >= {start}").fetchall()[0][0])
    table.n += got.read
    return got
