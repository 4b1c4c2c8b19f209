"""CSV as the world writes it: one real CSV parser over the whole file, rows numbered by their first line.

RFC 4180 quoting (doubled quotes, delimiters and line breaks inside quoted fields), CRLF or LF,
and `,` `;` tab `|` delimiters (chosen from the header line, outside quotes). A UTF-8 BOM is dropped
before this module sees the bytes. Bytes that are not UTF-8 reject only the rows they sit in.
`record_lines` walks a file on disk the same way, streamed (plain, .gz, .zst), in bounded memory.
"""

from __future__ import annotations

import csv
import gzip
import io
import itertools
import re
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = ["DELIMITERS", "NOT_UTF8", "delimiter_of", "fields", "read_rows", "record_lines"]

DELIMITERS = (",", ";", "\t", "|")
NOT_UTF8 = "not valid UTF-8; save the log as UTF-8"  # why a line that is not UTF-8 is rejected
_FIELD_LIMIT = 64 << 20  # a quoted JSON column may be long; the file cap bounds the total anyway


def _header_line(text: str) -> str:
    """The first non-blank physical line (headers do not contain line breaks in practice)."""
    for line in text.splitlines():
        if line.strip():
            return line
    return ""


def delimiter_of(text: str) -> str:
    """The delimiter of a CSV text: the candidate seen most often in the header line outside quotes (default ',')."""
    header = _header_line(text[:65536])
    counts = dict.fromkeys(DELIMITERS, 0)
    quoted = False
    for ch in header:
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in counts:
            counts[ch] += 1
    best = max(DELIMITERS, key=lambda d: counts[d])
    return best if counts[best] else ","


_BAD_BYTE = re.compile("[\udc80-\udcff]")  # what surrogateescape makes of a byte that is not UTF-8


def read_rows(
    data: bytes, tick: Callable[[float], None] | None = None
) -> tuple[list[str], Iterator[tuple[int, list[str] | str]]]:
    """(header, iterator of (first line number of the row, its fields — or a reason string when unusable)).

    tick: called now and then with the fraction of lines read. Header cells are stripped of surrounding spaces.
    Blank lines are skipped. Line numbers are 1-based physical lines, so a row with a quoted line break is named by
    the line it starts on.
    """
    try:
        text, clean = data.decode("utf-8"), True
    except UnicodeDecodeError:
        text, clean = data.decode("utf-8", errors="surrogateescape"), False
    reader = _reader(io.StringIO(text, newline=""), delimiter_of(text))
    header: list[str] = []
    prev = 0
    for values in reader:
        if any(v.strip() for v in values):
            header = [h.strip().strip('"').strip() for h in values]
            prev = reader.line_num
            break
        prev = reader.line_num

    n_lines = max(data.count(b"\n"), 1) if tick else 1
    return header, _records(reader, prev, clean, tick, n_lines)


def _reader(stream, delimiter: str):
    if csv.field_size_limit() < _FIELD_LIMIT:
        csv.field_size_limit(_FIELD_LIMIT)
    return csv.reader(
        stream, delimiter=delimiter, quotechar='"', doublequote=True, skipinitialspace=False, strict=False
    )


def _records(
    reader, prev: int, clean: bool, tick: Callable[[float], None] | None = None, n_lines: int = 1
) -> Iterator[tuple[int, list[str] | str]]:
    """(first line of the record, its fields or a reason) of every non-blank record after line `prev`."""
    next_tick = 50_000
    while True:
        if tick is not None and prev >= next_tick:
            tick(prev / n_lines)
            next_tick = prev + 50_000
        start = prev + 1
        try:
            values = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            prev = reader.line_num
            yield start, f"not valid CSV: {exc}"
            continue
        prev = reader.line_num
        if not values or not any(v.strip() for v in values):
            continue
        if not clean and any(_BAD_BYTE.search(v) for v in values):
            yield start, NOT_UTF8
            continue
        yield start, values


def record_lines(path: Path, delimiter: str) -> Iterator[tuple[int, int, bytes | list[str] | str]]:
    """(first line, line breaks inside it, the record) of every non-blank record after the header of a CSV file on
    disk (plain, .gz, .zst), streamed; `fields` turns a record into read_rows' fields (or a reason).

    Lines are taken as records, unparsed, until the first double quote; from there on the csv module reads the
    rest exactly as read_rows does (a quoted field may hold line breaks, a stray quote may not open one).
    """
    name = path.name.lower()
    with open(path, "rb") as raw:
        lines: Iterator[bytes]
        if name.endswith(".gz"):
            lines = iter(gzip.GzipFile(fileobj=raw))
        elif name.endswith(".zst"):
            import pyarrow as pa

            lines = _split_lines(pa.CompressedInputStream(pa.PythonFile(raw, mode="r"), "zstd"))
        else:
            lines = iter(raw)
        header_seen = False
        line_no = 0
        for line in lines:
            line_no += 1
            if line_no == 1:
                line = line.removeprefix(b"\xef\xbb\xbf")
            if b'"' in line:
                text = (b.decode("utf-8", errors="surrogateescape") for b in itertools.chain([line], lines))
                reader = _reader(text, delimiter)
                base = line_no - 1
                for start, values in _records(reader, 0, clean=False):
                    if not header_seen:
                        header_seen = True
                        continue
                    yield base + start, reader.line_num - start, values
                return
            if not line.strip():
                continue
            if not header_seen:
                header_seen = True
                continue
            yield line_no, 0, line


def fields(record: bytes | list[str] | str, delimiter: str) -> list[str] | str:
    """A record from record_lines as read_rows' fields (or the reason it cannot be used)."""
    if not isinstance(record, bytes):
        return record
    try:
        text = record.decode("utf-8")
    except UnicodeDecodeError:
        return NOT_UTF8
    values: list[str] = next(_reader(io.StringIO(text, newline=""), delimiter), [])
    return values


def _split_lines(stream) -> Iterator[bytes]:
    """The lines (each with its line break) of a binary stream, read a MiB at a time."""
    rest = b""
    while chunk := stream.read(1 << 20):
        pieces = (rest + chunk).split(b"\n")
        rest = pieces.pop()
        yield from (p + b"\n" for p in pieces)
    if rest:
        yield rest
