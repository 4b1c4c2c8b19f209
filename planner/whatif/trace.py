"""The request trace the what-if replays: arrival times and token counts, as numpy arrays.

A trace comes from the logs issue's normalized request frame (`ts_ms` UTC epoch ms,
`prompt_tokens` including cached, `cached_tokens`, `output_tokens`), optionally scaled
by a growth factor or cut to the busiest day in a time zone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import pandas as pd

from planner.errors import PlannerError
from planner.whatif.prefix_identity import PrefixIdentity

__all__ = [
    "Trace",
    "TraceError",
    "busiest_day",
    "grow",
    "hour_of_day",
    "read_trace",
    "read_trace_file",
    "trace_from_frame",
]

_REQUIRED = ("ts_ms", "prompt_tokens")


class TraceError(PlannerError, ValueError):
    """A log the replay cannot use (no timestamps, no token counts, empty); the message says which."""


@dataclass(frozen=True)
class Trace:
    """Requests sorted by arrival.

    arrival_ms: UTC epoch ms (float64, sorted); prompt_tokens includes cached_tokens;
    output_tokens: generated tokens. All arrays have the same length n ≥ 1.
    """

    arrival_ms: np.ndarray
    prompt_tokens: np.ndarray
    cached_tokens: np.ndarray
    output_tokens: np.ndarray
    source: str = ""
    notes: tuple[str, ...] = ()  # what the reader derived or defaulted (relative times, prefix-cache share)
    prefix: PrefixIdentity | None = None  # each request's block hashes and session, for routing= (issue 45)

    @property
    def n(self) -> int:
        return len(self.arrival_ms)

    @property
    def span_ms(self) -> float:
        """Last minus first arrival (ms)."""
        return float(self.arrival_ms[-1] - self.arrival_ms[0]) if self.n else 0.0

    @property
    def uncached_tokens(self) -> np.ndarray:
        """Prompt tokens that pay prefill (prompt − cached, never below 0)."""
        return np.maximum(self.prompt_tokens - self.cached_tokens, 0.0)

    def take(self, mask_or_index: np.ndarray) -> Trace:
        """A sub-trace (boolean mask or index array, kept in arrival order)."""
        return Trace(
            self.arrival_ms[mask_or_index],
            self.prompt_tokens[mask_or_index],
            self.cached_tokens[mask_or_index],
            self.output_tokens[mask_or_index],
            self.source,
            self.notes,
            None if self.prefix is None else self.prefix.take(mask_or_index),
        )


def _column(frame: pd.DataFrame, name: str, where: str) -> np.ndarray:
    values = pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
    bad = ~np.isfinite(values) | (values < 0)
    if name in _REQUIRED and bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise TraceError(f"{where}: {int(bad.sum())} row(s) have no usable {name} (first at row {first + 1})")
    return np.where(bad, 0.0, values)


def trace_from_frame(frame: pd.DataFrame, source: str = "log") -> Trace:
    """Build a Trace from a normalized request frame; missing cached/output columns count as 0.

    Raises TraceError when the frame is empty or lacks timestamps (`ts_ms`) or `prompt_tokens`.
    """
    missing = [c for c in _REQUIRED if c not in frame.columns]
    if missing:
        what = "timestamps" if "ts_ms" in missing else "token counts"
        raise TraceError(
            f"{source}: the log has no {what} (missing column {', '.join(missing)}); "
            "the replay needs each request's arrival time (ts_ms, UTC epoch ms) and prompt_tokens"
        )
    if frame.empty:
        raise TraceError(f"{source}: the log has no requests")
    arrival = _column(frame, "ts_ms", source)
    prompt = _column(frame, "prompt_tokens", source)
    cached = _column(frame, "cached_tokens", source) if "cached_tokens" in frame else np.zeros_like(prompt)
    output = _column(frame, "output_tokens", source) if "output_tokens" in frame else np.zeros_like(prompt)
    if arrival.size > 1 and (arrival[1:] < arrival[:-1]).any():
        order = np.argsort(arrival, kind="stable")
        arrival, prompt, cached, output = arrival[order], prompt[order], cached[order], output[order]
    # read_logs gives its frame in arrival order already: no index array and no second copy of every column
    return Trace(arrival, prompt, np.minimum(cached, prompt, out=cached), output, source)


def read_trace(
    paths: Sequence[str | Path],
    tz: str = "UTC",
    *,
    fmt: str = "auto",
    mapping: Mapping[str, str] | None = None,
    start: str | None = None,
    cache_blocks: int | None = None,
    progress: Callable[[float, str], None] | None = None,
) -> Trace:
    """Read request logs in any format `planner.logs.read_logs` knows (the same --format, --map, start date and
    prefix-cache size as `logs summarize`); `tz` is the zone of naive timestamps and of a relative trace's start.
    progress: called with (fraction of input bytes read 0..1, message), as read_logs calls it.

    Raises TraceError naming the file(s) when nothing in them can be read as requests with arrival times.
    """
    from planner.logs import read_logs
    from planner.logs.load import RequestTable, connect, return_freed_heap
    from planner.logs.prefix import DEFAULT_CACHE_BLOCKS

    files = [Path(p) for p in paths]
    label = ", ".join(f.name for f in files[:3]) + (" …" if len(files) > 3 else "")
    blocks = DEFAULT_CACHE_BLOCKS if cache_blocks is None else cache_blocks  # read_logs' own default when unset
    con = connect(keep_order=True)  # the requests into DuckDB (spilling to disk), then only the replay's four columns
    try:
        table = RequestTable(con)
        res = read_logs(
            files, fmt=fmt, mapping=mapping, tz=tz, start=start, progress=progress, cache_blocks=blocks, sink=table
        )
        arrival, prompt, cached, output = table.arrays()
    except (OSError, ValueError) as exc:
        reason = str(exc).removeprefix("Nothing could be read: ")
        raise TraceError(
            f"{label}: cannot read the log as a request trace: each request needs an arrival timestamp and "
            f"token counts ({reason})"
        ) from None
    finally:
        con.close()
    return_freed_heap()
    return Trace(arrival, prompt, cached, output, label, notes=tuple(res.notes))


def read_trace_file(path: str | Path, tz: str = "UTC") -> Trace:
    """One file as a Trace (see read_trace)."""
    return read_trace([path], tz=tz)


def _zone(tz: str) -> ZoneInfo:
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise TraceError(f"unknown time zone {tz!r} (use an IANA name such as Europe/Berlin)") from None


def hour_of_day(arrival_ms: np.ndarray, tz: str = "UTC") -> np.ndarray:
    """Local hour (0–23) of each UTC epoch-ms arrival in time zone `tz`; raises TraceError for an unknown zone."""
    _zone(tz)
    idx = pd.to_datetime(arrival_ms.astype("int64"), unit="ms", utc=True).tz_convert(tz)
    return np.asarray(idx.hour, dtype=np.int64)


def busiest_day(trace: Trace, tz: str = "UTC") -> tuple[Trace, str]:
    """The sub-trace of the calendar day (in `tz`) with the most requests, and that day as YYYY-MM-DD."""
    _zone(tz)
    days = pd.to_datetime(trace.arrival_ms.astype("int64"), unit="ms", utc=True).tz_convert(tz).strftime("%Y-%m-%d")
    days = np.asarray(days)
    labels, counts = np.unique(days, return_counts=True)
    best = str(labels[int(np.argmax(counts))])
    return trace.take(days == best), best


def grow(trace: Trace, growth: float, seed: int = 0, jitter_ms: float = 60_000.0) -> Trace:
    """Scale the request volume by `growth` while keeping the hour-of-day shape.

    Each request is kept floor(growth) times plus once more with probability frac(growth)
    (so 0.5 thins by half, 2.0 doubles); copies beyond the first are shifted by a uniform
    jitter within ±jitter_ms so they do not arrive in lockstep. Deterministic for a seed.
    Raises TraceError for a growth ≤ 0 or one that leaves no request.
    """
    if not (math.isfinite(growth) and growth > 0):
        raise TraceError(f"growth must be a number > 0, got {growth:g}")
    if growth == 1.0:
        return trace
    rng = np.random.default_rng(seed)
    whole = int(math.floor(growth))
    copies = whole + (rng.random(trace.n) < (growth - whole))
    index = np.repeat(np.arange(trace.n), copies)
    if index.size == 0:
        raise TraceError(f"growth {growth:g} leaves no request in a {trace.n}-request trace")
    first = np.ones(index.size, dtype=bool)
    first[1:] = index[1:] != index[:-1]
    shift = np.where(first, 0.0, rng.uniform(-jitter_ms, jitter_ms, index.size))
    lo, hi = trace.arrival_ms[0], trace.arrival_ms[-1]
    arrival = np.clip(trace.arrival_ms[index] + shift, lo, hi)
    order = np.argsort(arrival, kind="stable")
    idx = index[order]
    return Trace(
        arrival[order],
        trace.prompt_tokens[idx],
        trace.cached_tokens[idx],
        trace.output_tokens[idx],
        trace.source,
        trace.notes,
        None if trace.prefix is None else trace.prefix.take(idx),
    )
