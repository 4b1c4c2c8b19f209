"""Split: a text log's records and the lines they start on — the one place a rejected line's number comes from.

A record is a line of a JSON Lines file, or a record of a CSV file (a line break inside double quotes does not end
it: a newline ends a record only after an even number of quotes, RFC 4180's doubled quotes included). Blank
records are not records: a JSON line of JSON white space alone, an empty CSV line. The CSV header is the first
record and not a row. Lines count every newline of the file, so CRLF, a UTF-8 BOM (dropped from the first record's
text), quoted line breaks and a last line without its newline (a cut tail) are counted as an editor shows them.

DuckDB reads the rows (planner.logs.load); these functions walk the file's bytes once, a window at a time
(planner.logs.walk, numpy over windows read and inflated by planner.logs.stream: memory does not grow with the
file), to give:

- `locate`: the records at some places among DuckDB's rows, and those at some byte offsets (the ones its CSV
  layer refused, which it names by offset), each with its line and text; given the file's `Survey` (where each
  window starts and how many records come before it, made by `Surveying` on another core while DuckDB reads a
  compressed CSV file in one thread, or by `survey_in_two` after the read of a plain file), it walks only the
  windows holding them;
- `records`: every record in order (the Python record reader's input for formats DuckDB does not map);
- `mask_long`: a copy of the file with each record over `max_line_bytes` blanked (its newlines kept, so every
  line keeps its number), for DuckDB to read a file whose longest line is past its buffers.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planner.lazy import lazy_module
from planner.logs.stream import open_bytes
from planner.logs.walk import BOM, CSV, LINES, Found, Mark, Walk

if TYPE_CHECKING:
    import numpy as np
else:  # imported on first use: `logs summarize` on a clean file never needs it
    np = lazy_module("numpy")

__all__ = [
    "BOM",
    "CSV",
    "LINES",
    "SURVEY_WINDOW_BYTES",
    "Found",
    "Survey",
    "Surveying",
    "locate",
    "mask_long",
    "records",
    "survey",
    "survey_in_two",
]

# a Survey notes where each 4 MiB window starts: locate walks 4 MiB for each record it looks for (at 10 M rows a
# gzipped RFC CSV is 180 windows: 180 marks)
SURVEY_WINDOW_BYTES = 4 << 20


@dataclass
class Survey:
    """A walk of the whole file that notes where each segment (a window, then the tail) starts and how many records
    come before it: `locate` then walks only the segments holding the records it looks for."""

    window: int  # the bytes of each window
    marks: list[Mark] = field(default_factory=list)
    records_before: list[int] = field(default_factory=list)  # records (a CSV header included) before each segment
    records: int = 0  # in the whole file


def survey(
    path: Path | bytes,
    compression: str,
    grammar: str,
    *,
    keep: int,
    window: int = SURVEY_WINDOW_BYTES,
    delimiter: str = ",",
    stop: threading.Event | None = None,
) -> Survey | None:
    """The file's Survey (None once `stop` is set)."""
    walk = Walk(path, compression, grammar, window, keep, delimiter)
    got = _walked(walk, None, stop)
    return None if got is None else _survey(window, *got)


