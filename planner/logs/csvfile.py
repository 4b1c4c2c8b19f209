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
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["DELIMITERS", "delimiter_of", "read_rows", "record_lines"]

DELIMITERS = (",", ";", "\t", "|")
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
            yield start, "not valid UTF-8; save the log as UTF-8"
            continue
        yield start, values


def record_lines(path: Path, delimiter: str) -> Iterator[tuple[int, list[str] | str]]:
    """read_rows' records of a CSV file on disk (plain, .gz, .zst; a UTF-8 BOM dropped), streamed: header skipped."""
    name = path.name.lower()
    with open(path, "rb") as raw:
        binary: Any
        if name.endswith(".gz"):
            binary = gzip.GzipFile(fileobj=raw)
        elif name.endswith(".zst"):
            import pyarrow as pa

            binary = pa.CompressedInputStream(pa.PythonFile(raw, mode="r"), "zstd")
        else:
            binary = raw
        text = io.TextIOWrapper(binary, encoding="utf-8-sig", errors="surrogateescape", newline="")
        reader = _reader(text, delimiter)
        for values in reader:
            if any(v.strip() for v in values):
                break
        yield from _records(reader, reader.line_num, clean=False)
