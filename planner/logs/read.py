"""read_logs: the one log reader — every file, format and size through the same steps, into one table of requests.

  open    planner.logs.opening   a path or an upload → a file on disk, its compression and kind (bombs refused)
  detect  planner.logs.formats   its format from a sample of records, or a table's column mapping (context)
  map     planner.logs.sqlmap    the format's fields → request columns in DuckDB SQL, with each row's verdict
  load    planner.logs.load      DuckDB reads the file once into the RequestTable (the Logs page's, What-if's,
                                 Capacity's and `logs summarize`'s alike)
  split   planner.logs.split     the rows DuckDB did not read → their lines and text (the one place a line's
                                 number comes from, CRLF, BOM, quoted breaks and cut tails included)
  check   planner.logs.fallback  those records read or named in Python by the rule of planner.logs.records; the
                                 same reader takes every record of the formats SQL does not map
  summarise planner.logs.engine  (summarize over the table)

`ReaderPolicy` is how a file is read, chosen by argument: DuckDB with Python for the records it leaves, or the Python
record reader alone; the line limit and the splitter's window.

Over 400 lines: the per-kind steps (Parquet, JSON, CSV, a JSON document) share the accounting of rows and
rejections and read top to bottom as one pipeline.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from planner.lazy import lazy_module
from planner.logs import split
from planner.logs.context import (
    MAP_HINT_CLI,
    TRACE_FORMATS,
    ReadContext,
    mapping_problem,
    relative_times,
    wanted_column,
)
from planner.logs.fallback import SKIPPED, RecordReader, json_error, parse_json, too_long
from planner.logs.formats import EXTRACTORS, FORMATS, classify, detect
from planner.logs.load import RequestTable, Verdicts, connect, load, spill_folder
from planner.logs.mapped import REQUIRED_HELP, mapping_complete
from planner.logs.opening import (
    ARRAY,
    CSV,
    DEFAULT_MAX_BYTES,
    DOCUMENT,
    EMPTY,
    JSONL,
    PARQUET,
    LogFile,
    TooLarge,
    csv_header,
    labels,
    open_log,
)
from planner.logs.prefix import DEFAULT_CACHE_BLOCKS
from planner.logs.records import TIME_NOTES, Rejections, Row, TimeNotes, dig, shift_hours, zone
from planner.logs.result import LogFormatError, LogParseResult, Progress, rows_frame
from planner.logs.sqlmap import BAD, JSON, SQL_FIELDS, TEXT, Source, kind_of, mapped_rows
from planner.logs.tokenize import TokenCounter
from planner.logs.traces import start_ms

if TYPE_CHECKING:
    import pandas as pd
else:  # imported on first use: `logs summarize` reads through DuckDB alone
    pd = lazy_module("pandas")

__all__ = ["ReaderPolicy", "json_records", "read_logs"]

_SAMPLE = 200  # records a format is detected from
_CHAT = {
    "ts": "created",
    "model": "model",
    "prompt_tokens": "usage.prompt_tokens",
    "cached_tokens": "usage.prompt_tokens_details.cached_tokens",
    "output_tokens": "usage.completion_tokens",
}


@dataclass(frozen=True)
class ReaderPolicy:
    """How read_logs reads each file; tests choose a way here, by argument.

    engine: "duckdb" (DuckDB reads and checks every record it can map, the Python record reader only the records
    it leaves) or "python" (the Python record reader reads every record: the fallback alone, to hold the two equal).
    max_line_bytes: a record longer is named, not read (32 MiB: what DuckDB's JSON reader holds at its default
    maximum_object_size, and its CSV reader's max_line_size). window_bytes: the splitter reads this much at a time.
    memory_limit: DuckDB's, for the private table of a read without a sink.
    """

    engine: str = "duckdb"
    max_line_bytes: int = 32 << 20
    window_bytes: int = 16 << 20
    memory_limit: str = "640MB"


class _Out(Rejections):
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
class _File:
    """One file being read: where, its reader, its format and mapping as the result reports them."""

    log: LogFile
    ctx: ReadContext
    out: _Out
    policy: ReaderPolicy
    folder: Path
    tick: Callable[[float], None] | None
    delimiter: str = ","  # a CSV file's
    error: str = ""  # why DuckDB could not read the file
    notes: TimeNotes = field(default_factory=TimeNotes)  # of the rows read
    cap: int = DEFAULT_MAX_BYTES  # a JSON document read whole is at most this

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
        return RecordReader(fmt, self.ctx.tz, mapped, limit=self.policy.max_line_bytes, **kw)


def _sql_ready(mapping: Mapping[str, str]) -> bool:
    """Whether SQL maps every field (no text to count, no hash_ids to replay)."""
    used = {k for k, v in mapping.items() if v}
    return used <= SQL_FIELDS and bool(used & {"prompt_tokens", "prompt_tokens_uncached"})


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


# -- loading through DuckDB ------------------------------------------------------------------------------------------


def _too_long(exc: Exception) -> bool:
    text = str(exc)
    return "maximum_object_size" in text or "Maximum line size" in text or "line size" in text.lower()


def _load(f: _File, scan: Callable[[LogFile, int], str], sources: Mapping[str, Source], **kw) -> Verdicts | None:
    """Load the file through DuckDB (`scan(log, attempt)`: its relation with `_place`; attempt 1 reads a copy whose
    lines past the limit are blanked, named here, when attempt 0 met one past DuckDB's buffers: the file read from
    then on). None when DuckDB cannot read it (f.error says why): the caller reads it in Python, or names it."""
    import duckdb

    tz_sql = "SET TimeZone = " + _lit(f.ctx.tz)
    f.out.table.con.execute(tz_sql)
    shifts = ", ".join(map(str, shift_hours(f.ctx.tz)))
    start = f.ctx.start_ms() if "ts" not in sources else 0
    log = f.log
    for attempt in range(2):
        try:
            sql = mapped_rows(sources, scan(log, attempt), start_ms=start, shifts=shifts, **kw)
            return load(f.out.table, sql, {}, f.tick)
        except duckdb.Error as exc:
            f.error = str(exc).splitlines()[0][:200]
            if attempt or not _too_long(exc):
                return None
        masked = f.folder / f"masked-{len(list(f.folder.iterdir()))}.zst"
        grammar = split.LINES if log.kind != CSV else split.CSV
        for found in split.mask_long(
            log.path,
            log.compression,
            grammar,
            masked,
            window=f.policy.window_bytes,
            limit=f.policy.max_line_bytes,
            delimiter=f.delimiter,
        ):
            f.out.reject(f.label, found.line, too_long(f.policy.max_line_bytes))
        log = f.log = LogFile(masked, log.label, "zstd", log.kind, log.head)
    return None


def _explain(
    f: _File, got: Verdicts, reader: RecordReader, grammar: str, rows: int, log: LogFile | None = None
) -> bool:
    """The rows DuckDB left (and the records its CSV layer refused) read or named by the Python reader from their
    text; False when their lines cannot be told (the file's records are not DuckDB's rows)."""
    log = log or f.log
    if not got.places and not got.refused:
        return True
    found = split.locate(
        log.path,
        log.compression,
        grammar,
        [p for p, _ in got.places],
        [at for at, _ in got.refused],
        rows,
        window=f.policy.window_bytes,
        keep=f.policy.max_line_bytes + 1,
        delimiter=f.delimiter,
    )
    if found is None:
        return False
    _python(f, ((rec.line, reader.text(rec.text, rec.size)) for rec in found))
    f.out.n_rejected += got.n_bad - sum(1 for _, flag in got.places if flag == BAD)
    return True


def _rows_loaded(got: Verdicts) -> int:
    """The rows DuckDB read of the file: those kept, and those it left to Python (the BAD ones past the named)."""
    return got.read + got.n_bad + sum(1 for _, flag in got.places if flag != BAD)


def _say_notes(f: _File) -> None:
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


def _sql_notes(f: _File, got: Verdicts) -> None:
    f.notes.zoneless += got.zoneless
    f.notes.ambiguous += got.ambiguous
    f.notes.zoned += got.zoned


def _python(f: _File, items: Iterable[tuple[int, Iterable[Row | str]]], unit: str = "line") -> None:
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


def _python_text(f: _File, reader: RecordReader, grammar: str, skip_header: bool = False) -> None:
    records = split.records(
        f.log.path,
        f.log.compression,
        grammar,
        window=f.policy.window_bytes,
        keep=f.policy.max_line_bytes + 1,
        delimiter=f.delimiter,
    )
    if skip_header:
        next(records, None)
    _python(f, ((r.line, reader.text(r.text, r.size)) for r in records))


# -- JSON ------------------------------------------------------------------------------------------------------------


def _sample(f: _File) -> tuple[list[dict], str]:
    """(The first records of a JSON Lines file, from its first MiB, or of a JSON array, read by DuckDB; why the
    first that is not one is not)."""
    import duckdb

    texts: Iterable[str | bytes]
    if f.log.kind == ARRAY:
        try:
            texts = [t for _, t in _array_texts(f, limit=_SAMPLE)]
        except duckdb.Error as exc:
            return [], _duck_reason(exc)
    else:
        lines = f.log.head.split(b"\n")
        texts = lines[:-1] if len(f.log.head) >= 1 << 20 else lines  # a whole MiB: its last line may be cut
    out: list[dict] = []
    why = ""
    for text in texts:
        if not text.strip():
            continue
        rec = parse_json(text)
        if isinstance(rec, str):
            why = why or rec
            continue
        out.append(rec)
        if len(out) >= _SAMPLE:
            break
    return out, why


def _duck_reason(exc: Exception) -> str:
    text = str(exc).splitlines()[0][:200]
    return "not a log record: JSON nested too deeply" if "recursion depth" in text else f"cannot read: {text}"


def _columns_spec(paths: Iterable[str]) -> str | None:
    """read_json's `columns` for dotted paths, every leaf JSON; None when a path is also another's parent."""
    tree: dict = {}
    for path in paths:
        node = tree
        parts = path.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                return None
        if parts[-1] in node:
            return None
        node[parts[-1]] = "JSON"

    def struct(node: dict) -> str:
        return "STRUCT(" + ", ".join(f"{_q(k)} {v if v == 'JSON' else struct(v)}" for k, v in node.items()) + ")"

    return "{" + ", ".join(f"{_lit(k)}: {_lit(v if v == 'JSON' else struct(v))}" for k, v in tree.items()) + "}"


def _read_json(f: _File) -> None:
    ctx, log = f.ctx, f.log
    seen = TimeNotes()
    token = TIME_NOTES.set(seen)
    try:
        sample, why = _sample(f)
    finally:
        TIME_NOTES.reset(token)
    fmt, mapping = ctx.fmt, ctx.mapping
    if fmt in ("auto", "csv") or fmt in TRACE_FORMATS:
        detected = detect(sample) if fmt not in TRACE_FORMATS and not mapping else None
        if detected is None:
            keys = sorted({k for r in sample for k in r})
            picked = ctx.table_mapping(keys)
            if not mapping_complete(picked[1]):
                ctx.res.columns[f.label] = keys[:40]
                f.out.reject(
                    f.label, 0, wanted_column(picked[1], keys, ctx.map_hint) if sample else why or "no records"
                )
                return
            detected, mapping = picked
    else:
        detected = fmt
    ctx.res.formats[f.label] = detected
    unit = "record" if log.kind == ARRAY else "line"
    tabular = detected == "mapped" or detected in TRACE_FORMATS
    if tabular:
        if not mapping or not mapping_complete(mapping):
            f.out.reject(f.label, 0, f"the mapping must name {REQUIRED_HELP}")
            return
        ctx.res.mapping = dict(mapping)
        ctx.res.columns.setdefault(f.label, sorted({k for r in sample for k in r})[:40])
    used = {k: v for k, v in (mapping or {}).items() if v} if tabular else dict(_CHAT)
    reader = f.reader(detected, used if tabular else None)
    spec = None
    if detected == "openai_chat":
        spec = _columns_spec([*_CHAT.values(), "object"])
    elif tabular and _sql_ready(used):
        spec = _columns_spec(used.values())
    # DuckDB's JSON reader takes a key given twice silently: a file whose first records do that is read in Python,
    # which counts them for the note
    if f.policy.engine == "python" or spec is None or seen.twice:
        if log.kind == ARRAY:
            _python(f, ((n, reader.text(t.encode(), len(t))) for n, t in _array_texts(f)), unit)
        else:
            _python_text(f, reader, split.LINES)
        return
    fmt_arg = "array" if log.kind == ARRAY else "newline_delimited"

    def scan(lf: LogFile, attempt: int) -> str:
        limit = f.policy.max_line_bytes // 2  # DuckDB's JSON reader reads a line of up to twice this, then fails
        return (
            f"SELECT *, ordinality - 1 AS _place FROM read_json({_lit(str(lf.path))}, format = '{fmt_arg}', "
            f"columns = {spec}, ignore_errors = true, compression = '{lf.compression}', "
            f"maximum_object_size = {limit}) WITH ORDINALITY"
        )

    sources = {k: Source(".".join(_q(p) for p in v.split(".")), JSON) for k, v in used.items()}
    top = tuple(dict.fromkeys(_q(v.split(".")[0]) for v in [*used.values(), *(["object"] if not tabular else [])]))
    doubt = None if tabular else "coalesce(\"object\"->>'$', 'chat.completion') <> 'chat.completion'"
    mark = f.out.table.mark()
    got = _load(f, scan, sources, whole=top, doubt=doubt)
    if got is None:  # DuckDB cannot read it: every record in Python
        if log.kind == ARRAY:
            f.out.reject(f.label, 0, f"cannot read: {f.error}")
        else:
            _python_text(f, reader, split.LINES)
        return
    _sql_notes(f, got)
    if log.kind == ARRAY:
        wanted = {p for p, _ in got.places}
        _python(f, ((n, reader.text(t.encode(), len(t))) for n, t in _array_texts(f, wanted)), unit)
        f.out.n_rejected += got.n_bad - sum(1 for _, flag in got.places if flag == BAD)
    elif not _explain(f, got, reader, split.LINES, _rows_loaded(got)):
        f.out.table.rollback(mark)
        f.notes = TimeNotes()
        _python_text(f, reader, split.LINES)


def _array_texts(f: _File, wanted: set[int] | None = None, limit: int | None = None) -> Iterator[tuple[int, str]]:
    """(1-based record number, text) of a JSON array's elements (those at the 0-based `wanted` places; the first
    `limit`), by DuckDB."""
    con = f.out.table.con
    where = "" if wanted is None else f"WHERE ordinality - 1 IN ({', '.join(map(str, sorted(wanted))) or 'NULL'})"
    where += "" if limit is None else f" LIMIT {int(limit)}"
    rel = con.cursor().execute(
        f"SELECT ordinality, json::VARCHAR FROM read_json_objects({_lit(str(f.log.path))}, format = 'array', "
        f"ignore_errors = true, compression = '{f.log.compression}', maximum_object_size = {f.policy.max_line_bytes}) "
        f"WITH ORDINALITY {where}"
    )
    while batch := rel.fetchmany(4096):
        for n, text in batch:
            yield int(n), text or ""


def _read_document(f: _File) -> None:
    """A JSON document read whole (an OTLP export, a {"data": [...]} list): its records in Python."""
    from planner.logs import otel

    with split.open_bytes(f.log.path, f.log.compression) as fh:
        data = fh.read(f.cap + 1)
    if len(data) > f.cap:
        f.out.reject(f.label, 0, f"a JSON document over the {f.cap / 1e6:,.1f} MB size limit of one read whole")
        return
    try:
        doc = json.loads(data.removeprefix(split.BOM))
    except (ValueError, RecursionError) as exc:
        from planner.logs.fallback import json_error

        f.out.reject(f.label, 0, f"a JSON document that does not parse: {json_error(exc)}")
        return
    if isinstance(doc, dict) and isinstance(doc.get("data"), list) and not otel.looks_like(doc):
        doc = doc["data"]  # API list responses, e.g. Langfuse {"data": [...], "meta": {...}}
    records = doc if isinstance(doc, list) else [doc]
    dicts = [r for r in records if isinstance(r, dict)]
    fmt = f.ctx.fmt if f.ctx.fmt not in ("auto", "csv") else detect(dicts[:_SAMPLE])
    if fmt is None or fmt == "mapped" or fmt in TRACE_FORMATS:
        keys = sorted({k for r in dicts[:_SAMPLE] for k in r})
        name, mapping = f.ctx.table_mapping(keys) if fmt is None or not f.ctx.mapping else (fmt, dict(f.ctx.mapping))
        if not mapping_complete(mapping):
            f.ctx.res.columns[f.label] = keys[:40]
            f.out.reject(f.label, 0, wanted_column(mapping, keys, f.ctx.map_hint))
            return
        fmt, reader = name, f.reader(name, mapping)
        f.ctx.res.mapping = dict(mapping)
    else:
        reader = f.reader(fmt, None)
    f.ctx.res.formats[f.label] = fmt
    unit = "record" if isinstance(doc, list) else "line"

    def items() -> Iterator[tuple[int, Iterable[Row | str]]]:
        for n, rec in enumerate(records, 1):
            yield n, reader.record(rec) if isinstance(rec, dict) else [f"record {n} is not a JSON object"]

    _python(f, items(), unit)


# -- tables: CSV and Parquet -----------------------------------------------------------------------------------------


def _table(f: _File, columns: list[str], kind: str) -> tuple[str, dict[str, str]] | None:
    """(format name, mapping) of a table file, noted in the result; None having named why it cannot be read."""
    ctx = f.ctx
    ctx.res.columns[f.label] = columns
    repeated = sorted({c for c in columns if columns.count(c) > 1})
    if repeated:  # which one a mapping means cannot be told
        f.out.reject(
            f.label,
            0,
            f"a column name is repeated in the {'header' if kind == CSV else 'file'} ({', '.join(repeated)}): "
            "rename one",
        )
        return None
    fmt_name, used = ctx.table_mapping(columns)
    ctx.res.mapping = used
    ctx.res.formats[f.label] = kind if fmt_name == "mapped" else fmt_name
    problem = mapping_problem(used, columns, kind, ctx.map_hint)
    if problem is not None:
        f.out.reject(f.label, 0, problem)
        return None
    return fmt_name, {k: v for k, v in used.items() if v}


def _burstgpt(f: _File, fmt_name: str, mark: int) -> None:
    if fmt_name == "burstgpt" and (zero := f.out.table.zero_output_since(mark)):
        f.ctx.res.notes.append(
            f"{f.label}: {zero:,} request{'' if zero == 1 else 's'} with 0 response tokens "
            "(failed, in BurstGPT's convention) are kept as arrivals"
        )


def _read_csv(f: _File) -> None:
    ctx, before = f.ctx, f.out.n_rejected
    if len(f.log.head) >= 1 << 20 and b"\n" not in f.log.head:
        f.out.reject(f.label, 0, "its first line is over 1 MiB: not a CSV header (nor a log of another kind)")
        return
    header, delimiter = csv_header(f.log.head)
    f.delimiter = delimiter
    if not header or not any(header):
        f.out.reject(f.label, 0, "empty file")
        return
    record_fmt = ctx.fmt if ctx.fmt in EXTRACTORS else None
    if ctx.fmt == "auto" and not ctx.mapping and classify(dict.fromkeys(header, "")) in EXTRACTORS:
        record_fmt = classify(dict.fromkeys(header, ""))
    if record_fmt is not None:  # a record format saved as CSV (a LiteLLM spend-log export)
        ctx.res.columns[f.label], ctx.res.formats[f.label] = header, record_fmt
        _python_text(
            f,
            RecordReader(record_fmt, ctx.tz, header=header, delimiter=delimiter, limit=f.policy.max_line_bytes),
            split.CSV,
            True,
        )
        return
    got_table = _table(f, header, CSV)
    if got_table is None:
        return
    fmt_name, used = got_table
    reader = f.reader(fmt_name, used, dict.get, header=header, delimiter=delimiter)
    mark = f.out.table.mark()
    if f.policy.engine == "python" or not _sql_ready(used):
        _python_text(f, reader, split.CSV, True)
    else:
        names = "{" + ", ".join(f"{_lit(c)}: 'VARCHAR'" for c in header) + "}"

        limit = f.policy.max_line_bytes

        def scan(lf: LogFile, attempt: int) -> str:
            return (
                f"SELECT *, ordinality - 1 AS _place FROM read_csv({_lit(str(lf.path))}, columns = {names}, "
                f"header = true, auto_detect = false, delim = {_lit(delimiter)}, quote = '\"', escape = '\"', "
                f"strict_mode = true, ignore_errors = true, store_rejects = true, max_line_size = {limit}, "
                f"buffer_size = {2 * limit}, compression = '{lf.compression}') WITH ORDINALITY"
            )

        got = _load(f, scan, {k: Source(_q(v), TEXT) for k, v in used.items()})
        if got is None:  # DuckDB cannot read it (mixed line ends, say): every record in Python
            _python_text(f, reader, split.CSV, True)
        else:
            _sql_notes(f, got)
            if not _explain(f, got, reader, split.CSV, _rows_loaded(got)):
                f.out.table.rollback(mark)
                f.notes = TimeNotes()
                _python_text(f, reader, split.CSV, True)
    f.out.flush()
    if f.out.table.mark() == mark and f.out.n_rejected == before:
        f.out.reject(f.label, 0, f"a header ({', '.join(header[:6])}{' …' if len(header) > 6 else ''}) and no rows")
    _burstgpt(f, fmt_name, mark)


def _parquet_columns(f: _File) -> list[str] | None:
    """A Parquet file's top-level column names as its schema writes them (a repeated name twice), in order."""
    import duckdb

    try:
        rows = f.out.table.con.execute(
            f"SELECT name, num_children FROM parquet_schema({_lit(str(f.log.path))})"
        ).fetchall()
    except duckdb.Error as exc:
        f.out.reject(f.label, 0, f"not a readable Parquet file ({str(exc).splitlines()[0][:160]})")
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


