"""A plain copy of a compressed log, made by our thread while DuckDB reads the file (planner.logs.inflate): the
splitter places the rows DuckDB did not read on it, with the same answer as inflating the file again."""

from __future__ import annotations

import gzip
import json
import shutil

import pyarrow as pa
import pytest

from planner.logs import LogFormatError, ReaderPolicy, read_logs
from planner.logs.inflate import inflating

LINES = b"".join(b'{"n": %d, "text": "%s"}\n' % (i, b"x" * (i % 50)) for i in range(50_000))


def _gz(tmp_path, data: bytes = LINES):
    path = tmp_path / "log.jsonl.gz"
    path.write_bytes(gzip.compress(data, 1))
    return path


@pytest.mark.parametrize("compression", ["gzip", "zstd"])
def test_a_taken_copy_is_the_inflated_file_and_stays_for_the_caller(tmp_path, compression):
    src = tmp_path / "log.z"
    with pa.CompressedOutputStream(str(src), compression) as out:
        out.write(LINES)
    with inflating(src, compression, tmp_path) as copy:
        plain = copy.take()
    assert plain is not None and plain.read_bytes() == LINES


def test_a_copy_not_taken_is_removed(tmp_path):
    with inflating(_gz(tmp_path), "gzip", tmp_path):
        pass  # every row was read: no line to place
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log.jsonl.gz"]


def test_no_copy_takes_the_disk_below_its_floor(tmp_path):
    """The copy shares its disk with DuckDB's spill files: past the floor of free space it is given up."""
    src = _gz(tmp_path)
    beyond = shutil.disk_usage(tmp_path).free + 1  # a floor no copy can keep above
    with inflating(src, "gzip", tmp_path, min_free_bytes=beyond) as copy:
        assert copy.take() is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log.jsonl.gz"]


def test_a_corrupt_stream_gives_no_copy(tmp_path):
    src = tmp_path / "cut.jsonl.gz"
    src.write_bytes(gzip.compress(LINES)[:-4000] + b"\x00" * 64)
    with inflating(src, "gzip", tmp_path) as copy:
        assert copy.take() is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cut.jsonl.gz"]


def _summary(res) -> tuple:
    rej = [(r.source, r.line_no, r.reason) for r in res.rejected]
    return res.n_read, res.n_rejected, rej, res.requests["prompt_tokens"].tolist(), res.requests["ts_ms"].tolist()


def test_rows_placed_on_the_copy_are_those_placed_on_the_gz_again(tmp_path):
    """CRLF lines, bad lines far in the file: their lines and reasons, and every row read, are the same."""
    rows = [
        json.dumps({"timestamp": f"2026-03-01T10:{i // 60 % 60:02d}:{i % 60:02d}Z", "prompt_tokens": i % 900 + 1})
        for i in range(20_000)
    ]
    rows[15_000] = '{"timestamp": "2026-03-01T10:00:00Z", "prompt_tokens": -4}'
    rows[17_500] = '{"timestamp": "2026-03-01T10:00:00Z", "prompt_tokens": '
    path = tmp_path / "requests.jsonl.gz"
    path.write_bytes(gzip.compress(("\r\n".join(rows) + "\r\n").encode()))
    copied = read_logs([path])
    again = read_logs([path], policy=ReaderPolicy(copy_while_reading=False))
    assert _summary(copied) == _summary(again)
    assert copied.n_read == 19_998 and {15_001, 17_501} <= {r.line_no for r in copied.rejected}


def test_a_cut_gz_is_refused_alike_with_a_copy_or_without(tmp_path):
    path = tmp_path / "requests.jsonl.gz"
    path.write_bytes(gzip.compress(LINES)[:-20_000])
    refusals = []
    for policy in (ReaderPolicy(), ReaderPolicy(copy_while_reading=False)):
        try:
            res = read_logs([path], policy=policy)
            refusals.append((res.n_read, [(r.line_no, r.reason) for r in res.rejected]))
        except LogFormatError as exc:
            refusals.append(str(exc))
    assert refusals[0] == refusals[1]
