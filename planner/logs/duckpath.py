"""Out-of-core reading with DuckDB: OpenAI chat-completion JSON Lines, and large mapped CSV files (plain, .gz, .zst).

DuckDB parses the file in parallel and streams the five needed fields back in record batches, so
only the numeric columns (about 40 bytes a request) are ever held, whatever the file's size: a
10 M-request log of several GB becomes ~0.4 GB of arrays. Any surprise (a malformed line, a
count that is not a whole number, invalid UTF-8, a null or negative count, a non-chat record)
returns None and the caller uses the line-by-line reader, which names each rejected line.

Progress moves by bytes: rows read × the sampled bytes per line, over the file's (estimated
decompressed) size.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["Doubt", "iter_chat_frames", "iter_mapped_csv", "read_chat_jsonl", "read_mapped_csv", "sample_head"]

_BATCH_ROWS = 262_144
_COLUMNS = (
    "{object: 'VARCHAR', created: 'BIGINT', model: 'VARCHAR', usage: 'STRUCT(prompt_tokens BIGINT, "
    "completion_tokens BIGINT, prompt_tokens_details STRUCT(cached_tokens BIGINT))'}"
)
_SQL = f"""
SELECT created, model, usage.prompt_tokens AS prompt, usage.completion_tokens AS output,
       coalesce(usage.prompt_tokens_details.cached_tokens, 0) AS cached,
       (object IS NULL OR object = 'chat.completion') AS chat
