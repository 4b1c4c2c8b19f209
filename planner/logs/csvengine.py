"""A CSV file read by the engine (DuckDB): the rows it vouches for inserted there in one pass, every other line named.

Each column a row needs is read as text and converted in SQL (try_cast), so DuckDB's CSV layer refuses only the
lines it cannot split (a wrong field count, as a malformed or a truncated line has; invalid UTF-8), and a value
that does not convert or fails a check makes a row the engine does not vouch for. Both come back to Python with
their text, and the row reader reads or names them exactly as reading the file row by row would.

Clean files take one INSERT. A file with rows the engine does not vouch for is read again with each row's place
(WITH ORDINALITY) into a staging table: its good rows are inserted from there and only the others come back. A
place or a DuckDB line number is the file's line only when every record is one line; whenever a line has to be
named, the file's lines are counted to prove it, and if they do not add up (a quoted field holding a line break)
nothing is kept and the caller reads the file its slower way.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from planner.logs.csvfile import NOT_UTF8, fields
from planner.logs.duckpath import Doubt, csv_scan, line_counts, physical_lines
from planner.logs.sqlmap import RowSelect

__all__ = ["RowSql", "insert_csv"]

_REFUSED = "_csv_refused"  # the rejects table of the engine's CSV scans
_DOUBT = "'a row the engine does not vouch for'"


@dataclass(frozen=True)
class RowSql:
    """How the engine makes a request row of a CSV record: `rows` (planner.logs.sqlmap) over the needed
    `columns`, those in `casts` converted from text to their DuckDB type."""

    rows: RowSelect
    casts: Mapping[str, str]
    columns: tuple[str, ...]  # every column rows reads, as the header names them


def _q(column: str) -> str:
    return '"' + column.replace('"', '""') + '"'


def _typed(rows: RowSql, scan: str, ordinality: bool) -> tuple[str, str, str]:
    """(the typed relation over the scan, the full check, the row's text as a JSON object of its columns)."""
    raw = {c: f"__raw_{i}" for i, c in enumerate(rows.columns)}
    cols = [f"{_q(c)} AS {raw[c]}" for c in rows.columns]
    cols += [f"try_cast({_q(c)} AS {rows.casts[c]}) AS {_q(c)}" if c in rows.casts else _q(c) for c in rows.columns]
    place = "ordinality - 1 AS place, " if ordinality else ""
    relation = rows.rows.over(f"SELECT {place}{', '.join(cols)} FROM {scan}{' WITH ORDINALITY' if ordinality else ''}")
    converted = [f"({raw[c]} IS NULL OR {_q(c)} IS NOT NULL)" for c in rows.columns if c in rows.casts]
    ok = " AND ".join([f"({rows.rows.ok})", *converted])
    text = "json_object(" + ", ".join(f"'{c.replace(chr(39), chr(39) * 2)}', {raw[c]}" for c in rows.columns) + ")"
    return relation, ok, text


@dataclass
class EngineRead:
    """What insert_csv did: rows inserted by the engine, and the lines Python read or named (line order)."""

    inserted: int
    named: list[tuple[int, list[str] | str]]  # (file line, the record's fields in header order, or a reason)


def insert_csv(
    con,
    table: str,
    path: Path,
    header: list[str],
    delimiter: str,
    rows: RowSql,
    tz: str,
    rollback: Callable[[], object],
) -> EngineRead | None:
    """Insert a CSV file's rows into `table` (planner.logs.engine's columns) on `con`; None (nothing kept, having
    called rollback() for what was inserted) when the engine cannot vouch for where its lines are."""
    import duckdb

    try:
        with duckdb.connect() as probe:  # only to check DuckDB reads our header
            scan, params, _ = csv_scan(probe, path, header, delimiter, {}, tz, _REFUSED, as_text=True)
    except (Doubt, duckdb.Error, OSError):
        return None
    try:
        con.execute("SET TimeZone = '" + tz.replace("'", "''") + "'")  # times without a zone are in it
        _drop(con)
        relation, ok, _ = _typed(rows, scan, ordinality=False)
        inserted = _run(
            con,
            f"INSERT INTO {table} SELECT {rows.rows.select} FROM ({relation}) "
            f"WHERE CASE WHEN {ok} THEN true ELSE error({_DOUBT}) END",
            params,
        )
        staged: list[tuple[int, str]] = []
    except Doubt:
        try:
            _drop(con)
            inserted, staged = _staged(con, table, rows, scan, params)
        except Doubt:
            rollback()
            return None
    refused = _refused(con)
    if not refused and not staged:
        return EngineRead(inserted, [])
    try:
        lines, filled = line_counts(path)
    except Doubt:
        lines = filled = -1
    if filled != 1 + inserted + len(staged) + len(refused) or (staged and lines != filled):
        rollback()  # a record spans lines (or blank lines move the places): the places are not lines
        return None
    named: list[tuple[int, list[str] | str]] = []
    for line, kind, text in refused:
        # in a CRLF file DuckDB's copy of a refused line starts with the LF of the line before it
        refused_line = text.lstrip("\r\n").encode()
        named.append((line, NOT_UTF8 if kind == "INVALID ENCODING" else fields(refused_line, delimiter)))
    # the header is line 1: the places count the records after it
    at_lines = physical_lines([place for place, _ in staged], [1] + [line for line, _, _ in refused])
    for line, (_, record) in zip(at_lines, staged, strict=True):
        values = json.loads(record)
        named.append((line, [values.get(c) or "" for c in header]))
    named.sort(key=lambda item: item[0])
    return EngineRead(inserted, named)


def _run(con, sql: str, params: dict) -> int:
    import duckdb

    try:
        return int(con.execute(sql, params).fetchall()[0][0])
    except (duckdb.Error, OSError) as exc:
        raise Doubt(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None


def _staged(con, table: str, rows: RowSql, scan: str, params: dict) -> tuple[int, list[tuple[int, str]]]:
    """The file read again with each row's place: (rows inserted, (place, text) of each row left to Python)."""
    import duckdb

    relation, ok, text = _typed(rows, scan, ordinality=True)
    try:
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE _staged AS SELECT *, {ok} AS ok FROM ({relation})",
            params,
        )
        inserted = _run(con, f"INSERT INTO {table} SELECT {rows.rows.select} FROM _staged WHERE ok", {})
        left = con.execute(f"SELECT place, {text} FROM _staged WHERE NOT ok ORDER BY place").fetchall()
    except duckdb.Error as exc:
        raise Doubt(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    finally:
        con.execute("DROP TABLE IF EXISTS _staged")
    return inserted, [(int(place), str(record)) for place, record in left]


def _drop(con) -> None:
    con.execute(f"DROP TABLE IF EXISTS {_REFUSED}; DROP TABLE IF EXISTS {_REFUSED}_scans")


def _refused(con) -> list[tuple[int, str, str]]:
    """(line, DuckDB's error type, the line's text) of each line the scan refused (one row per field there)."""
    there = con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = $t", {"t": _REFUSED})
    if not there.fetchall()[0][0]:
        return []
    got = con.execute(
        f"SELECT line, any_value(error_type::VARCHAR), any_value(csv_line) FROM {_REFUSED} GROUP BY line ORDER BY line"
    ).fetchall()
    _drop(con)
    return [(int(line), str(kind), str(text or "")) for line, kind, text in got]
