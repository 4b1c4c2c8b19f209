"""Inflate: a plain copy of a compressed text log, made by a thread of ours while DuckDB reads the file.

DuckDB reads a gzip or zstd file in one thread (it inflates and parses it there). Where some of its rows are not
read, the splitter (planner.logs.split) must walk the file for their lines and text, and a compressed file would be
inflated a second time for that, after the read (3 s of a 10 M-row, 700 MB gateway CSV). `inflating` has a thread
inflate it into a plain copy on another core during DuckDB's read instead (Arrow's codecs run outside the GIL), so the
splitter walks plain bytes. The copy takes the inflated size on disk, in the read's private folder, while the file
is read; it is given up (not the read) before it would leave less than MIN_FREE_BYTES free on that disk, which
DuckDB's spill files share, and at a write that fails. On a machine of one core, where the thread could only slow
DuckDB down, nothing is copied.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

__all__ = ["MIN_FREE_BYTES", "PlainCopy", "inflating"]

_WINDOW_BYTES = 4 << 20  # inflated a read at a time
MIN_FREE_BYTES = 2 << 30  # the copy never takes the spill folder's disk below this


class PlainCopy:
    """A compressed file being inflated into `path` by a thread; `take()` is the copy once whole (None if it could
    not be made: a corrupt stream, a full disk, one core), `stop()` gives it up."""

    def __init__(self, source: Path, compression: str, path: Path, min_free_bytes: int = MIN_FREE_BYTES) -> None:
        self.path = path
        self._min_free = min_free_bytes
        self._stop = threading.Event()
        self._whole = False
        self.taken = False
        self._thread: threading.Thread | None = None
        if (os.cpu_count() or 1) > 1:
            self._thread = threading.Thread(
                target=self._inflate, args=(source, compression), name="log-inflate", daemon=True
            )
            self._thread.start()

    def _inflate(self, source: Path, compression: str) -> None:
        import pyarrow as pa

        try:
            with pa.OSFile(str(source), "rb") as raw, pa.CompressedInputStream(raw, compression) as stream:
                with open(self.path, "wb") as out:
                    while not self._stop.is_set():
                        chunk = stream.read(_WINDOW_BYTES)
                        if not chunk:
                            self._whole = True
                            return
                        if shutil.disk_usage(self.path.parent).free - len(chunk) < self._min_free:
                            return  # the disk is DuckDB's spill space too: no copy
                        out.write(chunk)
        except (OSError, ValueError):  # a corrupt stream (DuckDB names it), a full disk: no copy
            return

    def take(self) -> Path | None:
        """The whole copy, once the thread has made it, handed to the caller (who removes it); None if it could
        not be made."""
        if self._thread is None:
            return None
        self._thread.join()
        self.taken = self._whole
        return self.path if self._whole else None

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


@contextlib.contextmanager
def inflating(
    source: Path, compression: str, folder: Path, min_free_bytes: int = MIN_FREE_BYTES
) -> Iterator[PlainCopy]:
    """A PlainCopy of `source` (DuckDB's compression name: gzip or zstd) in `folder` for the block; at its end the
    thread is stopped and the copy removed, unless the block took it (`take()`)."""
    copy = PlainCopy(source, compression, folder / f"inflated-{len(list(folder.iterdir()))}", min_free_bytes)
    try:
        yield copy
    finally:
        copy.stop()
        if not copy.taken:
            copy.path.unlink(missing_ok=True)
