"""Page uploads → files on disk, copied in chunks, so a multi-GB upload is read like any file: out of core.

The pages hand the uploaded files to `Spool`, which copies each into a private temporary folder
a few MiB at a time (reporting bytes copied) and keeps the file's own name (its .gz/.zst ending
picks the decompressor, and the results name the file). read_logs then takes the paths, so
large OpenAI chat logs and large CSVs stream through DuckDB and no upload is held again as
one bytes object or parsed whole in memory. The folder is removed by close(), or when the
Spool is garbage-collected (a browser session that ends).
"""

from __future__ import annotations

import re
import shutil
import tempfile
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import BinaryIO, Protocol

__all__ = ["CHUNK_BYTES", "Spool", "Upload"]

CHUNK_BYTES = 4 << 20  # copied per read: the most of an upload this module holds at once


class Upload(Protocol):
    """What Streamlit's UploadedFile offers (and any named binary file object with a size)."""

    name: str
    size: int

    def seek(self, offset: int, whence: int = 0) -> int: ...

    def tell(self) -> int: ...

    def read(self, n: int = -1) -> bytes: ...


def _safe_name(name: str) -> str:
    """The base name without path parts or control characters (its ending kept); 'upload' if nothing is left."""
    base = re.sub(r"[\x00-\x1f\x7f]", "", str(name).replace("\\", "/").rsplit("/", 1)[-1]).strip().lstrip(".")
    return base[:200] or "upload"


class Spool:
    """Uploaded files copied to a private temporary folder; `paths` are in upload order, each under its own name.

    progress, if given, is called with (fraction of all bytes copied 0..1, message) after each chunk.
    Raises OSError when the disk cannot take a file (the folder is removed first).
    """

    def __init__(
        self, files: Sequence[Upload | tuple[str, BinaryIO]], progress: Callable[[float, str], object] | None = None
    ) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="ttft-planner-upload-"))
        self._cleanup = weakref.finalize(self, shutil.rmtree, self.folder, True)
        self.paths: list[Path] = []
        uploads: list[tuple[str, Upload | BinaryIO]] = [
            (f[0], f[1]) if isinstance(f, tuple) else (f.name, f) for f in files
        ]
        total_bytes = max(sum(_size(fh) for _, fh in uploads), 1)
        done_bytes = 0
        try:
            for i, (name, fh) in enumerate(uploads):
                path = self.folder / str(i) / _safe_name(name)  # one folder each: two uploads may share a name
                path.parent.mkdir()
                fh.seek(0)
                with open(path, "wb") as out:
                    while chunk := fh.read(CHUNK_BYTES):
                        out.write(chunk)
                        done_bytes += len(chunk)
                        if progress:
                            progress(
                                min(done_bytes / total_bytes, 1.0),
                                f"saving {path.name}: {done_bytes / 1e6:,.1f} of {total_bytes / 1e6:,.1f} MB",
                            )
                self.paths.append(path)
        except OSError:
            self.close()
            raise

    @property
    def names(self) -> list[str]:
        """The files' names as read_logs reports them."""
        return [p.name for p in self.paths]

    @property
    def alive(self) -> bool:
        """Whether the files are still on disk (not closed, not removed by a temp-folder sweep)."""
        return self._cleanup.alive and all(p.is_file() for p in self.paths)

    def close(self) -> None:
        """Remove the folder and its files (idempotent)."""
        self._cleanup()


def _size(fh: Upload | BinaryIO) -> int:
    size = getattr(fh, "size", None)
    if isinstance(size, int):
        return size
    here = fh.tell()
    end = fh.seek(0, 2)
    fh.seek(here)
    return end
