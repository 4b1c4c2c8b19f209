"""Where DuckDB's JSON reader's rows are in a newline-delimited file: the line number (and text) of each row it did
not vouch for, from one pass over the file's bytes — for the tolerant tier of planner.logs.duckpath, which reads a
JSONL log with `ignore_errors` (a NULL row for a bad line) and names only the bad lines.

DuckDB gives one row per non-blank line, so the k-th row is the k-th line that is not blank (a line of JSON white
space alone is blank to it). `json_row_lines` counts newlines with numpy a window at a time (a plain file mapped
16 MB at a time, never copied whole; .gz and .zst read in chunks), skipping blank lines, and returns each wanted
row's (line, place, text, reason); None when the file's non-blank lines are not DuckDB's rows (the caller then
reads every line as text instead). `tail_is_cut` says whether a plain file's last non-blank line is not JSON (a
truncated tail), so the fast tier, which would read the whole file only to fail at its end, is skipped.
"""

from __future__ import annotations

import gzip
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planner.lazy import lazy_module
from planner.logs.csvfile import NOT_UTF8

if TYPE_CHECKING:
    import numpy as np
else:  # imported on first use: `logs summarize` reads through DuckDB alone
    np = lazy_module("numpy")

__all__ = ["MAX_LINE_BYTES", "compression", "json_row_lines", "tail_is_cut"]

MAX_LINE_BYTES = 16 << 20  # a JSON line longer than this (4 M tokens of text) is rejected (named), not read


def compression(path: Path) -> str:
    """DuckDB's name for the file's compression, by its suffix: gzip, zstd or none."""
    name = path.name.lower()
    return "gzip" if name.endswith(".gz") else "zstd" if name.endswith(".zst") else "none"


_SCAN_BYTES = 16 << 20
_BOM = b"\xef\xbb\xbf"
_JSON_SPACE = b" \t\r\x0b\x0c"  # a line of these alone (or none) is blank to DuckDB's JSON reader: no row
_BLANK_LINE = re.compile(rb"(?m)^[ \t\r\x0b\x0c]*\n")
_TOO_LONG = f"a line over {MAX_LINE_BYTES >> 20} MB: not a log record"


def _decompressed(path: Path):
    """The file's bytes (plain, .gz, .zst) as a binary stream to read()."""
    kind = compression(path)
    if kind == "none":
        return open(path, "rb", buffering=0)
    if kind == "gzip":
        return gzip.open(path, "rb")
    import pyarrow as pa

    return pa.CompressedInputStream(pa.OSFile(str(path), "rb"), "zstd")


def _chunks(fh) -> Iterator[bytes | bytearray]:
    """The stream's bytes _SCAN_BYTES at a time (one buffer, refilled: do not keep a chunk past the next)."""
    buf = bytearray(_SCAN_BYTES)
    while got := fh.readinto(buf):
        yield buf if got == len(buf) else bytes(buf[:got])


def _found(line: int, place: int, raw: bytes | bytearray, size: int) -> tuple[int, int, str, str | None]:
    """(1-based line, place, text, reason) of a wanted line as the CSV layer would give it or refuse it."""
    if size > MAX_LINE_BYTES:
        return line, place, "", _TOO_LONG
    raw = bytes(raw).removesuffix(b"\r")
    if line == 1:
        raw = raw.removeprefix(_BOM)
    try:
        return line, place, raw.decode("utf-8"), None
    except UnicodeDecodeError:
        return line, place, "", NOT_UTF8


def json_row_lines(path: Path, places: list[int], n_rows: int) -> list[tuple[int, int, str, str | None]] | None:
    """(line, place, text, reason) of the JSON reader's rows at the ascending `places` (0-based among its rows,
    the file's non-blank lines); None when the file does not hold exactly n_rows non-blank lines (the rows
    cannot be mapped to lines: the caller reads it line-accounted).

    line is 1-based; text is the line as the CSV layer would give it (a UTF-8 BOM and a final CR dropped), "" with
    a reason when that layer would refuse the line (over MAX_LINE_BYTES, invalid UTF-8), as _csv_rejects names it.
    One pass counting newlines (a file without blank lines: row k is line k + 1), else a second one that walks
    the buffers holding a wanted row or a blank line.
    """
    if not places:
        return []  # nothing to name
    found = _unblank_lines(path, places, n_rows)
    if found is None:
        with _decompressed(path) as fh:
            found = _blank_aware_lines(fh, places, n_rows)
    return found


def tail_is_cut(path: Path) -> bool:
    """Whether a plain file's last non-blank line is not JSON (a log cut off mid-write): the fast tier would read
    the whole file only to fail there, so the tolerant tier reads it instead. False when unsure (compressed, or a
    last line longer than the 64 kB looked at)."""
    import json

    if compression(path) != "none":
        return False
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(max(0, size - (64 << 10)))
            tail = fh.read().rstrip(_JSON_SPACE + b"\n")
    except OSError:
        return False
    cut = tail.rfind(b"\n")
    if cut < 0 and size > 64 << 10 or not tail:
        return False
    try:
        json.loads(tail[cut + 1 :].removeprefix(_BOM))
    except (ValueError, RecursionError):
        return True
    return False


