"""Vectorised reading of OpenAI chat-completion JSON Lines with pyarrow's multi-threaded JSON reader.

Only the fields the summary needs are declared; pyarrow skips the rest (message text
included) without building Python objects. Any surprise (a malformed line,
an unexpected type, an invalid count, invalid UTF-8, a read error) returns None and the
caller uses the line-by-line reader, which explains each rejected line.

A file on disk is read once, in newline-aligned segments into a few reused buffers, and each
segment is UTF-8-checked and parsed by one of a pool of threads (one per core). The file is never
held whole in memory, and never memory-mapped (a mapped file truncated while it is read would
crash the process).
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["read_openai_jsonl"]

_SEGMENT = 8 << 20  # bytes of a file read and parsed per pyarrow call (buffers of this size are reused)
_BLOCK = 4 << 20  # pyarrow's block size when it parses one buffer with all cores (bytes given in memory)
_MAX_BLOCK = 1 << 30


def _valid_utf8(buf: Any) -> bool:
    """Whether the bytes are valid UTF-8, checked by Arrow's validator (as strict as Python's decoder).

    pyarrow's JSON reader does not validate UTF-8 (neither skipped nor kept fields); the line
    reader rejects the bad lines with their numbers. `buf` is a pyarrow Buffer.
    """
    import pyarrow as pa

    offsets = pa.py_buffer(np.array([0, buf.size], dtype=np.int64))
    try:
        pa.LargeStringArray.from_buffers(1, offsets, buf).validate(full=True)  # releases the GIL
    except pa.ArrowInvalid:
        return False
    return True


def _schema() -> Any:
    import pyarrow as pa

    return pa.schema([
        ("object", pa.string()),
        ("created", pa.int64()),
        ("model", pa.string()),
        ("usage", pa.struct([
            ("prompt_tokens", pa.int64()),
            ("completion_tokens", pa.int64()),
            ("prompt_tokens_details", pa.struct([("cached_tokens", pa.int64())])),
        ])),
    ])


def _parse(body: Any, threads: bool = True) -> Any:
    """One pyarrow read_json call over a Buffer (no copy of the input); None on any parse error.

    Without threads the whole buffer is one block (a segment holds whole lines, so none straddles).
    """
    import pyarrow as pa
    import pyarrow.json as pajson

    if not threads and body.size > _MAX_BLOCK:  # a line of over a GiB: beyond pyarrow's block size
        return None
    try:
        return pajson.read_json(
            body,
            read_options=pajson.ReadOptions(block_size=_BLOCK if threads else max(body.size, _BLOCK),
                                           use_threads=threads),
            parse_options=pajson.ParseOptions(explicit_schema=_schema(), unexpected_field_behavior="ignore"),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return None


def _fill(fh: Any, buf: bytearray, carry: bytes) -> tuple[bytearray, int, int, bool]:
    """Read the next segment into `buf` after `carry` (the previous segment's unfinished line).

    Returns (buffer, end, filled, eof): buffer[:end] holds whole lines (everything up to the last
    newline, or the rest of the file at EOF) and buffer[end:filled] the start of the next line.
    The buffer is replaced by a larger one when a line does not fit.
    """
    if len(buf) < 2 * len(carry) + 1:
        buf = bytearray(2 * len(carry) + _SEGMENT)
    buf[:len(carry)] = carry
    have = len(carry)
    view = memoryview(buf)
    try:
        while True:
            while have < len(buf):
                n = fh.readinto(view[have:])
                if not n:
                    return buf, have, have, True
                have += n
            cut = buf.rfind(b"\n", 0, have)
            if cut >= 0:
                return buf, cut + 1, have, False
            view.release()  # a line longer than the buffer: grow it
            buf = buf + bytearray(len(buf))
            view = memoryview(buf)
    finally:
        view.release()


def _read_file(path: Path) -> Any:
    """The parsed table of an uncompressed JSON Lines file, or None (not JSON Lines we can trust, or unreadable).

    This thread reads newline-aligned segments into a small pool of reused buffers; one worker per
    core checks a segment's UTF-8 and parses it (pyarrow releases the GIL), so all cores stay busy
    to the end and at most `workers + 2` segments are in memory.
    """
    import pyarrow as pa

    workers = max(1, min(pa.cpu_count(), 8))
    free: queue.SimpleQueue[bytearray] = queue.SimpleQueue()
    for _ in range(workers + 2):
        free.put(bytearray(_SEGMENT))
    failed = threading.Event()

    def parse(buf: bytearray, end: int) -> Any:
        try:
            if failed.is_set():
                return None
            body = pa.py_buffer(memoryview(buf)[:end])
            table = _parse(body, threads=False) if _valid_utf8(body) else None
            del body
            if table is None:
                failed.set()
            return table
        finally:
            free.put(buf)

    futures = []
    tables: list[Any] = []
    try:
        with open(path, "rb", buffering=0) as fh, ThreadPoolExecutor(workers, thread_name_prefix="jsonl") as pool:
            if fh.read(1) != b"{":
                return None
            fh.seek(0)
            carry = bytearray()
            while not failed.is_set():
                buf, end, have, eof = _fill(fh, free.get(), carry)
                carry = buf[end:have]
                if end:  # (empty only when the file ends exactly where the previous segment did)
                    futures.append(pool.submit(parse, buf, end))
                else:
                    free.put(buf)
                if eof:
                    break
            tables = [f.result() for f in futures]
    except OSError:
        return None
    if failed.is_set() or not tables:
        return None
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables)


def read_openai_jsonl(data: bytes | Path) -> pd.DataFrame | None:
    """Columns ts_ms, model, prompt_tokens, cached_tokens, output_tokens from OpenAI chat JSONL; None when unsure.

    Rows are in arrival order (a stable sort by ts_ms, the order read_logs gives its frame).

    `data` is the file's bytes, or the path of an uncompressed file (then it is read in segments
    and never held whole in memory).
    """
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - pyarrow ships with streamlit
        return None
    # pyarrow skips blank lines, so row numbers may drift from line numbers; that is harmless here
    # because any row that would be rejected sends the whole file to the line reader.
    if isinstance(data, Path):
        table = _read_file(data)
    else:
        end = len(data)
        while end and data[end - 1] in b"\r\n":
            end -= 1
        if not end or data[:1] != b"{":
            return None
        body = pa.py_buffer(memoryview(data)[:end])  # no copy
        if not _valid_utf8(pa.py_buffer(data)):
            return None
        table = _parse(body)
    if table is None:
        return None
    usage = table.column("usage").combine_chunks()
    prompt = usage.field("prompt_tokens")
    output = usage.field("completion_tokens")
    cached = usage.field("prompt_tokens_details").field("cached_tokens")
    created = table.column("created")
    obj = table.column("object")
    if prompt.null_count or output.null_count or created.null_count:
        return None
    if obj.null_count != len(obj) and set(obj.unique().to_pylist()) - {"chat.completion", None}:
        return None
    prompt_np = prompt.to_numpy(zero_copy_only=False)
    output_np = output.to_numpy(zero_copy_only=False)
    cached_np = cached.fill_null(0).to_numpy(zero_copy_only=False)
    created_np = created.to_numpy()
    if (prompt_np < 0).any() or (output_np < 0).any() or (cached_np < 0).any() or (cached_np > prompt_np).any():
        return None
    if (created_np <= 0).any() or (created_np >= 100_000_000_000).any():  # not epoch seconds
        return None
    # Few distinct models: one Python string per model, shared by its rows (not one per row).
    model = table.column("model").fill_null("").combine_chunks().dictionary_encode()
    names = model.dictionary.to_numpy(zero_copy_only=False)
    codes = model.indices.to_numpy(zero_copy_only=False)
    ts_ms = created_np.astype(np.int64) * 1000
    if ts_ms.size > 1 and (ts_ms[1:] < ts_ms[:-1]).any():
        # Sorted by arrival here (stable, as read_logs sorts), where it is cheap: integer columns
        # and model codes, not an object column; read_logs then finds the frame already in order.
        order = np.argsort(ts_ms, kind="stable")
        ts_ms, codes = ts_ms[order], codes[order]
        prompt_np, cached_np, output_np = prompt_np[order], cached_np[order], output_np[order]
    return pd.DataFrame({
        "ts_ms": ts_ms,
        "model": pd.Series(names[codes], dtype=object, copy=False),
        "prompt_tokens": prompt_np.astype(np.int64),
        "cached_tokens": cached_np.astype(np.int64),
        "output_tokens": output_np.astype(np.int64),
    }, copy=False)  # every array above is a fresh copy (not pyarrow's memory): no second copy into blocks
