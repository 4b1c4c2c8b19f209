"""read_logs: files in any supported format → one normalised request frame, plus what was rejected.

Each file is size-checked and safely decompressed (limits.py), decoded (UTF-8, UTF-8 with BOM,
UTF-16), split into records (JSON Lines, a JSON array, one JSON object, or CSV), its format detected
from a sample of records, and every record turned into numbers by its format's reader. A record
that cannot be used becomes a RejectedLine with its line number and reason; a file that cannot be
used at all becomes one RejectedLine with line 0. Only when nothing parses does read_logs raise.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from planner.logs import otel
from planner.logs.fastpath import read_openai_jsonl
from planner.logs.formats import EXTRACTORS, FORMATS, classify, detect, expected_text
from planner.logs.gateways import Skip
from planner.logs.limits import TooLarge, load_source
from planner.logs.mapped import REQUIRED_HELP, extract_mapped, guess_mapping, mapping_complete
from planner.logs.records import Reject, RejectedLine, Row, zone
from planner.logs.splitting import Collector, decode_bom, peek, split_records
from planner.logs.tokenize import TokenCounter

__all__ = ["COLUMNS", "LogFormatError", "LogParseResult", "empty_frame", "read_logs"]

COLUMNS = ("ts_ms", "model", "prompt_tokens", "cached_tokens", "output_tokens", "ttft_ms", "duration_ms", "source")
_DETECT_SAMPLE = 200

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


def _read_json(name: str, data: bytes, kind: str, records: Iterator[tuple[int, dict]], fmt: str,
               mapping: Mapping[str, str] | None, tz: str, counter: TokenCounter, out: Collector,
               res: LogParseResult) -> None:
    head, records = peek(records, _DETECT_SAMPLE)
    if fmt in ("auto", "csv"):
        detected = detect(r for _, r in head)
        if detected is None and not mapping:
            guessed = guess_mapping(sorted({k for _, r in head for k in r}))
            if mapping_complete(guessed):
                mapping = guessed  # flat JSON records with recognisable field names
        if detected is None:
            if mapping and mapping_complete(mapping):
                detected = "mapped"
            else:
                keys = sorted({k for _, r in head for k in r})[:40]
                res.columns[name] = keys
                if head:
                    out.reject(name, 0, f"no known log format (keys seen: {', '.join(keys[:12])}); map the fields by hand")
                return
    else:
        detected = fmt
    res.formats[name] = detected
    if detected == "openai_chat" and kind == "jsonl":
        frame = read_openai_jsonl(data)
        if frame is not None:
            frame["ttft_ms"] = np.nan
            frame["duration_ms"] = np.nan
            frame["source"] = name
            out.frames.append(frame)
            return
    if detected == "mapped":
        if not mapping or not mapping_complete(mapping):
            out.reject(name, 0, f"the mapping must name {REQUIRED_HELP}")
            return
        res.mapping = dict(mapping)
    for line_no, rec in records:
        try:
            if detected == "otel":
                for item in otel.spans(rec, tz):
                    if isinstance(item, Reject):
                        out.reject(name, line_no, str(item))
                    else:
                        out.rows.append(item)
                        out.sources.append(name)
                continue
            if detected == "mapped":
                row, est = extract_mapped(rec, mapping, tz, counter)
                res.tokens_estimated |= est
            else:
                row = EXTRACTORS[detected](rec, tz)
        except Skip:
            out.n_skipped += 1
            continue
        except Reject as exc:
            other = classify(rec)
            if other is not None and other != detected:
                out.reject(name, line_no, f"looks like a {other} record, but this file is {detected} ({exc})")
            else:
                out.reject(name, line_no, str(exc))
            continue
        out.rows.append(row)
        out.sources.append(name)


def _read_csv(name: str, data: bytes, mapping: Mapping[str, str] | None, tz: str, counter: TokenCounter,
              out: Collector, res: LogParseResult) -> None:
    lines = data.split(b"\n")
    decoded: list[str] = []
    numbers: list[int] = []
    for i, raw in enumerate(lines, 1):
        try:
            text = raw.decode("utf-8").rstrip("\r")
        except UnicodeDecodeError as exc:
            out.reject(name, i, f"not valid UTF-8 (byte 0x{exc.object[exc.start]:02x}); save the log as UTF-8")
            continue
        if text.strip():
            decoded.append(text)
            numbers.append(i)
    if not decoded:
        out.reject(name, 0, "empty file")
        return
    try:
        dialect = csv.Sniffer().sniff(decoded[0], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    rows = csv.reader(decoded, dialect)
    header = [h.strip() for h in next(rows)]
    res.columns[name] = header
    used = dict(mapping) if mapping else guess_mapping(header)
    res.mapping = used
    res.formats[name] = "csv"
    missing = [c for c in used.values() if c not in header]
    if missing:
        out.reject(name, 1, f"mapped column(s) not in the header: {', '.join(missing)}")
        return
    if not mapping_complete(used):
        out.reject(name, 1, f"cannot tell which columns hold the time and the prompt tokens; map {REQUIRED_HELP}")
        return
    width = len(header)
    get = dict.get
    for idx, values in enumerate(rows, 1):
        line_no = numbers[idx]
        if len(values) != width:
            out.reject(name, line_no, f"has {len(values)} fields, the header has {width}")
            continue
        try:
            row, est = extract_mapped(dict(zip(header, values)), used, tz, counter, get=get)
        except Reject as exc:
            out.reject(name, line_no, str(exc))
            continue
        res.tokens_estimated |= est
        out.rows.append(row)
        out.sources.append(name)


def _fast_path_file(path: Path, fmt: str, max_bytes: int | None) -> pd.DataFrame | None:
    """The vectorised reader straight from an uncompressed OpenAI chat JSON Lines file, or None."""
    from planner.logs.limits import DEFAULT_MAX_BYTES

    try:
        if path.stat().st_size > (DEFAULT_MAX_BYTES if max_bytes is None else max_bytes):
            return None
        with open(path, "rb") as fh:
            head = fh.read(1 << 20)
    except OSError:
        return None
    if head[:1] != b"{" or b"\n" not in head:
        return None
    head = head[: head.rfind(b"\n")]
    sample = []
    for line in head.split(b"\n")[:_DETECT_SAMPLE]:
        try:
            rec = json.loads(line)
        except ValueError:
            return None
        if not isinstance(rec, dict):
            return None
        sample.append(rec)
    if fmt == "auto" and detect(sample) != "openai_chat":
        return None
    frame = read_openai_jsonl(path)
    if frame is None:
        return None
    frame["ttft_ms"] = np.nan
    frame["duration_ms"] = np.nan
    frame["source"] = path.name
    return frame


def read_logs(
    sources: Sequence[str | Path | tuple[str, bytes]],
    fmt: str = "auto",
    mapping: Mapping[str, str] | None = None,
    tz: str = "UTC",
    max_bytes: int | None = None,
    *,
    tokenizer: TokenCounter | None = None,
    progress: Progress | None = None,
) -> LogParseResult:
    """Read request logs into one normalised frame, sorted by arrival.

    sources: paths or (file name, bytes) pairs, each optionally gzip-compressed.
    fmt: "auto" or one of planner.logs.formats.FORMAT_NAMES. mapping: canonical field → column
    (CSV) or dotted path (JSON, fmt "mapped"); see planner.logs.mapped. tz: the zone of timestamps
    written without one. max_bytes: per-file cap on the (decompressed) size.
    tokenizer: counts tokens when a log has text but no counts (default: a labelled estimate).
    progress: called with (fraction 0..1, message) as files are read.

    Raises LogFormatError when nothing parses (naming what was expected), ValueError for an
    unknown fmt or time zone.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown log format {fmt!r}; one of {', '.join(FORMATS)}")
    zone(tz)
    counter = tokenizer or TokenCounter()
    out = Collector()
    res = LogParseResult(frame=empty_frame())
    total = max(len(sources), 1)
    for k, source in enumerate(sources):
        label = source[0] if isinstance(source, tuple) else Path(source).name
        if progress:
            progress(k / total, f"reading {label}")
        if not isinstance(source, tuple) and fmt in ("auto", "openai_chat"):
            frame = _fast_path_file(Path(source), fmt, max_bytes)
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
            _read_json(name, data, kind, recs, fmt, mapping, tz, counter, out, res)
        else:
            _read_csv(name, data, mapping, tz, counter, out, res)
        del data
    if progress:
        progress(1.0, "summarising")
    frames = [f for f in out.frames if len(f)]
    if out.rows:
        frames.append(_frame(out.rows, out.sources))
    res.rejected, res.n_rejected, res.n_skipped = out.rejected, out.n_rejected, out.n_skipped
    if res.tokens_estimated or tokenizer is not None:
        res.token_counter = counter.label
    if not frames:
        first = "; ".join(str(r) for r in out.rejected[:5]) or "no records"
        columns = sorted({c for cols in res.columns.values() for c in cols})
        raise LogFormatError(
            f"no request could be read ({out.n_rejected} rejected: {first}). Expected one of: {expected_text()}",
            columns=columns,
            rejected=out.rejected,
        )
    frame = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
    frame = frame[list(COLUMNS)]
    if not frame["ts_ms"].is_monotonic_increasing:
        frame = frame.sort_values("ts_ms", kind="stable", ignore_index=True)
    res.frame = frame
    return res
