"""Bad lines in large logs cost a line, not the file: read through DuckDB, named in line order, no size cap reached.

A file on disk is read through DuckDB whatever its size; the lines it does not vouch for (malformed JSON, a BOM,
a truncated tail, invalid UTF-8, out-of-range values) are named by the line-by-line reader one by one, in line
order, with the same reasons as the small-file path. Tests prove the streamed path was taken by making the
whole-file readers fail if they are called.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from planner.cli import cli
from planner.logs import LogFormatError, ReaderPolicy, read_logs

HUGE = "99999999999999999999999"


def chat(i: int, prompt: object = 1000, created: object = None) -> bytes:
    rec = {
        "object": "chat.completion",
        "created": 1764000000 + i if created is None else created,
        "model": "gpt-4.1",
        "usage": {"prompt_tokens": prompt, "completion_tokens": 10, "prompt_tokens_details": {"cached_tokens": 0}},
    }
    return json.dumps(rec).encode()


def test_a_chat_log_with_a_bom_bad_lines_and_a_truncated_tail_is_read_past_the_cap_naming_each_line_in_order(tmp_path):
    lines = [chat(i) for i in range(12)]
    lines[3] = b'{"object": "chat.completion", "created": 1'  # cut off
    lines[5] = chat(5, prompt=int(HUGE))
    lines[6] = json.dumps({"created": "2026-11-20T10:00:00", "usage": {"prompt_tokens": 5, "completion_tokens": 1}})
    lines[6] = lines[6].encode()  # an ISO time without a zone: not DuckDB's to vouch for, read by the line reader
    lines[7] = b'{"created": 1764000007, "usage": {"prompt_tokens": "\xff", "completion_tokens": 1}}'
    lines[8] = chat(8, created=int(HUGE))
    lines[9] = b'{"a": "abc'
    body = b"\xef\xbb\xbf" + b"\n".join(lines[:11]) + b"\n\n" + lines[11][:-5]  # a blank line, then a cut-off tail
    path = tmp_path / "agent.jsonl"
    path.write_bytes(body)

    res = read_logs([path], tz="Europe/Berlin", max_bytes=1000)  # the file is far over this cap

    got = [(r.line_no, r.reason) for r in res.rejected]
    assert [line for line, _ in got] == [4, 6, 8, 9, 10, 13]
    reasons = dict(got)
    assert reasons[4].startswith("not valid JSON")
    assert reasons[6] == f"usage.prompt_tokens is {HUGE}, over 10⁹: not a token count"
    assert "not valid UTF-8" in reasons[8]
    assert reasons[9] == f"timestamp created is outside 1970–2100: '{HUGE}'"
    assert reasons[10] == "not valid JSON: Unterminated string starting at column 7"
    assert reasons[13].startswith("not valid JSON")
    assert res.n_rejected == 6
    # Lines 1 (after its BOM), 2, 3, 5, 7 (read by the line reader, 10:00 Berlin = 09:00 UTC) and 11.
    assert len(res.frame) == 6
    assert 1795165200000 in res.frame["ts_ms"].tolist()
    assert res.frame["ts_ms"].is_monotonic_increasing


def test_summarize_reads_the_same_bad_chat_log_naming_the_same_lines(tmp_path):
    lines = [chat(i) for i in range(12)]
    lines[3] = b'{"object": "chat.completion", "created": 1'  # cut off
    lines[5] = chat(5, prompt=int(HUGE))
    lines[7] = b'{"created": 1764000007, "usage": {"prompt_tokens": "\xff", "completion_tokens": 1}}'
    lines[9] = b'{"a": "abc'
    path = tmp_path / "agent.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b"\n".join(lines[:11]) + b"\n\n" + lines[11][:-5])

    r = CliRunner().invoke(cli, ["logs", "summarize", "--json", str(path)])

    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert [row["line_no"] for row in d["rejected"]] == [4, 6, 8, 10, 13]
    assert d["rejected"][1]["reason"] == f"usage.prompt_tokens is {HUGE}, over 10⁹: not a token count"
    assert d["n"] == 7 and d["n_rejected"] == 5


def _csv_rows() -> list[str]:
    rows = ["timestamp,model,prompt_tokens,completion_tokens"]
    for i in range(600):
        ts = f"2026-11-20T{9 + i % 8:02d}:{i % 60:02d}:00" + ("+02:00" if i % 4 == 0 else "")
        rows.append(f"{ts},m{i % 3},{100 + i},{i % 7}")
    rows[5] = '2026-11-20T09:00:00,"two\nlines",5,1'  # a quoted line break: later rows start a line further on
    rows[10] = "2026-11-20T09:00:00,m,abc,1"
    rows[20] = "2026-11-20T09:00:00,m,-5,1"
    rows[30] = f"2026-11-20T09:00:00,m,{HUGE},1"
    rows[40] = f"{HUGE},m,5,1"
    rows[50] = "2026-11-20T09:00:00,m,5"
    rows[60] = "2026-11-20T09:00:00,m,7.5,1"
    return rows


EXPECTED_CSV_REJECTS = [
    (12, "prompt_tokens is not a number: 'abc'"),
    (22, "prompt_tokens is negative (-5)"),
    (32, f"prompt_tokens is {HUGE}, over 10⁹: not a token count"),
    (42, f"timestamp is outside 1970–2100: '{HUGE}'"),  # the column is called timestamp: said once
    (52, "has 3 fields, the header has 4"),
    (62, "prompt_tokens is not a whole number: '7.5'"),
]


@pytest.mark.parametrize("packed", ["plain", "gzip", "zstd"])
def test_bad_rows_in_a_large_csv_are_named_by_their_lines_and_the_rest_read_in_the_engine(tmp_path, packed):
    import pyarrow as pa

    data = ("\n".join(_csv_rows()) + "\n").encode()
    path = tmp_path / {"plain": "big.csv", "gzip": "big.csv.gz", "zstd": "big.csv.zst"}[packed]
    if packed == "zstd":
        with pa.CompressedOutputStream(str(path), "zstd") as out:
            out.write(data)
    else:
        path.write_bytes(data if packed == "plain" else gzip.compress(data))
    res = read_logs([path], tz="Europe/Berlin")

    assert [(r.line_no, r.reason) for r in res.rejected] == EXPECTED_CSV_REJECTS
    assert len(res.frame) == 600 - len(EXPECTED_CSV_REJECTS)


def test_naive_and_offset_times_mixed_in_one_column_read_the_same_in_duckdb_and_in_python(tmp_path):
    path = tmp_path / "mixed.csv"
    path.write_text("\n".join(_csv_rows()) + "\n")
    small = read_logs([path], tz="Europe/Berlin", policy=ReaderPolicy(engine="python"))
    large = read_logs([path], tz="Europe/Berlin")

    assert large.frame["ts_ms"].tolist() == small.frame["ts_ms"].tolist()
    assert large.frame["prompt_tokens"].tolist() == small.frame["prompt_tokens"].tolist()
    assert [(r.line_no, r.reason) for r in large.rejected] == [(r.line_no, r.reason) for r in small.rejected]
    # Row i = 1 says 10:01 without a zone: Berlin's 10:01 is 09:01 UTC; row i = 0 says 09:00+02:00: 07:00 UTC.
    assert 1795165260000 in large.frame["ts_ms"].tolist() and 1795158000000 in large.frame["ts_ms"].tolist()


def test_out_of_range_values_are_rejected_lines_in_memory_and_in_parquet(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    lines = [chat(0), chat(1, prompt=int(HUGE)), chat(2, created=int(HUGE)), chat(3)]
    res = read_logs([("a.jsonl", b"\n".join(lines))])
    assert len(res.frame) == 2 and [r.line_no for r in res.rejected] == [2, 3]
    assert "over 10⁹" in res.rejected[0].reason and "outside 1970–2100" in res.rejected[1].reason

    table = pa.table({"timestamp": [1.764e9, 1.764e9 + 1, 1e23], "prompt_tokens": [5.0, 1e23, 7.0]})
    pq.write_table(table, tmp_path / "a.parquet")
    res = read_logs([tmp_path / "a.parquet"])
    assert len(res.frame) == 1 and [r.line_no for r in res.rejected] == [2, 3]
    assert "over 10⁹" in res.rejected[0].reason and "outside 1970–2100" in res.rejected[1].reason


def test_the_cli_names_an_out_of_range_count_instead_of_a_traceback(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_bytes(b"\n".join([chat(0), chat(1, prompt=int(HUGE)), chat(2)]) + b"\n")
    r = CliRunner().invoke(cli, ["logs", "summarize", str(path)])
    assert r.exit_code == 0, r.output
    assert f"1 line rejected, first: a.jsonl:2: usage.prompt_tokens is {HUGE}, over 10⁹" in r.output
    assert "2 requests from a.jsonl" in r.output


@pytest.mark.parametrize("when", [1.764e9, "2026-03-01 10:00"], ids=["engine-read", "pyarrow-read"])
def test_a_parquet_file_with_a_repeated_column_name_is_named_not_a_traceback(tmp_path, when):
    import pyarrow as pa
    import pyarrow.parquet as pq

    # epoch times DuckDB would read (it would pick one of the two columns), or text times it does not vouch for
    # (then pyarrow, which cannot pick one by name): either way the file is named, not half read
    columns = [pa.array([when]), pa.array([10]), pa.array([5]), pa.array([7])]
    table = pa.Table.from_arrays(columns, names=["timestamp", "prompt_tokens", "output_tokens", "prompt_tokens"])
    pq.write_table(table, tmp_path / "dup.parquet")
    r = CliRunner().invoke(cli, ["logs", "summarize", str(tmp_path / "dup.parquet")])
    assert r.exit_code == 2 and isinstance(r.exception, SystemExit), r.output  # a usage error, not a crash
    assert "dup.parquet: a column name is repeated in the file (prompt_tokens): rename one" in r.output


def test_a_parquet_file_s_top_level_columns_are_read_as_pyarrow_reads_them(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "timestamp": [1.764e9],
            "usage": pa.array([{"prompt_tokens": 10, "details": {"cached_tokens": 2}}]),
            "tags": pa.array([[{"k": "a", "v": "b"}]]),
            "output_tokens": [5],
        }
    )
    pq.write_table(table, tmp_path / "nested.parquet")
    with pytest.raises(LogFormatError) as err:  # no prompt-token column among the top-level ones
        read_logs([tmp_path / "nested.parquet"])
    assert err.value.columns == sorted(pq.ParquetFile(tmp_path / "nested.parquet").schema_arrow.names)


def test_one_request_is_one_request(tmp_path):
    path = tmp_path / "one.csv"
    path.write_bytes(b"timestamp,model,prompt_tokens,output_tokens\n2026-03-01T10:00:00Z,m,10,5\n")
    r = CliRunner().invoke(cli, ["logs", "summarize", str(path)])
    assert r.exit_code == 0, r.output
    assert "1 request from one.csv (csv)" in r.output


def test_a_csv_with_only_a_header_names_the_file_and_its_columns():
    with pytest.raises(LogFormatError, match=r"h\.csv: a header \(timestamp, model, prompt_tokens\) and no rows"):
        read_logs([("h.csv", b"timestamp,model,prompt_tokens\n")])


def test_rejected_lines_are_listed_in_line_order_even_where_the_format_sample_read_ahead():
    lines = [chat(i) for i in range(6)]
    lines[1] = chat(1, prompt=-1)  # rejected while reading records (after the sample)
    lines[4] = b"{broken"  # rejected while the sample was taken, before line 2 was read
    res = read_logs([("a.jsonl", b"\n".join(lines))])
    assert [r.line_no for r in res.rejected] == [2, 5]


def test_a_litellm_csv_export_is_streamed_record_by_record_past_the_cap(tmp_path):
    sample = Path(__file__).resolve().parents[3] / "assets" / "sample_logs" / "litellm_spend_logs.csv"
    bad = b"chatcmpl-x,acompletion,0.1,10,-4,6,2026-11-16T09:00:00Z,,,m,u,success,{},False,hi\n"
    data = sample.read_bytes().rstrip(b"\n") + b"\n" + bad
    path = tmp_path / "spend.csv"
    path.write_bytes(data)
    in_memory = read_logs([("spend.csv", data)])  # the bytes path, as an upload small enough to hold

    res = read_logs([path], max_bytes=1000)  # the file is far over this cap

    assert res.formats == {"spend.csv": "litellm"} and len(res.frame) == len(in_memory.frame) == 120
    assert res.frame.drop(columns="source").equals(in_memory.frame.drop(columns="source"))
    assert [(r.line_no, r.reason) for r in res.rejected] == [(r.line_no, r.reason) for r in in_memory.rejected]
    assert res.rejected[-1].reason == "prompt_tokens is negative (-4)"


def test_utf16_logs_on_disk_are_decoded_not_taken_for_bad_utf8_lines(tmp_path):
    lines = b"\n".join(chat(i) for i in range(3)).decode()
    (tmp_path / "u16.jsonl").write_bytes(lines.encode("utf-16"))  # PowerShell's default: UTF-16 with a BOM
    (tmp_path / "u16.csv").write_bytes("timestamp,prompt_tokens\n2026-11-20T09:00:00Z,5\n".encode("utf-16"))
    res = read_logs([tmp_path / "u16.jsonl", tmp_path / "u16.csv"])
    assert len(res.frame) == 4 and res.n_rejected == 0


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_utf16_without_a_bom_is_decoded_and_a_hole_of_nuls_is_not_taken_for_it(tmp_path, encoding):
    """UTF-16 is told by NULs in every other byte; a file that is one JSON line and then a hole of NULs (a sparse
    file, a disk that lost its data) has NULs in every byte: it was taken for UTF-16-BE and re-encoded whole (1.5 GB
    written, 5 s) before being refused; now its good line is read and the hole named."""
    lines = b"\n".join(chat(i) for i in range(3)).decode()
    (tmp_path / "u16.jsonl").write_bytes(lines.encode(encoding))
    assert len(read_logs([tmp_path / "u16.jsonl"]).frame) == 3
    holed = tmp_path / "holed.jsonl"
    with open(holed, "wb") as fh:
        fh.write(chat(0) + b"\n")
        fh.truncate(40 << 20)  # past the 32 MiB a JSON line may hold
    res = read_logs([holed])
    assert len(res.frame) == 1
    assert [(r.line_no, r.reason) for r in res.rejected] == [(2, "a line over 32 MiB: too long to be a log record")]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["holed.jsonl", "u16.jsonl"]


def _summarize_json(*args: str) -> dict:
    r = CliRunner().invoke(cli, ["logs", "summarize", "--json", *args])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def _bad_twin_csv(tmp_path: Path, rows: list[str], name: str = "agent.csv", newline: str = "\n") -> Path:
    """The rows with a UTF-8 BOM, a line that is not CSV in the middle and the last line cut in half."""
    lines = rows[:4] + ['{"this line": "is not a request'] + rows[4:-1] + [rows[-1][: len(rows[-1]) // 2]]
    path = tmp_path / name
    path.write_bytes(b"\xef\xbb\xbf" + newline.join(lines).encode())
    return path


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["LF", "CRLF"])
def test_a_csv_with_a_bom_a_bad_line_and_a_cut_tail_is_summarised_in_one_engine_pass_naming_those_lines(
    tmp_path, newline
):
    rows = ["timestamp,model,prompt_tokens,output_tokens"]
    rows += [f"2026-11-20T09:{i // 60:02d}:{i % 60:02d}Z,m{i % 2},{100 + i},{i % 5}" for i in range(200)]
    rows[50] = "2026-11-20T09:00:50Z,m\xff,150,0"  # a model name with a byte that is not UTF-8
    path = _bad_twin_csv(tmp_path, rows, newline=newline)  # a Windows export's CRLF: the same lines, same reasons
    path.write_bytes(path.read_bytes().replace("\xff".encode(), b"\xff"))

    d = _summarize_json(str(path))

    assert [(r["line_no"], r["reason"]) for r in d["rejected"]] == [
        (5, "has 1 field, the header has 4"),
        (52, "not valid UTF-8; save the log as UTF-8"),
        (202, "has 1 field, the header has 4"),
    ]
    assert d["n_rejected"] == 3
    # 200 rows, less the UTF-8 one and the cut one; the BOM'd header and first row are read
    assert d["n"] == 198 and d["prompt_tokens"]["max"]["value"] == 298


def test_a_quoted_line_break_before_a_bad_line_still_names_the_file_line(tmp_path):
    rows = ["timestamp,model,prompt_tokens,output_tokens"]
    rows += [f"2026-11-20T09:{i // 60:02d}:{i % 60:02d}Z,m{i % 2},{100 + i},{i % 5}" for i in range(100)]
    rows[10] = '2026-11-20T09:00:10Z,"two\nlines",110,0'  # DuckDB's line numbers do not count this break
    path = _bad_twin_csv(tmp_path, rows)

    d = _summarize_json(str(path))

    assert [(r["line_no"], r["reason"]) for r in d["rejected"]] == [
        (5, "has 1 field, the header has 4"),
        (103, "has 1 field, the header has 4"),
    ]
    assert d["n"] == 99
