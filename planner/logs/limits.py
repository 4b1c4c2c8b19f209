"""Input limits: the size cap, and a guard against gzip bombs.

A log arrives as a path or as (name, bytes) from an upload. Compressed input is
inflated in chunks and stopped as soon as it passes the byte cap, or inflates
faster than a real log can (ratio cap): a few KB of gzip must not become GBs
in memory.
"""

from __future__ import annotations

import zlib
from pathlib import Path

__all__ = [
    "DEFAULT_MAX_BYTES",
    "MAX_GZIP_RATIO",
    "TooLarge",
    "load_source",
]

DEFAULT_MAX_BYTES = 1024 * 1024 * 1024  # 1 GiB of (decompressed) log per file
# JSON Lines request logs compress 5–30×; repetitive exports reach ~60×. A bomb is 1000×.
MAX_GZIP_RATIO = 200
_RATIO_CHECK_AFTER_BYTES = 16 * 1024 * 1024
_CHUNK = 4 * 1024 * 1024
_GZIP_MAGIC = b"\x1f\x8b"


class TooLarge(ValueError):
    """The file (or what it decompresses to) is over a limit; the message says which and by how much."""


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


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
            if total > max_bytes:
                raise TooLarge(f"{name} decompresses to more than {_mb(max_bytes)}, the size limit")
            if total > _RATIO_CHECK_AFTER_BYTES and total > MAX_GZIP_RATIO * len(data):
                raise TooLarge(
                    f"{name} inflates more than {MAX_GZIP_RATIO}× ({_mb(len(data))} → over {_mb(total)}): "
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
        size = path.stat().st_size
        if size > limit:
            raise TooLarge(f"{name} is {_mb(size)}, over the {_mb(limit)} size limit")
        data = path.read_bytes()
    if data[:2] == _GZIP_MAGIC:
        try:
            data = _gunzip(data, name, limit)
        except zlib.error as exc:
            raise ValueError(f"{name} is not a valid gzip file ({exc})") from None
    return name, data
