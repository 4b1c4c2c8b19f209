"""read_logs: files in any supported format → one normalised request frame, plus what was rejected.

Each file is size-checked and safely decompressed (limits.py), decoded (UTF-8, UTF-8 with BOM,
UTF-16), split into records (JSON Lines, a JSON array, one JSON object, or CSV), its format detected
from a sample of records, and every record turned into numbers by its format's reader. A record
that cannot be used becomes a RejectedLine with its line number and reason; a file that cannot be
used at all becomes one RejectedLine with line 0. Only when nothing parses does read_logs raise.

Over 400 lines: the per-format dispatch of read_logs, with the rejection accounting every reader shares, is one pipeline
read top to bottom.
"""

from __future__ import annotations

import ctypes
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from planner.lazy import lazy_module
from planner.logs import otel
from planner.logs.context import MAP_HINT_CLI, TRACE_FORMATS, ReadContext, relative_times
from planner.logs.duckpath import (
    Doubt,
    batch_frame,
    explain_found,
    iter_chat_frames,
    json_row_lines,
    read_chat_jsonl,
    sample_head,
    scan_chat,
    tail_is_cut,
)
from planner.logs.fastpath import read_openai_jsonl
from planner.logs.formats import EXTRACTORS, FORMATS, classify, detect
from planner.logs.gateways import Skip
from planner.logs.limits import TooLarge, check_regular, load_source
from planner.logs.mapped import REQUIRED_HELP, mapping_complete
from planner.logs.prefix import DEFAULT_CACHE_BLOCKS
from planner.logs.records import Reject, Row, dig, zone
from planner.logs.result import COLUMNS, LogFormatError, LogParseResult, Progress, empty_frame, rows_frame
from planner.logs.splitting import Collector, Sink, decode_bom, json_error, peek, split_records
from planner.logs.tables import (
    TablePlan,
    file_size,
    large_csv_plan,
    parquet_plan,
    read_csv,
    read_large_csv,
    read_parquet,
    read_record_csv,
    wanted_column,
)
from planner.logs.tokenize import TokenCounter
from planner.logs.traces import start_ms

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
else:  # imported on first use: `logs summarize` reads through DuckDB alone
    np, pd = lazy_module("numpy"), lazy_module("pandas")

__all__ = [
    "COLUMNS",
    "LogFormatError",
    "LogParseResult",
    "empty_frame",
    "read_logs",
    "return_freed_heap",
    "StreamedLog",
    "stream_logs",
]

_DETECT_SAMPLE = 200


