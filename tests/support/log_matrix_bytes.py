"""How the defect matrix's formats write a record, and how a defect changes a record's bytes (tests/support/log_matrix).

Renderers of their own, not the reader's: a record of a base row as the format writes it, with some fields in place of
its values; the bad values each defect writes, and the pattern the reason naming its line must match; the edit of a
file's lines a chunk at a time; and the packings (.gz at level 1, .zst).
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

__all__ = [
    "GATEWAY_MAPPING",
    "NAMES",
    "QBREAK_SUFFIX",
    "bad_value",
    "defect_record",
    "edited",
    "letters",
    "packed",
    "parquet_value",
    "render",
]

HUGE_BYTES = 20 << 20  # a CSV field past its 16 MiB record limit; a JSON line within its 32 MiB one (read)
HUGE_XL_BYTES = {"jsonl": 41 << 20, "csv": 33 << 20, "rfc": 33 << 20}  # past DuckDB's 32 MiB buffers too
YEAR_2999_S = 32_472_144_000  # 2999-01-01T00:00:00Z
BIG_COUNT_TEXT = "99999999999999999999"  # over int64
BIG_COUNT_PARQUET = 2**60  # an int64, over 2^53
QBREAK_SUFFIX = "\nbeta"  # what the quoted-break defect adds to a model name

#: The gateway CSV's columns, read under this mapping (`--map FIELD=COLUMN`).
GATEWAY_MAPPING = {
    "ts": "started",
    "model": "llm",
    "prompt_tokens": "tok_in_total",
    "cached_tokens": "tok_in_hit",
    "output_tokens": "tok_out",
    "ttft_ms": "first_byte_ms",
    "duration_ms": "total_ms",
}
_STANDARD = {  # the names the reader maps by itself (RFC CSV and Parquet)
    "ts": "timestamp",
    "model": "model",
    "prompt_tokens": "prompt_tokens",
    "cached_tokens": "cached_tokens",
    "output_tokens": "completion_tokens",
    "ttft_ms": "ttft_ms",
    "duration_ms": "duration_ms",
}
_JSON_NAMES = {"ts": "created", "prompt_tokens": "usage.prompt_tokens", "output_tokens": "usage.completion_tokens"}
#: What each format calls a field (as a rejection's reason names it).
NAMES = {"jsonl": _JSON_NAMES, "csv": GATEWAY_MAPPING, "rfc": _STANDARD, "parquet": _STANDARD}

_HUGE_WHY = r"16 ?mi?b|too long|too large|over"


def bad_value(defect: str, fmt: str, seed: int) -> tuple[dict[str, Any], str]:
    """(the fields a bad-value or huge-field defect writes in a text format, by canonical name; the pattern the
    reason naming its line must match)."""
    names: dict[str, str] = NAMES[fmt]

    def col(field: str) -> str:
        return re.escape(names.get(field, field))

    json_file = fmt == "jsonl"
    if defect == "text_count":
        return {"prompt_tokens": "12a"}, rf"{col('prompt_tokens')}.*number"
    if defect == "negative":
        return {"output_tokens": -7 if json_file else "-7"}, rf"{col('output_tokens')}.*negative"
    if defect == "year_2999":
        text = {"jsonl": YEAR_2999_S, "csv": "2999-01-01 00:00:00.000", "rfc": "2999-01-01T00:00:00.000Z"}[fmt]
        return {"ts": text}, rf"{col('ts')}.*1970.{{1,3}}2100"
    if defect == "big_count":
        value = int(BIG_COUNT_TEXT) if json_file else BIG_COUNT_TEXT
        return {"prompt_tokens": value}, rf"{col('prompt_tokens')}.*(10⁹|token count|int|range)"
    if defect == "inf_ttft":
        return {"ttft_ms": "Infinity"}, rf"{col('ttft_ms')}.*(finite|infinit)"
    if defect == "nan_ttft":
        return {"ttft_ms": "NaN"}, rf"{col('ttft_ms')}.*(finite|nan)"
    size = HUGE_BYTES if defect == "huge" else HUGE_XL_BYTES[fmt]
    return {"note": letters(size, seed).decode()}, _HUGE_WHY


def defect_record(fmt: str, defect: str, v: dict[str, Any], seed: int) -> tuple[bytes, bool, str | None]:
    """(the record a line defect writes in place of base row v's, whether a line end follows it, the pattern of the
    reason naming its line; None when the row is to be read, as the quoted break's is)."""
    if defect == "malformed":  # a missing comma in JSON; a record of 3 fields in CSV
        text = render(fmt, v, {})
        if fmt == "jsonl":
            return text.replace(b",", b" ", 1), True, "json"
        return b",".join(text.split(b",")[:3]), True, "field|csv"
    if defect == "cut_tail":  # the last record cut off mid-way, no line end: half a JSON line, 3 CSV fields and a bit
        text = render(fmt, v, {})
        if fmt == "jsonl":
            return text[: len(text) // 2], False, "json|cut|truncat"
        at = -1
        for _ in range(3):
            at = text.index(b",", at + 1)
        return text[: at + 2], False, "field|csv|cut|truncat|end"
    if defect == "qbreak":
        return render(fmt, v, {"model": v["model"] + QBREAK_SUFFIX}), True, None
    fields, why = bad_value(defect, fmt, seed)
    if defect == "huge" and fmt == "jsonl":  # within a JSON line's limit (32 MiB, docs/pages/logs.md): a request
        return render(fmt, v, fields), True, None
    return render(fmt, v, fields), True, why


def parquet_value(defect: str) -> tuple[str, str, str]:
    """(the Parquet column a bad-value defect writes, its value as DuckDB SQL, the reason pattern for its row)."""
    return {
        "text_count": ("prompt_tokens", "'12a'", r"prompt_tokens.*number"),
        "negative": ("completion_tokens", "-7", r"completion_tokens.*negative"),
        "year_2999": ("timestamp", f"epoch_ms({YEAR_2999_S * 1000})::TIMESTAMPTZ", r"timestamp.*1970.{1,3}2100"),
        "big_count": ("prompt_tokens", str(BIG_COUNT_PARQUET), r"prompt_tokens.*(10⁹|token count|int|range)"),
        "inf_ttft": ("ttft_ms", "'inf'::DOUBLE", r"ttft_ms.*(finite|infinit)"),
        "nan_ttft": ("ttft_ms", "'nan'::DOUBLE", r"ttft_ms.*(finite|nan)"),
    }[defect]


def render(fmt: str, v: dict[str, Any], fields: dict[str, Any]) -> bytes:
    """One record of a base row `v` as the text format writes it (no line end), `fields` (canonical name → value)
    in place of its own values."""
    if fmt == "jsonl":
        usage = {
            "prompt_tokens": fields.get("prompt_tokens", v["prompt"]),
            "completion_tokens": fields.get("output_tokens", v["output"]),
            "prompt_tokens_details": {"cached_tokens": v["cached"]},
        }
        rec = {
            "object": "chat.completion",
            "created": fields.get("ts", v["created_s"]),
            "model": fields.get("model", v["model"]),
            "usage": usage,
            "note": fields.get("note", v["pad"]),
        }
        return json.dumps(rec, separators=(",", ":")).encode()
    seconds, ms = divmod(int(v["ts_ms"]), 1000)
    at = dt.datetime.fromtimestamp(seconds, dt.UTC)
    ts = f"{at:%Y-%m-%d %H:%M:%S}.{ms:03d}" if fmt == "csv" else f"{at:%Y-%m-%dT%H:%M:%S}.{ms:03d}Z"
    values = [
        fields.get("ts", ts),
        fields.get("model", v["model"]),
        fields.get("prompt_tokens", v["prompt"]),
        v["cached"],
        fields.get("output_tokens", v["output"]),
        fields.get("ttft_ms", repr(float(v["ttft_ms"]))),
        repr(float(v["duration_ms"])),
        fields.get("note", v["pad"]),
    ]
    quoted = {1, 7} if fmt == "rfc" else set()  # as DuckDB's COPY writes them (FORCE_QUOTE model, note)
    return ",".join(_csv_field(str(x), k in quoted) for k, x in enumerate(values)).encode()


def _csv_field(text: str, force: bool) -> str:
    if force or any(ch in text for ch in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def letters(size: int, seed: int) -> bytes:
    """`size` random lowercase letters: barely compressible, as a real base64 field is (no gzip-bomb ratio)."""
    import numpy as np

    return np.random.default_rng(seed).integers(97, 123, size, dtype=np.uint8).tobytes()


def edited(fh: IO[bytes], edits: dict[int, tuple[bytes, bool]], chunk_bytes: int = 16 << 20) -> Iterator[bytes]:
    """The file's bytes a chunk at a time, each line in `edits` (0-based) replaced by (its text without a line end,
    whether a line end follows). The file ends with a line end (DuckDB's COPY writes one)."""
    todo = sorted(edits)
    k = 0
    line = 0  # lines before the chunk being walked
    rest = b""
    while got := fh.read(chunk_bytes):
        buf = rest + got
        cut = buf.rfind(b"\n") + 1
        body, rest = buf[:cut], buf[cut:]
        end_line = line + body.count(b"\n")
        start = pos = 0  # start: bytes of body given out so far; pos: where line `line` starts
        while k < len(todo) and todo[k] < end_line:
            target = todo[k]
            k += 1
            while line < target:
                pos, line = body.index(b"\n", pos) + 1, line + 1
            yield body[start:pos]
            text, keep_end = edits[target]
            yield text + (b"\n" if keep_end else b"")
            pos, line = body.index(b"\n", pos) + 1, line + 1
            start = pos
        yield body[start:]
        line = end_line
    if rest:
        yield rest


@contextmanager
def packed(path: Path, packing: str) -> Iterator[Any]:
    """A binary file to write: plain, gzip (level 1) or zstd."""
    if packing == "gz":
        fh: Any = gzip.open(path, "wb", compresslevel=1)
    elif packing == "zst":
        import pyarrow as pa

        fh = pa.CompressedOutputStream(str(path), "zstd")
    else:
        fh = open(path, "wb")  # noqa: SIM115 (closed below, as the others)
    try:
        yield fh
    finally:
        fh.close()
