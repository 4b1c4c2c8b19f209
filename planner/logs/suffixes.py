"""The file endings a log may have (one list: the uploaders, directory and prefix listings, and the CLI take it)."""

from __future__ import annotations

__all__ = ["LOG_SUFFIXES"]

# The content decides the format (.gz / .zst are unwrapped first); the ending only says which files of a folder or
# prefix are logs at all. `.log`: what gateways and request loggers name their JSON-lines files.
LOG_SUFFIXES = (".jsonl", ".ndjson", ".json", ".log", ".csv", ".tsv", ".txt", ".parquet", ".gz", ".zst")
