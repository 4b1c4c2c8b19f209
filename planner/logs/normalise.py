"""read_logs: files in any supported format → one normalised request frame, plus what was rejected.

Each file is size-checked and safely decompressed (limits.py), decoded (UTF-8, UTF-8 with BOM,
UTF-16), split into records (JSON Lines, a JSON array, one JSON object, or CSV), its format detected
from a sample of records, and every record turned into numbers by its format's reader. A record
that cannot be used becomes a RejectedLine with its line number and reason; a file that cannot be
used at all becomes one RejectedLine with line 0. Only when nothing parses does read_logs raise.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from planner.logs import otel
from planner.logs.fastpath import read_openai_jsonl
from planner.logs.formats import EXTRACTORS, FORMATS, classify, detect
from planner.logs.gateways import Skip
from planner.logs.limits import TooLarge, check_regular, load_source
from planner.logs.columnar import batch_frame
from planner.logs.csvfile import delimiter_of, read_rows
from planner.logs.duckpath import read_chat_jsonl, read_mapped_csv, sample_head
from planner.logs.mapped import REQUIRED_HELP, extract_mapped, guess_mapping, mapping_complete
from planner.logs.prefix import DEFAULT_CACHE_BLOCKS, PrefixCache
from planner.logs.records import Reject, RejectedLine, Row, dig, zone
from planner.logs.traces import DEFAULT_START, PROFILES, match_profile, start_ms
from planner.logs.splitting import Collector, decode_bom, peek, split_records
from planner.logs.tokenize import TokenCounter

__all__ = ["COLUMNS", "LogFormatError", "LogParseResult", "empty_frame", "read_logs"]

COLUMNS = ("ts_ms", "model", "prompt_tokens", "cached_tokens", "output_tokens", "ttft_ms", "duration_ms", "source")
_DETECT_SAMPLE = 200
TRACE_FORMATS = tuple(p.name for p in PROFILES)

Progress = Callable[[float, str], None]


class LogFormatError(ValueError):
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

    frame: pd.DataFrame
    rejected: list[RejectedLine] = field(default_factory=list)
    n_rejected: int = 0
    formats: dict[str, str] = field(default_factory=dict)
    mapping: dict[str, str] = field(default_factory=dict)
    tokens_estimated: bool = False
    n_skipped: int = 0  # records that are not model calls (e.g. Langfuse SPANs, HTTP spans)
    token_counter: str = ""  # how counts were made when tokens_estimated or a tokenizer was used
    columns: dict[str, list[str]] = field(default_factory=dict)  # source → column names (CSV) / keys seen
    notes: list[str] = field(default_factory=list)  # what was derived or defaulted (relative times, prefix cache)


def empty_frame() -> pd.DataFrame:
    """A frame with the normalised columns and dtypes and no rows."""
    return _frame([], [])


def _frame(rows: list[Row], sources: list[str]) -> pd.DataFrame:
    if not rows:
        arr = {c: [] for c in Row._fields}
    else:
        arr = dict(zip(Row._fields, zip(*rows)))
    return pd.DataFrame({
        "ts_ms": np.asarray(arr["ts_ms"], dtype=np.int64),
        "model": pd.array(list(arr["model"]), dtype=object),
        "prompt_tokens": np.asarray(arr["prompt_tokens"], dtype=np.int64),
        "cached_tokens": np.asarray(arr["cached_tokens"], dtype=np.int64),
        "output_tokens": np.asarray(arr["output_tokens"], dtype=np.int64),
        "ttft_ms": np.asarray(arr["ttft_ms"], dtype=np.float64),
        "duration_ms": np.asarray(arr["duration_ms"], dtype=np.float64),
        "source": pd.array(sources, dtype=object),
    })


@dataclass
class _Context:
    """What every file of one read_logs call shares."""

    fmt: str
    mapping: Mapping[str, str] | None
    tz: str
    counter: TokenCounter
    start: str | None
    cache_blocks: int
    out: Collector
    res: LogParseResult

    def start_ms(self) -> int:
        ms, defaulted = start_ms(self.start, self.tz)
        note = (f"times are relative to the trace's start, placed from {self.start or DEFAULT_START} ({self.tz})"
                + (" — a default; set the start date" if defaulted else ""))
        if note not in self.res.notes:
            self.res.notes.append(note)
        return ms

    def prefix(self, mapping: Mapping[str, str]) -> PrefixCache | None:
        if not mapping.get("hash_ids") or mapping.get("cached_tokens"):
            return None
        cache = PrefixCache(self.cache_blocks)
        if cache.label() not in self.res.notes:
            self.res.notes.append(cache.label())
        return cache

    def table_mapping(self, name: str, columns: Sequence[str]) -> tuple[str, dict[str, str]] | None:
        """(format name, mapping) for a table's columns: the user's mapping, a public trace's, or a guess; None rejects."""
        if self.fmt in TRACE_FORMATS:
            found = match_profile(columns)
            prof = next(p for p in PROFILES if p.name == self.fmt)
            used = found[1] if found and found[0].name == self.fmt else dict(prof.mapping)
            return self.fmt, used
        if self.mapping:
            return "mapped", dict(self.mapping)
        found = match_profile(columns)
        if found is not None:
            return found[0].name, found[1]
        return "mapped", guess_mapping(columns)

    def extract(self, rec: Mapping, mapping: Mapping[str, str], get, ts0: int, prefix: PrefixCache | None) -> Row:
        row, est = extract_mapped(rec, mapping, self.tz, self.counter, get=get, start_ms=ts0, prefix=prefix)
        self.res.tokens_estimated |= est
        return row


