"""A chat JSON Lines file with a few bad lines is read by DuckDB's JSON reader, only the bad lines as text.

The tolerant tier (planner.logs.duckpath: read_json with ignore_errors, its doubtful rows mapped back to lines by
planner.logs.json_lines.json_row_lines) must name the same lines with the same reasons, and read the same rows, as the
line-accounted tier it replaces (every line read as text); and a bad twin of a clean log must summarise as the clean
one.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import planner.logs.duckpath as duckpath
import planner.logs.json_lines as json_lines
import planner.logs.normalise as normalise
from planner.cli import cli
from planner.logs import read_logs
from planner.logs.request_table import RequestTable, connect

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


def _read(path: Path) -> tuple[list[tuple[int, str]], list[tuple], list[tuple[int, str]], list[tuple]]:
    """(rejected, rows) read into a frame, then into the engine's table."""
    res = read_logs([path], tz="Europe/Berlin", max_bytes=1000)
    con = connect()
    table = RequestTable(con)
    sunk = read_logs([path], tz="Europe/Berlin", max_bytes=1000, sink=table)
    return (
        [(r.line_no, r.reason) for r in res.rejected],
        _rows(res.frame),
        [(r.line_no, r.reason) for r in sunk.rejected],
        _rows(table.frame()),
    )


def _line_accounted(monkeypatch) -> None:
    """Make the tolerant tier give up (its rows cannot be mapped), so the line-accounted tier reads the file."""
    monkeypatch.setattr(duckpath, "json_row_lines", lambda *a: None)
    monkeypatch.setattr(normalise, "json_row_lines", lambda *a: None)


def _no_line_accounted(monkeypatch) -> None:
    def refuse(*a, **k):
        raise AssertionError("the line-accounted tier ran")

    monkeypatch.setattr(duckpath, "_csv_rejects", refuse)


def _both_tiers(monkeypatch, path: Path, scan_bytes: int | None = None) -> tuple[tuple, tuple]:
    """(what the line-accounted tier reads, what the tolerant tier reads) of `path`; `scan_bytes`: the mapping pass's
    window, small to put lines across windows."""
    with monkeypatch.context() as m:
        _line_accounted(m)
        want = _read(path)
    with monkeypatch.context() as m:
        _no_line_accounted(m)
        if scan_bytes:
            m.setattr(json_lines, "_SCAN_BYTES", scan_bytes)
        got = _read(path)
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
def test_the_tolerant_tier_names_and_reads_what_the_line_accounted_tier_does(
    tmp_path, monkeypatch, packed, blank, chunk, newline
):
    lines = _bad_lines(blank)
    data = b"\xef\xbb\xbf" + newline.join(lines) + newline + line(chat(99))[:-9]  # a BOM, and a cut-off tail
    path = _write(tmp_path / "agent.jsonl", data, packed)

    want, got = _both_tiers(monkeypatch, path, chunk)  # a small chunk: lines across the scan's buffers

    assert got == want
    rejected, rows, sunk_rejected, sunk_rows = got
    assert rejected == sunk_rejected and rows == sunk_rows
    n = len(lines) + 1
    assert [ln for ln, _ in rejected] == sorted(ln for ln, _ in rejected) and rejected[-1][0] == n
    assert dict(rejected)[11] == "not valid UTF-8; save the log as UTF-8"
    assert dict(rejected)[5] == f"usage.prompt_tokens is {HUGE}, over 10⁹: not a token count"
    assert 1795165200000 in [r[0] for r in rows]  # the ISO time, read by the line reader (10:00 Berlin)


def test_a_line_over_the_size_limit_is_named_as_the_line_accounted_tier_names_it(tmp_path, monkeypatch):
    lines = [line(chat(i)) for i in range(6)]
    lines[2] = line({"created": 1764000000, "note": "x" * (duckpath.MAX_LINE_BYTES + 10)})
    lines[4] = b'{"a": "abc'
    path = tmp_path / "long.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")

    want, got = _both_tiers(monkeypatch, path, 1 << 20)  # the long line spans many buffers

    assert got == want
    assert [ln for ln, _ in got[0]] == [3, 5]
    assert got[0][0][1] == "a line over 16 MB: not a log record"


def test_a_bad_twin_of_a_chat_log_summarises_as_its_clean_twin_naming_its_bad_lines(tmp_path, monkeypatch):
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
    _no_line_accounted(monkeypatch)

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


def test_lines_the_fast_tier_refuses_but_the_tolerant_one_reads_are_read_as_the_line_accounted_tier_reads_them(
    tmp_path, monkeypatch
):
    lines = [line(chat(i)) for i in range(6)]
    lines[1] = line(chat(1))[:-1] + b', "created": 1764009999}'  # a key twice
    lines[3] = line(chat(3, prompt_tokens_details="none"))
    path = tmp_path / "odd.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")

    want, got = _both_tiers(monkeypatch, path)

    assert got == want
    assert got[0] == [] and len(got[1]) == 6


def test_a_crlf_line_in_a_file_of_lf_lines_does_not_shift_the_lines_named_after_it(tmp_path, monkeypatch):
    # The line-accounted tier's CSV layer takes such a CR for a line break of its own (one line too many after it).
    lines = [line(chat(i)) for i in range(8)]
    lines[2] += b"\r"
    lines[3] = b" \r"
    lines[5] = b'{"a": "abc'
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n" + line(chat(9))[:-3])
    _no_line_accounted(monkeypatch)

    rejected, rows, sunk_rejected, sunk_rows = _read(path)

    assert [ln for ln, _ in rejected] == [ln for ln, _ in sunk_rejected] == [6, 9]
    assert len(rows) == len(sunk_rows) == 6


def test_a_cut_tail_is_seen_before_the_file_is_read(tmp_path):
    path = tmp_path / "a.jsonl"
    for body, cut in [
        (line(chat(0)) + b"\n" + line(chat(1))[:-3], True),
        (line(chat(0)) + b"\n" + line(chat(1)) + b"\n\n \n", False),
        (b"\xef\xbb\xbf" + line(chat(0))[:-1], True),
        (b"\xef\xbb\xbf" + line(chat(0)), False),
        (b"", False),
        (b"x" * (70 << 10), False),  # no line start within the part looked at: unsure
    ]:
        path.write_bytes(body)
        assert json_lines.tail_is_cut(path) is cut, body[-40:]
    gz = tmp_path / "a.jsonl.gz"
    gz.write_bytes(gzip.compress(line(chat(0))[:-3]))
    assert json_lines.tail_is_cut(gz) is False  # compressed: not looked at
