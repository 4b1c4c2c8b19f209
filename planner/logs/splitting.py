"""Splitting a decoded log into numbered JSON records, and collecting what was rejected on the way.

JSON Lines are walked line by line (1-based line numbers); a JSON array or a single JSON
object is numbered by record. Decoding: UTF-8, UTF-8 with a BOM, and UTF-16 (with or without
a BOM) are accepted; a line that is not valid UTF-8 is rejected with the offending byte.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from planner.lazy import lazy_module
from planner.logs import otel
from planner.logs.records import RejectedLine, Row

if TYPE_CHECKING:
    import pandas as pd
else:  # imported on first use: `logs summarize` reads through DuckDB alone
    pd = lazy_module("pandas")

__all__ = ["MAX_REJECTED_KEPT", "Collector", "Sink", "decode_bom", "json_error", "peek", "split_records"]

MAX_REJECTED_KEPT = 1000  # the count is exact; only the first reasons are kept


class Sink(Protocol):
    """Where a Collector hands its frames instead of keeping them (planner.logs.request_table.RequestTable)."""

    def append(self, frame: pd.DataFrame) -> None: ...

    def mark(self) -> int: ...

    def rollback(self, mark: int) -> int:
        """Drop what was appended since mark(); returns how many rows that was."""
        ...

    def insert_chat(self, path: Path) -> int:
        """An OpenAI chat JSON Lines file inserted whole by the engine (raises Doubt when it does not vouch)."""
        ...

    def insert_chat_tolerant(self, path: Path) -> tuple[int, list[int], int]:
        """A chat JSON Lines file inserted by the engine but for the rows it does not vouch for: (inserted, their
        places among the JSON reader's rows, its rows) (raises Doubt when it cannot read the file)."""
        ...

    def insert_mapped(self, source: str, params: dict, mapping: Mapping[str, str], start_ms: int, tz: str) -> int:
        """A table source under a plain mapping inserted whole by the engine (raises Doubt when it does not vouch)."""
        ...

    def parquet_columns(self, path: Path) -> list[str] | None:
        """A Parquet file's top-level column names as its schema writes them, read by the engine; None when it
        cannot read the file."""
        ...

    def zero_output_since(self, mark: int) -> int:
        """Rows appended since mark() with 0 output tokens."""
        ...

    def insert_csv(self, path: Path, header: list[str], delimiter: str, rows, tz: str):
        """A CSV file's rows inserted by the engine (planner.logs.csvengine.RowSql rows); the lines it leaves
        (planner.logs.csvengine.EngineRead), or None having kept nothing."""
        ...


class Collector:
    """Accumulates rows and rejections for one read_logs call.

    Rows are turned into a column frame every FLUSH_ROWS (by `to_frame`), so a long log is held as
    numbers, not as millions of Python tuples. With a `sink`, frames go there as they come (a DuckDB
    table) and are not held at all.
    """

    FLUSH_ROWS = 65_536

    def __init__(
        self, to_frame: Callable[[list[Row], list[str]], pd.DataFrame] | None = None, sink: Sink | None = None
    ) -> None:
        self.to_frame = to_frame
        self.sink = sink
        self.rows: list[Row] = []
        self.sources: list[str] = []
        self.frames: list[pd.DataFrame] = []
        self.n_sunk = 0
        self.rejected: list[RejectedLine] = []
        self.n_rejected = 0
        self.n_skipped = 0
        self.tick: Callable[[float], None] | None = None  # progress within the current file (fraction 0..1)

    @property
    def n_rows(self) -> int:
        """Rows collected so far: pending, in frames, and handed to the sink."""
        return len(self.rows) + sum(len(f) for f in self.frames) + self.n_sunk

    def add_frame(self, frame: pd.DataFrame) -> None:
        if self.sink is None:
            self.frames.append(frame)
        elif len(frame):
            self.sink.append(frame)
            self.n_sunk += len(frame)

    def mark(self) -> tuple[int, int]:
        """Where a file starts, for rollback() should its reader give up part-way and another read it."""
        return len(self.frames), (self.sink.mark() if self.sink is not None else 0)

    def rollback(self, mark: tuple[int, int]) -> None:
        frames, sunk = mark
        del self.frames[frames:]
        if self.sink is not None:
            self.n_sunk -= self.sink.rollback(sunk)

    def add(self, row: Row, source: str) -> None:
        self.rows.append(row)
        self.sources.append(source)
        if len(self.rows) >= self.FLUSH_ROWS and self.to_frame is not None:
            self.flush()

    def flush(self) -> None:
        if self.rows and self.to_frame is not None:
            self.add_frame(self.to_frame(self.rows, self.sources))
            self.rows, self.sources = [], []

    def reject(self, source: str, line_no: int, reason: str) -> None:
        self.n_rejected += 1
        if len(self.rejected) < MAX_REJECTED_KEPT:
            self.rejected.append(RejectedLine(source, line_no, reason))


def decode_bom(data: bytes) -> bytes:
    """UTF-8 bytes of `data`: a UTF-8 BOM dropped, UTF-16 (BOM or tell-tale NULs) re-encoded."""
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:]
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16").encode("utf-8")
    head = data[:4096]
    if head and head.count(b"\x00") > len(head) // 4:  # UTF-16 without a BOM
        for enc in ("utf-16-le", "utf-16-be"):
            try:
                text = data.decode(enc)
            except UnicodeDecodeError:
                continue
            if text[:1] in "{[" or text[:1].isalpha():
                return text.encode("utf-8")
    return data


