"""A chat JSON Lines file with a few bad lines is read by DuckDB's JSON reader, only the bad lines as text.

DuckDB with the Python record reader for the lines it leaves (planner.logs.read, ReaderPolicy's default) must name the
same lines with the same reasons, and read the same rows, as the Python record reader reading every line
(ReaderPolicy(engine="python")), into a frame and into the engine's table alike, with lines across the splitter's
windows; and a bad twin of a clean log must summarise as the clean one.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from planner.cli import cli
from planner.logs import ReaderPolicy, read_logs
from planner.logs.load import RequestTable, connect

HUGE = "99999999999999999999999"


def chat(i: int, **usage: object) -> dict:
    return {
        "object": "chat.completion",
        "created": 1764000000 + 37 * i,
        "model": f"m{i % 3}",
        "usage": {
            "prompt_tokens": 1000 + i,
            "completion_tokens": 10 + i % 7,
            "prompt_tokens_details": {"cached_tokens": i % 5},
            **usage,
        },
    }


def line(rec: object) -> bytes:
    return json.dumps(rec).encode()


def _bad_lines(blank: bool) -> list[bytes]:
    lines = [line(chat(i)) for i in range(40)]
    lines[0] = b'{"created": 1764000000, "usage": {"prompt_tokens": 5, "completion_tokens": 1}'  # first, after a BOM
    lines[2] = b'{"a": "abc'  # malformed
    lines[4] = line(chat(4, prompt_tokens=int(HUGE)))  # out of range
    lines[6] = line(chat(6, prompt_tokens_details={"cached_tokens": "abc"}))  # a cached count that is text
    lines[8] = line(chat(8, prompt_tokens_details={"cached_tokens": {}}))
    lines[10] = b'{"created": 1764000007, "usage": {"prompt_tokens": "\xff", "completion_tokens": 1}}'  # not UTF-8
    lines[12] = line({"created": "2026-11-20T10:00:00", "usage": {"prompt_tokens": 5, "completion_tokens": 1}})
    lines[14] = line(chat(14)) + b" " + line(chat(15))  # two records on a line
    lines[16] = b"[1, 2]"
    lines[18] = line(chat(18, completion_tokens=-3))
    lines[20] = line(chat(20))[:-1] + b', "created": 1764009999}'  # a key twice
    lines[24] = line(chat(24, prompt_tokens=1.5))
    if blank:
        lines[26:26] = [b"", b"  \t", b"\x0c", b" \x0b "]
    return lines


def _write(path: Path, data: bytes, packed: str) -> Path:
    import pyarrow as pa

    path = path.with_name(path.name + {"plain": "", "gzip": ".gz", "zstd": ".zst"}[packed])
    if packed == "zstd":
        with pa.CompressedOutputStream(str(path), "zstd") as out:
            out.write(data)
    else:
        path.write_bytes(data if packed == "plain" else gzip.compress(data))
    return path


def _rows(frame) -> list[tuple]:
    cols = ["ts_ms", "model", "prompt_tokens", "cached_tokens", "output_tokens"]
    return sorted(map(tuple, frame[cols].astype({"model": str}).itertuples(index=False)))


def _read(path: Path, policy: ReaderPolicy | None = None) -> tuple:
    """(rejected, rows) read into a frame, then into the engine's table."""
    res = read_logs([path], tz="Europe/Berlin", max_bytes=1000, policy=policy)
    con = connect()
    table = RequestTable(con)
    sunk = read_logs([path], tz="Europe/Berlin", max_bytes=1000, sink=table, policy=policy)
    return (
        [(r.line_no, r.reason) for r in res.rejected],
        _rows(res.frame),
        [(r.line_no, r.reason) for r in sunk.rejected],
        _rows(table.frame()),
    )


def _both_readers(path: Path, window: int | None = None) -> tuple[tuple, tuple]:
    """(what the Python record reader reads of `path`, what DuckDB with it reads); `window`: the splitter's, small to
    put lines across windows."""
    want = _read(path, ReaderPolicy(engine="python"))
    got = _read(path, ReaderPolicy(window_bytes=window) if window else ReaderPolicy())
    return want, got