def _parquet_records(f: _File, columns: Sequence[str], where: str = "") -> Iterator[tuple[int, dict]]:
    """(1-based row, record) of a Parquet file's rows (those `where` says), a batch at a time; times as ISO text."""
    cols = ", ".join(_q(c) for c in columns)
    rel = f.out.table.con.cursor().execute(
        f"SELECT file_row_number, {cols} FROM read_parquet({_lit(str(f.log.path))}, file_row_number = true) {where} "
        "ORDER BY file_row_number"
    )
    while batch := rel.fetchmany(4096):
        for values in batch:
            rec = {
                c: (v.isoformat() if hasattr(v, "isoformat") else v) for c, v in zip(columns, values[1:], strict=True)
            }
            yield int(values[0]) + 1, rec


def _read_parquet(f: _File) -> None:
    import duckdb

    columns = _parquet_columns(f)
    if columns is None:
        return
    got_table = _table(f, columns, PARQUET)
    if got_table is None:
        return
    fmt_name, used = got_table
    wanted = list(dict.fromkeys(used.values()))
    reader = f.reader(fmt_name, used, dict.get)
    mark = f.out.table.mark()
    if f.policy.engine == "python" or not _sql_ready(used):
        _python(f, ((n, reader.record(rec)) for n, rec in _parquet_records(f, wanted)), "row")
    else:
        path = _lit(str(f.log.path))
        try:
            types = dict(
                f.out.table.con.execute(
                    f"SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet({path}))"
                ).fetchall()
            )
        except duckdb.Error as exc:
            f.out.reject(f.label, 0, f"not a readable Parquet file ({str(exc).splitlines()[0][:160]})")
            return
        integer = (
            "TINYINT",
            "SMALLINT",
            "INTEGER",
            "BIGINT",
            "HUGEINT",
            "UTINYINT",
            "USMALLINT",
            "UINTEGER",
            "UBIGINT",
        )
        sources = {k: Source(_q(v), kind_of(types[v]), types[v] in integer) for k, v in used.items()}

        def scan(lf: LogFile, attempt: int) -> str:
            return (
                f"SELECT *, file_row_number AS _place FROM read_parquet({_lit(str(lf.path))}, file_row_number = true)"
            )

        got = _load(f, scan, sources)
        if got is None:
            f.out.reject(f.label, 0, f"cannot read: {f.error}")
            return
        _sql_notes(f, got)
        if got.places:
            rows = ", ".join(str(p) for p, _ in got.places)
            _python(
                f,
                (
                    (n, reader.record(rec))
                    for n, rec in _parquet_records(f, wanted, f"WHERE file_row_number IN ({rows})")
                ),
                "row",
            )
            f.out.n_rejected += got.n_bad - sum(1 for _, flag in got.places if flag == BAD)
    f.out.flush()
    _burstgpt(f, fmt_name, mark)


