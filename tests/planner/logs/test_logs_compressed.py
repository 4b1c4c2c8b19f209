"""Compressed logs and where a row is placed: a .gz is inflated by ISA-L (every member), a .gz or .zst cut or
corrupt anywhere is refused whole with its name (not only when the cut falls in the head open_log checks), a row
DuckDB does not read is placed by its order among the rows it inserted (planner.logs.load), across files whose last
rows were dropped, and found through a survey of the file (planner.logs.split) as a whole walk finds it."""

from __future__ import annotations

import gzip
import json
import random

import pyarrow as pa
import pytest

from planner.kvcache.chains import PrefixTraceError, read_prefix_trace
from planner.logs import LogFormatError, ReaderPolicy, read_logs, split


def _lines(n: int, bad: dict[int, str] | None = None, pad: int = 0) -> bytes:
    """n JSON Lines requests (line k+1 holds request k), `bad` lines put in at their 0-based index."""
    rows = [
        json.dumps(
            {
                "timestamp": f"2026-03-01T{k // 3600 % 24:02d}:{k // 60 % 60:02d}:{k % 60:02d}Z",
                "prompt_tokens": k % 900 + 1,
                "pad": "y" * (k * 7 % pad if pad else 0),
            }
        )
        for k in range(n)
    ]
    for at, text in (bad or {}).items():
        rows[at] = text
    return ("\n".join(rows) + "\n").encode()


def _named(res) -> list[tuple[str, int, str]]:
    return [(r.source, r.line_no, r.reason) for r in res.rejected]


def test_a_gzip_of_several_members_is_read_whole_and_its_lines_counted_across_them(tmp_path):
    """`cat a.gz b.gz > log.gz` (how rotated logs are joined) is one gzip file of two members."""
    first = _lines(3_000)
    second = _lines(2_000, {1_500: '{"timestamp": "2026-03-01T10:00:00Z", "prompt_tokens": -4}'})
    path = tmp_path / "joined.jsonl.gz"
    path.write_bytes(gzip.compress(first) + gzip.compress(second))
    res = read_logs([path])
    assert res.n_read == 4_999
    assert [(line, reason[:30]) for _, line, reason in _named(res)] == [(4_501, "prompt_tokens is negative (-4)")]


def _pack(data: bytes, compression: str) -> bytes:
    if compression == "gzip":
        return gzip.compress(data, 1)
    sink = pa.BufferOutputStream()
    with pa.CompressedOutputStream(sink, "zstd") as out:
        out.write(data)
    return sink.getvalue().to_pybytes()


@pytest.mark.parametrize("compression", ["gzip", "zstd"])
@pytest.mark.parametrize("damage", ["cut", "corrupt"])
def test_a_compressed_log_broken_past_its_head_is_refused_whole_and_the_next_file_read(tmp_path, compression, damage):
    """Cut or corrupt after the 16 MiB open_log inflates to check it: before, the splitter's OSError (Arrow's
    "Truncated compressed stream") was a traceback."""
    suffix = ".gz" if compression == "gzip" else ".zst"
    data = _lines(120_000, {10: '{"timestamp": "2026-03-01T10:00:00Z", "prompt_tokens": -4}'}, pad=300)
    assert len(data) > 24 << 20  # the damage lands past the head
    packed = _pack(data, compression)
    at = len(packed) * 9 // 10
    broken = tmp_path / f"broken.jsonl{suffix}"
    broken.write_bytes(packed[:at] if damage == "cut" else packed[:at] + bytes(4096) + packed[at + 4096 :])
    whole = tmp_path / f"whole.jsonl{suffix}"
    whole.write_bytes(_pack(_lines(500), compression))
    res = read_logs([broken, whole])
    assert res.n_read == 500 and res.n_rejected == 1  # nothing of the broken file: not its rows, not its bad line
    [(source, line, reason)] = _named(res)
    assert (source, line) == (broken.name, 0)
    said = {"cut": f"{broken.name} is a truncated {compression} file", "corrupt": f"{broken.name} is not a valid "}
    assert reason.startswith(said[damage]), reason  # as open_log words damage inside the head
    with pytest.raises(LogFormatError, match=said[damage]):
        read_logs([broken])


