"""Stream: a log file's bytes as they are read — inflated (gzip by ISA-L, zstd by Arrow), a window at a time.

`open_bytes` gives a file's (decompressed) bytes as a binary stream (`check_whole` inflates one to its end); a cut
or corrupt compressed stream raises `BrokenStream`, worded by `broken` as opening a file words one
(planner.logs.opening). `windows` reads them a fixed-size window at a time, the next read ahead by a thread while one
is walked (planner.logs.split), skipping the windows not asked for (seeking a plain file, inflating past them in a
compressed one).
"""

from __future__ import annotations

import io
import itertools
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, cast

from planner.errors import PlannerError

__all__ = ["BrokenStream", "broken", "check_whole", "open_bytes", "windows"]


class BrokenStream(PlannerError, OSError):
    """A compressed file that is cut short or corrupt; the message says which, as "<file name> is <message>"."""


def broken(compression: str, exc: BaseException) -> BrokenStream:
    """The BrokenStream a codec's error means: a truncated file (the stream ends early), or not a valid one."""
    text = str(exc).splitlines()[0][:80] if str(exc) else type(exc).__name__
    if isinstance(exc, EOFError) or "truncated" in text.lower():
        return BrokenStream(f"a truncated {compression} file")
    return BrokenStream(f"not a valid {compression} file ({text})")


def open_bytes(path: Path | bytes, compression: str, feed_bytes: int | None = None):
    """The (decompressed) bytes of a file, or of an upload held in memory, as a binary stream: compression is
    DuckDB's name (none, gzip, zstd). gzip is inflated by ISA-L (isal: 2.7× Arrow's zlib on a 1.9 GB JSON Lines
    file, 0.7 s against 2.0 s), zstd by Arrow's codec; a cut or corrupt stream raises BrokenStream. `feed_bytes`:
    the codec is handed the compressed file that much at a time (it reads no further ahead), so the stream's
    `consumed()`, the compressed bytes read so far, is a true ratio's (the bomb check of planner.logs.opening)."""
    import io

    if compression == "none":
        return io.BytesIO(path) if isinstance(path, bytes) else open(path, "rb", buffering=0)
    return _Inflating(path, compression, feed_bytes)


class _Feed(io.RawIOBase):
    """A binary file read at most `size` bytes at a time."""

    def __init__(self, raw: Any, size: int) -> None:
        self.raw, self.size = raw, size

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        data = self.raw.read(min(len(buf), self.size))
        buf[: len(data)] = data
        return len(data)


class _Inflating:
    """A compressed file (every gzip member) as a binary stream of its inflated bytes; its codec's errors raised as
    BrokenStream."""

    def __init__(self, path: Path | bytes, compression: str, feed_bytes: int | None = None) -> None:
        self.compression = compression
        self._raw: Any = io.BytesIO(path) if isinstance(path, bytes) else open(path, "rb")  # noqa: SIM115
        src = self._raw if feed_bytes is None else _Feed(self._raw, feed_bytes)
        self._errors: tuple[type[BaseException], ...]
        if compression == "gzip":  # Arrow is not imported for a .gz
            from isal import igzip
            from isal.isal_zlib import error

            self._fh: Any = igzip.GzipFile(fileobj=src)
            self._errors = (EOFError, OSError, cast("type[Exception]", error))  # a class; its stub says otherwise
        else:
            import pyarrow as pa

            self._fh = pa.CompressedInputStream(pa.PythonFile(src, mode="r"), compression)
            self._errors = (OSError, pa.ArrowInvalid)

    def consumed(self) -> int:
        return int(self._raw.tell())

    def read(self, size: int = -1) -> bytes:
        return self._call(self._fh.read, size)

    def readinto(self, buf) -> int:
        return self._call(self._fh.readinto, buf)

    def _call(self, method, arg):
        try:
            return method(arg)
        except self._errors as exc:
            raise broken(self.compression, exc) from None

    def close(self) -> None:
        try:
            self._fh.close()
        finally:
            self._raw.close()

    def __enter__(self) -> _Inflating:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def check_whole(path: Path | bytes, compression: str) -> None:
    """Inflate a compressed file to its end, keeping nothing (ISA-L: 1.9 GB in 0.7 s); raises BrokenStream where it
    is cut or corrupt."""
    buf = bytearray(4 << 20)
    with open_bytes(path, compression) as fh:
        while fh.readinto(buf):
            pass


def windows(
    path: Path | bytes, compression: str, window: int, only: Sequence[int] | None = None
) -> Iterator[tuple[int, Any]]:
    """(index, bytes) of the (decompressed) file's windows of `window` bytes — those whose index is in `only`
    (ascending), or every one — the next read ahead by a thread while this one is walked (reads and ISA-L's inflate
    release the GIL), into two buffers in turn: a window is not to be kept past the next."""
    from concurrent.futures import ThreadPoolExecutor

    wanted = iter(only) if only is not None else itertools.count()
    k = next(wanted, None)
    if k is None:
        return
    buffers = (bytearray(window), bytearray(window))
    with open_bytes(path, compression) as fh, ThreadPoolExecutor(1, thread_name_prefix="log-read-ahead") as ahead:
        pending = ahead.submit(_fill, fh, buffers[0], k * window)
        for turn in itertools.count(1):
            got = pending.result()
            if not got:
                return
            after = next(wanted, None)
            if after is not None:
                pending = ahead.submit(_fill, fh, buffers[turn % 2], (after - k - 1) * window)
            yield k, memoryview(buffers[1 - turn % 2])[:got]
            if after is None or got < window:
                return
            k = after


def _fill(fh: Any, buf: bytearray, skip: int = 0) -> int:
    """Bytes read into buf past the next `skip` bytes: as many as it holds, fewer only at the stream's end."""
    if skip and not isinstance(fh, _Inflating):  # a plain file, or an upload in memory: seek past them
        fh.seek(skip, 1)
        skip = 0
    while skip > 0:  # a compressed stream is inflated past them
        got = fh.readinto(memoryview(buf)[: min(skip, len(buf))])
        if not got:
            return 0
        skip -= got
    got = fh.readinto(buf)
    while got and got < len(buf):  # a stream may give less than asked before its end
        more = fh.readinto(memoryview(buf)[got:])
        if not more:
            break
        got += more
    return got or 0