def json_records(
    source: str | Path | tuple[str, bytes], max_bytes: int | None = DEFAULT_MAX_BYTES
) -> tuple[str, Iterator[tuple[int, dict | str]]]:
    """A JSON Lines file's (or a JSON array's, or document's) numbered records, opened and split as read_logs
    opens and splits a file, an upload read in memory: (its name, an iterator of (line, or record number, and the
    record, or why the line is not one)). For readers of JSON records of their own (the prefix trace).

    Raises TooLarge (over max_bytes, or a likely bomb), ValueError (not a regular file, a corrupt stream, not
    JSON), OSError (cannot be read).
    """
    label = labels([source])[0]
    log = open_log(source, label, None, max_bytes, cap_files=True)
    if log.kind == EMPTY:
        raise ValueError(f"{label}: no records")
    if log.kind in (PARQUET, CSV):
        raise ValueError(f"{label}: not JSON: a JSON Lines file (or a JSON array) was expected")
    if log.kind == JSONL:
        found = split.records(log.path, log.compression, split.LINES, window=16 << 20, keep=(32 << 20) + 1)
        return label, ((r.line, too_long(32 << 20) if r.size > 32 << 20 else parse_json(r.text)) for r in found)
    with split.open_bytes(log.path, log.compression) as fh:
        data = fh.read().removeprefix(split.BOM)
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise ValueError(
            f"{label}: a JSON {'array' if log.kind == ARRAY else 'document'} that does not parse: {json_error(exc)}"
        ) from None
    items = doc if isinstance(doc, list) else [doc]
    return label, (
        (n, r if isinstance(r, dict) else f"record {n} is not a JSON object") for n, r in enumerate(items, 1)
    )


