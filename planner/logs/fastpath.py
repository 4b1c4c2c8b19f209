"""Vectorised reading of OpenAI chat-completion JSON Lines held in memory (uploads) with pyarrow's JSON reader.

Only the fields the summary needs are declared; pyarrow skips the rest (message text
included) without building Python objects. Any surprise (a malformed line,
an unexpected type, an invalid count, invalid UTF-8) returns None and the
caller uses the line-by-line reader, which explains each rejected line.
Files on disk take planner.logs.duckpath instead (streamed, any size).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from planner.lazy import lazy_module
from planner.logs.records import MAX_EPOCH_MS, MAX_TOKENS

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
else:  # imported on first use: `logs summarize` reads through DuckDB alone
    np, pd = lazy_module("numpy"), lazy_module("pandas")

__all__ = ["read_openai_jsonl"]

_BLOCK = 4 << 20  # pyarrow's block size when it parses one buffer with all cores (bytes given in memory)


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

    return pa.schema(
        [
            ("object", pa.string()),
            ("created", pa.int64()),
            ("model", pa.string()),
            (
                "usage",
                pa.struct(
                    [
                        ("prompt_tokens", pa.int64()),
                        ("completion_tokens", pa.int64()),
                        ("prompt_tokens_details", pa.struct([("cached_tokens", pa.int64())])),
                    ]
                ),
            ),
        ]
    )


def _parse(body: Any) -> Any:
    """One pyarrow read_json call over a Buffer (no copy of the input); None on any parse error."""
    import pyarrow as pa
    import pyarrow.json as pajson

    try:
        return pajson.read_json(
            body,
            read_options=pajson.ReadOptions(block_size=_BLOCK, use_threads=True),
            parse_options=pajson.ParseOptions(explicit_schema=_schema(), unexpected_field_behavior="ignore"),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return None


def read_openai_jsonl(data: bytes) -> pd.DataFrame | None:
    """Columns ts_ms, model, prompt_tokens, cached_tokens, output_tokens from OpenAI chat JSONL bytes; None when unsure.

    Rows are in arrival order (a stable sort by ts_ms, the order read_logs gives its frame).
    """
    import pyarrow as pa  # a dependency; imported here so commands that read no log never pay for it

    # pyarrow skips blank lines, so row numbers may drift from line numbers; that is harmless here
    # because any row that would be rejected sends the whole file to the line reader.
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
    if (prompt_np > MAX_TOKENS).any() or (output_np > MAX_TOKENS).any():
        return None
    if (created_np <= 0).any() or (created_np >= MAX_EPOCH_MS // 1000).any():  # not epoch seconds of 1970–2100
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
    return pd.DataFrame(
        {
            "ts_ms": ts_ms,
            "model": pd.Series(names[codes], dtype=object, copy=False),
            "prompt_tokens": prompt_np.astype(np.int64),
            "cached_tokens": cached_np.astype(np.int64),
            "output_tokens": output_np.astype(np.int64),
        },
        copy=False,
    )  # every array above is a fresh copy (not pyarrow's memory): no second copy into blocks
