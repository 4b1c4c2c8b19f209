"""Each supported log format, read from the shipped real-shaped samples and from hand-made records."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import numpy as np
import pytest

from planner.logs import COLUMNS, LogFormatError, ReaderPolicy, TokenCounter, read_logs

SAMPLES = Path(__file__).resolve().parents[3] / "assets" / "sample_logs"


def one(rec: dict, name: str = "x.jsonl", **kw):
    return read_logs([(name, json.dumps(rec).encode())], **kw)


@pytest.mark.parametrize(
    "file,fmt,n,has_ttft",
    [
        ("openai_chat_completions.jsonl", "openai_chat", 400, False),
        ("openai_batch_output.jsonl", "openai_batch", 149, False),
        ("anthropic_messages.jsonl", "anthropic", 400, False),
        ("litellm_spend_logs.json", "litellm", 250, True),
        ("langfuse_observations.json", "langfuse", 250, True),
        ("otel_genai_spans.jsonl", "otel", 200, True),
        ("requests.csv", "csv", 400, True),
    ],
)
def test_every_sample_is_detected_and_read(file, fmt, n, has_ttft):
    res = read_logs([SAMPLES / file])
    assert res.formats == {file: fmt}
    f = res.frame
    assert list(f.columns) == list(COLUMNS)
    assert len(f) == n
    assert f["ts_ms"].dtype == np.int64 and f["prompt_tokens"].dtype == np.int64
    assert f["ts_ms"].is_monotonic_increasing
    assert (f["cached_tokens"] <= f["prompt_tokens"]).all()
    assert (f["prompt_tokens"] > 0).all() and f["model"].str.len().gt(0).all()
    assert f["ttft_ms"].notna().all() == has_ttft
    assert set(f["source"]) == {file}


def test_the_same_traffic_gives_the_same_numbers_in_every_format():
    # The samples are one generated trace written in each format, so the overlapping rows agree.
    chat = read_logs([SAMPLES / "openai_chat_completions.jsonl"]).frame
    anth = read_logs([SAMPLES / "anthropic_messages.jsonl"]).frame
    csv_ = read_logs([SAMPLES / "requests.csv"]).frame
    assert chat["prompt_tokens"].tolist() == anth["prompt_tokens"].tolist() == csv_["prompt_tokens"].tolist()
    assert chat["cached_tokens"].tolist() == anth["cached_tokens"].tolist()
    # chat-completion `created` has second resolution; the others keep ms
    assert (np.abs(chat["ts_ms"].to_numpy() - csv_["ts_ms"].to_numpy()) < 1000).all()
    lf = read_logs([SAMPLES / "langfuse_observations.json"]).frame
    lite = read_logs([SAMPLES / "litellm_spend_logs.json"]).frame
    assert lf["prompt_tokens"].tolist() == lite["prompt_tokens"].tolist() == csv_["prompt_tokens"].tolist()[:250]
    assert lf["cached_tokens"].tolist() == lite["cached_tokens"].tolist()


def test_openai_chat_counts_include_cached_tokens():
    res = one(
        {
            "object": "chat.completion",
            "created": 1764000000,
            "model": "gpt-4.1",
            "usage": {
                "prompt_tokens": 2006,
                "completion_tokens": 300,
                "prompt_tokens_details": {"cached_tokens": 1920},
            },
        }
    )
    row = res.frame.iloc[0]
    assert (row.ts_ms, row.model, row.prompt_tokens, row.cached_tokens, row.output_tokens) == (
        1764000000000,
        "gpt-4.1",
        2006,
        1920,
        300,
    )


def test_openai_responses_api_object():
    res = one(
        {
            "object": "response",
            "created_at": 1764000000,
            "model": "gpt-5",
            "usage": {"input_tokens": 500, "input_tokens_details": {"cached_tokens": 100}, "output_tokens": 20},
        }
    )
    row = res.frame.iloc[0]
    assert (row.prompt_tokens, row.cached_tokens, row.output_tokens) == (500, 100, 20)


def test_anthropic_whole_prompt_adds_cache_reads_and_writes():
    res = one(
        {
            "timestamp": "2026-11-20T09:00:00Z",
            "response": {
                "type": "message",
                "model": "claude-sonnet-4-5",
                "usage": {
                    "input_tokens": 50,
                    "cache_read_input_tokens": 1000,
                    "cache_creation_input_tokens": 200,
                    "output_tokens": 7,
                },
            },
        }
    )
    row = res.frame.iloc[0]
    assert (row.prompt_tokens, row.cached_tokens, row.output_tokens) == (1250, 1000, 7)


def test_anthropic_without_a_timestamp_says_why():
    with pytest.raises(LogFormatError, match="Anthropic responses carry none"):
        one({"type": "message", "model": "m", "usage": {"input_tokens": 5, "output_tokens": 1}})


def test_litellm_ttft_is_completion_start_minus_start():
    res = one(
        {
            "request_id": "r1",
            "call_type": "acompletion",
            "spend": 0.01,
            "model": "gpt-4.1",
            "startTime": "2026-11-20T09:00:00.000+00:00",
            "completionStartTime": "2026-11-20T09:00:00.412+00:00",
            "endTime": "2026-11-20T09:00:02.000+00:00",
            "prompt_tokens": 900,
            "completion_tokens": 40,
            "metadata": json.dumps({"additional_usage_values": {"prompt_tokens_details": {"cached_tokens": 512}}}),
        }
    )
    row = res.frame.iloc[0]
    assert (row.ttft_ms, row.duration_ms, row.cached_tokens) == (412.0, 2000.0, 512)


def test_langfuse_spans_are_skipped_not_rejected():
    res = read_logs([SAMPLES / "langfuse_observations.json"])
    assert res.n_rejected == 0 and res.n_skipped > 0


def test_otel_http_spans_are_not_requests_and_first_token_event_gives_ttft():
    span = {
        "name": "chat m",
        "startTimeUnixNano": "1764000000000000000",
        "endTimeUnixNano": "1764000001500000000",
        "attributes": [
            {"key": "gen_ai.request.model", "value": {"stringValue": "m"}},
            {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "800"}},
            {"key": "gen_ai.usage.output_tokens", "value": {"intValue": 12}},
        ],
        "events": [{"name": "gen_ai.first_token", "timeUnixNano": "1764000000250000000"}],
    }
    http = {"name": "POST", "startTimeUnixNano": "1764000000000000000", "attributes": []}
    res = one({"resourceSpans": [{"scopeSpans": [{"spans": [span, http]}]}]})
    assert len(res.frame) == 1 and res.n_rejected == 0
    row = res.frame.iloc[0]
    assert (row.ts_ms, row.prompt_tokens, row.ttft_ms, row.duration_ms) == (1764000000000, 800, 250.0, 1500.0)


def test_csv_with_custom_columns_needs_a_mapping_and_then_reads_local_times():
    path = SAMPLES / "gateway_custom_columns.csv"
    with pytest.raises(LogFormatError) as err:
        read_logs([path])
    assert "tok_in_total" in err.value.columns  # the page offers these in its mapping form
    mapping = {
        "ts": "started",
        "model": "llm",
        "prompt_tokens": "tok_in_total",
        "cached_tokens": "tok_in_hit",
        "output_tokens": "tok_out",
        "ttft_s": "first_byte_s",
    }
    res = read_logs([path], mapping=mapping, tz="Europe/Berlin")
    assert len(res.frame) == 200 and res.mapping == mapping
    ref = read_logs([SAMPLES / "requests.csv"]).frame.iloc[:200]
    # local Berlin wall-clock (UTC+1 in November) read back to the same UTC instants, to the second
    assert (np.abs(res.frame["ts_ms"].to_numpy() - ref["ts_ms"].to_numpy()) < 1000).all()
    assert np.allclose(res.frame["ttft_ms"], ref["ttft_ms"], atol=1.0)


def test_json_mapping_uses_dotted_paths():
    rec = {"when": 1764000000123, "llm": {"name": "qwen"}, "stats": {"in": 70, "hit": 10, "out": 3}}
    res = one(
        rec,
        mapping={
            "ts": "when",
            "model": "llm.name",
            "prompt_tokens": "stats.in",
            "cached_tokens": "stats.hit",
            "output_tokens": "stats.out",
        },
    )
    row = res.frame.iloc[0]
    assert res.formats == {"x.jsonl": "mapped"}
    assert (row.ts_ms, row.model, row.prompt_tokens, row.cached_tokens) == (1764000000123, "qwen", 70, 10)


def test_text_without_counts_is_a_labelled_estimate():
    res = read_logs([SAMPLES / "prompts_without_counts.jsonl"])
    assert res.tokens_estimated and "estimate" in res.token_counter
    first = json.loads((SAMPLES / "prompts_without_counts.jsonl").read_text().splitlines()[0])
    chars = len("\n".join(m["content"] for m in first["messages"]))
    assert res.frame["prompt_tokens"].iloc[0] == math.ceil(chars / 4)


def test_gzip_and_json_array_and_several_files_at_once(tmp_path):
    data = (SAMPLES / "openai_chat_completions.jsonl").read_bytes()
    gz = tmp_path / "chat.jsonl.gz"
    gz.write_bytes(gzip.compress(data))
    arr = tmp_path / "chat.json"
    arr.write_text(json.dumps([json.loads(line) for line in data.decode().splitlines()[:50]]))
    res = read_logs([gz, arr, SAMPLES / "requests.csv"])
    assert res.formats == {"chat.jsonl.gz": "openai_chat", "chat.json": "openai_chat", "requests.csv": "csv"}
    assert len(res.frame) == 400 + 50 + 400
    assert res.frame["ts_ms"].is_monotonic_increasing


def test_explicit_format_is_respected():
    res = read_logs([SAMPLES / "openai_batch_output.jsonl"], fmt="openai_batch")
    assert res.formats["openai_batch_output.jsonl"] == "openai_batch"
    with pytest.raises(ValueError, match="unknown log format"):
        read_logs([SAMPLES / "requests.csv"], fmt="parquet")


def test_token_counter_estimate():
    c = TokenCounter()
    assert c.estimated and c.count("") == 0 and c.count("abcdefghi") == 3


def _word_tokenizer_json() -> bytes:
    """A real (tiny) Hugging Face tokenizer.json: one token per whitespace-separated word."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    tok = Tokenizer(WordLevel({"[UNK]": 0, "fix": 1, "the": 2, "bug": 3}, unk_token="[UNK]"))
    tok.pre_tokenizer = Whitespace()
    return tok.to_str().encode()


