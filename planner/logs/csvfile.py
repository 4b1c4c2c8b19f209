"""CSV as the world writes it: one real CSV parser over the whole file, rows numbered by their first line.

RFC 4180 quoting (doubled quotes, delimiters and line breaks inside quoted fields), CRLF or LF,
and `,` `;` tab `|` delimiters (chosen from the header line, outside quotes). A UTF-8 BOM is dropped
before this module sees the bytes. Bytes that are not UTF-8 reject only the rows they sit in.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Iterator

__all__ = ["DELIMITERS", "delimiter_of", "read_rows"]

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
    delim = delimiter_of(text)
    if csv.field_size_limit() < _FIELD_LIMIT:
        csv.field_size_limit(_FIELD_LIMIT)
    reader = csv.reader(
        io.StringIO(text, newline=""),
        delimiter=delim,
        quotechar='"',
        doublequote=True,
        skipinitialspace=False,
        strict=False,
    )
    header: list[str] = []
    prev = 0
    for values in reader:
        if any(v.strip() for v in values):
            header = [h.strip().strip('"').strip() for h in values]
            prev = reader.line_num
            break
        prev = reader.line_num

    n_lines = max(data.count(b"\n"), 1) if tick else 1

    def rows() -> Iterator[tuple[int, list[str] | str]]:
        nonlocal prev
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

    return header, rows()