def json_error(exc: ValueError | RecursionError) -> str:
    """A user-facing reason for a line json.loads refused."""
    if isinstance(exc, RecursionError):
        return "not a log record: JSON nested too deeply"
    if isinstance(exc, UnicodeDecodeError):
        return f"not valid UTF-8 (byte 0x{exc.object[exc.start]:02x} at column {exc.start + 1}); save the log as UTF-8"
    if isinstance(exc, json.JSONDecodeError):
        # Some messages already end in "at" ("Unterminated string starting at"): the column completes them.
        return f"not valid JSON: {exc.msg.removesuffix(' at')} at column {exc.colno}"
    return f"not valid JSON: {exc}"


def split_records(data: bytes, name: str, out: Collector) -> tuple[str, Iterator[tuple[int, dict]]] | None:
    """('jsonl' | 'json', iterator of (line or record number, dict)); None when the content is not JSON."""
    head = data[:4096]
    start = len(head) - len(head.lstrip()) if head.strip() else len(data) - len(data.lstrip())
    lead = data[start : start + 1]
    if lead == b"[":
        try:
            doc = json.loads(data)
        except (ValueError, RecursionError) as exc:
            out.reject(name, 0, f"a JSON array that does not parse: {json_error(exc)}")
            return "json", iter(())
        return "json", _numbered(doc, name, out)
    if lead != b"{":
        return None
    nl = data.find(b"\n", start)
    first_line = data[start : nl if nl >= 0 else len(data)]
    try:
        json.loads(first_line)
        one_per_line = True
    except (ValueError, RecursionError):
        one_per_line = False
    if not one_per_line:
        try:
            doc = json.loads(data)
        except (ValueError, RecursionError):
            pass  # a JSON Lines file with a bad first line: report it line by line below
        else:
            if isinstance(doc, dict) and isinstance(doc.get("data"), list) and not otel.looks_like(doc):
                doc = doc["data"]  # API list responses, e.g. Langfuse {"data": [...], "meta": {...}}
            return "json", _numbered(doc if isinstance(doc, list) else [doc], name, out)
    return "jsonl", _lines(data, name, out)


def _numbered(items: list, name: str, out: Collector) -> Iterator[tuple[int, dict]]:
    for i, item in enumerate(items, 1):
        if isinstance(item, dict):
            yield i, item
        else:
            out.reject(name, i, f"record {i} is not a JSON object")


def _lines(data: bytes, name: str, out: Collector) -> Iterator[tuple[int, dict]]:
    # Walk the buffer instead of split(): the format sample reads a few lines of a file of any size.
    pos, size, i = 0, len(data), 0
    tick, next_tick = out.tick, 1 << 22
    while pos < size:
        if tick is not None and pos >= next_tick:
            tick(pos / size)
            next_tick = pos + (1 << 22)
        nl = data.find(b"\n", pos)
        if nl < 0:
            nl = size
        line = data[pos:nl]
        pos, i = nl + 1, i + 1
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError) as exc:
            out.reject(name, i, json_error(exc))
            continue
        if not isinstance(rec, dict):
            out.reject(name, i, "not a JSON object")
            continue
        yield i, rec


def peek(it: Iterator[tuple[int, dict]], n: int) -> tuple[list[tuple[int, dict]], Iterator[tuple[int, dict]]]:
    """(the first n items, an iterator over all items): a format sample without consuming the stream."""
    head = []
    for item in it:
        head.append(item)
        if len(head) >= n:
            break

    def chained() -> Iterator[tuple[int, dict]]:
        yield from head
        yield from it

    return head, chained()
