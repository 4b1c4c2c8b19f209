"""Public production traces by their columns, the prefix share derived from hash_ids, Parquet, and input sources."""

from __future__ import annotations

import csv
import datetime as dt
import gzip
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from planner.cli import cli
from planner.logs import LogFormatError, ReaderPolicy, read_logs, summarize
from planner.logs.prefix import PrefixCache

SAMPLES = Path(__file__).resolve().parents[3] / "assets" / "sample_logs"


def nearest_rank(values, p):
    s = sorted(values)
    return s[max(1, math.ceil(p * len(s))) - 1]


def csv_column(path: Path, column: str) -> list[int]:
    with open(path, newline="") as fh:
        return [int(r[column]) for r in csv.DictReader(fh)]


@pytest.mark.parametrize(
    "file, fmt, prompt_col, output_col",
    [
        ("azure_code_2023.csv", "azure", "ContextTokens", "GeneratedTokens"),
        ("azure_2024_synthetic.csv", "azure", "ContextTokens", "GeneratedTokens"),
        ("burstgpt_synthetic.csv", "burstgpt", "Request tokens", "Response tokens"),
    ],
)
def test_csv_traces_are_recognised_and_percentiles_match_an_independent_computation(file, fmt, prompt_col, output_col):
    res = read_logs([SAMPLES / file])
    assert res.formats == {file: fmt} and res.n_rejected == 0
    prompts, outputs = csv_column(SAMPLES / file, prompt_col), csv_column(SAMPLES / file, output_col)
    s = summarize(res.frame)
    assert s.n == len(prompts)
    for p in (0.5, 0.9, 0.95, 0.99):
        key = f"p{round(p * 100)}"
        assert s.prompt[key].value == nearest_rank(prompts, p)
        assert s.output[key].value == nearest_rank(outputs, p)


def test_azure_times_are_absolute_and_burstgpt_times_count_from_a_start_date_that_is_labelled():
    azure = read_logs([SAMPLES / "azure_code_2023.csv"])
    first = dt.datetime(2023, 11, 16, 18, 17, 3, 979960, tzinfo=dt.UTC)
    assert int(azure.frame["ts_ms"].iloc[0]) == round(first.timestamp() * 1000) and azure.notes == []

    burst = read_logs([SAMPLES / "burstgpt_synthetic.csv"])
    offsets = [float(r["Timestamp"]) for r in csv.DictReader(open(SAMPLES / "burstgpt_synthetic.csv", newline=""))]
    day0 = int(dt.datetime(2024, 1, 1, tzinfo=dt.UTC).timestamp() * 1000)
    assert burst.frame["ts_ms"].tolist() == [day0 + round(o * 1000) for o in offsets]
    assert any("2024-01-01" in n and "default" in n for n in burst.notes)
    failed = sum(
        1 for r in csv.DictReader(open(SAMPLES / "burstgpt_synthetic.csv", newline="")) if r["Response tokens"] == "0"
    )
    assert failed and any(f"{failed} requests with 0 response tokens" in n for n in burst.notes)
    placed = read_logs([SAMPLES / "burstgpt_synthetic.csv"], start="2025-03-03T08:00", tz="Europe/Berlin")
    start = int(dt.datetime(2025, 3, 3, 7, 0, tzinfo=dt.UTC).timestamp() * 1000)  # 08:00 CET
    assert int(placed.frame["ts_ms"].iloc[0]) == start + round(offsets[0] * 1000)
    assert not any("default" in n for n in placed.notes)


def test_mooncake_sample_percentiles_and_derived_cache_share():
    recs = [json.loads(line) for line in open(SAMPLES / "mooncake_conversation.jsonl")]
    res = read_logs([SAMPLES / "mooncake_conversation.jsonl"])
    assert res.formats == {"mooncake_conversation.jsonl": "mooncake"}
    s = summarize(res.frame)
    assert s.prompt["p50"].value == nearest_rank([r["input_length"] for r in recs], 0.5)
    assert s.prompt["p95"].value == nearest_rank([r["input_length"] for r in recs], 0.95)
    # Independent count: block 0 is the only one shared in these rows, so every request after the first reuses
    # exactly one 512-token block (capped at its prompt).
    expected = sum(min(512, r["input_length"]) for r in recs[1:] if r["hash_ids"][:1] == [0])
    assert int(res.frame["cached_tokens"].sum()) == expected
    assert any("derived from hash_ids" in n and "tail-first prefix cache" in n for n in res.notes)


