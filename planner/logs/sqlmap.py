"""Map: a log's mapped fields → the request columns and a verdict for each row, in DuckDB SQL.

The one mapping of every file DuckDB reads: JSON Lines and JSON arrays (read_json, each mapped path typed as the
file's first records suggest), CSV (read_csv, every field text) and Parquet (read_parquet, typed columns). Each
field's source column is of a kind: TEXT, NUMBER, TIME (with a zone), WALL (a timestamp without one: read in the
log's zone) or OTHER; an `unsure` one's NULL may be a value DuckDB could not type (a JSON string where a number was
read): such a row is DOUBT, never a missing value. Values are
converted by the rule of planner.logs.records, in SQL: counts whole numbers 0–10⁹, arrivals 1970–2100 (epoch s, ms,
µs or ns told apart by magnitude, integers in integer maths; ISO 8601 text), timings finite 0–MAX_TIMING_MS.

Each row gets a `flag`: NULL read; ZONELESS, AMBIGUOUS (a wall time the zone's clock repeats or skips, given the
smaller UTC offset as records.epoch_ms gives it) or ZONED, read with its time noted; BAD, a value the rule refuses;
DOUBT, a value SQL leaves to Python (an unsure NULL, a time DuckDB does not parse the way Python does, a record that
did not parse). planner.logs.load names the BAD rows and has the Python record reader
(planner.logs.fallback) read or name the DOUBT ones: the reasons are always records.py's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from planner.logs.mapped import FIELDS
from planner.logs.records import MAX_EPOCH_MS, MAX_TIMING_MS, MAX_TOKENS

__all__ = [
    "AMBIGUOUS",
    "BAD",
    "DOUBT",
    "NUMBER",
    "OTHER",
    "SQL_FIELDS",
    "TEXT",
    "TIME",
    "WALL",
    "ZONED",
    "ZONELESS",
    "Source",
    "kind_of",
    "mapped_rows",
]

TEXT, NUMBER, TIME, WALL, OTHER = "text", "number", "time", "wall", "other"
ZONELESS, AMBIGUOUS, ZONED, BAD, DOUBT = 1, 2, 3, 8, 9
#: The fields SQL maps; a mapping with another (prompt or output text, hash_ids) is the Python reader's.
SQL_FIELDS = frozenset(FIELDS) - {"prompt_text", "output_text", "hash_ids"}
_INTEGER = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT")


def kind_of(duck_type: str) -> str:
    """The kind of a column of DuckDB type `duck_type` (as DESCRIBE names it)."""
    t = duck_type.upper()
    if t == "VARCHAR":
        return TEXT
    if t in _INTEGER or t.startswith("DECIMAL") or t in ("FLOAT", "DOUBLE", "REAL"):
        return NUMBER
    if t.startswith("TIMESTAMPTZ") or t.startswith("TIMESTAMP") and t.endswith("WITH TIME ZONE"):
        return TIME
    if t.startswith("TIMESTAMP") or t == "DATE":
        return WALL
    return OTHER


@dataclass(frozen=True)
class Source:
    """Where a field comes from: a SQL expression over the relation, its kind, whether it holds integers (NUMBER:
    an integer type; its epoch µs/ns are then divided exactly), and whether a NULL in it is unsure (DOUBT)."""

    sql: str
    kind: str
    integer: bool = False
    unsure: bool = False


@dataclass
class _Rows:
    """Derived columns, each computed once per row over the relation, never failing."""

    derived: list[tuple[str, str]] = field(default_factory=list)
    states: list[str] = field(default_factory=list)  # each 0 (fine), BAD or DOUBT

    def once(self, name: str, expr: str) -> str:
        self.derived.append((f"_m{name}", expr))  # _m_…: apart from the file's own column names
        return f"_m{name}"

    def over(self, relation: str) -> str:
        """The relation with the derived columns: one SELECT, each naming those before it (DuckDB's lateral column
        aliases)."""
        return f"SELECT *, {', '.join(f'{expr} AS {name}' for name, expr in self.derived)} FROM ({relation})"


def _missing(src: Source) -> str:
    return f"({src.sql} IS NULL OR {src.sql} = '')" if src.kind == TEXT else f"({src.sql} IS NULL)"


def _absent(src: Source, required: bool) -> int:
    """The state of a row where the field is NULL: DOUBT when unsure, else BAD when required, else fine."""
    return DOUBT if src.unsure else BAD if required else 0


def _true(src: Source, value: str) -> str:
    """An unsure number's 1, which DuckDB's JSON reader makes of true (Python's rule refuses it): DOUBT."""
    return f"WHEN {value} = 1 THEN {DOUBT} " if src.unsure else ""


def _number(rows: _Rows, name: str, src: Source) -> tuple[str, str]:
    """(a DOUBLE derived column: the value, NULL when it is not a number; the state when it is not one)."""
    if src.kind == TEXT:
        return rows.once(name, f"try_cast({src.sql} AS DOUBLE)"), _odd_text(src.sql)
    if src.kind == NUMBER:
        return rows.once(name, f"{src.sql}::DOUBLE"), str(BAD)
    return rows.once(name, "NULL::DOUBLE"), str(BAD)


def _odd_text(text: str) -> str:
    """The state of text DuckDB does not read as a number: BAD, unless Python might (digits beyond ASCII, `_`)."""
    return f"CASE WHEN regexp_matches({text}, '[^\\x20-\\x7e]|_') THEN {DOUBT} ELSE {BAD} END"


def _count(rows: _Rows, name: str, src: Source | None, required: bool) -> str:
    """A token count as a DOUBLE derived column (0 when absent and optional); its state appended."""
    if src is None:
        return "0::DOUBLE"
    value, odd = _number(rows, f"{name}_raw", src)
    missing = _missing(src)
    rows.states.append(
        f"CASE WHEN {missing} THEN {_absent(src, required)} WHEN {value} IS NULL THEN {odd} "
        f"WHEN isfinite({value}) AND {value} = floor({value}) AND {value} BETWEEN 0 AND {MAX_TOKENS} THEN 0 "
        f"ELSE {BAD} END"
    )
    return rows.once(name, f"CASE WHEN {missing} THEN 0 ELSE {value} END")


def _epoch(value: str, exact: str | None) -> str:
    """UTC epoch ms (DOUBLE) of an epoch number by its magnitude (s, ms, µs, ns); `exact`: the same as HUGEINT for
    integer maths past 10¹⁴ (as Python divides an int); NULL when not a time."""
    big = (
        f"(CASE WHEN {exact} < 100000000000000000 THEN {exact} // 1000 ELSE {exact} // 1000000 END)::DOUBLE"
        if exact
        else f"CASE WHEN {value} < 1e17 THEN floor({value} / 1000) ELSE floor({value} / 1e6) END"
    )
    return (
        f"CASE WHEN NOT isfinite({value}) OR {value} <= 0 THEN NULL "
        f"WHEN {value} < 1e11 THEN round_even({value} * 1000, 0) WHEN {value} < 1e14 THEN round_even({value}, 0) "
        f"ELSE {big} END"
    )


def _time(rows: _Rows, name: str, src: Source, required: bool, shifts: str) -> tuple[str, str]:
    """(UTC epoch ms as a DOUBLE derived column, NULL when absent; its note flag); its state appended.

    shifts: the local hours where the zone's clock repeats or skips ('' for none): only times in them are checked.
    """
    missing = _missing(src)
    note = "NULL"
    if src.kind == NUMBER:
        value, odd = _number(rows, f"{name}_num", src)
        ms = _epoch(value, f"{src.sql}::HUGEINT" if src.integer else None)
    elif src.kind == TEXT:
        ms, odd, note = _text_time(rows, name, src.sql, shifts)
    elif src.kind in (TIME, WALL):
        at = f"{src.sql}::TIMESTAMPTZ" if src.kind == TIME else f"{src.sql}::TIMESTAMP::TIMESTAMPTZ"
        ms = f"round_even(epoch_us({at}) / 1000.0, 0)"
        odd = str(BAD)
        note = _wall_note(src.sql, at, shifts) if src.kind == WALL else str(ZONED)
    else:
        ms, odd = "NULL::DOUBLE", str(BAD)
    value = rows.once(name, f"CASE WHEN {missing} THEN NULL ELSE {ms} END")
    rows.states.append(
        f"CASE WHEN {missing} THEN {_absent(src, required)} WHEN {value} IS NULL THEN {odd} "
        f"{_true(src, src.sql)}WHEN {value} > 0 AND {value} < {MAX_EPOCH_MS} THEN 0 ELSE {BAD} END"
    )
    return value, note


def _text_time(rows: _Rows, name: str, s: str, shifts: str) -> tuple[str, str, str]:
    """(epoch ms of a time written as text, the state when it is not one, its note flag): ISO 8601 (a time without
    a zone in the session's zone) or an epoch number.

    DuckDB reads some text Python's fromisoformat does not (a zone's name after the time, hour 24): such text, and
    text with white space around it, is DOUBT, left to Python. String functions only, no regular expression on a
    row that reads (a regular expression is ten times a cast).
    """
    iso = rows.once(f"{name}_iso", f"{s}[5] = '-' AND {s}[8] = '-'")
    plain = (
        f"({s}[-1] BETWEEN '0' AND '9' OR ends_with({s}, 'Z')) AND {s}[1] BETWEEN '0' AND '9' "
        f"AND NOT contains({s}, 'T24:') AND NOT contains({s}, ' 24:')"
    )
    at = rows.once(f"{name}_at", f"CASE WHEN {iso} AND {plain} THEN try_cast({s} AS TIMESTAMPTZ) END")
    num = rows.once(f"{name}_n", f"CASE WHEN NOT {iso} THEN try_cast({s} AS DOUBLE) END")
    epoch = _epoch(num, f"try_cast({s} AS HUGEINT)")
    ms = f"CASE WHEN {iso} THEN round_even(epoch_us({at}) / 1000.0, 0) ELSE {epoch} END"
    zoned = (
        f"CASE WHEN ends_with({s}, 'Z') OR contains({s}, '+') THEN true WHEN length({s}) > 10 "
        f"THEN regexp_matches({s}, '[0-9]-[0-9]{{2}}(:?[0-9]{{2}})?$') ELSE false END"
    )
    wall = f"CASE WHEN NOT {zoned} THEN {_wall_note(f'try_cast({s} AS TIMESTAMP)', at, shifts)} END"
    note = f"CASE WHEN {iso} THEN coalesce({wall}, {ZONED}) END"
    # text Python may read as a time where DuckDB does not: a comma before the fraction, ISO's basic form, spaces
    odd = f"CASE WHEN {iso} OR regexp_matches({s}, '^[0-9]{{8}}|^\\s|\\s$') THEN {DOUBT} ELSE {BAD} END"
    return ms, odd, note


def _wall_note(wall: str, at: str, shifts: str) -> str:
    """ZONELESS, or AMBIGUOUS for a wall time in an hour where the zone's clock repeats or skips and does so here
    (an hour earlier or half an hour earlier shows the same wall time, or the instant shows another)."""
    if not shifts:
        return str(ZONELESS)
    local = f"{at}::TIMESTAMP"
    odd = (
        f"(({at} - INTERVAL 1 HOUR)::TIMESTAMP = {local} OR ({at} - INTERVAL 30 MINUTE)::TIMESTAMP = {local} "
        f"OR {local} <> {wall})"
    )
    return f"CASE WHEN hour({wall}) IN ({shifts}) AND {odd} THEN {AMBIGUOUS} ELSE {ZONELESS} END"


def _timing(rows: _Rows, name: str, src: Source | None, scale: float) -> str | None:
    """A TTFT or duration in ms as a derived column (NULL when absent), or None when unmapped; its state appended."""
    if src is None:
        return None
    value, odd = _number(rows, f"{name}_raw", src)
    missing = _missing(src)
    rows.states.append(
        f"CASE WHEN {missing} THEN {_absent(src, False)} WHEN {value} IS NULL THEN {odd} WHEN isfinite({value}) "
        f"AND {value} >= 0 AND {value} * {scale} <= {MAX_TIMING_MS} THEN 0 ELSE {BAD} END"
    )
    return rows.once(name, f"CASE WHEN {missing} THEN NULL ELSE {value} * {scale} END")


def _gap(rows: _Rows, name: str, at: str, ts: str) -> str:
    """A timing from an end time: at − ts, its state appended (not before the arrival, at most a week)."""
    gap = rows.once(name, f"{at} - {ts}")
    rows.states.append(f"CASE WHEN {gap} IS NULL THEN 0 WHEN {gap} BETWEEN 0 AND {MAX_TIMING_MS} THEN 0 ELSE {BAD} END")
    return gap


def mapped_rows(
    sources: Mapping[str, Source],
    relation: str,
    *,
    start_ms: int = 0,
    shifts: str = "",
    whole: tuple[str, ...] = (),
    doubt: str | None = None,
) -> str:
    """SQL: the relation's rows as ts_ms, model, prompt_tokens, cached_tokens, output_tokens, ttft_ms, duration_ms
    and flag, under the mapping given as {field: Source} (SQL_FIELDS only); on a row flagged BAD or DOUBT every
    column is NULL but the flag (planner.logs.load places such a row by its row id).

    start_ms: what relative times count from. shifts: planner.logs.records.shift_hours of the session's zone. whole:
    columns that are all NULL only on a record DuckDB did not parse (a JSON line): such a row is DOUBT. doubt: a
    condition more that makes a row DOUBT (the chat format's records of another kind).
    """
    rows = _Rows()
    notes: list[str] = []
    if "ts" in sources:
        ts, note = _time(rows, "_ts", sources["ts"], True, shifts)
        notes.append(note)
    else:
        unit = "ts_relative_s" if "ts_relative_s" in sources else "ts_relative_ms"
        value, odd = _number(rows, "_rel", sources[unit])
        scale = 1000.0 if unit == "ts_relative_s" else 1.0
        rows.states.append(
            f"CASE WHEN {_missing(sources[unit])} THEN {_absent(sources[unit], True)} WHEN {value} IS NULL THEN {odd} "
            f"{_true(sources[unit], value)}"
            f"WHEN isfinite({value}) AND {value} >= 0 AND {value} * {scale} < {MAX_EPOCH_MS} THEN 0 ELSE {BAD} END"
        )
        ts = rows.once("_ts", f"CASE WHEN isfinite({value}) THEN {start_ms} + round_even({value} * {scale}, 0) END")
        rows.states.append(f"CASE WHEN {ts} > 0 AND {ts} < {MAX_EPOCH_MS} THEN 0 ELSE {BAD} END")
    cached = _count(rows, "_cached", sources.get("cached_tokens"), False)
    if "prompt_tokens" in sources:
        prompt = _count(rows, "_prompt", sources["prompt_tokens"], True)
    else:
        uncached = _count(rows, "_uncached", sources["prompt_tokens_uncached"], True)
        prompt = rows.once("_prompt", f"{uncached} + {cached}")
    rows.states.append(f"CASE WHEN {cached} <= {prompt} THEN 0 ELSE {BAD} END")
    output = _count(rows, "_output", sources.get("output_tokens"), False)
    timings = []
    for ms, s, at in (("ttft_ms", "ttft_s", "first_token_time"), ("duration_ms", "duration_s", "end_time")):
        got = _timing(rows, f"_{ms}", sources.get(ms), 1.0) or _timing(rows, f"_{s}", sources.get(s), 1000.0)
        if got is None and at in sources:
            end, note = _time(rows, f"_{at}", sources[at], False, shifts)
            got = _gap(rows, f"_{ms}_gap", end, ts)
        timings.append(got or "NULL::DOUBLE")
    model = "''"
    if "model" in sources:
        src = sources["model"]
        if src.kind in (TEXT, NUMBER):
            model = f"coalesce({src.sql}::VARCHAR, '')"
        else:
            rows.states.append(f"CASE WHEN {src.sql} IS NULL THEN 0 ELSE {DOUBT} END")
    if whole:
        rows.states.append(f"CASE WHEN {' AND '.join(f'{c} IS NULL' for c in whole)} THEN {DOUBT} ELSE 0 END")
    if doubt:
        rows.states.append(f"CASE WHEN {doubt} THEN {DOUBT} ELSE 0 END")
    state = rows.once("_state", f"greatest({', '.join(f'coalesce({s}, {BAD})' for s in rows.states)})")
    flag = f"CASE WHEN {state} > 0 THEN {state} ELSE {notes[0] if notes else 'NULL'} END"
    ok = f"{state} = 0"
    counts = ((prompt, "prompt_tokens"), (cached, "cached_tokens"), (output, "output_tokens"))
    out = [
        f"CASE WHEN {ok} THEN {ts}::BIGINT END AS ts_ms",
        f"CASE WHEN {ok} THEN {model} END AS model",
        *(f"CASE WHEN {ok} THEN {c}::BIGINT END AS {n}" for c, n in counts),
        f"CASE WHEN {ok} THEN {timings[0]} END AS ttft_ms",
        f"CASE WHEN {ok} THEN {timings[1]} END AS duration_ms",
        f"({flag})::TINYINT AS flag",
    ]
    return f"SELECT {', '.join(out)} FROM ({rows.over(relation)})"
