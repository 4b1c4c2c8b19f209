"""Open: what a user gives (a path, or an upload's name and bytes) → a log file on disk DuckDB can read, and its kind.

Each file is checked (a regular file; under an explicit size cap, on disk and decompressed), its compression told
by its first bytes (gzip, zstd; Parquet by its own), a decompression bomb refused once 16 MB came out at more
than MAX_GZIP_RATIO × what went in, UTF-16 re-encoded as UTF-8 (a copy in the spill folder), and its kind told from
its first MiB: Parquet, JSON Lines, a JSON array, a JSON document, or CSV (with its header and delimiter). An
upload's bytes are written to the spill folder first, so every source takes the same path. Messages name a file by
its path relative to the files read together (`labels`), so same-named files in two folders are told apart.
"""

from __future__ import annotations

import csv
import io
import json
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from planner.errors import PlannerError
from planner.logs.split import BOM
from planner.logs.stream import BrokenStream, open_bytes

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DELIMITERS",
    "MAX_GZIP_RATIO",
    "LogFile",
    "TooLarge",
    "check_regular",
    "csv_header",
    "labels",
    "open_log",
]

DEFAULT_MAX_BYTES = 1024 * 1024 * 1024  # 1 GiB: a JSON document read whole (a JSON array or lines stream, uncapped)
# JSON Lines request logs compress 5–30×; repetitive exports reach ~60×. A bomb is 1000×.
MAX_GZIP_RATIO = 200
_RATIO_CHECK_BYTES = 16 << 20
_HEAD_BYTES = 1 << 20
DELIMITERS = (",", ";", "\t", "|")
PARQUET, JSONL, ARRAY, DOCUMENT, CSV, EMPTY = "parquet", "jsonl", "array", "document", "csv", "empty"


class TooLarge(PlannerError, ValueError):
    """The file (or what it decompresses to) is over a limit; the message says which and by how much."""


@dataclass(frozen=True)
class LogFile:
    """A log file ready to read: where it is (or its bytes, an upload read in memory), the name messages give it,
    DuckDB's name for its compression, its kind (parquet, jsonl, array, document, csv, empty) and its first MiB
    (decompressed, a BOM dropped)."""

    path: Path | bytes
    label: str
    compression: str
    kind: str
    head: bytes


def labels(sources: Sequence[str | Path | tuple[str, bytes]]) -> list[str]:
    """The name each source goes by in messages: an upload's own name; a path's name, or its path relative to the
    paths' common folder when two share a name (an S3 prefix's keys too)."""
    paths = [None if isinstance(s, tuple) else Path(s) for s in sources]
    names = [str(s[0]) if isinstance(s, tuple) else Path(s).name for s in sources]
    if len(set(names)) == len(names):
        return names
    real = [p.resolve() for p in paths if p is not None]
    common = Path(os.path.commonpath(real)) if real else Path("/")
    return [
        n if p is None else str(PurePosixPath(*p.resolve().relative_to(common).parts))
        for n, p in zip(names, paths, strict=True)
    ]


def check_regular(path: Path) -> int:
    """The size of a regular file; raises ValueError for a device, FIFO, socket or directory."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file (a device, pipe or socket)"
        raise ValueError(f"{kind}: save the log to a file and read that")
    return st.st_size


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


def _compression(first: bytes) -> str:
    return "gzip" if first[:2] == b"\x1f\x8b" else "zstd" if first[:4] == b"\x28\xb5\x2f\xfd" else "none"


def _head(path: Path | bytes, compression: str, label: str, max_bytes: int | None) -> bytes:
    """The first MiB (decompressed); refuses a bomb, a file over max_bytes decompressed, a corrupt stream. The
    compressed file is handed to the codec 16 KiB at a time, so the bytes it read so far are a true ratio's."""
    if compression == "none":
        with open_bytes(path, compression) as fh:
            return fh.read(_HEAD_BYTES)
    out, total = b"", 0
    cap = max_bytes if max_bytes is not None else _RATIO_CHECK_BYTES
    try:
        with open_bytes(path, compression, feed_bytes=16 << 10) as fh:
            while total <= cap and (chunk := fh.read(4 << 20)):
                total += len(chunk)
                out += chunk[: max(0, _HEAD_BYTES - len(out))]
                if total > _RATIO_CHECK_BYTES and total > MAX_GZIP_RATIO * fh.consumed():
                    kind = "gzip bomb" if compression == "gzip" else "decompression bomb"
                    raise TooLarge(
                        f"{label} inflates more than {MAX_GZIP_RATIO}× ({fh.consumed():,} bytes → over "
                        f"{_mb(total)}): refused as a likely {kind}"
                    )
                if max_bytes is not None and total > max_bytes:
                    raise TooLarge(f"{label} decompresses to more than {_mb(max_bytes)}, the size limit")
    except BrokenStream as exc:
        raise ValueError(f"{label} is {exc}") from None
    return out


