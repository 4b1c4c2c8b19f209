"""What read_logs returns: the normalised request frame and its columns, what was left out, and its errors."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from planner.errors import PlannerError
from planner.lazy import lazy_module
from planner.logs.otlp_walk import storable
from planner.logs.records import RejectedLine, Row

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
else:  # imported on first use: `logs summarize` reads through DuckDB alone
    np, pd = lazy_module("numpy"), lazy_module("pandas")

__all__ = ["COLUMNS", "LogFormatError", "LogParseResult", "Progress", "empty_frame", "rows_frame"]

COLUMNS = ("ts_ms", "model", "prompt_tokens", "cached_tokens", "output_tokens", "ttft_ms", "duration_ms", "source")

Progress = Callable[[float, str], object]  # what it returns is ignored (a page passes a progress bar's update)


class LogFormatError(PlannerError, ValueError):
    """Nothing in the given files parsed; the message says what was expected and what was found.

    `columns` holds the column names (or top-level keys) seen, so a caller can offer a mapping form.
    """

    def __init__(self, message: str, columns: Sequence[str] = (), rejected: Sequence[RejectedLine] = ()) -> None:
        super().__init__(message)
        self.columns = list(columns)
        self.rejected = list(rejected)


@dataclass
class LogParseResult:
    """The normalised requests (one row each; see COLUMNS) and everything that was left out."""

    requests: pd.DataFrame | None = None  # None when they went to read_logs' sink (`frame` is then empty)
    rejected: list[RejectedLine] = field(default_factory=list)
    n_rejected: int = 0
    formats: dict[str, str] = field(default_factory=dict)
    mapping: dict[str, str] = field(default_factory=dict)
    tokens_estimated: bool = False
    n_skipped: int = 0  # records that are not model calls (e.g. Langfuse SPANs, HTTP spans)
    token_counter: str = ""  # how counts were made when tokens_estimated or a tokenizer was used
    columns: dict[str, list[str]] = field(default_factory=dict)  # source → column names (CSV) / keys seen
    notes: list[str] = field(default_factory=list)  # what was derived or defaulted (relative times, prefix cache)
    n_read: int = 0  # requests read (the frame's rows, or what went to read_logs' sink)

    @property
    def frame(self) -> pd.DataFrame:
        """The requests sorted by arrival; an empty frame when they went to a sink (made only then: a reader
        with a sink never needs pandas)."""
        if self.requests is None:
            self.requests = empty_frame()
        return self.requests


def empty_frame() -> pd.DataFrame:
    """A frame with the normalised columns and dtypes and no rows."""
    return rows_frame([], [])


def rows_frame(rows: list[Row], sources: list[str]) -> pd.DataFrame:
    arr: dict[str, Sequence[Any]]
    if not rows:
        arr = {c: [] for c in Row._fields}
    else:
        arr = dict(zip(Row._fields, zip(*rows, strict=True), strict=True))
    try:
        return _frame(arr, sources)
    except UnicodeEncodeError:  # a model named by JSON's "\ud800": a lone surrogate, which no string column takes
        arr["model"] = [storable(m, len(m)) for m in arr["model"]]
        return _frame(arr, sources)


def _frame(arr: dict[str, Sequence[Any]], sources: list[str]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "ts_ms": np.asarray(arr["ts_ms"], dtype=np.int64),
            "model": pd.array(list(arr["model"]), dtype=object),
            "prompt_tokens": np.asarray(arr["prompt_tokens"], dtype=np.int64),
            "cached_tokens": np.asarray(arr["cached_tokens"], dtype=np.int64),
            "output_tokens": np.asarray(arr["output_tokens"], dtype=np.int64),
            "ttft_ms": np.asarray(arr["ttft_ms"], dtype=np.float64),
            "duration_ms": np.asarray(arr["duration_ms"], dtype=np.float64),
            "source": pd.array(sources, dtype=object),
        }
    )