@pytest.mark.parametrize(
    ("packed", "blank", "chunk", "newline"),
    [
        ("plain", False, None, b"\n"),
        ("plain", True, None, b"\n"),
        ("plain", False, 64, b"\r\n"),
        ("plain", True, 64, b"\n"),
        ("gzip", True, 64, b"\r\n"),
        ("zstd", False, None, b"\n"),
    ],
)
def test_duckdb_names_and_reads_what_the_python_record_reader_does(tmp_path, packed, blank, chunk, newline):
    lines = _bad_lines(blank)
    data = b"\xef\xbb\xbf" + newline.join(lines) + newline + line(chat(99))[:-9]  # a BOM, and a cut-off tail
    path = _write(tmp_path / "agent.jsonl", data, packed)

    want, got = _both_readers(path, chunk)  # a small window: lines across the splitter's windows

    assert got == want
    rejected, rows, sunk_rejected, sunk_rows = got
    assert rejected == sunk_rejected and rows == sunk_rows
    n = len(lines) + 1
    assert [ln for ln, _ in rejected] == sorted(ln for ln, _ in rejected) and rejected[-1][0] == n
    assert dict(rejected)[11].startswith("not valid UTF-8")
    assert dict(rejected)[5] == f"usage.prompt_tokens is {HUGE}, over 10⁹: not a token count"
    assert 1795165200000 in [r[0] for r in rows]  # the ISO time, read by the line reader (10:00 Berlin)


def test_a_line_over_the_size_limit_is_named_by_both_readers(tmp_path):
    lines = [line(chat(i)) for i in range(6)]
    lines[2] = line({"created": 1764000000, "note": "x" * (2 * ReaderPolicy().max_line_bytes + 10)})  # past DuckDB's
    lines[4] = b'{"a": "abc'
    path = tmp_path / "long.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")

    want, got = _both_readers(path, 1 << 20)  # the long line spans many windows

    assert got == want
    assert [ln for ln, _ in got[0]] == [3, 5]
    assert got[0][0][1] == "a line over 32 MiB: too long to be a log record"


def test_a_bad_twin_of_a_chat_log_summarises_as_its_clean_twin_naming_its_bad_lines(tmp_path):
    lines = [line(chat(i)) for i in range(3000)]
    clean = tmp_path / "clean.jsonl"
    clean.write_bytes(b"\n".join(lines) + b"\n")
    bad = tmp_path / "bad.jsonl"  # as bench/bench_logs_formats.py makes it: a BOM, a bad middle line, a cut tail
    bad.write_bytes(
        b"\xef\xbb\xbf"
        + b"\n".join(lines[:1500] + [b'{"this line": "is not a request'] + lines[1500:])
        + b"\n"
        + line(chat(3000))[:40]
    )

    def summary(path: Path) -> dict:
        r = CliRunner().invoke(cli, ["logs", "summarize", "--json", str(path)])
        assert r.exit_code == 0, r.output
        return json.loads(r.output)

    want, got = summary(clean), summary(bad)

    assert [(r["line_no"], r["reason"]) for r in got["rejected"]] == [
        (1501, "not valid JSON: Unterminated string starting at column 15"),
        (3002, "not valid JSON: Expecting value at column 41"),
    ]
    assert got["n_rejected"] == 2 and want["n"] == got["n"] == 3000
    for key in set(want) | set(got):
        if key not in ("n_rejected", "rejected", "formats"):
            assert got.get(key) == want.get(key), key


def test_lines_sql_leaves_to_python_are_read_as_the_python_reader_reads_them(tmp_path):
    lines = [line(chat(i)) for i in range(6)]
    lines[1] = line(chat(1))[:-1] + b', "created": 1764009999}'  # a key twice
    lines[3] = line(chat(3, prompt_tokens_details="none"))
    path = tmp_path / "odd.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")

    want, got = _both_readers(path)

    assert got == want
    assert got[0] == [] and len(got[1]) == 6


def test_a_crlf_line_in_a_file_of_lf_lines_does_not_shift_the_lines_named_after_it(tmp_path):
    lines = [line(chat(i)) for i in range(8)]
    lines[2] += b"\r"
    lines[3] = b" \r"
    lines[5] = b'{"a": "abc'
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n" + line(chat(9))[:-3])

    rejected, rows, sunk_rejected, sunk_rows = _read(path)

    assert [ln for ln, _ in rejected] == [ln for ln, _ in sunk_rejected] == [6, 9]
    assert len(rows) == len(sunk_rows) == 6
