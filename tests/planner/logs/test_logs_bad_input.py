"""Bad input: what parsed is still summarised, rejects carry line numbers and reasons, nothing crashes."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from planner.logs import LogFormatError, ReaderPolicy, read_logs
from planner.logs.opening import MAX_GZIP_RATIO

SAMPLES = Path(__file__).resolve().parents[3] / "assets" / "sample_logs"


def chat(i: int, prompt=1000, cached=0, output=10, created=None) -> dict:
    return {
        "object": "chat.completion",
        "created": 1764000000 + i if created is None else created,
        "model": "m",
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": output,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }


def jsonl(records) -> bytes:
    return b"\n".join(r if isinstance(r, bytes) else json.dumps(r).encode() for r in records)


def reasons(res) -> dict[int, str]:
    return {r.line_no: r.reason for r in res.rejected}


def test_malformed_lines_are_rejected_with_line_numbers_and_the_rest_is_read():
    lines = [chat(i) for i in range(10)]
    lines[3] = b'{"object": "chat.completion", "created": 1'  # cut off
    lines[7] = b"not json at all"
    res = read_logs([("a.jsonl", jsonl(lines))])
    assert len(res.frame) == 8 and res.n_rejected == 2
    got = reasons(res)
    assert set(got) == {4, 8} and all("not valid JSON" in r for r in got.values())


def test_missing_negative_and_inconsistent_counts():
    lines = [
        chat(0),
        chat(1, prompt=-5),
        chat(2),
        chat(3, cached=2000),
        {"object": "chat.completion", "created": 1764000004, "model": "m", "usage": {"completion_tokens": 3}},
        {"object": "chat.completion", "created": 1764000005, "model": "m"},
        chat(6, prompt="12x"),
    ]
    res = read_logs([("a.jsonl", jsonl(lines))])
    assert len(res.frame) == 2
    got = reasons(res)
    assert "negative" in got[2]
    assert "exceed prompt tokens" in got[4]
    assert "missing usage.prompt_tokens" in got[5]
    assert "no usage object" in got[6]
    assert "not a number" in got[7]


def test_unparseable_timestamps():
    good = {"timestamp": "2026-11-20T09:00:00Z", "model": "m", "prompt_tokens": 10}
    rows = [good, {**good, "timestamp": "yesterday-ish"}, {**good, "timestamp": -3}, {**good, "timestamp": None}]
    res = read_logs([("a.jsonl", jsonl(rows))])
    assert len(res.frame) == 1
    got = reasons(res)
    assert "not ISO 8601" in got[2] and "not a time" in got[3] and "missing timestamp" in got[4]


def test_csv_rows_with_bad_fields():
    text = (
        "timestamp,model,prompt_tokens,completion_tokens\n"
        "2026-11-20T09:00:00Z,m,100,5\n"
        "2026-11-20T09:00:01Z,m,-1,5\n"
        "2026-11-20T09:00:02Z,m,100\n"
        "32/13/2026,m,100,5\n"
        "2026-11-20T09:00:04Z,m,100,5\n"
    )
    res = read_logs([("r.csv", text.encode())])
    assert len(res.frame) == 2
    got = reasons(res)
    assert "negative" in got[3] and "has 3 fields" in got[4] and "not ISO 8601" in got[5]


def test_wrong_encodings():
    # A latin-1 line in a UTF-8 log: that line is rejected, the rest is read.
    lines = [chat(0), json.dumps({**chat(1), "model": "modèle"}, ensure_ascii=False).encode("latin-1"), chat(2)]
    res = read_logs([("a.jsonl", jsonl(lines))])
    assert len(res.frame) == 2 and "not valid UTF-8" in reasons(res)[2]
    # UTF-16 with a BOM (PowerShell's default) and UTF-8 with a BOM are read whole.
    text = jsonl([chat(i) for i in range(3)]).decode()
    assert len(read_logs([("u16.jsonl", text.encode("utf-16"))]).frame) == 3
    assert len(read_logs([("bom.jsonl", b"\xef\xbb\xbf" + text.encode())]).frame) == 3
    csv_text = "timestamp,prompt_tokens\n2026-11-20T09:00:00Z,5\n2026-11-20T09:00:01Z,6\n"
    assert len(read_logs([("u16.csv", csv_text.encode("utf-16"))]).frame) == 2


def test_mixed_formats_in_one_file_name_the_intruder():
    anth = {
        "timestamp": "2026-11-20T09:00:00Z",
        "type": "message",
        "model": "c",
        "usage": {"input_tokens": 5, "output_tokens": 1},
    }
    lines = [chat(i) for i in range(6)] + [anth]
    res = read_logs([("mixed.jsonl", jsonl(lines))])
    assert res.formats == {"mixed.jsonl": "openai_chat"}
    assert len(res.frame) == 6
    assert "looks like a anthropic record" in reasons(res)[7]


def test_empty_file_alone_is_one_clear_error_and_beside_others_is_one_reject():
    with pytest.raises(LogFormatError, match="empty file"):
        read_logs([("empty.jsonl", b"")])
    res = read_logs([("empty.jsonl", b"  \n"), SAMPLES / "requests.csv"])
    assert len(res.frame) == 400
    assert [(r.source, r.line_no, r.reason) for r in res.rejected] == [("empty.jsonl", 0, "empty file")]


def test_nothing_parses_says_what_was_expected():
    with pytest.raises(LogFormatError) as err:
        read_logs([("notes.txt", b"hello\nworld\n")])
    msg = str(err.value)
    # One sentence naming the file and what it looked for, not a list of every internal format.
    assert msg.startswith("Nothing could be read: notes.txt: no time column") and "openai_chat" not in msg
    assert msg.count("\n") == 0 and len(msg) < 300
    with pytest.raises(LogFormatError, match=r"odd.jsonl: no time column .* among its fields \(colour, size\)"):
        read_logs([("odd.jsonl", jsonl([{"colour": "red", "size": 3}]))])


def test_file_over_the_size_limit_is_refused_and_others_still_read():
    big = jsonl([chat(i) for i in range(200)])
    res = read_logs([("big.jsonl", big), ("small.jsonl", jsonl([chat(0)]))], max_bytes=len(big) - 1)
    assert len(res.frame) == 1
    assert (
        res.rejected[0].source == "big.jsonl"
        and "over the" in res.rejected[0].reason
        and "size limit" in res.rejected[0].reason
    )


def test_gzip_bomb_is_refused_without_inflating_it(tmp_path):
    # 50 gzip members of 4 MB of zeros each, ~200 KB → 200 MB (the reader follows concatenated members)
    bomb = gzip.compress(b"\0" * (4 * 1024 * 1024), compresslevel=9) * 50
    assert len(bomb) * MAX_GZIP_RATIO < 200 * 1024 * 1024
    path = tmp_path / "bomb.jsonl.gz"
    path.write_bytes(bomb)
    res = read_logs([path, SAMPLES / "requests.csv"])
    assert len(res.frame) == 400
    assert "gzip bomb" in res.rejected[0].reason
    # A gzip that decompresses past max_bytes is refused too, even at a normal ratio.
    gz = gzip.compress(jsonl([chat(i) for i in range(300)]))
    with pytest.raises(LogFormatError, match="decompresses to more than"):
        read_logs([("a.jsonl.gz", gz)], max_bytes=len(gz) * 2)


def test_corrupt_gzip():
    gz = gzip.compress(jsonl([chat(i) for i in range(300)]))
    with pytest.raises(LogFormatError, match="gzip"):
        read_logs([("a.jsonl.gz", gz[: len(gz) // 2])])


def test_only_the_first_rejects_are_kept_but_the_count_is_exact():
    lines = [b"{" for _ in range(3000)] + [json.dumps(chat(0)).encode()]
    res = read_logs([("a.jsonl", jsonl(lines))])
    assert res.n_rejected == 3000 and len(res.rejected) == 1000 and len(res.frame) == 1
    assert res.rejected[0].line_no == 1


def test_bad_time_zone_is_a_value_error():
    with pytest.raises(ValueError, match="unknown time zone"):
        read_logs([SAMPLES / "requests.csv"], tz="Mars/Olympus")


def test_a_long_log_read_by_the_python_reader_is_kept_whole_in_arrival_order():
    n = 2 * 65_536 + 17  # past two of the Python reader's batches into the table
    lines = [json.dumps({"timestamp": 1_764_000_000_000 + (n - i) * 10, "prompt_tokens": i}).encode() for i in range(n)]
    res = read_logs([("long.jsonl", b"\n".join(lines))], policy=ReaderPolicy(engine="python"))
    assert len(res.frame) == n and res.frame["ts_ms"].is_monotonic_increasing
    assert res.frame["prompt_tokens"].tolist() == list(range(n - 1, -1, -1))
