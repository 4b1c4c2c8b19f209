"""What a user names on the command line → the log files to read: files, directories and glob patterns.

A directory stands for the log files directly in it (by extension, sorted); a pattern with * ? or [ ]
is expanded (sorted, ** recursive). An s3:// URL, prefix or pattern is fetched into a private temporary
folder first (planner.logs.remote). Anything that names no file is an error naming it.
"""

from __future__ import annotations

import glob
from collections.abc import Sequence
from pathlib import Path

from planner.logs.suffixes import LOG_SUFFIXES

__all__ = ["LOG_SUFFIXES", "expand_inputs"]


def _is_log(path: Path) -> bool:
    return path.is_file() and path.name.lower().endswith(LOG_SUFFIXES)


def expand_inputs(items: Sequence[str | Path]) -> list[Path]:
    """The files `items` name, in order, without duplicates; raises ValueError naming an item that names none."""
    out: list[Path] = []
    seen: set[Path] = set()
    for item in items:
        text = str(item)
        path = Path(text)
        if text.lower().startswith("s3://"):
            from planner.logs.remote import fetch

            found = fetch(text)
        elif path.is_dir():
            found = sorted(p for p in path.iterdir() if _is_log(p))
            if not found:
                raise ValueError(f"{text}: the directory holds no log files ({', '.join(LOG_SUFFIXES)})")
        elif path.exists():
            found = [path]
        elif any(ch in text for ch in "*?["):
            found = sorted(Path(p) for p in glob.glob(text, recursive=True) if _is_log(Path(p)))
            if not found:
                raise ValueError(f"{text}: the pattern matches no log file")
        else:
            raise ValueError(f"{text}: no such file or directory")
        for p in found:
            key = p.resolve()
            if key not in seen:
                seen.add(key)
                out.append(p)
    return out
