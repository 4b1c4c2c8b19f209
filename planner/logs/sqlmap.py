"""A plain column mapping as SQL: a table's (CSV's, Parquet's) columns → the engine's request columns, in DuckDB.

The SQL twin of planner.logs.columnar.batch_rows, for `logs summarize`'s engine (planner.logs.engine): the same
plain cases (times as timestamps or epoch numbers, relative seconds/ms, numeric counts and timings, a model name),
the same conversions (epoch magnitudes, rounding half to even) and the same checks (whole counts within 0–10⁹,
cached ≤ prompt, times in 1970–2100, no negative timing). A file with a row that fails a check is not inserted
here at all: the batch reader reads it and names the row. tests/planner/test_logs_engine.py holds both equal.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from planner.logs.columnar import SIMPLE_FIELDS
from planner.logs.records import MAX_EPOCH_MS, MAX_TOKENS

__all__ = ["LITELLM_CASTS", "LITELLM_COLUMNS", "RowSelect", "litellm_select", "mapped_select"]

_NUMBER = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT")
_FLOAT = ("FLOAT", "DOUBLE", "REAL")
_TZ = "TIMESTAMP WITH TIME ZONE"


@dataclass
class RowSelect:
    """The engine's seven columns (`select`) of a relation's rows, and the check (`ok`) a row passes when the
    engine vouches for it. Both read `derived` columns, each computed once per row, in order, over the relation
    (SELECT *, expr AS name), and never failing on a row: conversions that can fail (to BIGINT) are in `select`
    only, which runs on the rows that pass."""

    select: str = ""
    ok: str = ""
    derived: list[tuple[str, str]] = field(default_factory=list)

    def once(self, name: str, expr: str) -> str:
        """The name of a derived column computing expr."""
        self.derived.append((name, expr))
        return name

    def over(self, relation: str) -> str:
        """SQL: the relation with the derived columns."""
        for name, expr in self.derived:
            relation = f"SELECT *, {expr} AS {name} FROM ({relation})"
        return relation


def _q(column: str) -> str:
    return '"' + column.replace('"', '""') + '"'


def _numeric(kind: str) -> bool:
    return kind in _NUMBER or kind in _FLOAT or kind.startswith("DECIMAL")


def _epoch_ms(rs: RowSelect, name: str, col: str, kind: str) -> tuple[str, str] | None:
    """(UTC epoch ms as a derived column, its check) of a time column of DuckDB type `kind`; None for a type not
    taken here."""
    if kind.startswith("TIMESTAMP"):
        # Without a zone: wall-clock time in the session's zone (the log's --tz), as the row reader reads it.
        ts = col if kind == _TZ else f"{col}::TIMESTAMP::TIMESTAMPTZ"
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
    at = rs.once(name, ms)
    return at, f"{at} > 0 AND {at} < {MAX_EPOCH_MS}"


def _count(rs: RowSelect, name: str, col: str | None) -> tuple[str, str, str]:
    """(the count as BIGINT, as a DOUBLE derived column, its check) of a numeric column; 0 when absent or NULL."""
    if col is None:
        return "0", "0", "true"
    v = rs.once(name, f"coalesce({col}::DOUBLE, 0)")
    return f"{v}::BIGINT", v, f"isfinite({v}) AND {v} = floor({v}) AND {v} BETWEEN 0 AND {MAX_TOKENS}"


def _all(checks: list[str]) -> str:
    return " AND ".join(f"coalesce({c}, false)" for c in checks)


def _columns(ts: str, model: str, prompt: str, cached: str, output: str, ttft: str, duration: str) -> str:
    return (
        f"{ts} AS ts_ms, {model} AS model, {prompt} AS prompt_tokens, {cached} AS cached_tokens, "
        f"{output} AS output_tokens, {ttft} AS ttft_ms, {duration} AS duration_ms"
    )


def mapped_select(mapping: Mapping[str, str], types: Mapping[str, str], start_ms: int) -> RowSelect | None:
    """The engine's rows of a relation with the mapped columns, typed as `types` says (DuckDB's names); None when
    the mapping or a column's type is not a plain case (the batch reader reads it)."""
    used = {k: v for k, v in mapping.items() if v}
    if not set(used) <= SIMPLE_FIELDS or "prompt_tokens" not in used or any(v not in types for v in used.values()):
        return None
    rs = RowSelect()
    if "ts" in used:
        got = _epoch_ms(rs, "__ts_ms", _q(used["ts"]), types[used["ts"]])
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
    cols = {f: _q(used[f]) if f in used else None for f in ("prompt_tokens", "cached_tokens", "output_tokens")}
    if any(col is not None and not _numeric(types[used[f]]) for f, col in cols.items()):
        return None
    prompt, prompt_n, prompt_ok = _count(rs, "__prompt", cols["prompt_tokens"])
    prompt_ok = f"{cols['prompt_tokens']} IS NOT NULL AND {prompt_ok}"  # a missing prompt count is not 0
    cached, cached_n, cached_ok = _count(rs, "__cached", cols["cached_tokens"])
    output, _, output_ok = _count(rs, "__output", cols["output_tokens"])
    timings, timing_oks = [], []
    for f in ("ttft_ms", "duration_ms"):
        if f not in used:
            timings.append("NULL::DOUBLE")
            continue
        if not _numeric(types[used[f]]):
            return None
        v = f"{_q(used[f])}::DOUBLE"
        timings.append(f"CASE WHEN isnan({v}) THEN NULL ELSE {v} END")
        timing_oks.append(f"coalesce(isnan({v}) OR (isfinite({v}) AND {v} >= 0), true)")  # not inf, not negative
    model = f"coalesce({_q(used['model'])}::VARCHAR, '')" if "model" in used else "''"
    rs.select = _columns(ts, model, prompt, cached, output, *timings)
    rs.ok = _all([ts_ok, prompt_ok, cached_ok, output_ok, f"{cached_n} <= {prompt_n}", *timing_oks])
    return rs


