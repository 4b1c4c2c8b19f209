"""Reading one log file: what every kind of file shares on its way through the pipeline (planner.logs.read).

`ReaderPolicy` is how a file is read. `FileRead` is one file being read: its LogFile, the call's context and its
collected rows and rejections (`Collected`, into the RequestTable a batch at a time). `load_file` has DuckDB read the
file once (planner.logs.load, under planner.logs.sqlmap's SQL), with a copy whose too-long lines are blanked when
DuckDB's buffers cannot hold one; `explain` hands the rows DuckDB did not read to the Python record reader
(planner.logs.fallback) with their lines and text (planner.logs.split); `read_in_python` reads records in Python
alone, counting the time notes of the rows it keeps; `say_notes` puts a file's notes in the result.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from planner.logs import split
from planner.logs.context import (
    ReadContext,
    relative_times,
)
from planner.logs.fallback import SKIPPED, RecordReader, too_long
from planner.logs.load import RequestTable, Verdicts, load
from planner.logs.opening import (
    ARRAY,
    CSV,
    DEFAULT_MAX_BYTES,
    JSONL,
    LogFile,
)
from planner.logs.records import TIME_NOTES, Rejections, Row, TimeNotes, dig, shift_hours
from planner.logs.result import rows_frame
from planner.logs.sqlmap import BAD, SQL_FIELDS, Source, mapped_rows
from planner.logs.stream import check_whole

__all__ = [
    "Collected",
    "FileRead",
    "ReaderPolicy",
    "explain",
    "literal",
    "load_file",
    "note_sql",
    "quoted",
    "read_in_python",
    "read_text_in_python",
    "rows_loaded",
    "say_notes",
    "sql_ready",
]


@dataclass(frozen=True)
class ReaderPolicy:
    """How read_logs reads each file; tests choose a way here, by argument.

    engine: "duckdb" (DuckDB reads and checks every record it can map, the Python record reader only the records
    it leaves) or "python" (the Python record reader reads every record: the fallback alone, to hold the two equal).
    max_line_bytes: a CSV record longer is named, not read (16 MiB: DuckDB's CSV reader is set to stop there); a JSON
    line is named past twice this (32 MiB: DuckDB's JSON reader reads a line of up to twice its maximum_object_size,
    which it takes no lower than 16 MiB). window_bytes: the splitter reads this much at a time.
    memory_limit: DuckDB's, for the private table of a read without a sink.
    survey: the records of the rows DuckDB leaves are found by walking only the windows that hold them, after a
    survey of the file (planner.logs.split): made on the other core while DuckDB reads a compressed CSV file (in one
    thread), or by two threads after the read for a plain file of four survey windows or more; False: the whole
    file is walked after the read, in one thread.
    """

    engine: str = "duckdb"
    max_line_bytes: int = 16 << 20
    window_bytes: int = 16 << 20
    memory_limit: str = "640MB"
    survey: bool = True


class Collected(Rejections):
    """Rows the Python reader made (into the table a batch at a time) and what was left out, for one call."""

    FLUSH_ROWS = 65_536

    def __init__(self, table: RequestTable) -> None:
        super().__init__()
        self.table = table
        self.rows: list[Row] = []
        self.n_skipped = 0

    def add(self, row: Row) -> None:
        self.rows.append(row)
        if len(self.rows) >= self.FLUSH_ROWS:
            self.flush()

    def flush(self) -> None:
        if self.rows:
            self.table.append(rows_frame(self.rows, [""] * len(self.rows)))
            self.rows = []

    def take(self, source: str, line: int, got: Iterable[Row | str], unit: str = "line") -> int:
        """What the Python reader made of one record: rows kept (how many is returned), a reason named, SKIPPED
        counted."""
        kept = 0
        for item in got:
            if isinstance(item, Row):
                self.add(item)
                kept += 1
            elif item == SKIPPED:
                self.n_skipped += 1
            else:
                self.reject(source, line, item, unit)
        return kept


@dataclass
class FileRead:
    """One file being read: where, its reader, its format and mapping as the result reports them."""

    log: LogFile
    ctx: ReadContext
    out: Collected
    policy: ReaderPolicy
    folder: Path
    tick: Callable[[float], None] | None
    delimiter: str = ","  # a CSV file's
    error: str = ""  # why DuckDB could not read the file
    notes: TimeNotes = field(default_factory=TimeNotes)  # of the rows read
    cap: int = DEFAULT_MAX_BYTES  # a JSON document read whole is at most this
    surveyed: split.Survey | None = None  # of f.log, made while DuckDB read it

    @property
    def label(self) -> str:
        return self.log.label

    def reader(self, fmt: str, mapping: Mapping[str, str] | None, get=dig, **kw) -> RecordReader:
        """The Python record reader of this file; with a mapping, records are taken through it (`get`: dotted
        paths into JSON, dict.get for a table's columns)."""
        mapped = None
        if mapping is not None:
            ts0 = self.ctx.start_ms() if relative_times(mapping) else 0
            prefix = self.ctx.prefix(mapping)
            mapped = lambda rec: self.ctx.extract(rec, mapping, get, ts0, prefix)  # noqa: E731
        return RecordReader(fmt, self.ctx.tz, mapped, limit=self.line_limit, **kw)

    @property
    def line_limit(self) -> int:
        """The bytes a record of this file may hold (ReaderPolicy.max_line_bytes; twice that for a JSON line)."""
        return self.policy.max_line_bytes * (2 if self.log.kind in (JSONL, ARRAY) else 1)


def sql_ready(mapping: Mapping[str, str]) -> bool:
    """Whether SQL maps every field (no text to count, no hash_ids to replay)."""
    used = {k for k, v in mapping.items() if v}
    return used <= SQL_FIELDS and bool(used & {"prompt_tokens", "prompt_tokens_uncached"})


def quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


# -- loading through DuckDB ------------------------------------------------------------------------------------------


def too_long_error(exc: Exception) -> bool:
    text = str(exc)
    return "maximum_object_size" in text or "Maximum line size" in text or "line size" in text.lower()


def load_file(f: FileRead, scan: Callable[[LogFile, int], str], sources: Mapping[str, Source], **kw) -> Verdicts | None:
    """Load the file through DuckDB (planner.logs.load: the places of the rows it did not read come from their
    order): `scan(log, attempt)` is its table function (attempt 1 reads a copy whose lines past the limit are
    blanked, named here, when attempt 0 met one past DuckDB's buffers: the file read from then on). None when DuckDB
    cannot read the file (f.error says why): the caller reads it in Python, or names it."""
    import duckdb

    tz_sql = "SET TimeZone = " + literal(f.ctx.tz)
    f.out.table.con.execute(tz_sql)
    shifts = ", ".join(map(str, shift_hours(f.ctx.tz)))
    start = f.ctx.start_ms() if "ts" not in sources else 0
    log = f.log
    for attempt in range(2):
        try:
            rows = mapped_rows(sources, f"SELECT * FROM {scan(log, attempt)}", start_ms=start, shifts=shifts, **kw)
            return _load(f, log, rows)
        except duckdb.Error as exc:
            f.error = str(exc).splitlines()[0][:200]
            if log.compression != "none":  # a cut or corrupt stream is refused now (BrokenStream), not met by the
                check_whole(log.path, log.compression)  # Python reader after reading every record before the cut
            if attempt or not too_long_error(exc):
                return None
        masked = f.folder / f"masked-{len(list(f.folder.iterdir()))}.zst"
        grammar = split.LINES if log.kind != CSV else split.CSV
        for found in split.mask_long(
            log.path,
            log.compression,
            grammar,
            masked,
            window=f.policy.window_bytes,
            limit=f.line_limit,
            delimiter=f.delimiter,
        ):
            f.out.reject(f.label, found.line, too_long(f.line_limit))
        log = f.log = LogFile(masked, log.label, "zstd", log.kind, log.head)
    return None


def _survey_when(f: FileRead, log: LogFile) -> str:
    """When the file is surveyed (ReaderPolicy.survey): WHILE DuckDB reads it, on the other core, for a compressed CSV
    of a survey window or more (DuckDB reads it in one thread; a compressed JSON Lines file it parses on both: 10 M
    rows, 0.2 s slower surveyed); AFTER the read, by two threads, for a plain file of four windows or more; "" not at
    all (one core, where a survey's thread could only slow DuckDB down; a smaller file, walked at once)."""
    if not f.policy.survey or (os.cpu_count() or 1) < 2:
        return ""
    size = len(log.path) if isinstance(log.path, bytes) else log.path.stat().st_size
    if log.compression == "none":
        return AFTER if size >= 4 * split.SURVEY_WINDOW_BYTES else ""
    return WHILE if log.kind == CSV and size >= split.SURVEY_WINDOW_BYTES else ""


WHILE, AFTER = "while", "after"


def _load(f: FileRead, log: LogFile, rows: str) -> Verdicts:
    """The rows loaded; the file surveyed meanwhile where _survey_when says so, the Survey kept in f.surveyed when
    some rows were not read."""
    if _survey_when(f, log) != WHILE:
        return load(f.out.table, rows, f.tick)
    surveying = split.Surveying(
        log.path,
        log.compression,
        split.CSV,
        keep=f.line_limit + 1,
        delimiter=f.delimiter,
    )
    try:
        got = load(f.out.table, rows, f.tick)
    except BaseException:
        surveying.stop()
        raise
    if got.places or got.refused:
        f.surveyed = surveying.result()
    else:
        surveying.stop()
    return got


def explain(f: FileRead, got: Verdicts, reader: RecordReader, grammar: str, rows: int) -> bool:
    """The rows DuckDB left (and the records its CSV layer refused) read or named by the Python reader from their
    text; False when their lines cannot be told (the file's records are not DuckDB's rows)."""
    log = f.log
    if not got.places and not got.refused:
        return True
    if f.surveyed is None and _survey_when(f, log) == AFTER:
        f.surveyed = split.survey_in_two(log.path, grammar, keep=f.line_limit + 1, delimiter=f.delimiter)
    found = split.locate(
        log.path,
        log.compression,
        grammar,
        [p for p, _ in got.places],
        [at for at, _ in got.refused],
        rows,
        window=f.policy.window_bytes,
        keep=f.line_limit + 1,
        delimiter=f.delimiter,
        surveyed=f.surveyed,
    )
    if found is None:
        return False
    read_in_python(f, ((rec.line, reader.text(rec.text, rec.size)) for rec in found))
    f.out.n_rejected += got.n_bad - sum(1 for _, flag in got.places if flag == BAD)
    return True


def rows_loaded(got: Verdicts) -> int:
    """The rows DuckDB read of the file: those kept, and those it left to Python (the BAD ones past the named)."""
    return got.read + got.n_bad + sum(1 for _, flag in got.places if flag != BAD)


def say_notes(f: FileRead) -> None:
    """The file's notes: times without a zone (when the zone is not UTC, or the file mixes them with zoned ones),
    those at a DST change, keys given twice."""
    n = f.notes
    if n.zoneless and (n.zoned or f.ctx.tz not in ("UTC", "utc", "")):
        note = f"{f.label}: {n.zoneless:,} time{'' if n.zoneless == 1 else 's'} without a zone read in {f.ctx.tz}"
        if n.ambiguous:
            note += (
                f", {n.ambiguous:,} of them where the clock repeats or skips (a DST change): read at the zone's "
                "smaller UTC offset"
            )
        f.ctx.res.notes.append(note)
    if n.twice:
        f.ctx.res.notes.append(
            f"{f.label}: {n.twice:,} record{'' if n.twice == 1 else 's'} name a key twice (first "
            f"{n.twice_key[:40]!r}): the first value is read"
        )


def note_sql(f: FileRead, got: Verdicts) -> None:
    f.notes.zoneless += got.zoneless
    f.notes.ambiguous += got.ambiguous
    f.notes.zoned += got.zoned


def read_in_python(f: FileRead, items: Iterable[tuple[int, Iterable[Row | str]]], unit: str = "line") -> None:
    """Records through the Python reader (items: (line or record number, what it made of the record)); the time
    notes of those read counted in f.notes."""
    notes = f.notes
    token = TIME_NOTES.set(notes)
    try:
        for line, got in items:
            before = (notes.zoneless, notes.ambiguous, notes.zoned)
            if not f.out.take(f.label, line, got, unit):
                notes.zoneless, notes.ambiguous, notes.zoned = before
    finally:
        TIME_NOTES.reset(token)


def read_text_in_python(f: FileRead, reader: RecordReader, grammar: str, skip_header: bool = False) -> None:
    records = split.records(
        f.log.path,
        f.log.compression,
        grammar,
        window=f.policy.window_bytes,
        keep=f.line_limit + 1,
        delimiter=f.delimiter,
    )
    if skip_header:
        next(records, None)
    read_in_python(f, ((r.line, reader.text(r.text, r.size)) for r in records))
