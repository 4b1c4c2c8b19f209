"""JSON logs: JSON Lines, JSON arrays and JSON documents, through the pipeline of planner.logs.read.

A JSON Lines file or a JSON array whose format SQL maps (OpenAI chat completions, a table's mapping by dotted paths)
is read by DuckDB's JSON reader (each mapped value as JSON, converted by planner.logs.sqlmap); the records it does
not read, and every record of the other formats, go to the Python record reader by their text. A JSON document (an
OTLP export, a {"data": [...]} list) is read whole in Python, under the size cap. `json_records` opens and splits a
JSON file as read_logs does, for a reader of JSON records of its own (the prefix trace).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from planner.logs import split
from planner.logs.context import (
    TRACE_FORMATS,
    wanted_column,
)
from planner.logs.fallback import json_error, parse_json, too_long
from planner.logs.formats import detect
from planner.logs.mapped import REQUIRED_HELP, mapping_complete
from planner.logs.opening import (
    ARRAY,
    CSV,
    DEFAULT_MAX_BYTES,
    EMPTY,
    JSONL,
    PARQUET,
    LogFile,
    labels,
    open_log,
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
from planner.logs.records import TIME_NOTES, Row, TimeNotes, dig
from planner.logs.sqlmap import BAD, NUMBER, TEXT, Source
from planner.logs.stream import open_bytes

__all__ = ["json_records", "read_document", "read_json"]

_SAMPLE = 200  # records a format is detected from
_CHAT = {
    "ts": "created",
    "model": "model",
    "prompt_tokens": "usage.prompt_tokens",
    "cached_tokens": "usage.prompt_tokens_details.cached_tokens",
    "output_tokens": "usage.completion_tokens",
}


def _sample(f: FileRead) -> tuple[list[dict], str]:
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
        rec = parse_json(text.encode() if isinstance(text, str) else text)
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


_REQUIRED = ("ts", "ts_relative_s", "ts_relative_ms", "prompt_tokens", "prompt_tokens_uncached")


def _typed(used: Mapping[str, str], sample: list[dict]) -> dict[str, tuple[str, Source]]:
    """{field: (DuckDB type, Source)} of each mapped path: an arrival or relative time the sample writes as numbers
    read as one (BIGINT for whole numbers, else DOUBLE), unsure (a NULL may be a value of another type, the number 1
    may be JSON's true: the Python reader decides); every other field as text (VARCHAR: a JSON number as its text, a
    string as itself, true as 'true'), converted in SQL."""
    out = {}
    for name, path in used.items():
        values = [v for r in sample if (v := dig(r, path)) is not None]
        numbers = bool(values) and all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
        sql = ".".join(quoted(p) for p in path.split("."))
        if name in ("ts", "ts_relative_s", "ts_relative_ms") and numbers:
            whole = all(isinstance(v, int) for v in values)
            out[name] = ("BIGINT" if whole else "DOUBLE", Source(sql, NUMBER, whole, unsure=True))
        else:
            out[name] = ("VARCHAR", Source(sql, TEXT))
    return out


def _columns_spec(types: Mapping[str, str]) -> str | None:
    """read_json's `columns` for {dotted path: DuckDB type}; None when a path is also another's parent."""
    tree: dict = {}
    for path, kind in types.items():
        node = tree
        parts = path.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                return None
        if parts[-1] in node:
            return None
        node[parts[-1]] = kind

    def struct(node: dict) -> str:
        return (
            "STRUCT("
            + ", ".join(f"{quoted(k)} {v if isinstance(v, str) else struct(v)}" for k, v in node.items())
            + ")"
        )

    return (
        "{"
        + ", ".join(f"{literal(k)}: {literal(v if isinstance(v, str) else struct(v))}" for k, v in tree.items())
        + "}"
    )


def read_json(f: FileRead) -> None:
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
    spec = typed = None
    if detected == "openai_chat" or tabular and sql_ready(used):
        typed = _typed(used, sample)
        paths = {used[n]: t for n, (t, _) in typed.items()} | ({} if tabular else {"object": "VARCHAR"})
        spec = _columns_spec(paths)
    # DuckDB's JSON reader takes a key given twice silently: a file whose first records do that is read in Python,
    # which counts them for the note
    if f.policy.engine == "python" or spec is None or seen.twice:
        if log.kind == ARRAY:
            read_in_python(f, ((n, reader.text(t.encode(), len(t))) for n, t in _array_texts(f)), unit)
        else:
            read_text_in_python(f, reader, split.LINES)
        return
    fmt_arg = "array" if log.kind == ARRAY else "newline_delimited"

    def scan(lf: LogFile, attempt: int) -> str:
        limit = f.line_limit // 2  # DuckDB's JSON reader reads a line of up to twice this, then fails
        return (
            f"read_json({literal(str(lf.path))}, format = '{fmt_arg}', columns = {spec}, ignore_errors = true, "
            f"compression = '{lf.compression}', maximum_object_size = {limit})"
        )

    sources = {n: src for n, (_, src) in (typed or {}).items()}
    top = tuple(dict.fromkeys(quoted(v.split(".")[0]) for v in [*used.values(), *(["object"] if not tabular else [])]))
    doubt = None if tabular else "coalesce(\"object\", 'chat.completion') <> 'chat.completion'"
    mark = f.out.table.mark()
    got = load_file(f, scan, sources, whole=top, doubt=doubt)
    if got is None:  # DuckDB cannot read it: every record in Python
        if log.kind == ARRAY:
            f.out.reject(f.label, 0, f"cannot read: {f.error}")
        else:
            read_text_in_python(f, reader, split.LINES)
        return
    note_sql(f, got)
    if log.kind == ARRAY:
        wanted = {p for p, _ in got.places}
        read_in_python(f, ((n, reader.text(t.encode(), len(t))) for n, t in _array_texts(f, wanted)), unit)
        f.out.n_rejected += got.n_bad - sum(1 for _, flag in got.places if flag == BAD)
    elif not explain(f, got, reader, split.LINES, rows_loaded(got)):
        f.out.table.rollback(mark)
        f.notes = TimeNotes()
        read_text_in_python(f, reader, split.LINES)


def _array_texts(f: FileRead, wanted: set[int] | None = None, limit: int | None = None) -> Iterator[tuple[int, str]]:
    """(1-based record number, text) of a JSON array's elements (those at the 0-based `wanted` places; the first
    `limit`), by DuckDB."""
    con = f.out.table.con
    where = "" if wanted is None else f"WHERE ordinality - 1 IN ({', '.join(map(str, sorted(wanted))) or 'NULL'})"
    where += "" if limit is None else f" LIMIT {int(limit)}"
    rel = con.cursor().execute(
        f"SELECT ordinality, json::VARCHAR FROM read_json_objects({literal(str(f.log.path))}, format = 'array', "
        f"ignore_errors = true, compression = '{f.log.compression}', maximum_object_size = {f.line_limit // 2}) "
        f"WITH ORDINALITY {where}"
    )
    while batch := rel.fetchmany(4096):
        for n, text in batch:
            yield int(n), text or ""


def read_document(f: FileRead) -> None:
    """A JSON document read whole (an OTLP export, a {"data": [...]} list): its records in Python."""
    from planner.logs import otel

    with open_bytes(f.log.path, f.log.compression) as fh:
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

    read_in_python(f, items(), unit)


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
    with open_bytes(log.path, log.compression) as fh:
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