def _windows(path: Path) -> Iterator[tuple[Any, int, int]]:
    """The file's bytes as (buffer, start, end) windows of at most _SCAN_BYTES: a plain file mapped a window at a
    time (no copy, and no more of it held than a window), a compressed one decompressed a chunk at a time. A
    window's buffer is not to be kept, nor a view of it left, past the next."""
    if compression(path) != "none":
        with _decompressed(path) as fh:
            for chunk in _chunks(fh):
                yield chunk, 0, len(chunk)
        return
    import mmap

    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        for lo in range(0, size, _SCAN_BYTES):
            hi = min(lo + _SCAN_BYTES, size)
            base = lo - lo % mmap.ALLOCATIONGRANULARITY
            with mmap.mmap(fh.fileno(), hi - base, offset=base, access=mmap.ACCESS_READ) as mm:
                yield mm, lo - base, hi - base


def _unblank_lines(path: Path, places: list[int], n_rows: int) -> list[tuple[int, int, str, str | None]] | None:
    """json_row_lines where row k is line k + 1; None when the file does not hold exactly n_rows lines."""
    out: list[tuple[int, int, str, str | None]] = []
    want = iter(places)
    nxt = next(want, -1)
    line = 0  # lines ended before this window
    carry: bytes | None = None  # the start of wanted line `line` (0-based), begun in an earlier window
    carry_size = 0
    open_bytes = 0  # bytes after the last newline
    is_newline = np.empty(_SCAN_BYTES, dtype=bool)  # numpy counts newlines several times faster than bytes.count
    for buf, lo, hi in _windows(path):
        window = np.frombuffer(buf, dtype=np.uint8, count=hi - lo, offset=lo)
        n = int(np.count_nonzero(np.equal(window, 10, out=is_newline[: hi - lo])))
        del window  # no view of a mapped file is left when it is closed
        pos, at = lo, line  # pos: where line `at` (0-based) starts in buf
        while 0 <= nxt <= line + n:
            while at < nxt:
                pos, at = buf.find(b"\n", pos, hi) + 1, at + 1
            end = buf.find(b"\n", pos, hi)
            stop = end if end >= 0 else hi
            seg = bytes(buf[pos : min(stop, pos + MAX_LINE_BYTES + 2)])
            size = stop - pos
            if carry is not None and at == line:  # the wanted line began in an earlier window
                seg, size, carry = (carry + seg)[: MAX_LINE_BYTES + 2], carry_size + size, None
            if end < 0:  # it goes on in the next window
                carry, carry_size = seg, size
                break
            out.append(_found(at + 1, at, seg, size))
            nxt = next(want, -1)
        open_bytes = hi - buf.rfind(b"\n", lo, hi) - 1 if n else open_bytes + hi - lo
        line += n
    if carry is not None:
        out.append(_found(line + 1, line, carry, carry_size))
        nxt = next(want, -1)
    total = line + (1 if open_bytes else 0)
    return out if total == n_rows and nxt < 0 else None


def _blank_aware_lines(fh, places: list[int], n_rows: int) -> list[tuple[int, int, str, str | None]] | None:
    """json_row_lines in a file with blank lines: the buffers of whole lines holding a wanted row or a blank line
    are split; None when the file does not hold exactly n_rows non-blank lines."""
    out: list[tuple[int, int, str, str | None]] = []
    want = iter(places)
    nxt = next(want, -1)
    row = line = 0
    pending = b""  # the start of a line not ended yet
    dropped = 0  # bytes of that line not held (past MAX_LINE_BYTES)

    def take(buf: bytes, ends: bool) -> None:
        """The lines of buf (all ended by a newline when ends; else the file's last, unended line)."""
        nonlocal row, line, nxt, dropped
        n = buf.count(b"\n") if ends else 1
        if (nxt < 0 or nxt >= row + n) and not dropped and not _BLANK_LINE.search(buf):
            row, line = row + n, line + n  # no wanted row and no blank line here
            return
        pieces = buf.split(b"\n")
        for k, piece in enumerate(pieces[:-1] if ends else pieces):
            line += 1
            size = len(piece) + (dropped if k == 0 else 0)
            if size <= MAX_LINE_BYTES and not piece.removeprefix(_BOM if line == 1 else b"").strip(_JSON_SPACE):
                continue
            if row == nxt:
                out.append(_found(line, row, piece, size))
                nxt = next(want, -1)
            row += 1
        dropped = 0

    for chunk in _chunks(fh):
        cut = chunk.rfind(b"\n")
        if cut < 0:
            pending += chunk
            if len(pending) > MAX_LINE_BYTES:  # refused whatever it holds: only a little of it is kept
                dropped += len(pending) - 1024
                pending = pending[:1024]
            continue
        take(pending + chunk[: cut + 1], True)
        pending = bytes(chunk[cut + 1 :])
    if pending or dropped:
        take(pending, False)
    return out if row == n_rows and nxt < 0 else None
