"""A real, small filesystem the tests can fill: a tmpfs of a few MB mounted for one test, and a filler file that
takes every byte left on it (the full disk a store and its spool share in production).

Mounting needs root (CI runs the suite as root); elsewhere the tests that use it are skipped, saying why.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["fill", "mounted_tmpfs"]


@contextlib.contextmanager
def mounted_tmpfs(folder: Path, size_mb: int = 30) -> Iterator[Path]:
    """Mount a `size_mb` MB tmpfs on `folder` (made) for the `with` block and unmount it after, whatever happened.

    Skips the test when not root or when this machine refuses the mount (outside CI, where it must work)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs to fill needs root (CI runs the suite as root)")
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(folder)], capture_output=True, text=True
    )
    if done.returncode != 0:
        if os.environ.get("CI") == "true":
            raise RuntimeError(f"mount -t tmpfs {folder} failed: {done.stderr.strip()}")
        pytest.skip(f"this machine refuses to mount a tmpfs: {done.stderr.strip()}")
    try:
        yield folder
    finally:
        # A lazy unmount when a file is still open on it: the test's own failure is the one worth reading.
        if subprocess.run(["umount", str(folder)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(folder)], check=True)


def fill(folder: Path) -> Path:
    """Write a filler file into `folder` until its filesystem refuses one more byte (ENOSPC); returns its path.

    Deleting the file gives the space back."""
    path = folder / "filler"
    with open(path, "wb", buffering=0) as fh:
        for chunk in (1 << 20, 1 << 16, 1 << 12, 1):  # big chunks first, then whatever is left, to the last byte
            block = b"\0" * chunk
            while True:
                try:
                    fh.write(block)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break
    return path
