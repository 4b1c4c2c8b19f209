"""read_logs: the one log reader — every file, format and size through the same steps, into one table of requests.

  open      planner.logs.opening    a path or an upload → a file on disk, its compression and kind (bombs refused)
  detect    planner.logs.formats,   its format from a sample of records, or a table's column mapping
            planner.logs.context
  map       planner.logs.sqlmap     the format's fields → request columns in DuckDB SQL, with each row's verdict
  load      planner.logs.load       DuckDB reads the file once into the RequestTable (the Logs page's, What-if's,
                                    Capacity's and `logs summarize`'s alike)
  split     planner.logs.split      the rows DuckDB did not read → their lines and text (the one place a line's
                                    number comes from, CRLF, BOM, quoted breaks and cut tails included)
  check     planner.logs.fallback   those records read or named in Python by the rule of planner.logs.records;
                                    the same reader takes every record of the formats SQL does not map
  summarise planner.logs.summary_sql     planner.logs.summarize over the table

The steps for a kind of file: planner.logs.jsonlogs (JSON Lines, arrays, documents) and planner.logs.tablelogs (CSV,
Parquet), on what they share in planner.logs.readfile (ReaderPolicy: how a file is read, chosen by argument).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from planner.logs.context import (
    MAP_HINT_CLI,
    ReadContext,
)
from planner.logs.formats import FORMATS
from planner.logs.jsonlogs import json_records, read_document, read_json
from planner.logs.load import RequestTable, connect, spill_folder
from planner.logs.opening import (
    CSV,
    DEFAULT_MAX_BYTES,
    DOCUMENT,
    EMPTY,
    PARQUET,
    TooLarge,
    labels,
    open_log,
)
from planner.logs.prefix import DEFAULT_CACHE_BLOCKS
from planner.logs.readfile import (
    Collected,
    FileRead,
    ReaderPolicy,
    say_notes,
)
from planner.logs.records import zone
from planner.logs.result import LogFormatError, LogParseResult, Progress
from planner.logs.stream import BrokenStream
from planner.logs.tablelogs import read_csv, read_parquet
from planner.logs.tokenize import TokenCounter
from planner.logs.traces import start_ms

__all__ = ["ReaderPolicy", "json_records", "read_logs"]

# -- the call --------------------------------------------------------------------------------------------------------


def _nothing_read(out: Collected) -> str:
    """One or two sentences for 'nothing could be read': the file-level reasons, or the first rejected lines."""
    whole = [r for r in out.rejected if r.line_no == 0]
    if whole and len(whole) == len(out.rejected):
        return "Nothing could be read: " + "; ".join(str(r) for r in whole[:3]) + "."
    first = "; ".join(str(r) for r in out.rejected[:3]) or "the files hold no records"
    return (
        f"Nothing could be read: {out.n_rejected:,} line{'' if out.n_rejected == 1 else 's'} rejected, first: {first}."
    )


def _read_file(f: FileRead, fmt: str) -> None:
    """One opened file read into f.out, by its kind."""
    kind = f.log.kind
    if kind == EMPTY:
        f.out.reject(f.label, 0, "empty file")
    elif kind == PARQUET:
        read_parquet(f)
    elif kind == DOCUMENT:
        read_document(f)
    elif kind == CSV or fmt == "csv":
        read_csv(f)
    else:
        read_json(f)
    f.out.flush()


def _refuse(f: FileRead, before: tuple[int, int, int, int], reason: str) -> None:
    """The file refused whole, as open_log refuses one: what was read of it and said of its lines undone."""
    mark, named, n_rejected, n_skipped = before
    out = f.out
    out.rows.clear()
    out.table.rollback(mark)
    del out.rejected[named:]
    out.n_rejected, out.n_skipped = n_rejected, n_skipped
    out.reject(f.label, 0, reason)


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
    sink: RequestTable | None = None,
    map_hint: str = MAP_HINT_CLI,
    policy: ReaderPolicy | None = None,
) -> LogParseResult:
    """Read request logs into one normalised frame, sorted by arrival (or, with a sink, into that table).

    sources: paths or (file name, bytes) pairs, each optionally gzip- or zstd-compressed. fmt: "auto" or one of
    planner.logs.formats.FORMAT_NAMES. mapping: canonical field → column (CSV, Parquet) or dotted path (JSON);
    see planner.logs.mapped. tz: the zone of timestamps written without one. max_bytes: the cap on what is held in
    memory: an upload's bytes (decompressed too) and a JSON document read whole (default
    planner.logs.DEFAULT_MAX_BYTES); files on disk stream past it. tokenizer: counts tokens when a log has text but no
    counts (default: a labelled estimate). progress: called with (fraction 0..1, message) as files are read.
    start: the date (YYYY-MM-DD[THH:MM], in `tz`) relative trace times count from (default
    planner.logs.traces.DEFAULT_START, noted in the result). cache_blocks: the prefix cache's size (blocks) under
    which cached tokens are derived from hash_ids. sink: the RequestTable the requests go to (`logs summarize`);
    the result's frame is then empty and `n_read` counts them. map_hint: how a message about a column it did not
    find says to map it (planner.logs.context.MAP_HINT_CLI or MAP_HINT_PAGE). policy: how files are read (default
    ReaderPolicy()).

    Raises LogFormatError when nothing parses (naming what was expected), ValueError for an unknown fmt or zone.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown log format {fmt!r}; one of {', '.join(FORMATS)}")
    zone(tz)
    policy = policy or ReaderPolicy()
    if start:
        start_ms(start, tz)  # a bad start date is the caller's error, before any file is read
    counter = tokenizer or TokenCounter()
    res = LogParseResult()
    con = None
    if sink is None:
        con = connect(keep_order=True, memory_limit=policy.memory_limit)
        sink = RequestTable(con)
    out = Collected(sink)
    ctx = ReadContext(fmt, mapping, tz, counter, start, int(cache_blocks), res, map_hint)
    folder = Path(tempfile.mkdtemp(prefix="read-", dir=spill_folder()))
    names = labels(sources)
    try:
        for k, (source, label) in enumerate(zip(sources, names, strict=True)):
            tick = None
            if progress:

                def tick(frac: float, _k=k, _label=label) -> None:
                    progress(min((_k + frac) / len(sources), 1.0), f"reading {_label}")

                tick(0.0)
            try:
                log = open_log(source, label, folder, max_bytes)
            except (TooLarge, ValueError, OSError) as exc:
                out.reject(
                    label, 0, str(exc) if not isinstance(exc, OSError) else f"cannot read: {exc.strerror or exc}"
                )
                continue
            sink.begin(label)
            f = FileRead(log, ctx, out, policy, folder, tick, cap=DEFAULT_MAX_BYTES if max_bytes is None else max_bytes)
            before = (sink.files[-1][0], len(out.rejected), out.n_rejected, out.n_skipped)
            try:
                _read_file(f, fmt)
            except BrokenStream as exc:  # cut or corrupt past the head open_log checked: refused as open_log does
                _refuse(f, before, f"{label} is {exc}")
                continue
            except OSError as exc:  # a disk that fails mid-file
                _refuse(f, before, f"cannot read: {exc.strerror or exc}")
                continue
            say_notes(f)
            if isinstance(f.log.path, Path) and f.log.path != log.path and f.log.path.parent == folder:
                f.log.path.unlink(missing_ok=True)  # our copy of the file (its long lines masked), never the user's
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if progress:
        progress(1.0, "summarising")
    order = {name: i for i, name in enumerate(names)}
    out.rejected.sort(key=lambda r: (order.get(r.source, len(order)), r.line_no))
    res.rejected, res.n_rejected, res.n_skipped = out.rejected, out.n_rejected, out.n_skipped
    if res.tokens_estimated or tokenizer is not None:
        res.token_counter = counter.label
    sink.flush()
    res.n_read = sink.n
    try:
        if not res.n_read:
            columns = sorted({c for cols in res.columns.values() for c in cols})
            raise LogFormatError(_nothing_read(out), columns=columns, rejected=out.rejected)
        if con is not None:
            res.requests = sink.frame()
    finally:
        if con is not None:
            con.close()
    return res
