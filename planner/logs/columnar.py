"""Whole-batch conversion of a mapped Arrow batch (CSV through DuckDB, Parquet) into normalised columns.

Only the plain column types are taken: a time column that is an Arrow timestamp (with a zone, or
without one when the log's zone is UTC) or epoch numbers, relative seconds/ms, numeric token
columns, a model column and numeric TTFT/duration in ms. Another type (text to count, strings for
times) makes the whole batch None: the caller converts it row by row. Within a batch of plain types,
a row with a value the row path would reject (a null in a required column, a negative, fractional
or out-of-range count, cached above prompt, a time outside 1970–2100, a negative timing) is left
out and its index returned, for the row path to name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, TypeAlias

from planner.lazy import lazy_module
from planner.logs.records import MAX_EPOCH_MS, MAX_TOKENS

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
else:  # imported on first use: `logs summarize` reads through DuckDB alone
    np, pd = lazy_module("numpy"), lazy_module("pandas")

__all__ = ["SIMPLE_FIELDS", "batch_frame", "batch_rows"]

SIMPLE_FIELDS = frozenset(
    {
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
)

# (values, ok): the converted column, and which of its rows the row path would accept
Checked: TypeAlias = "tuple[np.ndarray, np.ndarray]"


def _numbers(col) -> Checked | None:
    """(float64 values, not null and finite) of a numeric column; None for another type."""
    import pyarrow as pa

    if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
        return None
    v = col.cast(pa.float64()).fill_null(np.nan).to_numpy(zero_copy_only=False)
    return v, np.isfinite(v)


def _epoch_ms(col, tz: str) -> Checked | None:
    import pyarrow as pa

    if pa.types.is_timestamp(col.type):
        if col.type.tz is None and tz not in ("UTC", "utc", ""):
            return None  # wall-clock times in another zone: the reader casts them in that zone first
        us = col.cast(pa.timestamp("us", col.type.tz), safe=False).cast(pa.int64())
        ok = us.is_valid().to_numpy(zero_copy_only=False)
        ms = np.round(us.fill_null(0).to_numpy(zero_copy_only=False) / 1000.0)  # to the ms, as the row path rounds
    else:
        got = _numbers(col)
        if got is None:
            return None
        v, ok = got
        v = np.where(ok & (v > 0), v, 1.0)
        ms = np.where(
            v < 1e11, np.round(v * 1000), np.where(v < 1e14, np.round(v), np.where(v < 1e17, v // 1000, v // 1e6))
        )
        ok = ok & (got[0] > 0)
    ok = ok & (ms > 0) & (ms < MAX_EPOCH_MS)
    return np.where(ok, ms, 0).astype(np.int64), ok  # out-of-range values zeroed before int64 could wrap


def _counts(col) -> Checked | None:
    got = _numbers(col)
    if got is None:
        return None
    v, ok = got
    ok = ok & (v == np.floor(v)) & (v >= 0) & (v <= MAX_TOKENS)
    return np.where(ok, v, 0).astype(np.int64), ok


def _ms(col) -> Checked | None:
    got = _numbers(col)
    if got is None:
        return None
    v, finite = got
    return v, np.isnan(v) | (finite & (v >= 0))  # a missing timing is NaN; a negative or infinite one is rejected


def batch_rows(
    batch, mapping: Mapping[str, str], tz: str, start_ms: int, source: str
) -> tuple[pd.DataFrame, np.ndarray] | None:
    """(the normalised frame of the batch's good rows, indices of the rows left for the row path), or None.

    None when a mapped column is not of a plain type (the whole batch needs the row path).
    """
    if not set(k for k, v in mapping.items() if v) <= SIMPLE_FIELDS or not mapping.get("prompt_tokens"):
        return None
    col = lambda field: batch.column(mapping[field]) if mapping.get(field) else None  # noqa: E731
    n = batch.num_rows
    if mapping.get("ts"):
        ts = _epoch_ms(col("ts"), tz)
    else:
        unit = "ts_relative_s" if mapping.get("ts_relative_s") else "ts_relative_ms"
        rel = _numbers(col(unit))
        if rel is None:
            return None
        rel_ms = np.where(rel[1], rel[0], 0) * (1000.0 if unit == "ts_relative_s" else 1.0)
        ts = start_ms + np.round(rel_ms).astype(np.int64), rel[1]
    prompt = _counts(col("prompt_tokens"))
    zero: Checked = (np.zeros(n, dtype=np.int64), np.ones(n, dtype=bool))
    cached_col, output_col = col("cached_tokens"), col("output_tokens")
    cached = zero if cached_col is None else _counts(cached_col.fill_null(0))  # a missing count is 0, as in rows
    output = zero if output_col is None else _counts(output_col.fill_null(0))
    timings = {f: (np.full(n, np.nan), zero[1]) if col(f) is None else _ms(col(f)) for f in ("ttft_ms", "duration_ms")}
    if ts is None or prompt is None or cached is None or output is None or None in timings.values():
        return None
    ok = ts[1] & prompt[1] & cached[1] & output[1] & (cached[0] <= prompt[0])
    for got in timings.values():
        ok &= got[1]  # type: ignore[index]
    model = col("model")
    if model is None:
        names = pd.Categorical.from_codes(np.zeros(n, dtype=np.int8), categories=pd.Index([""], dtype=object))
    else:  # a few distinct names, as codes: no Python string per row
        coded = model.cast("string").fill_null("").dictionary_encode()
        categories = pd.Index(coded.dictionary.to_pylist(), dtype=object)
        names = pd.Categorical.from_codes(coded.indices.to_numpy(zero_copy_only=False), categories=categories)
    keep = slice(None) if ok.all() else ok
    frame = pd.DataFrame(
        {
            "ts_ms": ts[0][keep],
            "model": names[keep],
            "prompt_tokens": prompt[0][keep],
            "cached_tokens": cached[0][keep],
            "output_tokens": output[0][keep],
            "ttft_ms": timings["ttft_ms"][0][keep],  # type: ignore[index]
            "duration_ms": timings["duration_ms"][0][keep],  # type: ignore[index]
            "source": source,
        }
    )
    return frame, np.flatnonzero(~ok)


def batch_frame(batch, mapping: Mapping[str, str], tz: str, start_ms: int, source: str) -> pd.DataFrame | None:
    """The normalised frame of one Arrow RecordBatch under `mapping`, or None when any row needs the row path."""
    got = batch_rows(batch, mapping, tz, start_ms, source)
    return got[0] if got is not None and not got[1].size else None
