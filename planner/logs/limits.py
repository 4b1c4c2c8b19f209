"""Input limits: the size cap, and a guard against gzip bombs.

A log arrives as a path or as (name, bytes) from an upload. Compressed input is
inflated in chunks and stopped as soon as it passes the byte cap, or inflates
faster than a real log can (ratio cap): a few KB of gzip must not become GBs
in memory. The ratio is what came out over the compressed bytes read so far, checked
once 16 MB came out, so a bomb is stopped there (a 1 MB bomb of 1 GB held 200 MB
when the ratio was taken over its whole size).
"""

from __future__ import annotations

import os
import stat
import zlib
from pathlib import Path

from planner.errors import PlannerError

__all__ = [
    "DEFAULT_MAX_BYTES",
    "MAX_GZIP_RATIO",
    "TooLarge",
    "check_regular",
    "load_source",
]

DEFAULT_MAX_BYTES = 1024 * 1024 * 1024  # 1 GiB of (decompressed) log per file
# JSON Lines request logs compress 5–30×; repetitive exports reach ~60×. A bomb is 1000×.
MAX_GZIP_RATIO = 200
_RATIO_CHECK_AFTER_BYTES = 16 * 1024 * 1024
_CHUNK = 4 * 1024 * 1024
_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


class TooLarge(PlannerError, ValueError):
    """The file (or what it decompresses to) is over a limit; the message says which and by how much."""


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


def _check_size(name: str, inflated_bytes: int, max_bytes: int) -> None:
    """Raise TooLarge once more than max_bytes came out of `name`."""
    if inflated_bytes > max_bytes:
        raise TooLarge(f"{name} decompresses to more than {_mb(max_bytes)}, the size limit")


def _inflates_like_a_bomb(inflated_bytes: int, compressed_bytes: int) -> bool:
    """True once more than _RATIO_CHECK_AFTER_BYTES came out, over MAX_GZIP_RATIO × the compressed bytes read."""
    return inflated_bytes > _RATIO_CHECK_AFTER_BYTES and inflated_bytes > MAX_GZIP_RATIO * compressed_bytes


def _gunzip(data: bytes, name: str, max_bytes: int) -> bytes:
    # wbits 47 = auto-detect gzip/zlib header; concatenated gzip members are followed below.
    out: list[bytes] = []
    total = 0
    rest = data
    while rest:
        d = zlib.decompressobj(47)
        buf = rest
        while buf:
            chunk = d.decompress(buf, _CHUNK)
            total += len(chunk)
            _check_size(name, total, max_bytes)
            read = len(data) - len(d.unconsumed_tail) - len(d.unused_data)  # the compressed bytes read so far
            if _inflates_like_a_bomb(total, read):
                raise TooLarge(
                    f"{name} inflates more than {MAX_GZIP_RATIO}× ({read:,} bytes → over {_mb(total)}): "
                    "refused as a likely gzip bomb"
                )
            out.append(chunk)
            buf = d.unconsumed_tail
            if d.eof:
                break
        if not d.eof:
            raise ValueError(f"{name} is a truncated gzip file")
        rest = d.unused_data.lstrip(b"\x00")
        if rest and not rest.startswith(_GZIP_MAGIC):
            break
    return b"".join(out)


def _unzstd(data: bytes, name: str, max_bytes: int) -> bytes:
    """Zstandard through pyarrow's codec, inflated in chunks under the same caps as gzip."""
    import pyarrow as pa

    out: list[bytes] = []
    total = 0
    raw = pa.BufferReader(data)
    try:
        with pa.CompressedInputStream(raw, "zstd") as stream:
            while True:
                chunk = stream.read(_CHUNK)
                if not chunk:
                    break
                total += len(chunk)
                _check_size(name, total, max_bytes)
                if _inflates_like_a_bomb(total, raw.tell()):  # the compressed bytes read so far
                    raise TooLarge(
                        f"{name} inflates more than {MAX_GZIP_RATIO}×: refused as a likely decompression bomb"
                    )
                out.append(chunk)
    except (pa.ArrowInvalid, OSError) as exc:
        raise ValueError(f"{name} is not a valid zstd file ({exc})") from None
    return b"".join(out)


def check_regular(path: Path) -> int:
    """The size of a regular file; raises ValueError for a device, FIFO, socket or directory (they have no size to
    cap)."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file (a device, pipe or socket)"
        raise ValueError(f"{kind}: save the log to a file and read that")
    return st.st_size


def load_source(source: str | Path | tuple[str, bytes], max_bytes: int | None = None) -> tuple[str, bytes]:
    """(file name, decompressed bytes) of one source.

    max_bytes caps both the file and what it decompresses to (default DEFAULT_MAX_BYTES).
    Raises TooLarge over a limit or for a likely gzip bomb, ValueError for a corrupt gzip
    stream, OSError when a path cannot be read.
    """
    limit = DEFAULT_MAX_BYTES if max_bytes is None else int(max_bytes)
    if isinstance(source, tuple):
        name, data = source
        name = str(name)
        if len(data) > limit:
            raise TooLarge(f"{name} is {_mb(len(data))}, over the {_mb(limit)} size limit")
    else:
        path = Path(source)
        name = path.name
        size = check_regular(path)
        if size > limit:
            raise TooLarge(f"{name} is {_mb(size)}, over the {_mb(limit)} size limit")
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)  # counted as read: a file that grows meanwhile is still capped
        if len(data) > limit:
            raise TooLarge(f"{name} is over the {_mb(limit)} size limit")
    if data[:2] == _GZIP_MAGIC:
        try:
            data = _gunzip(data, name, limit)
        except zlib.error as exc:
            raise ValueError(f"{name} is not a valid gzip file ({exc})") from None
    elif data[:4] == _ZSTD_MAGIC:
        data = _unzstd(data, name, limit)
    return name, data