def _utf16(head: bytes) -> str | None:
    """The UTF-16 variant of a file whose head is UTF-16 (a BOM, or NULs in every other byte), else None.

    NULs in every other byte: many at odd offsets and few at even ones (UTF-16-LE of mostly ASCII text), or the other
    way round (BE). A run of NULs in both (a sparse file's hole, a binary file) is no UTF-16: it would be re-encoded
    whole before being refused."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "utf-16"
    sample = head[: 4096 // 2 * 2]
    even, odd = sample[0::2].count(0), sample[1::2].count(0)
    if max(even, odd) > len(sample) // 4 and min(even, odd) * 8 < max(even, odd):
        enc = "utf-16-le" if odd > even else "utf-16-be"
        try:
            text = sample.decode(enc)
        except UnicodeDecodeError:
            return None
        if text[:1] in "{[" or text[:1].isalpha():
            return enc
    return None


def _recode(path: Path | bytes, compression: str, encoding: str, folder: Path | None) -> Path | bytes:
    """A UTF-8 copy of a UTF-16 file in `folder` (in memory without one), streamed."""
    import codecs

    decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
    parts: list[bytes] = []
    out = folder / f"recoded-{len(list(folder.iterdir()))}.utf8" if folder is not None else None
    with open_bytes(path, compression) as src, open(out if out is not None else os.devnull, "wb") as dst:
        write = dst.write if out is not None else parts.append
        while chunk := src.read(4 << 20):
            write(decoder.decode(chunk).encode("utf-8"))
        write(decoder.decode(b"", final=True).encode("utf-8"))
    return out if out is not None else b"".join(parts)


def _kind(head: bytes) -> str:
    body = head.lstrip()
    if not body:
        return EMPTY
    if body[:1] == b"[":
        return ARRAY
    if body[:1] != b"{":
        return CSV
    first = body.split(b"\n", 1)[0]
    try:
        json.loads(first)
    except (ValueError, RecursionError):
        if len(head) >= _HEAD_BYTES:  # a large file: a document starts with "{" alone on its line
            return DOCUMENT if first.strip() == b"{" else JSONL
        try:
            json.loads(body)
        except (ValueError, RecursionError):
            return JSONL  # JSON Lines with a bad first line: named line by line
        return DOCUMENT
    return JSONL


def csv_header(head: bytes) -> tuple[list[str], str]:
    """(the header's column names, stripped; the delimiter: the candidate seen most in the header outside quotes)
    of a CSV file's first MiB."""
    text = head.decode("utf-8", "replace")
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    counts = dict.fromkeys(DELIMITERS, 0)
    quoted = False
    for ch in line:
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in counts:
            counts[ch] += 1
    best = max(DELIMITERS, key=lambda d: counts[d])
    delimiter = best if counts[best] else ","
    start = text[text.index(line) :] if line else ""
    if csv.field_size_limit() < len(head):
        csv.field_size_limit(len(head))
    try:
        row = next(csv.reader(io.StringIO(start, newline=""), delimiter=delimiter), [])
    except csv.Error:
        row = []
    return [h.strip().strip('"').strip() for h in row], delimiter


def open_log(
    source: str | Path | tuple[str, bytes],
    label: str,
    folder: Path | None,
    max_bytes: int | None,
    *,
    cap_files: bool = False,
) -> LogFile:
    """The source as a LogFile (an upload written into `folder`, or without one kept in memory: for a reader that
    needs no DuckDB). max_bytes (default DEFAULT_MAX_BYTES) caps an upload, which is held in memory, and with
    cap_files a path too, on disk and decompressed; a file streamed is not capped. Raises TooLarge over the cap or
    for a likely bomb, ValueError for a file that is not a regular one or a corrupt stream, OSError when it cannot
    be read."""
    cap = DEFAULT_MAX_BYTES if max_bytes is None else max_bytes
    max_bytes = cap if isinstance(source, tuple) or cap_files else None
    path: Path | bytes
    if isinstance(source, tuple):
        data = source[1]
        if max_bytes is not None and len(data) > max_bytes:
            raise TooLarge(f"{label} is {_mb(len(data))}, over the {_mb(max_bytes)} size limit")
        if folder is None:
            path = data
        else:
            path = folder / f"upload-{len(list(folder.iterdir()))}-{Path(str(source[0])).name or 'log'}"
            path.write_bytes(data)
    else:
        path = Path(source)
        size = check_regular(path)
        if max_bytes is not None and size > max_bytes:
            raise TooLarge(f"{label} is {_mb(size)}, over the {_mb(max_bytes)} size limit")
    with open_bytes(path, "none") as fh:
        first = fh.read(4)
    if first == b"PAR1":
        return LogFile(path, label, "none", PARQUET, b"")
    compression = _compression(first)
    head = _head(path, compression, label, max_bytes)
    encoding = _utf16(head)
    if encoding is not None:
        path, compression = _recode(path, compression, encoding, folder), "none"
        with open_bytes(path, compression) as fh:
            head = fh.read(_HEAD_BYTES)
    head = head.removeprefix(BOM)
    return LogFile(path, label, compression, _kind(head), head)
