"""Issue 42 item 17: the prefix reader (`ttft-planner prefix`, and the Prefix cache tab's reader) opens a trace the
way `logs summarize` opens a log — .gz / .zst inflated under the same size and bomb caps, invalid UTF-8 and deep JSON
refused line by line — and a line it cannot use is a named rejected line (file:line: why), counted, the rest read.

Before: a 200k-deep line, invalid UTF-8, any .gz / .zst trace and hash_ids holding "a" or null were tracebacks,
1.5 was silently read as 1, and a 3,000-deep array file a RecursionError.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from planner.cli import cli
from planner.kvcache.chains import PrefixTraceError, read_prefix_trace
from planner.logs.read import json_records
from tests.support.hostile_traces import (
    BAD_LINE,
    MOONCAKE,
    WHOLE_FILE,
    bad_line_traces,
    gzip_bomb,
    packed,
    with_bad_line,
)

N_SAMPLE = len(MOONCAKE.read_bytes().splitlines())


def _prefix(path: Path, *extra: str):
    res = CliRunner().invoke(cli, ["prefix", str(path), *extra])
    assert "Traceback" not in res.output, res.output[-2000:]
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res


def _one_error(res) -> str:
    assert res.exit_code == 2, res.output[-1000:]
    errors = [ln for ln in res.output.splitlines() if ln.startswith("Error:")]
    assert len(errors) == 1, res.output
    return errors[0]


@pytest.mark.parametrize("name", bad_line_traces())
@pytest.mark.parametrize("form", ["plain", "gz", "zst"])
def test_a_hostile_line_is_a_named_rejected_line_and_the_rest_is_read(name, form, tmp_path):
    data, reason = with_bad_line(name)
    path = packed(tmp_path, data)[form]
    res = _prefix(path)
    assert res.exit_code == 0, res.output[-1000:]
    head = res.output.splitlines()
    assert head[0].startswith(f"{N_SAMPLE - 1} requests"), head[0]
    assert head[1].startswith(f"1 line rejected, first: {path.name}:{BAD_LINE}: {reason}"), head[1]


@pytest.mark.parametrize("name", bad_line_traces())
def test_the_pages_reader_names_the_same_line_from_an_upload(name):
    data, reason = with_bad_line(name)
    trace = read_prefix_trace(("team.jsonl", data))  # how the Prefix cache tab reads an upload, in memory
    assert len(trace.requests) == N_SAMPLE - 1 and trace.n_rejected == 1
    assert str(trace.rejected[0]).startswith(f"team.jsonl:{BAD_LINE}: {reason}")


def test_the_json_output_counts_and_names_the_rejected_lines(tmp_path):
    data, reason = with_bad_line("hash_a")
    out = json.loads(_prefix(packed(tmp_path, data)["plain"], "--json").output)
    assert out["requests"] == N_SAMPLE - 1 and out["n_rejected"] == 1
    assert out["rejected"] == [{"source": "trace.jsonl", "line_no": BAD_LINE, "reason": reason}]


@pytest.mark.parametrize("name", list(WHOLE_FILE))
def test_a_file_with_no_readable_record_is_one_line_naming_it(name, tmp_path):
    data, says = WHOLE_FILE[name]
    path = tmp_path / f"{name}.json"
    path.write_bytes(data)
    line = _one_error(_prefix(path))
    assert "FILE" in line and f"{path.name}: {says}" in line
    with pytest.raises(PrefixTraceError, match="JSON nested too deeply"):
        read_prefix_trace((path.name, data))


@pytest.mark.parametrize("form", ["gz", "zst"])
def test_a_compressed_trace_gives_the_figures_of_the_plain_one(form, tmp_path):
    files = packed(tmp_path, MOONCAKE.read_bytes())
    args = ["--model", "llama-3.1-8b", "--gpu", "H100", "--replicas", "1,2", "--json"]
    plain = json.loads(_prefix(files["plain"], *args).output)
    other = json.loads(_prefix(files[form], *args).output)
    assert plain["requests"] == N_SAMPLE and plain["n_rejected"] == 0
    assert {**other, "file": None} == {**plain, "file": None}


def test_a_gzip_bomb_is_refused_as_the_log_reader_refuses_it(tmp_path):
    bomb = gzip_bomb(tmp_path / "bomb.jsonl.gz")
    with pytest.raises(ValueError, match="likely gzip bomb") as by_logs:
        json_records(bomb)  # the log reader's own opening
    line = _one_error(_prefix(bomb))
    assert str(by_logs.value) in line


def test_the_size_cap_is_the_log_readers(tmp_path):
    files = packed(tmp_path, MOONCAKE.read_bytes())
    for path in files.values():
        with pytest.raises(PrefixTraceError, match="size limit"):
            read_prefix_trace(path, max_bytes=1000)


def test_a_truncated_gzip_trace_is_one_line_naming_it(tmp_path):
    gz = packed(tmp_path, MOONCAKE.read_bytes())["gz"]
    gz.write_bytes(gz.read_bytes()[:-40])
    line = _one_error(_prefix(gz))
    assert "trace.jsonl.gz is a truncated gzip file" in line
