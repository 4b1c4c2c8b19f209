"""The log reader at its edges (issue 43's "Found" list): what failed before the one reader, as a user would see it.

An absurdly deep element of a JSON array, an absurd relative time, a file that is one line past the line limit, a
wall-clock time the zone's clock repeats, times with and without a zone in one file, two files of one name in two
folders, a key given twice, a value that is a JSON object: each is named (or noted) and the rest is read, the same
through DuckDB and through the Python record reader.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest
from click.testing import CliRunner

from planner.cli import cli
from planner.logs import LogFormatError, ReaderPolicy, read_logs

PYTHON = ReaderPolicy(engine="python")


def chat(i: int, **usage: object) -> dict:
    return {
        "object": "chat.completion",
        "created": 1764000000 + 60 * i,
        "model": "m",
        "usage": {"prompt_tokens": 1000 + i, "completion_tokens": 10, **usage},
    }


def _both(paths, **kw) -> list:
    """read_logs through DuckDB and through the Python record reader: the same rows, the same named lines."""
    got = [read_logs(paths, **kw), read_logs(paths, policy=PYTHON, **kw)]
    a, b = got
    assert a.frame.drop(columns="model").equals(b.frame.drop(columns="model"))
    assert [(r.source, r.line_no, r.reason) for r in a.rejected] == [
        (r.source, r.line_no, r.reason) for r in b.rejected
    ]
    assert a.notes == b.notes
    return got


def test_a_json_array_with_one_absurdly_deep_element_reads_the_others_and_names_that_record(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    records = [json.dumps(chat(i)) for i in range(50)]
    path = tmp_path / "export.json"
    path.write_text("[" + ",".join(records[:20] + [deep] + records[20:]) + "]")
    res, _ = _both([path])
    assert len(res.frame) == 50
    assert [(r.line_no, r.unit, r.reason) for r in res.rejected] == [
        (21, "record", "not a log record: JSON nested too deeply")
    ]
    assert str(res.rejected[0]).startswith("export.json record 21: ")


def test_a_relative_time_of_1e308_is_a_named_line_in_read_logs_logs_summarize_and_whatif(tmp_path):
    lines = [json.dumps({"timestamp": 1000 * i, "input_length": 600, "output_length": 20}) for i in range(30)]
    lines[7] = json.dumps({"timestamp": 1e308, "input_length": 600, "output_length": 20})
    path = tmp_path / "mooncake.jsonl"
    path.write_text("\n".join(lines) + "\n")
    res, _ = _both([path])
    assert len(res.frame) == 29 and [r.line_no for r in res.rejected] == [8]
    assert "timestamp is outside 1970–2100" in res.rejected[0].reason
    out = CliRunner().invoke(cli, ["logs", "summarize", "--json", str(path)])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["n"] == 29
    replay = CliRunner().invoke(cli, ["whatif", "--log", str(path), "--json"])
    assert "Traceback" not in replay.output and "OverflowError" not in replay.output
    assert replay.exit_code in (0, 2), replay.output


def test_a_file_that_is_one_line_past_the_limit_is_named_not_a_traceback(tmp_path):
    path = tmp_path / "oneline.csv"
    with path.open("wb") as fh:  # no newline at all: one record of 70 MB
        fh.write(b"timestamp,model,prompt_tokens,")
        for _ in range(70):
            fh.write(b"x" * (1 << 20))
    with pytest.raises(LogFormatError, match=r"oneline.csv: its first line is over 1 MiB: not a CSV header"):
        read_logs([path])
    body = tmp_path / "body.csv"
    with body.open("wb") as fh:
        fh.write(b"timestamp,model,prompt_tokens\n2026-11-20T09:00:00Z,m,10\n2026-11-20T09:00:01Z,")
        for _ in range(20):  # a CSV record over 16 MiB: named, as the README has promised
            fh.write(b"x" * (1 << 20))
        fh.write(b",5\n2026-11-20T09:00:02Z,m,12\n")
    res = read_logs([body])
    assert len(res.frame) == 2
    assert [(r.line_no, r.reason) for r in res.rejected] == [(3, "a line over 16 MiB: too long to be a log record")]


def test_a_wall_clock_time_the_clock_repeats_is_read_at_the_smaller_offset_and_counted(tmp_path):
    path = tmp_path / "berlin.csv"
    path.write_text(
        "timestamp,prompt_tokens\n"
        "2026-10-25 01:30:00,10\n"  # CEST: 23:30 UTC the day before
        "2026-10-25 02:30:00,20\n"  # twice that night: 00:30 UTC (CEST) or 01:30 UTC (CET), the smaller offset
        "2026-10-25 04:00:00,30\n"
    )
    res, _ = _both([path], tz="Europe/Berlin")
    at = dt.datetime(2026, 10, 25, 1, 30, tzinfo=dt.UTC).timestamp() * 1000
    assert res.frame["ts_ms"].tolist()[1] == at
    assert res.notes == [
        "berlin.csv: 3 times without a zone read in Europe/Berlin, 1 of them where the clock repeats or skips "
        "(a DST change): read at the zone's smaller UTC offset"
    ]


def test_times_with_and_without_a_zone_in_one_file_are_noted_even_in_utc(tmp_path):
    path = tmp_path / "mixed.csv"
    path.write_text("timestamp,prompt_tokens\n2026-11-20T09:00:00Z,10\n2026-11-20 09:00:01,20\n2026-11-20 09:00:02,5\n")
    res, _ = _both([path])
    assert res.notes == ["mixed.csv: 2 times without a zone read in UTC"]


def test_two_files_of_one_name_in_two_folders_are_told_apart_by_their_paths(tmp_path):
    for folder, bad in (("eu", 2), ("us", 3)):
        (tmp_path / folder).mkdir()
        lines = [json.dumps(chat(i)) for i in range(5)]
        lines[bad] = "{broken"
        (tmp_path / folder / "requests.jsonl").write_text("\n".join(lines) + "\n")
    res, _ = _both([tmp_path / "eu" / "requests.jsonl", tmp_path / "us" / "requests.jsonl"])
    assert [str(r).split(": ")[0] for r in res.rejected] == ["eu/requests.jsonl:3", "us/requests.jsonl:4"]
    assert set(res.formats) == {"eu/requests.jsonl", "us/requests.jsonl"}
    assert sorted(res.frame["source"].unique()) == ["eu/requests.jsonl", "us/requests.jsonl"]


def test_a_key_given_twice_is_read_first_as_duckdb_reads_it_and_counted(tmp_path):
    lines = [json.dumps(chat(i)) for i in range(6)]
    lines[2] = lines[2][:-1] + ', "created": 1}'  # `created` twice: the first value is the one read
    path = tmp_path / "twice.jsonl"
    path.write_text("\n".join(lines) + "\n")
    res, _ = _both([path])
    assert len(res.frame) == 6 and res.n_rejected == 0
    assert res.notes == ["twice.jsonl: 1 record name a key twice (first 'created'): the first value is read"]


def test_a_value_that_is_a_json_object_is_named_in_json_words_not_a_python_repr(tmp_path):
    lines = [json.dumps(chat(i)) for i in range(4)]
    lines[1] = json.dumps(chat(1, completion_tokens={"n": 5}))
    lines[2] = json.dumps(chat(2, completion_tokens=True))
    path = tmp_path / "odd.jsonl"
    path.write_text("\n".join(lines) + "\n")
    res, _ = _both([path])
    assert [r.reason for r in res.rejected] == [
        "usage.completion_tokens is not a number: a JSON object",
        "usage.completion_tokens is not a number: true",
    ]
