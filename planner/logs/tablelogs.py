"""Table logs: CSV and Parquet under a column mapping, through the pipeline of planner.logs.read.

A CSV file's fields are read as text by DuckDB's CSV reader (RFC 4180, strict: a record with the wrong field count
is refused with its place) and converted by planner.logs.sqlmap; a Parquet file's typed columns likewise (a text
column cast in SQL). A repeated column name refuses the file. A record format saved as CSV (a LiteLLM export), and
a mapping SQL does not map (prompt text to count, hash_ids to replay), go to the Python record reader.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence

from planner.logs import split
from planner.logs.context import (
    mapping_problem,
)
from planner.logs.fallback import RecordReader
from planner.logs.formats import EXTRACTORS, classify
from planner.logs.opening import (
    CSV,
    PARQUET,
    LogFile,
    csv_header,
)
from planner.logs.readfile import (
    FileRead,
    explain,
    literal,
    load_file,
    note_sql,
    quoted,
    read_in_python,
    read_text_in_python,
    rows_loaded,
    sql_ready,
)
from planner.logs.records import TimeNotes
from planner.logs.sqlmap import BAD, NUMBER, TEXT, TIME, WALL, Source, kind_of

__all__ = ["read_csv", "read_parquet"]


def _table(f: FileRead, columns: list[str], kind: str) -> tuple[str, dict[str, str]] | None:
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


def _burstgpt(f: FileRead, fmt_name: str, mark: int) -> None:
    if fmt_name == "burstgpt" and (zero := f.out.table.zero_output_since(mark)):
        f.ctx.res.notes.append(
            f"{f.label}: {zero:,} request{'' if zero == 1 else 's'} with 0 response tokens "
            "(failed, in BurstGPT's convention) are kept as arrivals"
        )


def read_csv(f: FileRead) -> None:
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
        read_text_in_python(
            f,
            RecordReader(record_fmt, ctx.tz, header=header, delimiter=delimiter, limit=f.line_limit),
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
    if f.policy.engine == "python" or not sql_ready(used):
        read_text_in_python(f, reader, split.CSV, True)
    else:
        types, sources, when = _csv_types(f, header, delimiter, used)
        names = "{" + ", ".join(f"{literal(c)}: {literal(types.get(c, 'VARCHAR'))}" for c in header) + "}"
        limit = f.line_limit

        def scan(lf: LogFile, attempt: int) -> str:
            return (
                f"read_csv({literal(str(lf.path))}, columns = {names}, header = true, auto_detect = false, "
                f"delim = {literal(delimiter)}, quote = '\"', escape = '\"', strict_mode = true, ignore_errors = true, "
                f"store_rejects = true, max_line_size = {limit}, buffer_size = {8 * limit}, "
                f"compression = '{lf.compression}'{when})"
            )

        got = load_file(f, scan, sources)
        if got is None:  # DuckDB cannot read it (mixed line ends, say): every record in Python
            read_text_in_python(f, reader, split.CSV, True)
        else:
            note_sql(f, got)
            if not explain(f, got, reader, split.CSV, rows_loaded(got)):
                f.out.table.rollback(mark)
                f.notes = TimeNotes()
                read_text_in_python(f, reader, split.CSV, True)
    f.out.flush()
    if f.out.table.mark() == mark and f.out.n_rejected == before:
        f.out.reject(f.label, 0, f"a header ({', '.join(header[:6])}{' …' if len(header) > 6 else ''}) and no rows")
    _burstgpt(f, fmt_name, mark)


_NUMERIC = frozenset(
    ("prompt_tokens", "prompt_tokens_uncached", "cached_tokens", "output_tokens", "ttft_ms", "ttft_s")
    + ("duration_ms", "duration_s", "ts_relative_s", "ts_relative_ms")
)
_NUMBER_TEXT = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?")
# DuckDB strptime formats an arrival column may be written in, and how the time it gives is placed: "wall" a time in
# the log's zone, "utc" a time written with Z, "zoned" one with its offset (%z, a TIMESTAMPTZ)
_TIME_FORMATS = tuple(
    (date + sep + clock + frac + zone, place)
    for zone, place in (("", "wall"), ("Z", "utc"), ("%z", "zoned"))
    for date in ("%Y-%m-%d",)
    for sep in (" ", "T")
    for clock in ("%H:%M:%S",)
    for frac in (".%f", "")
)


def _csv_types(
    f: FileRead, header: list[str], delimiter: str, used: Mapping[str, str]
) -> tuple[dict[str, str], dict[str, Source], str]:
    """({column: DuckDB type}, {field: Source}, the read_csv option for times) of a CSV file under a mapping: a
    column the file's first records write as plain numbers read as DOUBLE, an arrival column in one strptime format
    as a timestamp (DuckDB's CSV reader parses these far faster than text converted in SQL); any other as text. A
    value that does not fit its column's type makes DuckDB's CSV reader refuse the record, which the Python record
    reader then reads or names, so the rule stays records.py's."""
    from planner.logs.fallback import csv_fields

    rows = []
    for line in f.log.head.split(b"\n")[1:-1][:200]:
        values = csv_fields(line.rstrip(b"\r"), delimiter)
        if not isinstance(values, str) and len(values) == len(header):
            rows.append(dict(zip(header, values, strict=True)))
    types: dict[str, str] = {}
    sources: dict[str, Source] = {}
    when = ""
    for name, col in used.items():
        values = [r[col] for r in rows if r[col] != ""]
        sources[name] = Source(quoted(col), TEXT)
        if not values or types.get(col, "VARCHAR") != "VARCHAR":
            continue
        if name in _NUMERIC and all(_NUMBER_TEXT.fullmatch(v) for v in values):
            types[col], sources[name] = "DOUBLE", Source(quoted(col), NUMBER)
        elif name == "ts" and not when and (found := _time_format(f, values)) is not None:
            fmt, place = found
            types[col] = "TIMESTAMPTZ" if place == "zoned" else "TIMESTAMP"
            sql = f"timezone('UTC', {quoted(col)})" if place == "utc" else quoted(col)
            sources[name] = Source(sql, WALL if place == "wall" else TIME)
            when = f", timestampformat = {literal(fmt)}"
    return types, sources, when


def _time_format(f: FileRead, values: list[str]) -> tuple[str, str] | None:
    """(the first strptime format every sampled time fits, how its times are placed), or None: one query."""
    sample = "[" + ", ".join(literal(v) for v in values) + "]"
    checks = ", ".join(f"bool_and(try_strptime(v, {literal(fmt)}) IS NOT NULL)" for fmt, _ in _TIME_FORMATS)
    fits = f.out.table.con.execute(f"SELECT {checks} FROM unnest({sample}) t(v)").fetchall()[0]
    return next((found for found, ok in zip(_TIME_FORMATS, fits, strict=True) if ok), None)


def _parquet_columns(f: FileRead) -> list[str] | None:
    """A Parquet file's top-level column names as its schema writes them (a repeated name twice), in order."""
    import duckdb

    try:
        rows = f.out.table.con.execute(
            f"SELECT name, num_children FROM parquet_schema({literal(str(f.log.path))})"
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


def _parquet_records(f: FileRead, columns: Sequence[str], where: str = "") -> Iterator[tuple[int, dict]]:
    """(1-based row, record) of a Parquet file's rows (those `where` says), a batch at a time; times as ISO text."""
    cols = ", ".join(quoted(c) for c in columns)
    rel = f.out.table.con.cursor().execute(
        f"SELECT file_row_number, {cols} FROM read_parquet({literal(str(f.log.path))}, file_row_number = true) {where} "
        "ORDER BY file_row_number"
    )
    while batch := rel.fetchmany(4096):
        for values in batch:
            rec = {
                c: (v.isoformat() if hasattr(v, "isoformat") else v) for c, v in zip(columns, values[1:], strict=True)
            }
            yield int(values[0]) + 1, rec


def read_parquet(f: FileRead) -> None:
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
    if f.policy.engine == "python" or not sql_ready(used):
        read_in_python(f, ((n, reader.record(rec)) for n, rec in _parquet_records(f, wanted)), "row")
    else:
        path = literal(str(f.log.path))
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
        sources = {k: Source(quoted(v), kind_of(types[v]), types[v] in integer) for k, v in used.items()}

        def scan(lf: LogFile, attempt: int) -> str:
            return f"read_parquet({literal(str(lf.path))})"

        got = load_file(f, scan, sources)
        if got is None:
            f.out.reject(f.label, 0, f"cannot read: {f.error}")
            return
        note_sql(f, got)
        if got.places:
            rows = ", ".join(str(p) for p, _ in got.places)
            read_in_python(
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