def _with_source(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    """A fast reader's frame completed with no timings and its source (one shared name, not one per row)."""
    n = len(frame)
    frame["ttft_ms"] = np.full(n, np.nan)
    frame["duration_ms"] = np.full(n, np.nan)
    frame["source"] = pd.Categorical.from_codes(np.zeros(n, dtype=np.int8), categories=pd.Index([name]))
    return frame


def _read_json(name: str, data: bytes, kind: str, records: Iterator[tuple[int, dict]], ctx: ReadContext) -> None:
    out, res = ctx.out, ctx.res
    head, records = peek(records, _DETECT_SAMPLE)
    fmt, mapping = ctx.fmt, ctx.mapping
    if fmt in ("auto", "csv") or fmt in TRACE_FORMATS:
        detected = detect(r for _, r in head) if fmt not in TRACE_FORMATS and not mapping else None
        if detected is None:
            keys = sorted({k for _, r in head for k in r})
            picked = ctx.table_mapping(name, keys)
            if picked is not None and mapping_complete(picked[1]):
                detected, mapping = picked
            else:
                res.columns[name] = keys[:40]
                if head:
                    out.reject(name, 0, wanted_column(picked[1] if picked else {}, keys, ctx.map_hint))
                return
    else:
        detected = fmt
    res.formats[name] = detected
    if detected == "openai_chat" and kind == "jsonl":
        frame = read_openai_jsonl(data)
        if frame is not None:
            out.add_frame(_with_source(frame, name))
            return
    tabular = detected == "mapped" or detected in TRACE_FORMATS
    if tabular:
        if not mapping or not mapping_complete(mapping):
            out.reject(name, 0, f"the mapping must name {REQUIRED_HELP}")
            return
        res.mapping = dict(mapping)
        table_map = mapping
        res.columns.setdefault(name, sorted({k for _, r in head for k in r})[:40])
        ts0 = ctx.start_ms() if relative_times(mapping) else 0
        prefix = ctx.prefix(mapping)
    for line_no, rec in records:
        if detected == "otel":
            try:
                for item in otel.spans(rec, ctx.tz):
                    if isinstance(item, Reject):
                        out.reject(name, line_no, str(item))
                    else:
                        out.add(item, name)
            except RecursionError:
                out.reject(name, line_no, "nested too deeply to be a log record")
            continue
        if tabular:
            row = _record(name, line_no, rec, detected, ctx, lambda r: ctx.extract(r, table_map, dig, ts0, prefix))
        else:
            row = _record(name, line_no, rec, detected, ctx, lambda r: EXTRACTORS[detected](r, ctx.tz))
        if row is not None:
            out.add(row, name)


def _record(name: str, line_no: int, rec: dict, detected: str, ctx: ReadContext, extract) -> Row | None:
    """The row one record makes under `extract`, or None: a skipped record counted, a rejected one named."""
    out = ctx.out
    try:
        return extract(rec)
    except Skip:
        out.n_skipped += 1
    except RecursionError:
        out.reject(name, line_no, "nested too deeply to be a log record")
    except Reject as exc:
        other = classify(rec)
        if other is not None and other != detected:
            out.reject(name, line_no, f"looks like a {other} record, but this file is {detected} ({exc})")
        else:
            out.reject(name, line_no, str(exc))
    return None


def _chat_line(name: str, line_no: int, text: str, ctx: ReadContext) -> Row | None:
    """What the line-by-line reader makes of one chat JSON line the DuckDB reader left to it: a row, or None."""
    if not text.strip():
        return None
    try:
        rec = json.loads(text)
    except (ValueError, RecursionError) as exc:
        ctx.out.reject(name, line_no, json_error(exc))
        return None
    if not isinstance(rec, dict):
        ctx.out.reject(name, line_no, "not a JSON object")
        return None
    return _record(name, line_no, rec, "openai_chat", ctx, lambda r: EXTRACTORS["openai_chat"](r, ctx.tz))


def _chat_jsonl(path: Path, fmt: str) -> bool:
    """Whether the file's first lines (decompressed) are OpenAI chat JSON Lines (or fmt says so and they are JSON).

    Lines of the sample that do not parse (a bad line, invalid UTF-8) do not decide: the reader names them.
    """
    try:
        head, _ = sample_head(path)
    except (OSError, EOFError, ValueError):
        return False
    head = head.removeprefix(b"\xef\xbb\xbf")  # DuckDB drops a UTF-8 BOM; UTF-16 is the line reader's to decode
    if head.lstrip()[:1] != b"{" or b"\n" not in head:
        return False
    head = head[: head.rfind(b"\n")]
    sample = []
    for line in head.split(b"\n")[:_DETECT_SAMPLE]:
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(rec, dict):
            sample.append(rec)
    if not sample:
        return False
    return fmt != "auto" or detect(sample) == "openai_chat"


def _chat_file(path: Path, fmt: str, ctx: ReadContext, tick: Callable[[float], None] | None) -> bool:
    """Read an OpenAI chat JSON Lines file (plain, .gz, .zst) through DuckDB; False when it is not one.

    It streams, so no size cap applies: the lines DuckDB does not vouch for are read or named one by one
    (_chat_line), in line order, and the rest at DuckDB's speed.
    """
    if not _chat_jsonl(path, fmt):
        return False
    name, out = path.name, ctx.out

    def explain(line: int, text: str) -> Row | None:
        return _chat_line(name, line, text, ctx)

    def reject(line: int, why: str) -> None:
        out.reject(name, line, why)

    try:
        if out.sink is None:
            frame = read_chat_jsonl(path, explain, reject, tick)
            if frame is not None:
                out.add_frame(_with_source(frame, name))
        else:  # into the sink: by the engine alone (the bad lines then read one by one), or else a batch at a time
            try:  # with every line accounted for
                if tail_is_cut(path):
                    raise Doubt("the last line is cut off: the engine would read the file only to fail there")
                out.n_sunk += out.sink.insert_chat(path)
            except Doubt:
                mark = out.mark()
                if (found := _tolerant_into_sink(path, out)) is not None:
                    extra = explain_found(found, explain, reject)
                else:
                    out.rollback(mark)
                    names: dict[str, int] = {}
                    extra = scan_chat(
                        path,
                        names,
                        explain,
                        reject,
                        tick,
                        lambda b: out.add_frame(_with_source(batch_frame(b, names), name)),
                        lambda: out.rollback(mark),
                        fast=False,
                        tolerant=False,
                    )
                for _, row in extra:
                    out.add(row, name)
    except Doubt as exc:
        out.reject(name, 0, f"cannot read: {exc}")
        return True
    ctx.res.formats[name] = "openai_chat"
    return True


def _tolerant_into_sink(path: Path, out: Collector) -> list[tuple[int, int, str, str | None]] | None:
    """A chat JSON Lines file with bad lines into the sink by the engine, but for the rows it does not vouch for:
    their (line, place, text, reason) (planner.logs.duckpath.json_row_lines); None when they cannot be mapped to
    lines (the caller rolls back what was inserted)."""
    assert out.sink is not None
    try:
        inserted, places, n_rows = out.sink.insert_chat_tolerant(path)
    except Doubt:
        return None
    out.n_sunk += inserted
    try:
        return json_row_lines(path, places, n_rows)
    except (OSError, EOFError, ValueError):
        return None


@dataclass
class StreamedLog:
    """A log read a batch at a time: its frames of COLUMNS (file order) and what read_logs would report of it."""

    frames: Iterator[pd.DataFrame]
    formats: dict[str, str]  # {file name: format}
    mapping: dict[str, str]  # the column mapping used, {} when none


def stream_logs(
    paths: Sequence[Path],
    fmt: str = "auto",
    mapping: Mapping[str, str] | None = None,
    tz: str = "UTC",
    start: str | None = None,
    progress: Progress | None = None,
) -> StreamedLog | None:
    """Files read_logs would read a batch at a time, as frames of COLUMNS one batch at a time (file order).

    For storing a log of any size in bounded memory (`logs import`): OpenAI chat JSON Lines, CSV files
    of at least LARGE_CSV_BYTES and Parquet files under a plain mapping (plain, .gz, .zst), each through
    the same batch reader read_logs uses, so the rows are the same. None when a file is anything else
    (the caller uses read_logs). The frames iterator raises planner.logs.duckpath.Doubt, possibly after
    some frames, when a file needs the row-by-row reader (a malformed line, a bad count): the caller
    discards what it stored and uses read_logs, which names each rejected line.
    progress: (fraction of all bytes read 0..1, message).
    """
    if fmt not in FORMATS or not paths:
        return None
    zone(tz)
    res = LogParseResult()
    ctx = ReadContext(fmt, mapping, tz, TokenCounter(), start, DEFAULT_CACHE_BLOCKS, Collector(rows_frame), res)
    plans: list[TablePlan | None] = []  # None: an OpenAI chat JSON Lines file
    for path in paths:
        try:
            check_regular(path)
        except (ValueError, OSError):
            return None
        plan = parquet_plan(path, ctx) if _is_parquet(path) else large_csv_plan(path, ctx)
        if plan is None and (_is_parquet(path) or fmt not in ("auto", "openai_chat") or not _chat_jsonl(path, fmt)):
            return None
        plans.append(plan)
        if plan is not None:
            res.mapping = plan.used
        res.formats[path.name] = "openai_chat" if plan is None else plan.format
    sizes = [file_size(p) for p in paths]
    total = max(sum(sizes), 1)

    def frames() -> Iterator[pd.DataFrame]:
        done = 0
        for path, plan, size in zip(paths, plans, sizes, strict=True):
            tick = None
            if progress:

                def tick(frac: float, _done=done, _size=size, _name=path.name) -> None:
                    progress(min((_done + frac * _size) / total, 1.0), f"reading {_name}")

            if plan is None:
                for frame in iter_chat_frames(path, tick):
                    yield _with_source(frame, path.name)[list(COLUMNS)]
            else:
                yield from plan.frames(tick)
            done += size
        if progress:
            progress(1.0, "read")

    return StreamedLog(frames(), dict(res.formats), dict(res.mapping))


def return_freed_heap() -> None:
    """Hand the heap pages the readers freed back to the OS (glibc's malloc_trim; elsewhere nothing).

    The streamed batches (a few MB each) sit below glibc's adaptive mmap threshold, so they are carved
    from the heap, and once freed that memory stays with the process, on top of whatever comes next:
    the what-if replay's own arrays. At 10 M requests that is about 0.3 GB of the peak.
    """
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return
    trim(0)


def _nothing_read(out: Collector) -> str:
    """One or two sentences for 'nothing could be read': the file-level reasons, or the first rejected lines."""
    whole = [r for r in out.rejected if r.line_no == 0]
    if whole and len(whole) == len(out.rejected):
        return "Nothing could be read: " + "; ".join(str(r) for r in whole[:3]) + "."
    first = "; ".join(str(r) for r in out.rejected[:3]) or "the files hold no records"
    return (
        f"Nothing could be read: {out.n_rejected:,} line{'' if out.n_rejected == 1 else 's'} rejected, first: {first}."
    )


def _is_parquet(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"PAR1"
    except OSError:
        return False


def read_logs(
    sources: Sequence[str | Path | tuple[str, bytes]],
    fmt: str = "auto",
    mapping: Mapping[str, str] | None = None,
    tz: str = "UTC",
    max_bytes: int | None = None,
    *,
    tokenizer: TokenCounter | None = None,
    progress: Progress | None = None,
    start: str | None = None,
    cache_blocks: int = DEFAULT_CACHE_BLOCKS,
    sink: Sink | None = None,
    map_hint: str = MAP_HINT_CLI,
) -> LogParseResult:
    """Read request logs into one normalised frame, sorted by arrival (or, with a sink, into that).

    sources: paths or (file name, bytes) pairs, each optionally gzip-compressed.
    fmt: "auto" or one of planner.logs.formats.FORMAT_NAMES. mapping: canonical field → column
    (CSV) or dotted path (JSON, fmt "mapped"); see planner.logs.mapped. tz: the zone of timestamps
    written without one. max_bytes: per-file cap on the (decompressed) size.
    tokenizer: counts tokens when a log has text but no counts (default: a labelled estimate).
    progress: called with (fraction 0..1, message) as files are read.
    start: the date (YYYY-MM-DD[THH:MM], in `tz`) that relative trace times count from (default
    planner.logs.traces.DEFAULT_START, noted in the result). cache_blocks: the LRU size (blocks) under
    which cached tokens are derived from hash_ids. sink: where the requests go a batch at a time instead
    (planner.logs.request_table.RequestTable); the result's frame is then empty and `n_read` counts them.
    map_hint: how a message about a column it did not find says to map it, in the caller's words
    (planner.logs.context.MAP_HINT_CLI, the default, or MAP_HINT_PAGE).

    Raises LogFormatError when nothing parses (naming what was expected), ValueError for an
    unknown fmt or time zone.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown log format {fmt!r}; one of {', '.join(FORMATS)}")
    zone(tz)
    counter = tokenizer or TokenCounter()
    out = Collector(rows_frame, sink)
    res = LogParseResult()
    if start:
        start_ms(start, tz)  # a bad start date is the caller's error, before any file is read
    ctx = ReadContext(fmt, mapping, tz, counter, start, int(cache_blocks), out, res, map_hint)
    sizes = [len(src[1]) if isinstance(src, tuple) else file_size(Path(src)) for src in sources]
    total = max(sum(sizes), 1)
    done = 0
    for source, size in zip(sources, sizes, strict=True):
        label = source[0] if isinstance(source, tuple) else Path(source).name
        tick = None
        if progress:

            def tick(frac: float, _done=done, _size=size, _label=label) -> None:
                progress(min((_done + frac * _size) / total, 1.0), f"reading {_label}")

            tick(0.0)
        done += size
        out.tick = tick
        if not isinstance(source, tuple):
            try:
                check_regular(Path(source))
            except (ValueError, OSError) as exc:
                out.reject(
                    str(label), 0, str(exc) if isinstance(exc, ValueError) else f"cannot read: {exc.strerror or exc}"
                )
                continue
            if _is_parquet(Path(source)):
                read_parquet(Path(source).name, Path(source), ctx)
                continue
            if read_large_csv(Path(source), ctx) or read_record_csv(Path(source), ctx):
                continue
        elif source[1][:4] == b"PAR1":
            read_parquet(str(source[0]), source[1], ctx)
            continue
        on_disk = not isinstance(source, tuple)
        if on_disk and fmt in ("auto", "openai_chat") and _chat_file(Path(str(source)), fmt, ctx, tick):
            continue
        try:
            name, data = load_source(source, max_bytes)
        except (TooLarge, ValueError, OSError) as exc:
            out.reject(
                str(label), 0, str(exc) if not isinstance(exc, OSError) else f"cannot read: {exc.strerror or exc}"
            )
            continue
        data = decode_bom(data)
        if not data or data.isspace():
            out.reject(name, 0, "empty file")
            continue
        json_records = None if fmt in ("csv",) else split_records(data, name, out)
        if json_records is not None:
            kind, recs = json_records
            _read_json(name, data, kind, recs, ctx)
        else:
            read_csv(name, data, ctx)
        del data
    if progress:
        progress(1.0, "summarising")
    out.flush()
    frames = [f for f in out.frames if len(f)]
    # In line order within each file (a format sample is read ahead of the lines it was taken from).
    file_order = {name: i for i, name in reversed(list(enumerate(r.source for r in out.rejected)))}
    out.rejected.sort(key=lambda r: (file_order[r.source], r.line_no))
    res.rejected, res.n_rejected, res.n_skipped = out.rejected, out.n_rejected, out.n_skipped
    if res.tokens_estimated or tokenizer is not None:
        res.token_counter = counter.label
    res.n_read = out.n_rows
    if not res.n_read:
        columns = sorted({c for cols in res.columns.values() for c in cols})
        raise LogFormatError(_nothing_read(out), columns=columns, rejected=out.rejected)
    if sink is not None:
        return res
    frame = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
    if list(frame.columns) != list(COLUMNS):
        frame = frame[list(COLUMNS)]  # a copy of every column: only when the order differs (not the fast readers')
    if not isinstance(frame["source"].dtype, pd.CategoricalDtype):  # a few file names shared by every row
        frame["source"] = frame["source"].astype("category")
    if not frame["ts_ms"].is_monotonic_increasing:
        frame = frame.sort_values("ts_ms", kind="stable", ignore_index=True)
    res.requests = frame
    return_freed_heap()
    return res