def survey_in_two(
    path: Path | bytes, grammar: str, *, keep: int, window: int = SURVEY_WINDOW_BYTES, delimiter: str = ","
) -> Survey:
    """A plain file's Survey made by two threads (numpy lets go of the GIL: 0.11 s against 0.20 s for a 1 M-row RFC
    CSV): the first half of its windows walked from the start, the second from a guess — outside any quotes, lines
    counted from 0 — that the first half's end then checks. Where the window between them, walked again from its true
    start, ends in the state the guess reached (a record ended in it, and a closing quote settled the quoting), the
    second half's marks only need their lines counted on; else it is walked again from there."""
    size = len(path) if isinstance(path, bytes) else path.stat().st_size
    n = -(-size // window)
    if n < 4:
        return _survey(window, *_all(Walk(path, "none", grammar, window, keep, delimiter), None))
    m = n // 2
    np.uint8  # noqa: B018 - numpy loaded here: importlib's LazyLoader is not thread-safe before Python 3.12
    with open_bytes(path, "none") as fh:
        fh.seek(m * window - 1)
        before = fh.read(1)[0]
    second = Walk(path, "none", grammar, window, keep, delimiter)
    second.restore(Mark.guess(m * window, before))
    got: list[Any] = []

    def half() -> None:
        try:
            got.append(_all(second, range(m, n + 1)))
        except Exception as exc:  # noqa: BLE001 - raised again below, in the caller's thread
            got.append(exc)

    thread = threading.Thread(target=half, name="log-survey-half")
    thread.start()
    walk = Walk(path, "none", grammar, window, keep, delimiter)
    try:
        marks, counts = _all(walk, range(m))
        at_m = walk.mark()
        _, counts_m = _all(walk, [m])
        at_next = walk.mark()
    finally:
        thread.join()
    if isinstance(got[0], Exception):
        raise got[0]
    guessed, guessed_counts = got[0]
    if guessed[1].quoting() == at_next.quoting():
        rest = [g.shifted(at_next.lines - guessed[1].lines) for g in guessed[1:]]
        rest_counts = guessed_counts[1:]
    else:  # the guess was wrong: the second half again, from its true start
        walk.restore(at_next)
        rest, rest_counts = _all(walk, range(m + 1, n + 1))
    return _survey(window, [*marks, at_m, *rest], [*counts, *counts_m, *rest_counts])


def _walked(
    walk: Walk, only: Sequence[int] | None, stop: threading.Event | None = None
) -> tuple[list[Mark], list[int]] | None:
    """(the mark before each segment walked, the records that end in it) of a walk over `only` (None: the whole
    file); None once `stop` is set."""
    marks: list[Mark] = []
    counts: list[int] = []
    for starts, ends, _, _ in walk.batches(only, noted=marks):
        if stop is not None and stop.is_set():
            return None
        counts += [0] * (len(marks) - len(counts))
        counts[-1] += int(walk.kept(starts, ends).sum())
    counts += [0] * (len(marks) - len(counts))
    return marks, counts


def _all(walk: Walk, only: Sequence[int] | None) -> tuple[list[Mark], list[int]]:
    got = _walked(walk, only)
    assert got is not None  # no stop: never None
    return got


def _survey(window: int, marks: list[Mark], counts: list[int]) -> Survey:
    before = [0, *itertools.accumulate(counts)]
    return Survey(window, marks, before[:-1], before[-1])


class Surveying:
    """A Survey made by a thread of ours while DuckDB reads the file in one thread, on another core: `result()` is it
    (None when it could not be made: the walk after the read then says why), `stop()` gives it up. At the process's
    own priority: at nice 19 busy neighbouring processes starved it, and `result()` waited (1 M-row gateway CSV.gz
    beside four busy loops on two cores: 25.6 s at nice 19, 3.6 s at the process's priority, 3.9 s not surveyed)."""

    def __init__(self, path: Path | bytes, compression: str, grammar: str, **kw: Any) -> None:
        self._stop = threading.Event()
        self._got: Survey | None = None

        def run() -> None:
            try:
                self._got = survey(path, compression, grammar, stop=self._stop, **kw)
            except Exception:  # noqa: BLE001 - a broken stream, say: the walk after the read meets it and says so
                self._got = None

        self._thread = threading.Thread(target=run, name="log-survey", daemon=True)
        self._thread.start()

    def result(self) -> Survey | None:
        self._thread.join()
        return self._got

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


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
    surveyed: Survey | None = None,
) -> list[Found] | None:
    """The records at `places` (0-based among the rows DuckDB read: the records but a CSV file's header and those
    at `offsets`) and at `offsets` (where the records DuckDB's CSV layer refused are: the record holding each
    offset, its newline included, as DuckDB gives a record's start or the byte after it), in file order. With the
    file's Survey only the segments holding them are walked.

    None when the file's records are not DuckDB's rows (n_rows of them besides the refused): their lines could
    not be told then, so none is.
    """
    want_places = np.asarray(sorted(set(places)), dtype=np.int64)
    want_offsets = np.asarray(sorted(set(offsets)), dtype=np.int64)
    walk = Walk(path, compression, grammar, surveyed.window if surveyed else window, keep, delimiter)
    only = rows_before = None
    if surveyed is not None:
        before = np.asarray(surveyed.records_before, dtype=np.int64)
        heads = np.asarray([m.open.offset for m in surveyed.marks], dtype=np.int64)
        refused_before = np.searchsorted(want_offsets, heads, side="left")
        rows_before = before - ((before > 0) if grammar == CSV else 0) - refused_before
        if surveyed.records - (surveyed.records > 0 if grammar == CSV else 0) - want_offsets.size != n_rows:
            return None
        segments = np.searchsorted(rows_before, want_places, side="right") - 1
        only = sorted({*segments.tolist(), *(np.searchsorted(heads, want_offsets, side="right") - 1).tolist()})
    out: list[Found] = []
    place = found_refused = 0
    header = grammar == CSV
    for starts, ends, first, _ in walk.batches(only, surveyed.marks if surveyed else None):
        if surveyed is not None:  # where the Survey says this segment starts
            assert rows_before is not None
            place = int(rows_before[walk.k])
            header = grammar == CSV and surveyed.records_before[walk.k] == 0
        kept = walk.kept(starts, ends)
        if header and kept.any():
            kept[int(np.flatnonzero(kept)[0])] = header = False
        refused = np.zeros(starts.size, dtype=bool)
        if want_offsets.size and starts.size:
            near = want_offsets[(want_offsets >= starts[0]) & (want_offsets <= ends[-1])]
            holder = np.searchsorted(starts, near, side="right") - 1
            refused[holder[near <= ends[holder]]] = True
            refused &= kept
        found_refused += int(refused.sum())
        rows = kept & ~refused
        n = int(rows.sum())
        picked = refused.copy()
        lo, hi = np.searchsorted(want_places, (place, place + n))
        if hi > lo:  # some places among this batch's rows
            picked |= rows & np.isin(place + np.cumsum(rows) - 1, want_places[lo:hi])
        out += [walk.found(starts, ends, first, k) for k in np.flatnonzero(picked)]
        place += n
    if found_refused != want_offsets.size or surveyed is None and place != n_rows:
        return None
    return out


def records(
    path: Path | bytes, compression: str, grammar: str, *, window: int, keep: int, delimiter: str = ","
) -> Iterator[Found]:
    """Every record of the file in order (a CSV file's header first)."""
    walk = Walk(path, compression, grammar, window, keep, delimiter)
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

    walk = Walk(path, compression, grammar, window, limit + 1, delimiter)
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