FROM read_json($path, format = 'newline_delimited', columns = {_COLUMNS}, compression = $compression)
"""


def _compression(path: Path) -> str:
    name = path.name.lower()
    return "gzip" if name.endswith(".gz") else "zstd" if name.endswith(".zst") else "none"


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


class Doubt(Exception):
    """The file holds something the streamed reader will not vouch for: read it line by line instead."""


def _chat_batches(
    path: Path, names: dict[str, int], progress: Callable[[float], None] | None
) -> Iterator[tuple[np.ndarray, ...]]:
    """(created s, model codes into `names`, prompt, cached, output) a DuckDB batch at a time, in file order.

    Raises Doubt at the first batch with a null or negative count, a non-chat record, a time that is
    not epoch seconds, or a line DuckDB cannot parse (so possibly after earlier batches were yielded).
    """
    import duckdb

    bytes_per_line, total_bytes = _bytes_per_line(path)
    con = duckdb.connect()
    try:
        con.execute("SET enable_progress_bar = false")  # the caller draws its own, by bytes
        rel = con.sql(_SQL, params={"path": str(path), "compression": _compression(path)})
        reader = rel.to_arrow_reader(_BATCH_ROWS)
        rows = 0
        for batch in reader:
            cols = {n: batch.column(n) for n in ("created", "prompt", "output", "cached", "chat")}
            if cols["created"].null_count or cols["prompt"].null_count or cols["output"].null_count:
                raise Doubt("a record without its time or token counts")
            if not cols["chat"].to_numpy(zero_copy_only=False).all():
                raise Doubt("a record that is not a chat completion")
            created = cols["created"].to_numpy()
            prompt = cols["prompt"].to_numpy()
            output = cols["output"].to_numpy()
            cached = cols["cached"].to_numpy()
            if (prompt < 0).any() or (output < 0).any() or (cached < 0).any() or (cached > prompt).any():
                raise Doubt("a negative or inconsistent token count")
            if (created <= 0).any() or (created >= 100_000_000_000).any():
                raise Doubt("a time that is not epoch seconds")
            model = batch.column("model").fill_null("").dictionary_encode()
            local = [names.setdefault(m, len(names)) for m in model.dictionary.to_pylist()]
            codes = np.asarray(local, dtype=np.int32)[model.indices.to_numpy(zero_copy_only=False)]
            rows += batch.num_rows
            if progress:
                progress(min(rows * bytes_per_line / total_bytes, 0.99))
            yield created, codes, prompt, cached, output
    except (duckdb.Error, OSError) as exc:
        raise Doubt(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    finally:
        con.close()


def iter_chat_frames(path: Path, progress: Callable[[float], None] | None = None) -> Iterator[pd.DataFrame]:
    """An OpenAI chat JSON Lines file (plain, .gz, .zst) as frames of at most 262,144 requests, in file order.

    Columns ts_ms (UTC epoch ms), model, prompt_tokens, cached_tokens, output_tokens. Only one batch
    is held at a time, whatever the file's size. Raises Doubt (possibly after some frames) when the
    file needs the line-by-line reader; a caller storing the frames discards what it stored.
    """
    names: dict[str, int] = {}
    for created, codes, prompt, cached, output in _chat_batches(path, names, progress):
        by_code = np.asarray(sorted(names, key=names.__getitem__), dtype=object)
        yield pd.DataFrame(
            {
                "ts_ms": created.astype(np.int64) * 1000,
                "model": by_code[codes],
                "prompt_tokens": prompt.astype(np.int64, copy=False),
                "cached_tokens": cached.astype(np.int64, copy=False),
                "output_tokens": output.astype(np.int64, copy=False),
            }
        )


def read_chat_jsonl(path: Path, progress: Callable[[float], None] | None = None) -> pd.DataFrame | None:
    """Columns ts_ms, model, prompt_tokens, cached_tokens, output_tokens in arrival order; None when unsure."""
    names: dict[str, int] = {}
    try:
        parts: list[tuple[np.ndarray | None, ...]] = list(_chat_batches(path, names, progress))
    except Doubt:
        return None
    if not parts:
        return None
    # One column at a time, freeing its batches as it goes: never two copies of every column at once.
    columns = []
    for k in range(5):
        columns.append(np.concatenate([p[k] for p in parts]))
        for i, p in enumerate(parts):
            parts[i] = (*p[:k], None, *p[k + 1 :])
    del parts
    ts_ms = columns[0].astype(np.int64, copy=False)
    ts_ms *= 1000
    columns[0] = ts_ms
    if ts_ms.size > 1 and (ts_ms[1:] < ts_ms[:-1]).any():
        order = np.argsort(ts_ms, kind="stable")
        for k in range(5):
            columns[k] = columns[k][order]  # the unsorted column is freed as soon as it is replaced
        del order
    ts_ms, codes, prompt, cached, output = columns
    del columns
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


def iter_mapped_csv(
    path: Path,
    header: list[str],
    delimiter: str,
    mapping: dict[str, str],
    tz: str,
    start_ms: int,
    source: str,
    progress: Callable[[float], None] | None = None,
) -> Iterator[pd.DataFrame]:
    """A large CSV (plain, .gz, .zst) under a plain column mapping, as normalised frames a DuckDB batch at a time.

    Only one batch (at most 262,144 rows) is held at a time. Raises Doubt (possibly after some frames)
    at any row DuckDB cannot type or any batch planner.logs.columnar will not take (text times, nulls
    in a required column, negative counts …): the caller reads the file row by row, naming each
    rejected line.
    """
    import duckdb

    from planner.logs.columnar import batch_frame

    con = duckdb.connect()
    try:
        con.execute("SET enable_progress_bar = false")
        con.execute("SET TimeZone = 'UTC'")
        params = {"path": str(path), "delim": delimiter, "compression": _compression(path)}
        scan = "read_csv($path, header = true, delim = $delim, quote = '\"', escape = '\"', compression = $compression)"
        rel = con.sql(f"SELECT * FROM {scan}", params=params)
        if [c.strip() for c in rel.columns] != header:
            raise Doubt("DuckDB reads a different header")
        wanted = sorted(set(v for v in mapping.values() if v))
        cols = ", ".join('"' + c.replace('"', '""') + '"' for c in wanted)
        reader = con.sql(f"SELECT {cols} FROM {scan}", params=params).to_arrow_reader(_BATCH_ROWS)
        bytes_per_row, total_bytes = _bytes_per_line(path)
        rows = 0
        for batch in reader:
            frame = batch_frame(batch, mapping, tz, start_ms, source)
            if frame is None:
                raise Doubt("a batch that needs the row-by-row reader")
            rows += batch.num_rows
            if progress:
                progress(min(rows * bytes_per_row / total_bytes, 0.99))
            yield frame
    except (duckdb.Error, OSError, KeyError) as exc:
        raise Doubt(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    finally:
        con.close()


def read_mapped_csv(
    path: Path,
    header: list[str],
    delimiter: str,
    mapping: dict[str, str],
    tz: str,
    start_ms: int,
    source: str,
    progress: Callable[[float], None] | None = None,
) -> pd.DataFrame | None:
    """iter_mapped_csv's frames as one frame; None (all or nothing) when it has a doubt."""
    try:
        frames = list(iter_mapped_csv(path, header, delimiter, mapping, tz, start_ms, source, progress))
    except Doubt:
        return None
    return pd.concat(frames, ignore_index=True) if frames else None
