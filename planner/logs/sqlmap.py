"""A plain column mapping as SQL: a table's (CSV's, Parquet's) columns → the engine's request columns, in DuckDB.

The SQL twin of planner.logs.columnar.batch_rows, for `logs summarize`'s engine (planner.logs.engine): the same
plain cases (times as timestamps or epoch numbers, relative seconds/ms, numeric counts and timings, a model name),
the same conversions (epoch magnitudes, rounding half to even) and the same checks (whole counts within 0–10⁹,
cached ≤ prompt, times in 1970–2100, no negative timing). A file with a row that fails a check is not inserted
here at all: the batch reader reads it and names the row. tests/planner/test_logs_engine.py holds both equal.
"""

from __future__ import annotations

from collections.abc import Mapping

from planner.logs.columnar import SIMPLE_FIELDS
from planner.logs.records import MAX_EPOCH_MS, MAX_TOKENS

__all__ = ["mapped_select"]

_NUMBER = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT")
_FLOAT = ("FLOAT", "DOUBLE", "REAL")


def _q(column: str) -> str:
    return '"' + column.replace('"', '""') + '"'


def _numeric(kind: str) -> bool:
    return kind in _NUMBER or kind in _FLOAT or kind.startswith("DECIMAL")


def _epoch_ms(col: str, kind: str) -> tuple[str, str] | None:
    """(UTC epoch ms, its check) of a time column of DuckDB type `kind`; None for a type not taken here."""
    if kind.startswith("TIMESTAMP"):
        tz_aware = kind == "TIMESTAMP WITH TIME ZONE"
        # Without a zone: wall-clock time in the session's zone (the log's --tz), as the row reader reads it.
        ts = col if tz_aware else f"{col}::TIMESTAMP::TIMESTAMPTZ"
        ms = f"round_even(epoch_us({ts}) / 1000.0, 0)::BIGINT"
    elif _numeric(kind):
        v = f"{col}::DOUBLE"
        ms = (
            f"(CASE WHEN {v} < 1e11 THEN round_even({v} * 1000, 0) WHEN {v} < 1e14 THEN round_even({v}, 0) "
            f"WHEN {v} < 1e17 THEN floor({v} / 1000) ELSE floor({v} / 1e6) END)"
        )
        ms = f"(CASE WHEN isfinite({v}) AND {v} > 0 AND {v} < 1e20 THEN {ms}::BIGINT END)"
    else:
        return None
    return ms, f"{ms} > 0 AND {ms} < {MAX_EPOCH_MS}"


def _count(col: str | None) -> tuple[str, str]:
    if col is None:
        return "0", "true"
    v = f"coalesce({col}::DOUBLE, 0)"
    return f"{v}::BIGINT", f"isfinite({v}) AND {v} = floor({v}) AND {v} BETWEEN 0 AND {MAX_TOKENS}"


def mapped_select(mapping: Mapping[str, str], types: Mapping[str, str], start_ms: int) -> tuple[str, str] | None:
    """(the SELECT list of ts_ms, model, prompt_tokens, cached_tokens, output_tokens, ttft_ms, duration_ms; the
    check every row must pass) over a relation with the mapped columns, typed as `types` says; None when the
    mapping or a column's type is not a plain case (the batch reader reads it)."""
    used = {k: v for k, v in mapping.items() if v}
    if not set(used) <= SIMPLE_FIELDS or "prompt_tokens" not in used or any(v not in types for v in used.values()):
        return None
    if "ts" in used:
        got = _epoch_ms(_q(used["ts"]), types[used["ts"]])
        if got is None:
            return None
        ts, ts_ok = got
    else:
        unit = "ts_relative_s" if "ts_relative_s" in used else "ts_relative_ms"
        if unit not in used or not _numeric(types[used[unit]]):
            return None
        rel = f"{_q(used[unit])}::DOUBLE"
        ts = f"({start_ms} + round_even({rel} * {1000.0 if unit == 'ts_relative_s' else 1.0}, 0)::BIGINT)"
        ts_ok = f"isfinite({rel})"
    fields = {f: _q(used[f]) if f in used else None for f in ("prompt_tokens", "cached_tokens", "output_tokens")}
    if any(col is not None and not _numeric(types[used[f]]) for f, col in fields.items()):
        return None
    prompt, prompt_ok = _count(fields["prompt_tokens"])
    prompt_ok = f"{fields['prompt_tokens']} IS NOT NULL AND {prompt_ok}"  # a missing prompt count is not 0
    cached, cached_ok = _count(fields["cached_tokens"])
    output, output_ok = _count(fields["output_tokens"])
    timings, timing_oks = [], []
    for f in ("ttft_ms", "duration_ms"):
        if f not in used:
            timings.append("NULL::DOUBLE")
            continue
        if not _numeric(types[used[f]]):
            return None
        v = f"{_q(used[f])}::DOUBLE"
        timings.append(f"CASE WHEN isnan({v}) THEN NULL ELSE {v} END")
        timing_oks.append(f"coalesce(isnan({v}) OR {v} >= 0, true)")
    model = f"coalesce({_q(used['model'])}::VARCHAR, '')" if "model" in used else "''"
    select = f"{ts} AS ts_ms, {model} AS model, {prompt} AS prompt_tokens, {cached} AS cached_tokens, " + (
        f"{output} AS output_tokens, {timings[0]} AS ttft_ms, {timings[1]} AS duration_ms"
    )
    checks = [ts_ok, prompt_ok, cached_ok, output_ok, f"{cached} <= {prompt}", *timing_oks]
    return select, " AND ".join(f"coalesce({c}, false)" for c in checks)
