"""Out-of-core reading with DuckDB: OpenAI chat-completion JSON Lines, and large mapped CSV files (plain, .gz, .zst).

DuckDB parses the file in parallel and streams the five needed fields back in record batches, so
only the numeric columns (about 40 bytes a request) are ever held, whatever the file's size: a
10 M-request log of several GB becomes ~0.4 GB of arrays. A chat JSON Lines file is read by DuckDB's JSON
reader: whole when it vouches for every row (the fast tier); else with ignore_errors (the tolerant tier), its
rows being the file's non-blank lines, so the few it does not vouch for (malformed, a count that is not a whole
number or out of range, a non-chat record, a truncated last line, invalid UTF-8, a line over 16 MB) are found
by their places in one pass over the file's bytes (json_row_lines) and only they come back as text, in line
order, for the line-by-line reader to read or name. Where the rows cannot be mapped to lines, every line is
accounted for in SQL as text (the line-accounted tier; the CSV layer's refusals named from its rejects table).
No size cap: one bad line costs one line.
A large mapped CSV is read the same way: the rows DuckDB cannot type are named from its rejects table's
lines, the others it leaves out are returned by place, for the row reader to name.

Progress moves by bytes: rows read × the sampled bytes per line, over the file's (estimated
decompressed) size.

Over 400 lines: the DuckDB readers share one connection policy (memory cap, spill folder, line accounting) and the SQL
fragments that prove line numbers.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from planner.errors import PlannerError
from planner.lazy import lazy_module
from planner.logs.csvfile import NOT_UTF8
from planner.logs.json_lines import MAX_LINE_BYTES, json_row_lines, tail_is_cut
from planner.logs.json_lines import compression as _compression
from planner.logs.records import MAX_EPOCH_MS, MAX_TOKENS, Row

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
else:  # imported on first use: `logs summarize` reads through DuckDB alone
    np, pd = lazy_module("numpy"), lazy_module("pandas")

__all__ = [
    "Doubt",
    "batch_frame",
    "chat_batches",
    "connect",
    "column_types",
    "csv_scan",
    "explain_found",
    "explain_lines",
    "insert_chat",
    "insert_chat_tolerant",
    "iter_chat_frames",
    "iter_mapped_csv",
    "json_row_lines",
    "line_counts",
    "physical_lines",
    "read_chat_jsonl",
    "scan_chat",
    "sample_head",
    "tail_is_cut",
]

_BATCH_ROWS = 262_144

# Each line as text (blank lines kept as NULL, so positions count physical lines; a UTF-8 BOM is dropped).
# Lines the CSV layer cannot hold (invalid UTF-8, over MAX_LINE_BYTES) go to its rejects table, with their line.
_LINES = (
    "read_csv($path, columns = {'j': 'VARCHAR'}, header = false, delim = '\\x01', quote = '', escape = '', "
    "auto_detect = false, strict_mode = false, ignore_errors = true, store_rejects = true, "
    f"max_line_size = {MAX_LINE_BYTES}, buffer_size = {2 * MAX_LINE_BYTES}, compression = $compression)"
)
# A record with every field present parses through one strict transform; the others (a missing `object`,
# `model` or cached count) through json_extract with each value's JSON type checked. A line that passes
# neither, or whose values are out of range, comes back as text for the line-by-line reader to explain.
_STRICT = (
    '{"object": "VARCHAR", "created": "UBIGINT", "model": "VARCHAR", "usage": {"prompt_tokens": "UBIGINT", '
    '"completion_tokens": "UBIGINT", "prompt_tokens_details": {"cached_tokens": "UBIGINT"}}}'
)
_PATHS = (
    "['$.object', '$.created', '$.model', '$.usage.prompt_tokens', '$.usage.completion_tokens', "
    "'$.usage.prompt_tokens_details.cached_tokens']"
)
_CHAT_SQL = f"""
WITH s AS (SELECT j, try(json_transform_strict(j, '{_STRICT}')) AS x FROM {_LINES}),
e AS (SELECT j, x, CASE WHEN x IS NULL AND j IS NOT NULL THEN try(json_extract(j, {_PATHS})) END AS e FROM s),
v AS (
  SELECT j,
    CASE WHEN x IS NOT NULL THEN coalesce(x.object = 'chat.completion', true)
         ELSE e IS NOT NULL AND (coalesce(json_type(e[1]), 'NULL') = 'NULL' OR e[1]->>'$' = 'chat.completion') END
      AS chat,
    CASE WHEN x IS NOT NULL THEN x.created WHEN json_type(e[2]) = 'UBIGINT' THEN e[2]::UBIGINT END AS created,
    CASE WHEN x IS NOT NULL THEN coalesce(x.model, '') WHEN coalesce(json_type(e[3]), 'NULL') = 'NULL' THEN ''
         WHEN json_type(e[3]) = 'VARCHAR' THEN e[3]->>'$' END AS model,
    CASE WHEN x IS NOT NULL THEN x.usage.prompt_tokens WHEN json_type(e[4]) = 'UBIGINT' THEN e[4]::UBIGINT END
      AS prompt,
    CASE WHEN x IS NOT NULL THEN x.usage.completion_tokens WHEN json_type(e[5]) = 'UBIGINT' THEN e[5]::UBIGINT END
      AS output,
    CASE WHEN x IS NOT NULL THEN coalesce(x.usage.prompt_tokens_details.cached_tokens, 0)
         WHEN coalesce(json_type(e[6]), 'NULL') = 'NULL' THEN 0 WHEN json_type(e[6]) = 'UBIGINT' THEN e[6]::UBIGINT
    END AS cached
  FROM e),