def test_prefix_share_from_hash_ids_on_a_hand_built_trace_under_a_small_lru():
    lines = [
        {"timestamp": 0, "input_length": 1500, "output_length": 5, "hash_ids": [1, 2, 3]},
        {"timestamp": 10, "input_length": 2000, "output_length": 5, "hash_ids": [1, 2, 4, 5]},  # 2 leading blocks hit
        {"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [9, 1]},  # first block misses: no hit
        {"timestamp": 30, "input_length": 300, "output_length": 5, "hash_ids": [1]},  # 1 block, capped at 300 tokens
        {"timestamp": 40, "input_length": 1024, "output_length": 5, "hash_ids": [3, 7]},  # 3 evicted by then (LRU of 4)
    ]
    data = "\n".join(json.dumps(x) for x in lines).encode()
    res = read_logs([("hand.jsonl", data)], cache_blocks=4)
    assert res.frame["cached_tokens"].tolist() == [0, 1024, 0, 300, 0]
    assert read_logs([("hand.jsonl", data)], cache_blocks=100).frame["cached_tokens"].tolist() == [0, 1024, 0, 300, 512]
    cache = PrefixCache(2, block_tokens=10)  # vLLM's rule: a request's blocks are freed tail first (issue 45)
    assert [cache.hit_blocks(h) for h in ([1, 2], [1, 2], [3], [1])] == [0, 2, 0, 1]  # [3] evicts 2: 1 stays
    lru = PrefixCache(2, block_tokens=10, eviction="lru")
    assert [lru.hit_blocks(h) for h in ([1, 2], [1, 2], [3], [1])] == [0, 2, 0, 0]  # [3] evicts 1, the prefix


def test_parquet_round_trip_keeps_every_number(tmp_path):
    src = read_logs([SAMPLES / "requests.csv"]).frame
    table = pa.table(
        {
            "created_at": pa.array(src["ts_ms"].to_numpy(), pa.timestamp("ms", tz="UTC")),
            "model": src["model"].tolist(),
            "input_tokens": src["prompt_tokens"].to_numpy(),
            "cached_tokens": src["cached_tokens"].to_numpy(),
            "output_tokens": src["output_tokens"].to_numpy(),
            "prompt_text": ["secret"] * len(src),
        }
    )
    pq.write_table(table, tmp_path / "reqs.parquet")
    res = read_logs([tmp_path / "reqs.parquet"])
    assert res.formats == {"reqs.parquet": "parquet"} and res.n_rejected == 0
    for col in ("ts_ms", "model", "prompt_tokens", "cached_tokens", "output_tokens"):
        assert res.frame[col].tolist() == src[col].tolist()
    # The same bytes as an upload read the same.
    up = read_logs([("reqs.parquet", (tmp_path / "reqs.parquet").read_bytes())])
    assert up.frame["prompt_tokens"].tolist() == src["prompt_tokens"].tolist()


def test_bad_traces_give_one_line_naming_the_file_and_the_column_wanted(tmp_path):
    pq.write_table(
        pa.table({"timestamp": [1_764_000_000, 1_764_000_001], "model": ["a", "b"]}), tmp_path / "no-tokens.parquet"
    )
    with pytest.raises(LogFormatError) as err:
        read_logs([tmp_path / "no-tokens.parquet"])
    msg = str(err.value)
    assert (
        "\n" not in msg and "no-tokens.parquet" in msg and "no prompt-token column" in msg and "timestamp, model" in msg
    )
    (tmp_path / "no-times.csv").write_text("ContextTokens,GeneratedTokens\n100,5\n")
    with pytest.raises(LogFormatError) as err:
        read_logs([tmp_path / "no-times.csv"])
    msg = str(err.value)
    assert "\n" not in msg and "no-times.csv" in msg and "no time column" in msg


def test_directories_globs_gzip_and_zstd_are_one_reader(tmp_path):
    body = (SAMPLES / "azure_code_2023.csv").read_bytes()
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.csv.gz").write_bytes(gzip.compress(body))
    with pa.CompressedOutputStream(str(tmp_path / "d" / "b.csv.zst"), "zstd") as out:
        out.write(body)
    (tmp_path / "d" / "notes.md").write_text("not a log")
    runner = CliRunner()
    for target in (tmp_path / "d", tmp_path / "d" / "*.csv.*"):
        r = runner.invoke(cli, ["logs", "summarize", str(target), "--json"])
        assert r.exit_code == 0, r.output
        out = json.loads(r.output)
        assert out["n"] == 2 * 224 and out["formats"] == {"a.csv.gz": "azure", "b.csv.zst": "azure"}


@pytest.mark.parametrize(
    "file", ["azure_code_2023.csv", "azure_2024_synthetic.csv", "burstgpt_synthetic.csv", "mooncake_conversation.jsonl"]
)
def test_whatif_replays_each_public_format(file):
    sls = "serverless:name=sls,window=600,cold=20,slots=8,max=4,prefill=12000,decode=60,rtt=40,usd_per_mtok=0.3"
    r = CliRunner().invoke(cli, ["whatif", "--log", str(SAMPLES / file), "--deployment", sls, "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    n = sum(1 for _ in open(SAMPLES / file)) - (0 if file.endswith(".jsonl") else 1)
    assert out["n_requests"] == n and out["candidates"][0]["ok"]
    if not file.startswith("azure"):  # Azure times are absolute; the others count from a start that is noted
        assert any("relative" in note for note in out["notes"])


def test_whatif_takes_the_same_mapping_as_summarize(tmp_path):
    sls = "serverless:name=sls,window=600,cold=20,slots=8,max=4,prefill=12000,decode=60,rtt=40,usd_per_mtok=0.3"
    args = ["--map", "ts=started", "--map", "prompt_tokens=tok_in_total", "--map", "cached_tokens=tok_in_hit"]
    r = CliRunner().invoke(
        cli, ["whatif", "--log", str(SAMPLES / "gateway_custom_columns.csv"), *args, "--deployment", sls, "--json"]
    )
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["n_requests"] == 200


def test_devices_and_fifos_are_refused_not_read(tmp_path):
    with pytest.raises(LogFormatError, match="not a regular file"):
        read_logs(["/dev/zero"])
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    # No writer: opening the FIFO would block forever; the reader must refuse it without opening it.
    code = (
        "from planner.logs import read_logs, LogFormatError\n"
        f"try:\n    read_logs([{str(fifo)!r}])\nexcept LogFormatError as e:\n    print(e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=Path(__file__).resolve().parents[3],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])},
    )
    assert "pipe.jsonl: not a regular file" in out.stdout


def test_deeply_nested_json_is_a_rejected_line_not_a_crash():
    deep = b'{"a":' * 100_000 + b"1" + b"}" * 100_000
    good = json.dumps({"timestamp": "2026-11-20T09:00:00Z", "prompt_tokens": 10}).encode()
    res = read_logs([("deep.jsonl", good + b"\n" + deep + b"\n" + good)])
    assert len(res.frame) == 2 and [(r.line_no, "nested too deeply" in r.reason) for r in res.rejected] == [(2, True)]
    with pytest.raises(LogFormatError, match="nested too deeply"):
        read_logs([("deep.json", b"[" * 200_000 + b"]" * 200_000)])


def test_a_parquet_file_reads_the_same_in_duckdb_and_in_python_and_a_bad_row_is_named_by_its_row(tmp_path):
    n = 1000
    ts = [1_764_000_000_123_456 + i * 1_001_500 for i in range(n)]  # µs, sub-ms parts round as Python rounds
    good = pa.table(
        {
            "ts": pa.array(ts, pa.timestamp("us", tz="UTC")),
            "prompt_tokens": list(range(100, 100 + n)),
            "cached_tokens": [i % 50 for i in range(n)],
            "output_tokens": [7] * n,
            "model": ["m"] * n,
        }
    )
    bad = good.set_column(1, "prompt_tokens", pa.array([None if i == 500 else 100 + i for i in range(n)], pa.int64()))
    pq.write_table(good, tmp_path / "good.parquet")
    pq.write_table(bad, tmp_path / "bad.parquet")
    fast = read_logs([tmp_path / "good.parquet"]).frame
    python = read_logs([tmp_path / "good.parquet"], policy=ReaderPolicy(engine="python")).frame
    slow = read_logs([tmp_path / "bad.parquet"])
    assert [(r.line_no, r.unit, "missing prompt_tokens" in r.reason) for r in slow.rejected] == [(501, "row", True)]
    assert str(slow.rejected[0]).startswith("bad.parquet row 501: ")  # a Parquet row is not called a line
    keep = fast.drop(index=500).reset_index(drop=True)
    for col in ("ts_ms", "prompt_tokens", "cached_tokens", "output_tokens", "model"):
        assert slow.frame[col].tolist() == keep[col].tolist()
        assert python[col].tolist() == fast[col].tolist()


@pytest.mark.parametrize(
    "file",
    [
        "azure_code_2023.csv",
        "azure_2024_synthetic.csv",
        "burstgpt_synthetic.csv",
        "requests.csv",
        "csv_quirks/semicolons.csv",
        "csv_quirks/quoted_line_breaks.csv",
    ],
)
def test_csv_files_read_the_same_in_duckdb_and_in_the_python_record_reader(file, tmp_path):
    src = (Path(__file__).parent / file) if file.startswith("csv_quirks") else SAMPLES / file
    rows = read_logs([src], tz="UTC", policy=ReaderPolicy(engine="python"))  # the reference
    (tmp_path / "big.csv.gz").write_bytes(gzip.compress(src.read_bytes()))
    for path in (src, tmp_path / "big.csv.gz"):
        streamed = read_logs([path], tz="UTC")
        assert streamed.n_rejected == 0
        assert list(streamed.formats.values()) == list(rows.formats.values())
        assert streamed.notes == [n.replace(src.name, path.name) for n in rows.notes]
        for col in ("ts_ms", "prompt_tokens", "cached_tokens", "output_tokens", "model"):
            assert streamed.frame[col].tolist() == rows.frame[col].tolist(), col


def test_a_csv_with_a_bad_row_names_it_by_its_line_and_reads_the_rest(tmp_path):
    lines = ["TIMESTAMP,ContextTokens,GeneratedTokens"] + [f"2024-05-10 00:00:{i:02d},{100 + i},5" for i in range(50)]
    lines[31] = "2024-05-10 00:00:30,-4,5"
    (tmp_path / "azure.csv").write_text("\n".join(lines) + "\n")
    res = read_logs([tmp_path / "azure.csv"])
    assert len(res.frame) == 49 and [(r.line_no, "negative" in r.reason) for r in res.rejected] == [(32, True)]