def test_a_supplied_tokenizer_gives_exact_counts_not_an_estimate():
    counter = TokenCounter.from_tokenizer_json(_word_tokenizer_json(), "words.json")
    rec = {"timestamp": "2026-11-20T09:00:00Z", "model": "m", "prompt": "fix the bug in parser.py please"}
    res = one(rec, tokenizer=counter)
    assert not res.tokens_estimated and res.token_counter == "tokenizer words.json"
    assert res.frame["prompt_tokens"].iloc[0] == 8  # fix the bug in parser . py please
    assert one(rec).frame["prompt_tokens"].iloc[0] == math.ceil(len(rec["prompt"]) / 4)
    with pytest.raises(ValueError, match="not a Hugging Face tokenizer.json"):
        TokenCounter.from_tokenizer_json(b'{"hello": 1}', "bad.json")


def test_duckdb_and_the_python_record_reader_agree():
    data = (SAMPLES / "openai_chat_completions.jsonl").read_bytes()
    fast = read_logs([("a.jsonl", data)])
    slow = read_logs([("a.jsonl", data + b"{broken\n")], policy=ReaderPolicy(engine="python"))
    assert slow.n_rejected == 1 and slow.rejected[0].line_no == 401
    assert fast.frame.drop(columns="model").equals(slow.frame.drop(columns="model"))
    assert fast.frame["model"].tolist() == slow.frame["model"].tolist()