def test_a_trace_cut_past_its_head_is_one_error_naming_it(tmp_path):
    rows = [json.dumps({"timestamp": k, "input_length": 10, "hash_ids": [k % 7, k]}) + "\n" for k in range(300_000)]
    packed = gzip.compress("".join(rows).encode(), 1)
    path = tmp_path / "trace.jsonl.gz"
    path.write_bytes(packed[: len(packed) * 9 // 10])
    with pytest.raises(PrefixTraceError, match=r"^trace\.jsonl\.gz is a truncated gzip file$"):
        read_prefix_trace(path)


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_a_bad_row_is_placed_at_its_line_after_a_file_whose_last_rows_were_dropped(tmp_path, fmt):
    """DuckDB does not reuse the row ids of deleted rows: the next file's rows start past a gap, and a row it did
    not read is placed from that file's first row id, not from the table's count."""
    bad_row = {"jsonl": '{"timestamp": "2026-03-01T10:00:00Z", "prompt_tokens": -4}', "csv": "2026-03-01T10:00:00Z,-4"}[
        fmt
    ]
    rows = {"jsonl": [], "csv": ["timestamp,prompt_tokens"]}[fmt]
    for k in range(5_000):
        ts = f"2026-03-01T10:{k // 60 % 60:02d}:{k % 60:02d}Z"
        rows.append(json.dumps({"timestamp": ts, "prompt_tokens": k + 1}) if fmt == "jsonl" else f"{ts},{k + 1}")
    first = tmp_path / f"a.{fmt}"
    first.write_text("\n".join([*rows, bad_row, bad_row]) + "\n")  # its last two rows dropped
    second = tmp_path / f"b.{fmt}"
    lines = [*rows]
    lines[len(lines) - 1_000] = bad_row
    second.write_text("\n".join(lines) + "\n")
    res = read_logs([first, second])
    assert res.n_read == 5_000 + 4_999
    header = 1 if fmt == "csv" else 0
    assert [(s, line) for s, line, _ in _named(res)] == [
        ("a." + fmt, 5_001 + header),
        ("a." + fmt, 5_002 + header),
        ("b." + fmt, 4_001 + header),
    ]
    assert {reason[:30] for *_, reason in _named(res)} == {"prompt_tokens is negative (-4)"}


@pytest.mark.parametrize("packing", ["gz", "plain"])
def test_a_surveyed_csv_names_the_lines_a_whole_walk_names(tmp_path, packing):
    """A .csv.gz is surveyed on another core while DuckDB reads it, a plain CSV by two threads after (ReaderPolicy.
    survey), and the rows DuckDB leaves are then found walking only the 4 MiB windows that hold them: quoted line
    breaks, CRLF, a refused record and bad values far apart, a cut tail — the same lines and reasons as walking the
    whole file in one thread."""
    ids = random.Random(43)
    rows = ["timestamp,model,prompt_tokens,request_id"]
    for k in range(400_000):
        model = '"gpt\r\n4o"' if k % 50_000 == 7 else "gpt-4o"  # a quoted line break now and then: rows[k + 1]
        ts = f"2026-03-01T{k // 3600 % 24:02d}:{k // 60 % 60:02d}:{k % 60:02d}Z"
        rows.append(f"{ts},{model},{k % 900 + 1},{ids.getrandbits(96):024x}")  # ids: a file gzip cannot shrink much
    rows[30_001] = "2026-03-01T10:00:00Z,gpt-4o,-4,a"
    rows[250_002] = "2026-03-01T10:00:00Z,gpt-4o,1"  # a field short: refused by DuckDB's CSV layer
    rows[350_003] = "2026-03-01T10:00:00Z,gpt-4o,12a,b"
    text = ("\r\n".join(rows) + "\r\n2026-03-01T10:00:00Z,gp").encode()
    assert len(text) > 4 * split.SURVEY_WINDOW_BYTES  # windows to skip; a plain file surveyed in two halves
    path = tmp_path / ("requests.csv.gz" if packing == "gz" else "requests.csv")
    path.write_bytes(gzip.compress(text, 1) if packing == "gz" else text)
    assert path.stat().st_size >= split.SURVEY_WINDOW_BYTES  # a .gz large enough to be surveyed
    surveyed = read_logs([path])
    walked = read_logs([path], policy=ReaderPolicy(survey=False))
    assert _named(surveyed) == _named(walked)
    assert (surveyed.n_read, surveyed.n_rejected) == (walked.n_read, walked.n_rejected) == (399_997, 4)
    breaks = [k + 1 for k in range(7, 400_000, 50_000)]  # the rows holding a quoted line break
    line = {i: i + 1 + sum(b < i for b in breaks) for i in (30_001, 250_002, 350_003, len(rows))}
    assert [ln for _, ln, _ in _named(surveyed)] == [30_003, 250_008, 350_011, 400_010] == list(line.values())
