"""Whole-batch conversion of a mapped Arrow batch (Parquet) into normalised columns, without a Python row loop.

Only the plain cases are taken: a time column that is an Arrow timestamp (with a zone, or without
one when the log's zone is UTC) or epoch numbers, relative seconds/ms, whole-number token columns,
a model column and numeric TTFT/duration in ms. Anything else (text to count, strings for times,
nulls in a required column, a negative or fractional count, cached above prompt) returns None and
the caller converts that batch row by row, which names each rejected row.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

__all__ = ["batch_frame"]

_SIMPLE = {
    "ts",
    "ts_relative_s",
    "ts_relative_ms",
    "model",
    "prompt_tokens",
    "cached_tokens",
    "output_tokens",
    "ttft_ms",
    "duration_ms",
}


def _epoch_ms(col, tz: str) -> np.ndarray | None:
    import pyarrow as pa

    if pa.types.is_timestamp(col.type):
        if col.type.tz is None and tz not in ("UTC", "utc", ""):
            return None  # wall-clock times in another zone: the row path reads them in that zone
        if col.null_count:
            return None
        us = col.cast(pa.timestamp("us", col.type.tz), safe=False).cast(pa.int64()).to_numpy()
        return np.round(us / 1000.0).astype(np.int64)  # to the ms, rounded as the row path rounds
    if pa.types.is_integer(col.type) or pa.types.is_floating(col.type):
        if col.null_count:
            return None
        v = col.to_numpy(zero_copy_only=False).astype(np.float64)
        if not np.isfinite(v).all() or (v <= 0).any():
            return None
        out = np.where(
            v < 1e11, np.round(v * 1000), np.where(v < 1e14, np.round(v), np.where(v < 1e17, v // 1000, v // 1e6))
        )
        return out.astype(np.int64)
    return None


def _counts(col, required: bool) -> np.ndarray | None:
    import pyarrow as pa

    if col is None:
        return None if required else np.zeros(0, dtype=np.int64)
    if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
        return None
    if col.null_count and required:
        return None
    v = col.to_numpy(zero_copy_only=False) if not col.null_count else col.fill_null(0).to_numpy(zero_copy_only=False)
    if v.dtype.kind == "f" and (~np.isfinite(v) | (v != np.floor(v))).any():
        return None
    v = v.astype(np.int64)
    return None if (v < 0).any() else v


def _ms(col) -> np.ndarray | None:
    import pyarrow as pa

    if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
        return None
    v = col.cast(pa.float64()).fill_null(np.nan).to_numpy(zero_copy_only=False)
    return None if (v[~np.isnan(v)] < 0).any() else v


def batch_frame(batch, mapping: Mapping[str, str], tz: str, start_ms: int, source: str) -> pd.DataFrame | None:
    """The normalised frame of one Arrow RecordBatch under `mapping`, or None when a row needs the row-by-row path."""
    if not set(k for k, v in mapping.items() if v) <= _SIMPLE or not mapping.get("prompt_tokens"):
        return None
    col = lambda field: batch.column(mapping[field]) if mapping.get(field) else None  # noqa: E731
    n = batch.num_rows
    if mapping.get("ts"):
        ts = _epoch_ms(col("ts"), tz)
    else:
        unit = "ts_relative_s" if mapping.get("ts_relative_s") else "ts_relative_ms"
        rel = _ms(col(unit))
        if rel is None or np.isnan(rel).any():
            return None
        ts = start_ms + np.round(rel * (1000.0 if unit == "ts_relative_s" else 1.0)).astype(np.int64)
    prompt = _counts(col("prompt_tokens"), True)
    cached = _counts(col("cached_tokens"), False)
    output = _counts(col("output_tokens"), False)
    if ts is None or prompt is None or cached is None or output is None:
        return None
    cached = cached if cached.size else np.zeros(n, dtype=np.int64)
    output = output if output.size else np.zeros(n, dtype=np.int64)
    if (cached > prompt).any():
        return None
    timings = {}
    for field in ("ttft_ms", "duration_ms"):
        timings[field] = np.full(n, np.nan) if col(field) is None else _ms(col(field))
        if timings[field] is None:
            return None
    model = col("model")
    names = (
        np.full(n, "", dtype=object)
        if model is None
        else np.asarray(model.cast("string").fill_null("").to_pylist(), dtype=object)
    )
    return pd.DataFrame(
        {
            "ts_ms": ts,
            "model": names,
            "prompt_tokens": prompt,
            "cached_tokens": cached,
            "output_tokens": output,
            "ttft_ms": timings["ttft_ms"],
            "duration_ms": timings["duration_ms"],
            "source": source,
        }
    )
