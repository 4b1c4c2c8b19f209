"""Vectorised reading of OpenAI chat-completion JSON Lines with pyarrow's multi-threaded JSON reader.

Only the fields the summary needs are declared; pyarrow skips the rest (message text
included) without building Python objects. Any surprise (a malformed line,
an unexpected type, an invalid count) returns None and the caller uses the line-by-line
reader, which explains each rejected line.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["read_openai_jsonl"]


def _valid_utf8(data: bytes, chunk: int = 16 << 20) -> bool:
    # pyarrow does not validate UTF-8; the line reader rejects the bad lines with their numbers.
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(data)
    try:
        for start in range(0, len(data), chunk):
            decoder.decode(view[start:start + chunk])
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def _file_is_utf8(path: Path, chunk: int = 16 << 20) -> bool:
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")()
    with open(path, "rb") as fh:
        try:
            while block := fh.read(chunk):
                if not block.isascii():
                    decoder.decode(block)
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            return False
    return True


def read_openai_jsonl(data: bytes | Path) -> pd.DataFrame | None:
    """Columns ts_ms, model, prompt_tokens, cached_tokens, output_tokens from OpenAI chat JSONL; None when unsure.

    `data` is the file's bytes, or the path of an uncompressed file (then pyarrow streams it
    in blocks and the file is never held whole in memory).
    """
    try:
        import pyarrow as pa
        import pyarrow.json as pajson
    except ImportError:  # pragma: no cover - pyarrow ships with streamlit
        return None
    # pyarrow skips blank lines, so row numbers may drift from line numbers; that is harmless here
    # because any row that would be rejected sends the whole file to the line reader.
    if isinstance(data, Path):
        with open(data, "rb") as fh:
            if fh.read(1) != b"{":
                return None
        if not _file_is_utf8(data):
            return None
        body = str(data)
    else:
        end = len(data)
        while end and data[end - 1] in b"\r\n":
            end -= 1
        if not end or data[:1] != b"{":
            return None
        if not data.isascii() and not _valid_utf8(data):
            return None
        body = pa.py_buffer(memoryview(data)[:end])  # no copy
    schema = pa.schema([
        ("object", pa.string()),
        ("created", pa.int64()),
        ("model", pa.string()),
        ("usage", pa.struct([
            ("prompt_tokens", pa.int64()),
            ("completion_tokens", pa.int64()),
            ("prompt_tokens_details", pa.struct([("cached_tokens", pa.int64())])),
        ])),
    ])
    try:
        table = pajson.read_json(
            body,
            read_options=pajson.ReadOptions(block_size=2 << 20, use_threads=True),
            parse_options=pajson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
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
    model = table.column("model").fill_null("").to_pandas()
    return pd.DataFrame({
        "ts_ms": created_np.astype(np.int64) * 1000,
        "model": model.astype(object),
        "prompt_tokens": prompt_np.astype(np.int64),
        "cached_tokens": cached_np.astype(np.int64),
        "output_tokens": output_np.astype(np.int64),
    })
