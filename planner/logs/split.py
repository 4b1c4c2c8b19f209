"""Split: a text log's records and the lines they start on — the one place a rejected line's number comes from.

A record is a line of a JSON Lines file, or a record of a CSV file (a line break inside double quotes does not end
it: a newline ends a record only after an even number of quotes, RFC 4180's doubled quotes included). Blank
records are not records: a JSON line of JSON white space alone, an empty CSV line. The CSV header is the first
record and not a row. Lines count every newline of the file, so CRLF, a UTF-8 BOM (dropped from the first record's
text), quoted line breaks and a last line without its newline (a cut tail) are counted as an editor shows them.

DuckDB reads the rows (planner.logs.load); these functions walk the file's bytes once, a window at a time (numpy
over a file mapped or decompressed `window_bytes` at a time: memory does not grow with the file), to give:

- `locate`: the records at some places among DuckDB's rows, and those at some byte offsets (the ones its CSV
  layer refused, which it names by offset), each with its line and text;
- `records`: every record in order (the Python record reader's input for formats DuckDB does not map);
- `mask_long`: a copy of the file with each record over `max_line_bytes` blanked (its newlines kept, so every
  line keeps its number), for DuckDB to read a file whose longest line is past its buffers.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planner.lazy import lazy_module

if TYPE_CHECKING:
    import numpy as np
else:  # imported on first use: `logs summarize` on a clean file never needs it
    np = lazy_module("numpy")

__all__ = ["BOM", "CSV", "LINES", "Found", "locate", "mask_long", "open_bytes", "records"]

LINES, CSV = "lines", "csv"  # the two record grammars
BOM = b"\xef\xbb\xbf"
_JSON_SPACE = b" \t\r\n\x0b\x0c"  # a JSON line of these alone is blank to DuckDB's JSON reader


@dataclass(frozen=True)
class Found:
    """One record: its 1-based first line, its bytes (no line end; a first line's BOM dropped; at most the first
    max_line_bytes + 1 held) and its whole size in bytes; `offset` where it starts in the (decompressed) file."""

    line: int
    text: bytes
    size: int
    offset: int


def open_bytes(path: Path | bytes, compression: str):
    """The (decompressed) bytes of a file, or of an upload held in memory, as a binary stream: compression is
    DuckDB's name (none, gzip, zstd); both decompressed by Arrow's codecs (gzip a fifth faster than Python's)."""
    import io

    if compression == "none":
        return io.BytesIO(path) if isinstance(path, bytes) else open(path, "rb", buffering=0)
    import pyarrow as pa

    src = pa.BufferReader(path) if isinstance(path, bytes) else pa.OSFile(str(path), "rb")
    return pa.CompressedInputStream(src, compression)


def _windows(path: Path | bytes, compression: str, window: int) -> Iterator[Any]:
    """The (decompressed) bytes a window at a time, into one buffer refilled each time: a window is not to be kept
    past the next."""
    buf = bytearray(window)
    with open_bytes(path, compression) as fh:
        while True:
            got = fh.readinto(buf)
            while got and got < window:  # a stream may give less than asked before its end
                more = fh.readinto(memoryview(buf)[got:])
                if not more:
                    break
                got += more
            if not got:
                return
            yield memoryview(buf)[:got]


@dataclass
class _Open:
    """The record the previous window ended inside: where it starts, its first line, its bytes so far (capped)."""

    offset: int = 0
    line: int = 1
    head: bytes = b""
    size: int = 0


class _Walk:  # noqa: PLR0902 - the state one pass carries across windows
    """Records a window at a time: each record's start and end offsets and first and last lines, its bytes on demand."""

    def __init__(
        self, path: Path | bytes, compression: str, grammar: str, window: int, keep: int, delimiter: str = ","
    ) -> None:
        self.path, self.compression, self.grammar, self.window, self.keep = path, compression, grammar, window, keep
        self.delimiter = ord(delimiter)
        self.open = _Open()
        self.inside = 0  # 1 inside a quoted field at the window's start
        self.run = 0  # quotes ending the previous window (a run of quotes the next one may go on)
        self.run_starts_field = True  # whether that run starts a field
        self.last_byte = 10  # the byte before the window (the file's start counts as a line's)
        self.lines = 0  # newlines before the current window
        self.base = 0  # the current window's offset
        self.buf: Any = b""
        self.ended = True  # whether the batch's last record ends with a newline (False: the file's cut tail)

    def batches(self) -> Iterator[tuple[Any, Any, Any, Any]]:
        """Per window: (starts, ends, first lines, last lines) of the records that end in it (`ends` exclusive of
        the newline); the file's last record, when no newline ends it, comes in a final batch of its own."""
        for buf in _windows(self.path, self.compression, self.window):
            self.buf = buf
            arr = np.frombuffer(buf, dtype=np.uint8)
            nl = np.flatnonzero(arr == 10)
            if self.grammar == CSV:
                ends_at = np.flatnonzero(self._outside(arr, nl) == 0)
                self.last_byte = int(arr[-1])
            else:
                ends_at = np.arange(nl.size)
            ends = nl[ends_at] + self.base
            last = self.lines + ends_at + 1  # the line each record's newline ends
            starts, first = np.empty_like(ends), np.empty_like(ends)
            if ends.size:
                starts[0], first[0] = self.open.offset, self.open.line
                starts[1:], first[1:] = ends[:-1] + 1, last[:-1] + 1
            yield starts, ends, first, last
            if ends.size:
                self.open = _Open(int(ends[-1]) + 1, int(last[-1]) + 1)
            tail_from = int(ends[-1]) + 1 - self.base if ends.size else 0
            self.open.head += bytes(buf[tail_from : tail_from + max(0, self.keep - len(self.open.head))])
            self.open.size += len(buf) - tail_from
            self.lines += nl.size
            self.base += len(buf)
        self.buf = b""
        if self.open.size:
            self.ended = False
            end = self.open.offset + self.open.size
            yield np.array([self.open.offset]), np.array([end]), np.array([self.open.line]), np.array([self.lines + 1])

    def _outside(self, arr: Any, nl: Any) -> Any:
        """For each newline of the window, 1 when it falls inside a quoted field (RFC 4180, as DuckDB reads it).

        A run of quotes toggles the state when its length is odd: at a field's start it opens a field (or, odd,
        opens one and closes it: an empty field and escaped quotes), inside a field it closes it; a run in the middle
        of an unquoted field is literal text. So an odd run that starts a field always toggles, any other sets the
        state to "outside": the state at a point is the parity of field-starting odd runs since the last other one.
        """
        q = np.flatnonzero(arr == 34)
        if not q.size and not self.run:
            return np.full(nl.size, self.inside, dtype=np.int64)
        new = np.ones(q.size, dtype=bool)
        new[1:] = q[1:] != q[:-1] + 1
        starts = q[new]
        lengths = np.diff(np.append(np.flatnonzero(new), q.size))
        before = np.where(starts > 0, arr[np.maximum(starts - 1, 0)], self.last_byte)
        field = (before == self.delimiter) | (before == 10) | (starts + self.base == len(BOM)) & (self.base == 0)
        if self.run:  # the run the previous window ended with, continued here or not
            if starts.size and starts[0] == 0:
                lengths[0] += self.run
                field[0] = self.run_starts_field
            else:
                starts, lengths = np.insert(starts, 0, -1), np.insert(lengths, 0, self.run)
                field = np.insert(field, 0, self.run_starts_field)
        self.run = 0
        if q.size and q[-1] == arr.size - 1:  # a run at the window's end: counted once the next one is seen
            self.run, self.run_starts_field = int(lengths[-1]), bool(field[-1])
            starts, lengths, field = starts[:-1], lengths[:-1], field[:-1]
        odd = lengths % 2 == 1
        starts, toggles = starts[odd], field[odd]
        # state after each odd run: the parity of toggles since the last run that set "outside" (or the window start)
        count = np.cumsum(toggles)
        reset = np.maximum.accumulate(np.where(~toggles, np.arange(starts.size), -1))
        base = np.where(reset >= 0, count[np.maximum(reset, 0)], -self.inside)
        state = (count - base) % 2
        if not starts.size:
            return np.full(nl.size, self.inside, dtype=np.int64)
        at = np.searchsorted(starts, nl) - 1  # the last odd run before each newline
        out = np.where(at >= 0, state[np.maximum(at, 0)], self.inside)
        self.inside = int(state[-1])
        return out

    def raw(self, start: int, end: int) -> bytes:
        """A record's bytes, at most `keep` (its head, when it began in an earlier window)."""
        stop = min(end, start + self.keep)
        if start >= self.base:
            return bytes(self.buf[start - self.base : stop - self.base])
        return (self.open.head + bytes(self.buf[: max(0, stop - self.base)]))[: self.keep]

    def text(self, start: int, end: int) -> bytes:
        """A record's bytes as a reader sees them: no final CR, no BOM on the first line."""
        raw = self.raw(start, end)
        if start == 0:
            raw = raw.removeprefix(BOM)
        return raw[:-1] if raw.endswith(b"\r") and end - start <= self.keep else raw

    def blank(self, start: int, end: int) -> bool:
        if end - start > 64:
            return False  # a longer run of white space is not a blank line of any log
        text = self.text(start, end)
        return not text.strip(_JSON_SPACE) if self.grammar == LINES else not text

    def kept(self, starts: Any, ends: Any) -> Any:
        """A mask of the batch's records that are records, not blank (the short ones, and JSON lines that start
        with white space, are looked at one by one)."""
        size = ends - starts
        maybe = size <= 1
        if self.grammar == LINES:
            inside = starts >= self.base
            first = np.zeros(starts.size, dtype=np.uint8)
            if len(self.buf) and inside.any():
                first[inside] = np.frombuffer(self.buf, dtype=np.uint8)[starts[inside] - self.base]
            space = np.isin(first, np.frombuffer(_JSON_SPACE + BOM[:1], dtype=np.uint8)) | ~inside
            maybe |= space & (size <= 64)
        keep = np.ones(starts.size, dtype=bool)
        for k in np.flatnonzero(maybe):
            keep[k] = not self.blank(int(starts[k]), int(ends[k]))
        return keep

    def found(self, starts: Any, ends: Any, first: Any, k: Any) -> Found:
        start, end = int(starts[k]), int(ends[k])
        return Found(int(first[k]), self.text(start, end), end - start, start)


def locate(
    path: Path | bytes,
    compression: str,
    grammar: str,
    places: Sequence[int],
    offsets: Sequence[int],
    n_rows: int,
    *,
    window: int,
    keep: int,
    delimiter: str = ",",
) -> list[Found] | None:
    """The records at `places` (0-based among the rows DuckDB read: the records but a CSV file's header and those
    at `offsets`) and at `offsets` (where the records DuckDB's CSV layer refused are: the record holding each
    offset, its newline included, as DuckDB gives a record's start or the byte after it), in file order.

    None when the file's records are not DuckDB's rows (n_rows of them besides the refused): their lines could
    not be told then, so none is.
    """
    want_places = np.asarray(sorted(set(places)), dtype=np.int64)
    want_offsets = np.asarray(sorted(set(offsets)), dtype=np.int64)
    walk = _Walk(path, compression, grammar, window, keep, delimiter)
    out: list[Found] = []
    place = refused_seen = 0
    header = grammar == CSV
    for starts, ends, first, _ in walk.batches():
        kept = walk.kept(starts, ends)
        if header and kept.any():
            kept[int(np.flatnonzero(kept)[0])] = header = False
        refused = np.zeros(starts.size, dtype=bool)
        if want_offsets.size and starts.size:
            near = want_offsets[(want_offsets >= starts[0]) & (want_offsets <= ends[-1])]
            holder = np.searchsorted(starts, near, side="right") - 1
            refused[holder[near <= ends[holder]]] = True
            refused &= kept
        refused_seen += int(refused.sum())
        rows = kept & ~refused
        hit = rows & np.isin(place + np.cumsum(rows) - 1, want_places)
        out += [walk.found(starts, ends, first, k) for k in np.flatnonzero(hit | refused)]
        place += int(rows.sum())
    if place != n_rows or refused_seen != want_offsets.size:
        return None
    return out


def records(
    path: Path | bytes, compression: str, grammar: str, *, window: int, keep: int, delimiter: str = ","
) -> Iterator[Found]:
    """Every record of the file in order (a CSV file's header first)."""
    walk = _Walk(path, compression, grammar, window, keep, delimiter)
    for starts, ends, first, _ in walk.batches():
        for k in np.flatnonzero(walk.kept(starts, ends)):
            yield walk.found(starts, ends, first, k)


def mask_long(
    path: Path | bytes, compression: str, grammar: str, out: Path, *, window: int, limit: int, delimiter: str = ","
) -> list[Found]:
    """Write to `out` (zstd) the file with each record over `limit` bytes replaced by its newlines alone (a blank
    record on each of its lines, so every line keeps its number), and return those records (their first
    `limit` + 1 bytes)."""
    import pyarrow as pa

    walk = _Walk(path, compression, grammar, window, limit + 1, delimiter)
    long: list[Found] = []
    with pa.CompressedOutputStream(str(out), "zstd") as sink:
        for starts, ends, first, last in walk.batches():
            for k in range(starts.size):
                start, end = int(starts[k]), int(ends[k])
                if end - start > limit:
                    long.append(walk.found(starts, ends, first, k))
                    sink.write(b"\n" * int(last[k] - first[k]))
                else:
                    sink.write(walk.raw(start, end))
                if walk.ended:
                    sink.write(b"\n")
    return long