def _relative(mapping: Mapping[str, str]) -> bool:
    return not mapping.get("ts") and any(mapping.get(k) for k in ("ts_relative_s", "ts_relative_ms"))


def _missing_columns_message(name: str, used: Mapping[str, str], columns: Sequence[str]) -> str:
    shown = ", ".join(list(columns)[:12]) or "none"
    return (f"{name}: cannot tell which column holds the time and which the prompt tokens "
            f"(columns: {shown}); map them (ts=…, prompt_tokens=…)")


def _with_source(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    """A fast reader's frame completed with no timings and its source (one shared name, not one per row)."""
    n = len(frame)
    frame["ttft_ms"] = np.full(n, np.nan)
    frame["duration_ms"] = np.full(n, np.nan)
    frame["source"] = pd.Categorical.from_codes(np.zeros(n, dtype=np.int8), categories=pd.Index([name]))
    return frame


def _read_json(name: str, data: bytes, kind: str, records: Iterator[tuple[int, dict]], ctx: _Context) -> None:
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
                    out.reject(name, 0, _wanted(picked[1] if picked else {}, keys))
                return
    else:
        detected = fmt
    res.formats[name] = detected
    if detected == "openai_chat" and kind == "jsonl":
        frame = read_openai_jsonl(data)
        if frame is not None:
            out.frames.append(_with_source(frame, name))
            return
    tabular = detected == "mapped" or detected in TRACE_FORMATS
    if tabular:
        if not mapping or not mapping_complete(mapping):
            out.reject(name, 0, f"the mapping must name {REQUIRED_HELP}")
            return
        res.mapping = dict(mapping)
        res.columns.setdefault(name, sorted({k for _, r in head for k in r})[:40])
        ts0 = ctx.start_ms() if _relative(mapping) else 0
        prefix = ctx.prefix(mapping)
    for line_no, rec in records:
        try:
            if detected == "otel":
                for item in otel.spans(rec, ctx.tz):
                    if isinstance(item, Reject):
                        out.reject(name, line_no, str(item))
                    else:
                        out.add(item, name)
                continue
            if tabular:
                row = ctx.extract(rec, mapping, dig, ts0, prefix)
            else:
                row = EXTRACTORS[detected](rec, ctx.tz)
        except Skip:
            out.n_skipped += 1
            continue
        except RecursionError:
            out.reject(name, line_no, "nested too deeply to be a log record")
            continue
        except Reject as exc:
            other = classify(rec)
            if other is not None and other != detected:
                out.reject(name, line_no, f"looks like a {other} record, but this file is {detected} ({exc})")
            else:
                out.reject(name, line_no, str(exc))
            continue
        out.add(row, name)


def _csv_records(name: str, header: list[str], rows, extract, ctx: _Context) -> None:
    """CSV rows of a known record format (its columns named as in its JSON export), one record each."""
    out = ctx.out
    width = len(header)
    for line_no, values in rows:
        if isinstance(values, str):
            out.reject(name, line_no, values)
            continue
        if len(values) != width:
            out.reject(name, line_no, f"has {len(values)} fields, the header has {width}")
            continue
        try:
            row = extract(dict(zip(header, values)), ctx.tz)
        except Skip:
            out.n_skipped += 1
            continue
        except Reject as exc:
            out.reject(name, line_no, str(exc))
            continue
        out.add(row, name)


def _read_csv(name: str, data: bytes, ctx: _Context) -> None:
    out, res = ctx.out, ctx.res
    header, rows = read_rows(data, out.tick)
    if not header:
        out.reject(name, 0, "empty file")
        return
    res.columns[name] = header
    record_fmt = ctx.fmt if ctx.fmt in EXTRACTORS else None
    if ctx.fmt == "auto" and not ctx.mapping:
        record_fmt = classify(dict.fromkeys(header, "")) if classify(dict.fromkeys(header, "")) in EXTRACTORS else None
    if record_fmt is not None:  # e.g. a LiteLLM spend-log export saved as CSV
        res.formats[name] = record_fmt
        _csv_records(name, header, rows, EXTRACTORS[record_fmt], ctx)
        return
    fmt_name, used = ctx.table_mapping(name, header)
    res.mapping = used
    res.formats[name] = "csv" if fmt_name == "mapped" else fmt_name
    missing = [c for c in used.values() if c not in header]
    if missing:
        out.reject(name, 0, f"mapped column(s) not in the header: {', '.join(missing)}")
        return
    if not mapping_complete(used):
        out.reject(name, 0, _wanted(used, header))
        return
    ts0 = ctx.start_ms() if _relative(used) else 0
    prefix = ctx.prefix(used)
    width = len(header)
    get = dict.get
    no_output = 0
    for line_no, values in rows:
        if isinstance(values, str):
            out.reject(name, line_no, values)
            continue
        if len(values) != width:
            hint = " (a field with the delimiter or a line break needs double quotes)" if len(values) > width else ""
            out.reject(name, line_no, f"has {len(values)} fields, the header has {width}{hint}")
            continue
        try:
            row = ctx.extract(dict(zip(header, values)), used, get, ts0, prefix)
        except Reject as exc:
            out.reject(name, line_no, str(exc))
            continue
        no_output += row.output_tokens == 0
        out.add(row, name)
    if fmt_name == "burstgpt" and no_output:
        res.notes.append(f"{name}: {no_output:,} request{'' if no_output == 1 else 's'} with 0 response tokens "
                         "(failed, in BurstGPT's convention) are kept as arrivals")


LARGE_CSV_BYTES = 32 << 20  # CSV files from this size on disk are first tried through DuckDB (streamed, columnar)


def _large_csv(path: Path, ctx: _Context) -> bool:
    """Read a large CSV with a plain mapping through DuckDB in bounded memory; False to read it row by row."""
    if ctx.fmt not in ("auto", "csv", *TRACE_FORMATS) or _size(path) < LARGE_CSV_BYTES:
        return False
    try:
        head, _ = sample_head(path, 1 << 16)
    except (OSError, EOFError, ValueError):
        return False
    head = decode_bom(head)
    if not head.strip() or head.lstrip()[:1] in (b"{", b"["):
        return False
    header, _ = read_rows(head)
    if not header:
        return False
    if ctx.fmt == "auto" and not ctx.mapping and classify(dict.fromkeys(header, "")) in EXTRACTORS:
        return False
    fmt_name, used = ctx.table_mapping(path.name, header)
    if not mapping_complete(used) or any(c not in header for c in used.values()) or used.get("hash_ids"):
        return False
    ts0 = ctx.start_ms() if _relative(used) else 0
    frame = read_mapped_csv(path, header, delimiter_of(head.decode("utf-8", "replace")), used, ctx.tz, ts0,
                            path.name, ctx.out.tick)
    if frame is None:
        return False
    ctx.out.frames.append(frame)
    ctx.res.columns[path.name] = header
    ctx.res.mapping = used
    ctx.res.formats[path.name] = "csv" if fmt_name == "mapped" else fmt_name
    if fmt_name == "burstgpt" and (zero := int((frame["output_tokens"] == 0).sum())):
        ctx.res.notes.append(f"{path.name}: {zero:,} request{'' if zero == 1 else 's'} with 0 response tokens "
                             "(failed, in BurstGPT's convention) are kept as arrivals")
    return True


def _read_parquet(name: str, source: Path | bytes, ctx: _Context) -> None:
    """A Parquet file, read in batches of the mapped columns only (rows numbered from 1)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out, res = ctx.out, ctx.res
    try:
        pf = pq.ParquetFile(source if isinstance(source, Path) else pa.BufferReader(source))
    except (pa.ArrowInvalid, OSError) as exc:
        out.reject(name, 0, f"not a readable Parquet file ({exc})")
        return
    columns = list(pf.schema_arrow.names)
    res.columns[name] = columns
    fmt_name, used = ctx.table_mapping(name, columns)
    res.mapping = used
    res.formats[name] = "parquet" if fmt_name == "mapped" else fmt_name
    missing = [c for c in used.values() if c not in columns]
    if missing:
        out.reject(name, 0, f"mapped column(s) not in the file: {', '.join(missing)}")
        return
    if not mapping_complete(used):
        out.reject(name, 0, _wanted(used, columns))
        return
    ts0 = ctx.start_ms() if _relative(used) else 0
    prefix = ctx.prefix(used)
    get = dict.get
    row_no = 0
    done_rows, total_rows = 0, max(pf.metadata.num_rows, 1)
    for batch in pf.iter_batches(batch_size=65_536, columns=sorted(set(used.values()))):
        if out.tick is not None:
            out.tick(done_rows / total_rows)
        done_rows += batch.num_rows
        whole = batch_frame(batch, used, ctx.tz, ts0, name) if prefix is None else None
        if whole is not None:  # the plain case, a batch at a time
            out.frames.append(whole)
            row_no += batch.num_rows
            continue
        for rec in batch.to_pylist():
            row_no += 1
            for k, v in rec.items():  # Parquet timestamps arrive as datetimes: ISO text for epoch_ms
                if hasattr(v, "isoformat"):
                    rec[k] = v.isoformat()
            try:
                row = ctx.extract(rec, used, get, ts0, prefix)
            except Reject as exc:
                out.reject(name, row_no, str(exc))
                continue
            out.add(row, name)


def _wanted(used: Mapping[str, str], columns: Sequence[str]) -> str:
    """One sentence: which column the reader looked for and did not find, and the columns there are."""
    shown = ", ".join(list(columns)[:12]) + (" …" if len(columns) > 12 else "") if columns else "none"
    if not any(used.get(k) for k in ("ts", "ts_relative_s", "ts_relative_ms")):
        want = "time column (e.g. timestamp, created_at, TIMESTAMP)"
    else:
        want = "prompt-token column (e.g. prompt_tokens, input_tokens, ContextTokens)"
    return f"no {want} among its fields ({shown}); map it with --map FIELD=COLUMN or the mapping form"


def _fast_path_file(path: Path, fmt: str, tick: Callable[[float], None] | None) -> pd.DataFrame | None:
    """The out-of-core reader (DuckDB) straight from an OpenAI chat JSON Lines file (plain, .gz, .zst), or None.

    It streams, so the size cap for files read whole does not apply; any doubt sends the file to the
    line-by-line reader (which is capped).
    """
    try:
        head, _ = sample_head(path)
    except (OSError, EOFError, ValueError):
        return None
    if head[:1] != b"{" or b"\n" not in head:
        return None
    head = head[: head.rfind(b"\n")]
    sample = []
    for line in head.split(b"\n")[:_DETECT_SAMPLE]:
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            return None
        if not isinstance(rec, dict):
            return None
        sample.append(rec)
    if fmt == "auto" and detect(sample) != "openai_chat":
        return None
    frame = read_chat_jsonl(path, tick)
    if frame is None:
        return None
    return _with_source(frame, path.name)


def _nothing_read(out: Collector) -> str:
    """One or two sentences for 'nothing could be read': the file-level reasons, or the first rejected lines."""
    whole = [r for r in out.rejected if r.line_no == 0]
    if whole and len(whole) == len(out.rejected):
        return "Nothing could be read: " + "; ".join(str(r) for r in whole[:3]) + "."
    first = "; ".join(str(r) for r in out.rejected[:3]) or "the files hold no records"
    return f"Nothing could be read: {out.n_rejected:,} line{'' if out.n_rejected == 1 else 's'} rejected, first: {first}."


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


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
) -> LogParseResult:
    """Read request logs into one normalised frame, sorted by arrival.

    sources: paths or (file name, bytes) pairs, each optionally gzip-compressed.
    fmt: "auto" or one of planner.logs.formats.FORMAT_NAMES. mapping: canonical field → column
    (CSV) or dotted path (JSON, fmt "mapped"); see planner.logs.mapped. tz: the zone of timestamps
    written without one. max_bytes: per-file cap on the (decompressed) size.
    tokenizer: counts tokens when a log has text but no counts (default: a labelled estimate).
    progress: called with (fraction 0..1, message) as files are read.
    start: the date (YYYY-MM-DD[THH:MM], in `tz`) that relative trace times count from (default
    planner.logs.traces.DEFAULT_START, noted in the result). cache_blocks: the LRU size (blocks) under
    which cached tokens are derived from hash_ids.

    Raises LogFormatError when nothing parses (naming what was expected), ValueError for an
    unknown fmt or time zone.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown log format {fmt!r}; one of {', '.join(FORMATS)}")
    zone(tz)
    counter = tokenizer or TokenCounter()
    out = Collector(_frame)
    res = LogParseResult(frame=empty_frame())
    if start:
        start_ms(start, tz)  # a bad start date is the caller's error, before any file is read
    ctx = _Context(fmt, mapping, tz, counter, start, int(cache_blocks), out, res)
    sizes = [len(src[1]) if isinstance(src, tuple) else _size(Path(src)) for src in sources]
    total = max(sum(sizes), 1)
    done = 0
    for source, size in zip(sources, sizes):
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
                out.reject(str(label), 0, str(exc) if isinstance(exc, ValueError) else f"cannot read: {exc.strerror or exc}")
                continue
            if _is_parquet(Path(source)):
                _read_parquet(Path(source).name, Path(source), ctx)
                continue
            if _large_csv(Path(source), ctx):
                continue
        elif source[1][:4] == b"PAR1":
            _read_parquet(str(source[0]), source[1], ctx)
            continue
        if not isinstance(source, tuple) and fmt in ("auto", "openai_chat"):
            frame = _fast_path_file(Path(source), fmt, tick)
            if frame is not None:
                out.frames.append(frame)
                res.formats[Path(source).name] = "openai_chat"
                continue
        try:
            name, data = load_source(source, max_bytes)
        except (TooLarge, ValueError, OSError) as exc:
            out.reject(str(label), 0, str(exc) if not isinstance(exc, OSError) else f"cannot read: {exc.strerror or exc}")
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
            _read_csv(name, data, ctx)
        del data
    if progress:
        progress(1.0, "summarising")
    out.flush()
    frames = [f for f in out.frames if len(f)]
    res.rejected, res.n_rejected, res.n_skipped = out.rejected, out.n_rejected, out.n_skipped
    if res.tokens_estimated or tokenizer is not None:
        res.token_counter = counter.label
    if not frames:
        columns = sorted({c for cols in res.columns.values() for c in cols})
        raise LogFormatError(_nothing_read(out), columns=columns, rejected=out.rejected)
    frame = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
    frame = frame[list(COLUMNS)]
    if not isinstance(frame["source"].dtype, pd.CategoricalDtype):  # a few file names shared by every row
        frame["source"] = frame["source"].astype("category")
    if not frame["ts_ms"].is_monotonic_increasing:
        frame = frame.sort_values("ts_ms", kind="stable", ignore_index=True)
    res.frame = frame
    return res
