"""Walk: a text log's bytes a window at a time, as records — the mechanics under planner.logs.split.

`Walk` goes through the (decompressed) file a window at a time (planner.logs.stream.windows) and gives, per window,
the start and end offsets and the first and last lines of the records that end in it: a JSON line, or an RFC-4180
CSV record (a newline inside double quotes does not end it, as DuckDB reads it); blank records are told apart
(`kept`), a record's bytes read on demand (`found`). Its state where a window starts is a `Mark`, so a walk can go
on from any window a survey noted (planner.logs.split.Survey).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planner.lazy import lazy_module
from planner.logs.stream import windows

if TYPE_CHECKING:
    import numpy as np
else:  # imported on first use: `logs summarize` on a clean file never needs it
    np = lazy_module("numpy")

__all__ = ["BOM", "CSV", "LINES", "Found", "Mark", "Walk"]

LINES, CSV = "lines", "csv"  # the two record grammars
BOM = b"\xef\xbb\xbf"
_JSON_SPACE = b" \t\r\n\x0b\x0c"  # a JSON line of these alone is blank to DuckDB's JSON reader


@functools.cache
def _SPACE_OR_BOM() -> Any:  # noqa: N802 - a constant, made once numpy is imported
    """A lookup table: whether a byte is JSON white space or a BOM's first byte (a line starting so may be blank)."""
    table = np.zeros(256, dtype=bool)
    table[list(_JSON_SPACE + BOM[:1])] = True
    return table


@dataclass(frozen=True)
class Found:
    """One record: its 1-based first line, its bytes (no line end; a first line's BOM dropped; at most the first
    max_line_bytes + 1 held) and its whole size in bytes; `offset` where it starts in the (decompressed) file."""

    line: int
    text: bytes
    size: int
    offset: int


@dataclass
class _Open:
    """The record the previous window ended inside: where it starts, its first line, its bytes so far (capped)."""

    offset: int = 0
    line: int = 1
    head: bytes = b""
    size: int = 0


@dataclass(frozen=True)
class Mark:
    """A walk's state where a window starts: the record open there, the quoting, the lines and bytes before it."""

    open: _Open
    inside: int
    run: int
    run_starts_field: bool
    last_byte: int
    lines: int
    base: int

    @staticmethod
    def guess(base: int, last_byte: int) -> Mark:
        """A mark for a walk begun at `base` (the byte before it `last_byte`) without the walk before it: outside any
        quotes, a record starting there, lines counted from 0."""
        return Mark(_Open(base), 0, 0, True, last_byte, 0, base)

    def quoting(self) -> tuple[int, int, int, bool, int]:
        """What decides the records from here on: where the open record starts, and the quoting."""
        return self.open.offset, self.inside, self.run, self.run_starts_field, self.last_byte

    def shifted(self, lines: int) -> Mark:
        """The same mark with `lines` more lines before it."""
        return replace(self, open=replace(self.open, line=self.open.line + lines), lines=self.lines + lines)


class Walk:  # noqa: PLR0902 - the state one pass carries across windows
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
        self.k = 0  # the segment being walked: a window's index, or the tail's (one past the last window's)

    def mark(self) -> Mark:
        """The walk's state before the current window (or the tail), to walk on from there later."""
        starts_field = self.run_starts_field or not self.run  # it says something only of a run there
        return Mark(replace(self.open), self.inside, self.run, starts_field, self.last_byte, self.lines, self.base)

    def batches(
        self, only: Sequence[int] | None = None, marks: Sequence[Mark] | None = None, noted: list[Mark] | None = None
    ) -> Iterator[tuple[Any, Any, Any, Any]]:
        """Per window: (starts, ends, first lines, last lines) of the records that end in it (`ends` exclusive of
        the newline); the file's last record, when no newline ends it, comes in a final batch of its own (the
        segment after the last window). `only`: the segments to walk (ascending), each begun from its mark in
        `marks` (a Survey's) when the one before was not walked; `noted` gets the mark before each segment."""
        last = -1
        for k, buf in windows(self.path, self.compression, self.window, only):
            if k != last + 1 and marks is not None:
                self.restore(marks[k])
            last = self.k = k
            if noted is not None:
                noted.append(self.mark())
            self.buf = buf
            arr = np.frombuffer(buf, dtype=np.uint8)
            nl = np.flatnonzero(arr == 10)
            if self.grammar == CSV:
                ends_at = np.flatnonzero(self._outside(arr, nl) == 0)
                self.last_byte = int(arr[-1])
            else:
                ends_at = np.arange(nl.size)
            ends = nl[ends_at] + self.base
            lines = self.lines + ends_at + 1  # the line each record's newline ends
            starts, first = np.empty_like(ends), np.empty_like(ends)
            if ends.size:
                starts[0], first[0] = self.open.offset, self.open.line
                starts[1:], first[1:] = ends[:-1] + 1, lines[:-1] + 1
            yield starts, ends, first, lines
            if ends.size:
                self.open = _Open(int(ends[-1]) + 1, int(lines[-1]) + 1)
            tail_from = int(ends[-1]) + 1 - self.base if ends.size else 0
            self.open.head += bytes(buf[tail_from : tail_from + max(0, self.keep - len(self.open.head))])
            self.open.size += len(buf) - tail_from
            self.lines += nl.size
            self.base += len(buf)
        self.buf = b""
        tail = len(marks) - 1 if marks is not None else last + 1
        if only is not None and tail not in only:
            return
        if tail != last + 1 and marks is not None:
            self.restore(marks[tail])
        self.k = tail
        if noted is not None:
            noted.append(self.mark())
        if self.open.size:
            self.ended = False
            end = self.open.offset + self.open.size
            yield np.array([self.open.offset]), np.array([end]), np.array([self.open.line]), np.array([self.lines + 1])

    def restore(self, mark: Mark) -> None:
        self.open = replace(mark.open)
        self.inside, self.run, self.run_starts_field = mark.inside, mark.run, mark.run_starts_field
        self.last_byte, self.lines, self.base = mark.last_byte, mark.lines, mark.base

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
            space = _SPACE_OR_BOM()[first] | ~inside
            maybe |= space & (size <= 64)
        keep = np.ones(starts.size, dtype=bool)
        for k in np.flatnonzero(maybe):
            keep[k] = not self.blank(int(starts[k]), int(ends[k]))
        return keep

    def found(self, starts: Any, ends: Any, first: Any, k: Any) -> Found:
        start, end = int(starts[k]), int(ends[k])
        return Found(int(first[k]), self.text(start, end), end - start, start)
