"""Prefix traces (Mooncake hash_ids JSON Lines) with one hostile line, whole hostile files, and the same valid trace
packed as .gz and .zst: what `ttft-planner prefix` and the Prefix cache tab must read without a traceback (issue 42
item 17). Each bad line is line BAD_LINE of an otherwise valid copy of the Mooncake sample."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from planner.asset_files import assets_dir

__all__ = ["BAD_LINE", "MOONCAKE", "WHOLE_FILE", "bad_line_traces", "gzip_bomb", "packed", "with_bad_line"]

MOONCAKE = assets_dir() / "sample_logs" / "mooncake_conversation.jsonl"
BAD_LINE = 17

# name → (the bytes of line BAD_LINE, the reason its rejected line gives)
_BAD_LINES: dict[str, tuple[bytes, str]] = {
    "deep": (b"[" * 200_000 + b"]" * 200_000, "not a log record: JSON nested too deeply"),
    "not_utf8": (b'{"timestamp": 1, "hash_ids": [1], "input_length": 600, "x": "\xff\xfe"}', "not valid UTF-8"),
    "hash_a": (
        b'{"timestamp": 1, "hash_ids": [1, "a"], "input_length": 600}',
        'hash_ids holds "a", not a whole number',
    ),
    "hash_null": (
        b'{"timestamp": 1, "hash_ids": [null], "input_length": 600}',
        "hash_ids holds null, not a whole number",
    ),
    "hash_float": (
        b'{"timestamp": 1, "hash_ids": [0, 1.5], "input_length": 600}',
        "hash_ids holds 1.5, not a whole number",
    ),
}
# Files none of whose records can be read: name → (bytes, what the refusal says)
WHOLE_FILE: dict[str, tuple[bytes, str]] = {
    "deep_array": (
        b"[" * 3000 + b"]" * 3000,
        "a JSON array that does not parse: not a log record: JSON nested too deeply",
    ),
}


def with_bad_line(name: str) -> tuple[bytes, str]:
    """(the Mooncake sample with line BAD_LINE replaced by the hostile line `name`, the reason it is rejected for)."""
    lines = MOONCAKE.read_bytes().splitlines()
    bad, reason = _BAD_LINES[name]
    lines[BAD_LINE - 1] = bad
    return b"\n".join(lines) + b"\n", reason


def bad_line_traces() -> list[str]:
    """The names of the hostile lines."""
    return list(_BAD_LINES)


def packed(tmp: Path, data: bytes, name: str = "trace.jsonl") -> dict[str, Path]:
    """`data` written plain, gzip'd and zstd'd under `tmp`: {"plain" | "gz" | "zst": path}."""
    import pyarrow as pa

    plain, gz, zst = tmp / name, tmp / f"{name}.gz", tmp / f"{name}.zst"
    plain.write_bytes(data)
    gz.write_bytes(gzip.compress(data))
    with pa.CompressedOutputStream(str(zst), "zstd") as out:
        out.write(data)
    return {"plain": plain, "gz": gz, "zst": zst}


def gzip_bomb(path: Path, inflated_mb: int = 40) -> Path:
    """A .jsonl.gz of one valid record and then `inflated_mb` MB of spaces: it inflates ~1000×, past
    planner.logs.limits.MAX_GZIP_RATIO."""
    head = json.dumps({"timestamp": 0, "hash_ids": [1], "input_length": 600}).encode() + b"\n"
    path.write_bytes(gzip.compress(head + b" " * (inflated_mb << 20), compresslevel=9))
    return path