def test_a_large_file_on_disk_is_streamed_and_still_explains_bad_lines(tmp_path):
    data = (SAMPLES / "openai_chat_completions.jsonl").read_bytes()
    good = tmp_path / "good.jsonl"
    good.write_bytes(data)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(
        data + b'{"object": "chat.completion", "created": 1764000000, "model": "m", '
        b'"usage": {"prompt_tokens": -1, "completion_tokens": 1}}\n'
    )
    from_disk = read_logs([good]).frame
    in_memory = read_logs([("good.jsonl", data)]).frame
    assert from_disk.drop(columns="model").equals(in_memory.drop(columns="model"))
    res = read_logs([bad])
    assert len(res.frame) == 400 and res.rejected[0].line_no == 401 and "negative" in res.rejected[0].reason


def test_chat_jsonl_on_disk_streams_plain_gzip_and_zstd_past_the_in_memory_cap(tmp_path):
    import gzip

    import pyarrow as pa

    data = (SAMPLES / "openai_chat_completions.jsonl").read_bytes()
    (tmp_path / "a.jsonl.gz").write_bytes(gzip.compress(data))
    with pa.CompressedOutputStream(str(tmp_path / "a.jsonl.zst"), "zstd") as out:
        out.write(data)
    in_memory = read_logs([("a.jsonl", data)]).frame
    for name in ("a.jsonl.gz", "a.jsonl.zst"):
        seen: list[float] = []
        # The cap is for what is held in memory; a streamed file is held only as its numbers.
        res = read_logs([tmp_path / name], max_bytes=1000, progress=lambda f, m, seen=seen: seen.append(f))
        assert res.n_rejected == 0
        assert res.frame.drop(columns=["source", "model"]).equals(in_memory.drop(columns=["source", "model"]))
        assert res.frame["model"].tolist() == in_memory["model"].tolist()
        assert seen == sorted(seen) and seen[0] == 0.0 and seen[-1] <= 1.0  # the bar only moves forward


def test_every_sample_offered_on_the_page_reads_without_a_mapping_except_the_custom_one():
    from planner.logs.samples import samples

    offered = samples()
    assert {
        "azure_code_2023.csv",
        "burstgpt_synthetic.csv",
        "mooncake_conversation.jsonl",
        "litellm_spend_logs.csv",
    } <= set(offered)
    for name in offered:
        if name == "gateway_custom_columns.csv":  # the sample that shows the mapping form
            with pytest.raises(LogFormatError):
                read_logs([SAMPLES / name])
            continue
        res = read_logs([SAMPLES / name])
        assert len(res.frame) > 50, name
        assert res.n_rejected <= 1, (name, res.rejected[:3])  # the batch sample holds one expired request