# A LiteLLM spend-log export's columns the engine converts (read as text; the others stay text)
LITELLM_CASTS = {
    "startTime": _TZ,
    "completionStartTime": _TZ,
    "endTime": _TZ,
    "prompt_tokens": "DOUBLE",
    "completion_tokens": "DOUBLE",
}
LITELLM_COLUMNS = (*LITELLM_CASTS, "status", "metadata", "model", "model_group")  # those litellm_select reads
_LITELLM_CACHED = (
    "['$.additional_usage_values.prompt_tokens_details.cached_tokens', "
    "'$.usage_object.prompt_tokens_details.cached_tokens']"
)


def litellm_select(columns: set[str]) -> RowSelect | None:
    """The engine's rows of a LiteLLM spend-log export (planner.logs.gateways.extract_litellm in SQL) over its
    columns, those in LITELLM_CASTS converted; None without a startTime or prompt_tokens column.

    The check vouches only for the plain case: a successful call, whole counts, the cached count an integer in the
    metadata JSON (or none, or metadata that is not JSON), times in range and not before startTime. Any other row
    is the extractor's.
    """
    if "startTime" not in columns or "prompt_tokens" not in columns:
        return None
    col = {c: _q(c) if c in columns else "NULL" for c in LITELLM_COLUMNS}
    rs = RowSelect()
    ts, ts_ok = _epoch_ms(rs, "__ts_ms", col["startTime"], _TZ)  # type: ignore[misc]
    timings, timing_oks = [], []
    for c in ("completionStartTime", "endTime"):
        if col[c] == "NULL":
            timings.append("NULL::DOUBLE")
            continue
        at, at_ok = _epoch_ms(rs, f"__{c}_ms", col[c], _TZ)  # type: ignore[misc]
        timings.append(f"({at} - {ts})::DOUBLE")
        timing_oks.append(f"{col[c]} IS NULL OR ({at_ok} AND {at} >= {ts})")
    prompt, prompt_n, prompt_ok = _count(rs, "__prompt", col["prompt_tokens"])
    output, _, output_ok = _count(
        rs, "__output", None if col["completion_tokens"] == "NULL" else col["completion_tokens"]
    )
    # The metadata JSON parsed once for both places the cached count may be (NULL when it is not JSON); the first
    # place's value unless it is missing or JSON null.
    if col["metadata"] == "NULL":
        cached_json = "NULL::JSON"
    else:
        usage = rs.once("__usage", f"try(json_extract({col['metadata']}, {_LITELLM_CACHED}))")
        cached_json = rs.once(
            "__cached_json",
            f"CASE WHEN coalesce(json_type({usage}[1]), 'NULL') = 'NULL' THEN {usage}[2] ELSE {usage}[1] END",
        )
    kind = rs.once("__cached_type", f"coalesce(json_type({cached_json}), 'NULL')")
    cached_n = rs.once("__cached", f"coalesce(try_cast({cached_json} AS DOUBLE), 0)")
    cached_ok = f"{kind} = 'NULL' OR ({kind} = 'UBIGINT' AND {cached_n} <= {MAX_TOKENS} AND {cached_n} <= {prompt_n})"
    status_ok = f"lower(coalesce({col['status']}, 'success')) IN ('success', '')"
    model = f"coalesce(nullif({col['model']}, ''), nullif({col['model_group']}, ''), '')"
    rs.select = _columns(ts, model, prompt, f"{cached_n}::BIGINT", output, *timings)
    rs.ok = _all(
        [status_ok, ts_ok, f"{col['prompt_tokens']} IS NOT NULL", prompt_ok, output_ok, cached_ok, *timing_oks]
    )
    return rs