# -- the call --------------------------------------------------------------------------------------------------------


def _nothing_read(out: _Out) -> str:
    """One or two sentences for 'nothing could be read': the file-level reasons, or the first rejected lines."""
    whole = [r for r in out.rejected if r.line_no == 0]
    if whole and len(whole) == len(out.rejected):
        return "Nothing could be read: " + "; ".join(str(r) for r in whole[:3]) + "."
    first = "; ".join(str(r) for r in out.rejected[:3]) or "the files hold no records"
    return (
        f"Nothing could be read: {out.n_rejected:,} line{'' if out.n_rejected == 1 else 's'} rejected, first: {first}."
    )


def read_logs(
    sources: Sequence[str | Path | tuple[str, bytes]],
    fmt: str = "auto",
    mapping: Mapping[str, str] | None = None,
    tz: str = "UTC",
    max_bytes: int | None = None,
    *,
    tokenizer: TokenCounter | None = None,
    progress: Progress | None = None,
    start: str | None = None,
    cache_blocks: int = DEFAULT_CACHE_BLOCKS,
    sink: RequestTable | None = None,
    map_hint: str = MAP_HINT_CLI,
    policy: ReaderPolicy | None = None,
) -> LogParseResult:
    """Read request logs into one normalised frame, sorted by arrival (or, with a sink, into that table).

    sources: paths or (file name, bytes) pairs, each optionally gzip- or zstd-compressed. fmt: "auto" or one of
    planner.logs.formats.FORMAT_NAMES. mapping: canonical field → column (CSV, Parquet) or dotted path (JSON);
    see planner.logs.mapped. tz: the zone of timestamps written without one. max_bytes: the cap on what is held in
    memory: an upload's bytes (decompressed too) and a JSON document read whole (default
    planner.logs.DEFAULT_MAX_BYTES); files on disk stream past it. tokenizer: counts tokens when a log has text but no
    counts (default: a labelled estimate). progress: called with (fraction 0..1, message) as files are read.
    start: the date (YYYY-MM-DD[THH:MM], in `tz`) relative trace times count from (default
    planner.logs.traces.DEFAULT_START, noted in the result). cache_blocks: the prefix cache's size (blocks) under
    which cached tokens are derived from hash_ids. sink: the RequestTable the requests go to (`logs summarize`);
    the result's frame is then empty and `n_read` counts them. map_hint: how a message about a column it did not
    find says to map it (planner.logs.context.MAP_HINT_CLI or MAP_HINT_PAGE). policy: how files are read (default
    ReaderPolicy()).

    Raises LogFormatError when nothing parses (naming what was expected), ValueError for an unknown fmt or zone.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown log format {fmt!r}; one of {', '.join(FORMATS)}")
    zone(tz)
    policy = policy or ReaderPolicy()
    if start:
        start_ms(start, tz)  # a bad start date is the caller's error, before any file is read
    counter = tokenizer or TokenCounter()
    res = LogParseResult()
    con = None
    if sink is None:
        con = connect(keep_order=True, memory_limit=policy.memory_limit)
        sink = RequestTable(con)
    out = _Out(sink)
    ctx = ReadContext(fmt, mapping, tz, counter, start, int(cache_blocks), res, map_hint)
    folder = Path(tempfile.mkdtemp(prefix="read-", dir=spill_folder()))
    names = labels(sources)
    try:
        for k, (source, label) in enumerate(zip(sources, names, strict=True)):
            tick = None
            if progress:

                def tick(frac: float, _k=k, _label=label) -> None:
                    progress(min((_k + frac) / len(sources), 1.0), f"reading {_label}")

                tick(0.0)
            try:
                log = open_log(source, label, folder, max_bytes)
            except (TooLarge, ValueError, OSError) as exc:
                out.reject(
                    label, 0, str(exc) if not isinstance(exc, OSError) else f"cannot read: {exc.strerror or exc}"
                )
                continue
            sink.begin(label)
            f = _File(log, ctx, out, policy, folder, tick, cap=DEFAULT_MAX_BYTES if max_bytes is None else max_bytes)
            if log.kind == EMPTY:
                out.reject(label, 0, "empty file")
            elif log.kind == PARQUET:
                _read_parquet(f)
            elif log.kind == DOCUMENT:
                _read_document(f)
            elif log.kind == CSV or fmt == "csv":
                _read_csv(f)
            else:
                _read_json(f)
            out.flush()
            _say_notes(f)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if progress:
        progress(1.0, "summarising")
    order = {name: i for i, name in enumerate(names)}
    out.rejected.sort(key=lambda r: (order.get(r.source, len(order)), r.line_no))
    res.rejected, res.n_rejected, res.n_skipped = out.rejected, out.n_rejected, out.n_skipped
    if res.tokens_estimated or tokenizer is not None:
        res.token_counter = counter.label
    sink.flush()
    res.n_read = sink.n
    try:
        if not res.n_read:
            columns = sorted({c for cols in res.columns.values() for c in cols})
            raise LogFormatError(_nothing_read(out), columns=columns, rejected=out.rejected)
        if con is not None:
            res.requests = sink.frame()
    finally:
        if con is not None:
            con.close()
    return res