c AS (
  SELECT *, chat AND model IS NOT NULL AND created BETWEEN 1 AND {MAX_EPOCH_MS // 1000 - 1}
    AND prompt <= {MAX_TOKENS} AND output <= {MAX_TOKENS} AND cached <= prompt AS ok
  FROM v)
SELECT CASE WHEN ok THEN created::BIGINT END AS created, CASE WHEN ok THEN model END AS model,
  CASE WHEN ok THEN prompt::BIGINT END AS prompt, CASE WHEN ok THEN cached::BIGINT END AS cached,
  CASE WHEN ok THEN output::BIGINT END AS output, CASE WHEN ok IS NOT TRUE THEN j END AS raw
FROM c
"""


# The fast tier: DuckDB's JSON reader over the fields alone, every value typed DOUBLE and checked here as the line
# reader would (whole numbers, ranges, cached ≤ prompt). A file it vouches for whole is read at its speed; at the
# first row it does not (or a line it cannot parse) the file is read again by _CHAT_SQL, which names each line.
_FAST_COLUMNS = (
    "{object: 'VARCHAR', created: 'DOUBLE', model: 'VARCHAR', usage: 'STRUCT(prompt_tokens DOUBLE, "
    "completion_tokens DOUBLE, prompt_tokens_details STRUCT(cached_tokens DOUBLE))'}"
)
_FAST_SQL = f"""
WITH r AS (
  SELECT object, created, model, usage.prompt_tokens AS prompt, usage.completion_tokens AS output,
    coalesce(usage.prompt_tokens_details.cached_tokens, 0) AS cached
  FROM read_json($path, format = 'newline_delimited', columns = {_FAST_COLUMNS}, compression = $compression)),
c AS (
  SELECT *, coalesce(object = 'chat.completion', true) AND created = floor(created)
    AND created BETWEEN 1 AND {MAX_EPOCH_MS // 1000 - 1}
    AND prompt = floor(prompt) AND prompt BETWEEN 0 AND {MAX_TOKENS}
    AND output = floor(output) AND output BETWEEN 0 AND {MAX_TOKENS} AND cached = floor(cached)
    AND cached BETWEEN 0 AND prompt AS ok
  FROM r)
SELECT CASE WHEN ok THEN created::BIGINT END AS created, CASE WHEN ok THEN coalesce(model, '') END AS model,
  CASE WHEN ok THEN prompt::BIGINT END AS prompt, CASE WHEN ok THEN cached::BIGINT END AS cached,
  CASE WHEN ok THEN output::BIGINT END AS output, CASE WHEN ok IS NOT TRUE THEN '' END AS raw
FROM c
"""

# The tolerant tier: the fast tier's reading and checks over a file with bad lines. DuckDB's JSON reader skips
# them (ignore_errors: a NULL row for a line it cannot parse or type, none for a blank line), so its rows are the
# file's non-blank lines in order; the rows it does not vouch for are mapped back to their lines by
# json_row_lines, in Python, and only those lines are read as text. A cached count is read as text (a value of
# another type made NULL by ignore_errors would otherwise pass as "no cached count", 0).
_TOLERANT_COLUMNS = _FAST_COLUMNS.replace("cached_tokens DOUBLE", "cached_tokens VARCHAR")
_TOLERANT_SQL = (
    _FAST_SQL.replace(_FAST_COLUMNS, _TOLERANT_COLUMNS)
    .replace("compression = $compression)", "compression = $compression, ignore_errors = true)")
    .replace(
        "coalesce(usage.prompt_tokens_details.cached_tokens, 0)",
        "CASE WHEN usage.prompt_tokens_details.cached_tokens IS NULL THEN 0 "
        "ELSE try_cast(usage.prompt_tokens_details.cached_tokens AS DOUBLE) END",
    )
)


MEMORY_LIMIT = "640MB"  # the engine's share of a 1 GB budget; past it, sorts and tables spill to a private folder
STREAM_MEMORY_LIMIT = "256MB"  # a reader that streams batches to Python, beside the engine's
_SPILL: list[str] = []


def connect(keep_order: bool = True, memory_limit: str = STREAM_MEMORY_LIMIT):
    """A DuckDB connection whose memory is capped at memory_limit, spilling into a private temporary folder (made
    once per process, removed at exit). keep_order: results in file order (the readers count places by it)."""
    import atexit
    import shutil
    import tempfile

    import duckdb

    if not _SPILL:
        _SPILL.append(tempfile.mkdtemp(prefix="ttft-planner-duckdb-"))
        atexit.register(shutil.rmtree, _SPILL[0], True)
    con = duckdb.connect(
        config={"memory_limit": memory_limit, "temp_directory": _SPILL[0], "preserve_insertion_order": keep_order}
    )
    con.execute("SET enable_progress_bar = false")  # the callers draw their own, by bytes
    return con


def sample_head(path: Path, n_bytes: int = 1 << 20) -> tuple[bytes, float]:
    """(the first n_bytes of the decompressed file, estimated decompressed size in bytes)."""
    kind = _compression(path)
    size = path.stat().st_size
    if kind == "none":
        with open(path, "rb") as fh:
            return fh.read(n_bytes), float(size)
    if kind == "gzip":
        with open(path, "rb") as raw, gzip.GzipFile(fileobj=raw) as fh:
            head = fh.read(n_bytes)
            used = raw.tell()
    else:
        import pyarrow as pa

        with open(path, "rb") as raw, pa.CompressedInputStream(pa.PythonFile(raw, mode="r"), "zstd") as fh:
            head = fh.read(n_bytes)
            used = raw.tell()
    ratio = len(head) / used if used else 1.0
    return head, size * max(ratio, 1.0)


def _bytes_per_line(path: Path) -> tuple[float, float]:
    """(mean bytes per line in the file's first MB, estimated decompressed size): rows read → bytes read."""
    head, total_bytes = sample_head(path)
    lines = head.count(b"\n")
    return ((head.rfind(b"\n") + 1) / lines if lines else float(len(head) or 1)), max(total_bytes, 1.0)


class Doubt(PlannerError):
    """The file holds something the streamed reader will not vouch for: read it line by line instead."""


@dataclass
class ChatBatch:
    """One DuckDB batch of a chat JSON Lines file: the rows it vouches for, and the lines it leaves to Python.

    created (epoch s), codes (model codes into the reader's names), prompt, cached, output: the good rows;
    positions: their 0-based places among the file's lines as the CSV layer kept them (the tolerant tier: among
    the JSON reader's rows, the non-blank lines); doubtful: (place, line text) of every other non-blank line, for
    the line-by-line reader to read or name (the tolerant tier: text "", found later by json_row_lines); rows:
    the batch's rows, good and doubtful.
    """

    created: np.ndarray
    codes: np.ndarray
    prompt: np.ndarray
    cached: np.ndarray
    output: np.ndarray
    positions: np.ndarray
    doubtful: list[tuple[int, str]]
    rows: int = 0


def _csv_rejects(con) -> list[tuple[int, str]]:
    """(line, reason) of the lines DuckDB's CSV layer refused (invalid UTF-8, too long), in line order."""
    rows = con.sql("SELECT line, error_type, error_message FROM reject_errors ORDER BY line").fetchall()
    out = []
    for line, kind, message in rows:
        if kind == "INVALID ENCODING":
            reason = NOT_UTF8
        elif kind == "LINE SIZE OVER MAXIMUM":
            reason = f"a line over {MAX_LINE_BYTES >> 20} MB: not a log record"
        else:
            reason = f"not a JSON line ({str(message).splitlines()[0][:120]})"
        out.append((int(line), reason))
    return out


def physical_lines(places: list[int], refused: list[int]) -> list[int]:
    """1-based file lines of 0-based places among the kept lines, given the (sorted) lines the CSV layer refused."""
    out, shift, k = [], 0, 0
    for place in places:  # ascending
        line = place + 1 + shift
        while k < len(refused) and refused[k] <= line:
            shift, k, line = shift + 1, k + 1, line + 1
        out.append(line)
    return out


def chat_batches(
    path: Path,
    names: dict[str, int],
    progress: Callable[[float], None] | None,
    refused: list[tuple[int, str]],
    *,
    exact: bool = True,
    tolerant: bool = False,
) -> Iterator[ChatBatch]:
    """An OpenAI chat JSON Lines file (plain, .gz, .zst) a DuckDB batch at a time, in file order.

    exact: every line is accounted for (_CHAT_SQL): good rows in the batch, other non-blank lines as `doubtful`
    text, and lines the CSV layer refused appended to `refused` (line, reason) once the scan ends. Otherwise the
    fast tier (_FAST_SQL), which raises Doubt at its first doubtful row or unparseable line; or (tolerant, not exact)
    the tolerant tier (_TOLERANT_SQL): good rows, and the other rows' places as `doubtful` ("" for their text,
    json_row_lines finds it), places counted among the JSON reader's rows (non-blank lines). Model names are coded
    into `names`. Raises Doubt when the file cannot be scanned at all (unreadable, corrupt compression).
    """
    import duckdb

    bytes_per_line, total_bytes = _bytes_per_line(path)
    con = connect()
    try:
        sql = _CHAT_SQL if exact else _TOLERANT_SQL if tolerant else _FAST_SQL
        rel = con.sql(sql, params={"path": str(path), "compression": _compression(path)})
        place = 0
        for batch in rel.to_arrow_reader(_BATCH_ROWS):
            n = batch.num_rows
            raw = batch.column("raw")
            doubtful = []
            if raw.null_count != n:
                if not exact and not tolerant:
                    raise Doubt("a row the fast reader does not vouch for")
                texts = raw.to_pylist()
                doubtful = [(place + i, t) for i, t in enumerate(texts) if t is not None]
            idx = np.flatnonzero(batch.column("created").is_valid().to_numpy(zero_copy_only=False))
            rows = batch if idx.size == n else batch.take(idx)
            col = [rows.column(c).to_numpy(zero_copy_only=False) for c in ("created", "prompt", "cached", "output")]
            model = rows.column("model").dictionary_encode()
            local = [names.setdefault(m, len(names)) for m in model.dictionary.to_pylist()]
            codes = np.asarray(local, dtype=np.int32)[model.indices.to_numpy(zero_copy_only=False)]
            yield ChatBatch(col[0], codes, col[1], col[2], col[3], idx + place, doubtful, n)
            place += n
            if progress:
                progress(min(place * bytes_per_line / total_bytes, 0.99))
        if exact:
            refused.extend(_csv_rejects(con))
    except (duckdb.Error, OSError) as exc:
        raise Doubt(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    finally:
        con.close()


def batch_frame(b: ChatBatch, names: dict[str, int]) -> pd.DataFrame:
    """One batch's good rows as columns ts_ms (UTC epoch ms), model, prompt_tokens, cached_tokens, output_tokens."""
    by_code = pd.Index(sorted(names, key=names.__getitem__), dtype=object)
    return pd.DataFrame(
        {
            "ts_ms": b.created.astype(np.int64) * 1000,
            "model": pd.Categorical.from_codes(b.codes, categories=by_code),
            "prompt_tokens": b.prompt.astype(np.int64, copy=False),
            "cached_tokens": b.cached.astype(np.int64, copy=False),
            "output_tokens": b.output.astype(np.int64, copy=False),
        }
    )


def insert_chat(con, table: str, path: Path) -> int:
    """Insert an OpenAI chat JSON Lines file's requests into `table` (planner.logs.engine's columns) in one
    statement of the fast tier, never through Python; the number inserted.

    All or nothing: at the first row the fast tier does not vouch for (or a line it cannot parse) the statement
    fails, nothing is inserted, and this raises Doubt (scan_chat then reads the file line-accounted).
    """
    import duckdb

    doubt = "'a row the fast reader does not vouch for'"
    try:
        got = con.execute(
            f"""INSERT INTO {table}
            SELECT CASE WHEN raw IS NULL THEN created * 1000 ELSE error({doubt}) END, model, prompt, cached, output,
                   NULL, NULL
            FROM ({_FAST_SQL})""",
            {"path": str(path), "compression": _compression(path)},
        ).fetchall()
    except (duckdb.Error, OSError) as exc:
        raise Doubt(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    return int(got[0][0])


def insert_chat_tolerant(con, table: str, path: Path) -> tuple[int, list[int], int]:
    """Insert the requests of an OpenAI chat JSON Lines file with bad lines into `table` in one statement of the
    tolerant tier, never through Python: (rows inserted, the ascending places of the rows it does not vouch for
    among the JSON reader's rows, the number of those rows), for json_row_lines to find their lines.

    The rows are inserted in file order (their row ids are their places), the doubtful ones as markers (no time)
    that are then read and deleted. Raises Doubt when DuckDB cannot read the file or the row ids are not one run
    (nothing is left inserted then but what the caller rolls back).
    """
    import duckdb

    params = {"path": str(path), "compression": _compression(path)}
    try:
        kept = con.execute("SELECT current_setting('preserve_insertion_order')").fetchall()[0][0]
        before = con.execute(f"SELECT coalesce(max(rowid), -1) FROM {table}").fetchall()[0][0]
        con.execute("SET preserve_insertion_order = true")  # row ids in file order
        try:
            con.execute(
                f"""INSERT INTO {table}
                SELECT CASE WHEN raw IS NULL THEN created * 1000 END, model, prompt, cached, output, NULL, NULL
                FROM ({_TOLERANT_SQL})""",
                params,
            )
        finally:
            con.execute(f"SET preserve_insertion_order = {'true' if kept else 'false'}")
        first, last, n_rows = con.execute(
            f"SELECT min(rowid), max(rowid), count(*) FROM {table} WHERE rowid > {int(before)}"
        ).fetchall()[0]
        if n_rows and last - first + 1 != n_rows:
            raise Doubt("the rows are not in one run of row ids")
        places = [
            int(r[0]) - int(first)
            for r in con.execute(
                f"SELECT rowid FROM {table} WHERE rowid > {int(before)} AND ts_ms IS NULL ORDER BY rowid"
            ).fetchall()
        ]
        if places:
            con.execute(f"DELETE FROM {table} WHERE rowid > {int(before)} AND ts_ms IS NULL")
    except (duckdb.Error, OSError) as exc:
        raise Doubt(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    return int(n_rows) - len(places), places, int(n_rows)


def iter_chat_frames(path: Path, progress: Callable[[float], None] | None = None) -> Iterator[pd.DataFrame]:
    """An OpenAI chat JSON Lines file (plain, .gz, .zst) as frames of at most 262,144 requests, in file order.

    Columns as batch_frame's. Only one batch is held at a time, whatever the file's size. Raises Doubt
    (possibly after some frames) at the first line the fast tier does not vouch for: a caller storing the
    frames discards what it stored and reads the file with read_logs, which names each rejected line.
    """
    names: dict[str, int] = {}
    for b in chat_batches(path, names, progress, [], exact=False):
        yield batch_frame(b, names)


def scan_chat(
    path: Path,
    names: dict[str, int],
    explain: Callable[[int, str], Row | None],
    reject: Callable[[int, str], None],
    progress: Callable[[float], None] | None,
    take: Callable[[ChatBatch], None],
    restart: Callable[[], None],
    *,
    fast: bool = True,
    tolerant: bool = True,
) -> list[tuple[int, Row]]:
    """Every batch of a chat JSON Lines file to take(), then the lines DuckDB did not vouch for, in line order.

    The fast tier first (unless fast is False: a caller that tried it already); at its first doubt, restart()
    (drop what was taken) and the tolerant tier (unless tolerant is False: tried already), whose doubtful rows
    json_row_lines maps back to lines; where it cannot (the rows are not the file's non-blank lines), restart()
    again and the line-accounted tier. The
    doubtful lines go to explain(line, text), which returns the row the line-by-line reader makes of it or
    None (having named it); lines the CSV layer refuses go to reject(line, reason). Returns (key, row) of the
    rows explain() read, key ordering them among the batches' positions + 1 (the line, or in the tolerant tier
    the 1-based row). Raises Doubt when the file cannot be scanned at all.
    """
    refused: list[tuple[int, str]] = []
    doubtful: list[tuple[int, str]] = []
    try:  # most files: the fast tier vouches for every row
        if not fast or tail_is_cut(path):
            raise Doubt("the fast tier already had a doubt, or would at the last line")
        for b in chat_batches(path, names, progress, refused, exact=False):
            take(b)
    except Doubt:
        restart()
        names.clear()
        try:  # a few bad lines: DuckDB's JSON reader reads the others, and only the bad ones are read as text
            if not tolerant:
                raise Doubt("the tolerant tier already had a doubt")
            places: list[int] = []
            n_rows = 0
            for b in chat_batches(path, names, progress, refused, exact=False, tolerant=True):
                take(b)
                places.extend(p for p, _ in b.doubtful)
                n_rows += b.rows
            found = json_row_lines(path, places, n_rows)
        except (Doubt, OSError, EOFError, ValueError):
            found = None
        if found is not None:
            return explain_found(found, explain, reject)
        if tolerant:
            restart()  # read again, every line accounted for
            names.clear()
        for b in chat_batches(path, names, progress, refused):
            take(b)
            doubtful.extend(b.doubtful)
    return explain_lines(doubtful, refused, explain, reject)


def explain_found(
    found: list[tuple[int, int, str, str | None]],
    explain: Callable[[int, str], Row | None],
    reject: Callable[[int, str], None],
) -> list[tuple[int, Row]]:
    """json_row_lines' lines, in line order, to reject(line, reason) or explain(line, text); (row + 1, row read)."""
    extra: list[tuple[int, Row]] = []
    for line, place, text, reason in found:
        if reason is not None:
            reject(line, reason)
        elif (row := explain(line, text)) is not None:
            extra.append((place + 1, row))
    return extra


def explain_lines(
    doubtful: list[tuple[int, str]],
    refused: list[tuple[int, str]],
    explain: Callable[[int, str], Row | None],
    reject: Callable[[int, str], None],
) -> list[tuple[int, Row]]:
    """The line-accounted tier's leftovers, in line order: each doubtful (place among the kept lines, text) to
    explain(line, text), each refused (line, reason) to reject(line, reason); (line, row) of the rows explained."""
    lines = physical_lines([p for p, _ in doubtful], [line for line, _ in refused])
    extra: list[tuple[int, Row]] = []
    todo = sorted(
        [(line, 0, text) for line, (_, text) in zip(lines, doubtful, strict=True)]
        + [(line, 1, reason) for line, reason in refused]
    )
    for line, kind, text in todo:
        if kind:
            reject(line, text)
        elif (row := explain(line, text)) is not None:
            extra.append((line, row))
    return extra


def read_chat_jsonl(
    path: Path,
    explain: Callable[[int, str], Row | None],
    reject: Callable[[int, str], None],
    progress: Callable[[float], None] | None = None,
) -> pd.DataFrame | None:
    """Columns ts_ms, model, prompt_tokens, cached_tokens, output_tokens in arrival order; None when no row reads.

    See scan_chat for explain and reject. Raises Doubt when the file cannot be scanned at all.
    """
    names: dict[str, int] = {}
    parts: list[list[np.ndarray]] = []
    extra = scan_chat(
        path,
        names,
        explain,
        reject,
        progress,
        lambda b: parts.append([b.created, b.codes, b.prompt, b.cached, b.output, b.positions]),
        parts.clear,
    )
    return _chat_frame(parts, names, extra)


def _chat_frame(
    parts: list[list[np.ndarray]], names: dict[str, int], extra: list[tuple[int, Row]]
) -> pd.DataFrame | None:
    """The good rows' columns plus the rows Python read, sorted by arrival (ties in line order); None when empty.

    parts: [created s, codes, prompt, cached, output, places] per batch; each column is joined and its
    pieces dropped before the next, so never two copies of every column are held.
    """
    if extra:
        parts.append(
            [
                np.zeros(len(extra), dtype=np.int64),  # seconds are not exact for Python's rows: ms set below
                np.asarray([names.setdefault(r.model, len(names)) for _, r in extra], dtype=np.int32),
                np.asarray([r.prompt_tokens for _, r in extra], dtype=np.int64),
                np.asarray([r.cached_tokens for _, r in extra], dtype=np.int64),
                np.asarray([r.output_tokens for _, r in extra], dtype=np.int64),
                np.asarray([line - 1 for line, _ in extra], dtype=np.int64),
            ]
        )
    if not parts or not sum(p[0].size for p in parts):
        return None
    columns = []
    for k in range(6 if extra else 5):  # the places only order ties with Python's rows
        columns.append(np.concatenate([p[k] for p in parts]))
        for p in parts:
            p[k] = None  # type: ignore[call-overload]
    ts_ms, codes, prompt, cached, output = columns[:5]
    places = columns[5] if extra else np.zeros(0, dtype=np.int64)
    del columns, parts
    ts_ms = ts_ms.astype(np.int64, copy=False)
    ts_ms *= 1000
    if extra:
        ts_ms[ts_ms.size - len(extra) :] = [r.ts_ms for _, r in extra]
        order = np.lexsort((places, ts_ms))  # by arrival, ties in line order
    elif ts_ms.size > 1 and (ts_ms[1:] < ts_ms[:-1]).any():
        order = np.argsort(ts_ms, kind="stable")
    else:
        order = None
    del places
    if order is not None:
        ts_ms, codes, prompt, cached, output = (c[order] for c in (ts_ms, codes, prompt, cached, output))
        del order
    # Categorical: a few model names shared by millions of rows, grouped without hashing strings.
    by_name = sorted(names, key=names.__getitem__)
    return pd.DataFrame(
        {
            "ts_ms": ts_ms,
            "model": pd.Categorical.from_codes(codes, categories=pd.Index(by_name, dtype=object)),
            "prompt_tokens": prompt.astype(np.int64, copy=False),
            "cached_tokens": cached.astype(np.int64, copy=False),
            "output_tokens": output.astype(np.int64, copy=False),
        },
        copy=False,
    )


def _text(value: str) -> str:
    """A SQL string literal."""
    return "'" + value.replace("'", "''") + "'"


_NUMERIC_FIELDS = ("prompt_tokens", "cached_tokens", "output_tokens", "ttft_ms", "duration_ms")


def column_types(path: Path, header: list[str], delimiter: str, mapping: dict[str, str]) -> dict[str, str]:
    """{column: DuckDB type} of the mapped columns: counts, timings and relative times DOUBLE, the model VARCHAR,
    and the time column TIMESTAMPTZ, or DOUBLE when its first value in the file is an epoch number."""
    from planner.logs.csvfile import read_rows
    from planner.logs.splitting import decode_bom

    types = {mapping[f]: "DOUBLE" for f in (*_NUMERIC_FIELDS, "ts_relative_s", "ts_relative_ms") if mapping.get(f)}
    if mapping.get("model"):
        types[mapping["model"]] = "VARCHAR"
    if mapping.get("ts"):
        kind = "TIMESTAMPTZ"
        head, _ = sample_head(path, 1 << 16)
        _, rows = read_rows(decode_bom(head))
        at = header.index(mapping["ts"])
        for _, values in rows:
            if not isinstance(values, str) and len(values) > at and values[at].strip():
                kind = "DOUBLE" if _is_number(values[at]) else "TIMESTAMPTZ"
                break
        types[mapping["ts"]] = kind
    return types


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def csv_scan(
    con,
    path: Path,
    header: list[str],
    delimiter: str,
    mapping: dict[str, str],
    tz: str,
    rejects_table: str = "reject_errors",
    as_text: bool = False,
) -> tuple[str, dict[str, str], dict[str, str]]:
    """(read_csv(...) SQL, its parameters, {mapped column: DuckDB type}) for a CSV file under a mapping, on `con`;
    as_text: every column read as text (VARCHAR), for the caller to convert (no types returned), without DuckDB's
    sniffer (on a 1 M-row .gz its sample alone takes 0.3 s): the columns are named from our header, which DuckDB's
    first record must then be.

    Sets the connection's zone to `tz` (times without one are read in it). Rows DuckDB cannot read go to its
    rejects table (`rejects_table`, one row per refused field; its scans in `rejects_table`_scans). Raises Doubt
    when DuckDB reads another header than ours.
    """
    import duckdb

    con.execute("SET TimeZone = " + _text(tz))  # a zone zone() has vouched for
    params = {"path": str(path), "delim": delimiter, "compression": _compression(path)}
    rejects = (
        ""
        if rejects_table == "reject_errors"
        else f", rejects_table = '{rejects_table}', rejects_scan = '{rejects_table}_scans'"
    )
    read = "read_csv($path, delim = $delim, quote = '\"', escape = '\"', compression = $compression, "
    if as_text:
        named = "columns = {" + ", ".join(f"{_text(c)}: 'VARCHAR'" for c in header) + "}, auto_detect = false"
        try:
            first = con.execute(f"SELECT * FROM {read}header = false, {named}, ignore_errors = true) LIMIT 1", params)
            got = first.fetchall()
        except duckdb.Error as exc:
            raise Doubt(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
        if not got or [(v or "").strip() for v in got[0]] != header:
            raise Doubt("DuckDB reads a different header")
        return f"{read}header = true, {named}, ignore_errors = true, store_rejects = true{rejects})", params, {}
    scan = f"{read}header = true, ignore_errors = true, store_rejects = true{rejects})"
    rel = con.sql(f"SELECT * FROM {scan}", params=params)
    if [c.strip() for c in rel.columns] != header:
        raise Doubt("DuckDB reads a different header")
    # Each mapped column typed as the mapping says, not as a sample of rows suggests (one bad value in the
    # sample would make it text): a value that does not convert refuses its row, which the row reader names.
    names = dict(zip(header, rel.columns, strict=True))
    types = {names[c]: t for c, t in column_types(path, header, delimiter, mapping).items()}
    scan = scan[:-1] + ", types = {" + ", ".join(f"{_text(c)}: {_text(t)}" for c, t in types.items()) + "})"
    return scan, params, types


def line_counts(path: Path) -> tuple[int, int]:
    """(lines, non-blank lines) of a text file (plain, .gz, .zst) as DuckDB's line reader splits it, counting the
    lines it refuses (invalid UTF-8, too long) as non-blank."""
    import duckdb

    con = connect(keep_order=False)
    try:
        lines, filled = con.execute(
            f"SELECT count(*), count(j) FROM {_LINES}", {"path": str(path), "compression": _compression(path)}
        ).fetchall()[0]
        refused = con.execute("SELECT count(DISTINCT line) FROM reject_errors").fetchall()[0][0]
    except (duckdb.Error, OSError) as exc:
        raise Doubt(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    finally:
        con.close()
    return int(lines) + int(refused), int(filled) + int(refused)


def iter_mapped_csv(
    path: Path,
    header: list[str],
    delimiter: str,
    mapping: dict[str, str],
    tz: str,
    start_ms: int,
    source: str,
    progress: Callable[[float], None] | None = None,
    refused: list[int] | None = None,
) -> Iterator[tuple[pd.DataFrame, np.ndarray]]:
    """A large CSV (plain, .gz, .zst) under a plain column mapping, a DuckDB batch at a time.

    Yields (the batch's good rows as a normalised frame, the 0-based places among the rows DuckDB kept of
    the rows left for the row path to name). Rows DuckDB's CSV layer refuses (a field it cannot type, a
    wrong field count, invalid UTF-8) are skipped and their lines added to `refused` once the scan ends.
    Times without a zone are read in `tz`, with or without other rows that carry an offset. Only one
    batch (at most 262,144 rows) is held at a time. Raises Doubt when a mapped column is of a type the
    batch reader does not take (the caller reads the file row by row).
    """
    import duckdb

    from planner.logs.columnar import batch_rows

    con = connect()
    try:
        scan, params, types = csv_scan(con, path, header, delimiter, mapping, tz)
        cols = ", ".join('"' + c.replace('"', '""') + '"' for c in sorted(types))
        reader = con.sql(f"SELECT {cols} FROM {scan}", params=params).to_arrow_reader(_BATCH_ROWS)
        bytes_per_row, total_bytes = _bytes_per_line(path)
        place = 0
        for batch in reader:
            got = batch_rows(batch, mapping, tz, start_ms, source)
            if got is None:
                raise Doubt("a column the batch reader does not take")
            yield got[0], got[1] + place
            place += batch.num_rows
            if progress:
                progress(min(place * bytes_per_row / total_bytes, 0.99))
        if refused is not None:
            lines = con.sql("SELECT DISTINCT line FROM reject_errors ORDER BY line").fetchall()
            refused.extend(int(r[0]) for r in lines)
    except (duckdb.Error, OSError, KeyError) as exc:
        raise Doubt(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    finally:
        con.close()
