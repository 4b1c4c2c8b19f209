"""`ttft-planner logs …` through click's runner: output a user reads, exit codes, the store commands."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from planner.cli import cli

SAMPLES = Path(__file__).resolve().parents[3] / "assets" / "sample_logs"


def run(*args):
    return CliRunner().invoke(cli, list(map(str, args)))


def test_summarize_text_output():
    r = run("logs", "summarize", SAMPLES / "openai_batch_output.jsonl", "--tz", "Europe/Berlin")
    assert r.exit_code == 0, r.output
    assert "149 requests from openai_batch_output.jsonl (openai_batch)" in r.output
    assert "1 line rejected, first: openai_batch_output.jsonl:38: batch request failed (batch_expired)" in r.output
    assert "prompt tokens (all, n=149)" in r.output and "p95" in r.output
    assert "cold-start exposure" in r.output


def test_summarize_json_has_the_figures_other_tools_need():
    r = run(
        "logs",
        "summarize",
        SAMPLES / "requests.csv",
        SAMPLES / "litellm_spend_logs.json",
        "--json",
        "--workday",
        "08:00-17:00",
    )
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["n"] == 650 and d["workday"] == "08:00-17:00"
    assert d["prompt_tokens"]["p95"]["n"] == 650 and d["prompt_tokens"]["p95"]["reliable"]
    assert d["ttft_ms"]["p50"]["n"] == 650
    assert len(d["hourly"]) == 24 and 0 < d["cached_share"]["token_fraction"] < 1
    assert d["formats"] == {"requests.csv": "csv", "litellm_spend_logs.json": "litellm"}


def test_mapping_flag_reads_custom_csv():
    r = run(
        "logs",
        "summarize",
        SAMPLES / "gateway_custom_columns.csv",
        "--json",
        "--tz",
        "Europe/Berlin",
        "--map",
        "ts=started",
        "--map",
        "prompt_tokens=tok_in_total",
        "--map",
        "cached_tokens=tok_in_hit",
    )
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["n"] == 200


def test_usage_errors_exit_2_with_a_clear_message(tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_text("hello\n")
    r = run("logs", "summarize", bad)
    assert r.exit_code == 2 and "Nothing could be read: notes.txt: no time column" in r.output
    r = run("logs", "summarize", tmp_path / "missing-*.jsonl")
    assert r.exit_code == 2 and "matches no log file" in r.output
    r = run("logs", "summarize", SAMPLES / "requests.csv", "--workday", "9-5")
    assert r.exit_code == 2 and "HH:MM-HH:MM" in r.output
    r = run("logs", "summarize", SAMPLES / "requests.csv", "--tz", "Europe/Atlantis")
    assert r.exit_code == 2 and "unknown time zone" in r.output
    r = run("logs", "summarize", SAMPLES / "requests.csv", "--map", "ts")
    assert r.exit_code == 2 and "FIELD=COLUMN" in r.output


def test_import_list_delete(sqlite_store_url):
    r = run("logs", "import", SAMPLES / "requests.csv", "--name", "office", "--database-url", sqlite_store_url)
    assert r.exit_code == 0, r.output
    assert "stored upload 1: 400 requests, 0 rejected" in r.output
    r = run("logs", "list", "--database-url", sqlite_store_url)
    assert "office" in r.output and "400 requests" in r.output
    assert run("logs", "delete", "1", "--database-url", sqlite_store_url).exit_code == 0
    r = run("logs", "delete", "1", "--database-url", sqlite_store_url)
    assert r.exit_code == 2 and "no log upload with id 1" in r.output


def test_tokenizer_flag_counts_text_exactly(tmp_path):
    from tests.planner.logs.test_logs_readers import _word_tokenizer_json

    tok = tmp_path / "tokenizer.json"
    tok.write_bytes(_word_tokenizer_json())
    log = tmp_path / "prompts.jsonl"
    log.write_text(json.dumps({"timestamp": "2026-11-20T09:00:00Z", "model": "m", "prompt": "fix the bug"}) + "\n")
    d = json.loads(run("logs", "summarize", log, "--json", "--tokenizer", tok).output)
    assert d["prompt_tokens"]["max"]["value"] == 3 and not d["tokens_estimated"]
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    r = run("logs", "summarize", log, "--tokenizer", bad)
    assert r.exit_code == 2 and "not a Hugging Face tokenizer.json" in r.output


def test_progress_moves_by_bytes_on_stderr_when_asked_and_json_on_stdout_stays_clean():
    log = SAMPLES / "openai_chat_completions.jsonl"
    sls = "serverless:name=sls,window=600,cold=20,slots=8,max=4,prefill=12000,decode=60,rtt=40,usd_per_mtok=0.3"
    for args in (["logs", "summarize", log, "--json"], ["whatif", "--log", log, "--deployment", sls, "--json"]):
        quiet = run(*args)  # not a terminal and no --progress: nothing on stderr
        assert quiet.exit_code == 0 and quiet.stderr == ""
        shown = run(*args, "--progress")
        assert shown.exit_code == 0, shown.output
        assert json.loads(shown.stdout) == json.loads(quiet.stdout)
        steps = [s.split("%")[0].strip() for s in shown.stderr.split("\r") if "%" in s]
        assert steps[0] == "0" and steps[-1] == "100" and "reading openai_chat_completions.jsonl" in shown.stderr


def _chat_lines(n: int, bad_line: int | None = None) -> bytes:
    """n minimal OpenAI chat-completion lines (seconds apart, out of order at the end); line bad_line has a negative
    prompt count (valid JSON, so the streamed reader meets it only in its batch, after storing the batches before)."""
    lines = []
    for i in range(n):
        created = 1_764_000_000 + (n - i if i >= n - 3 else i)
        lines.append(
            json.dumps(
                {
                    "object": "chat.completion",
                    "created": created,
                    "model": f"m{i % 3}",
                    "usage": {
                        "prompt_tokens": 1000 + i % 977,
                        "completion_tokens": 1 + i % 50,
                        "prompt_tokens_details": {"cached_tokens": i % 500},
                    },
                },
                separators=(",", ":"),
            )
        )
    if bad_line is not None:
        lines[bad_line - 1] = lines[bad_line - 1].replace('"prompt_tokens":', '"prompt_tokens":-')
    return ("\n".join(lines) + "\n").encode()


def test_import_streams_chat_jsonl_into_the_store_with_every_number_of_the_reader(sqlite_store_url, tmp_path):
    import gzip

    from planner.logs import read_logs
    from planner.store import open_store
    from planner.store.logs import list_uploads, load_upload_frame

    (tmp_path / "a.jsonl").write_bytes(_chat_lines(1000))
    (tmp_path / "b.jsonl.gz").write_bytes(gzip.compress(_chat_lines(500)))
    r = run("logs", "import", tmp_path / "a.jsonl", tmp_path / "b.jsonl.gz", "--database-url", sqlite_store_url)
    assert r.exit_code == 0, r.output
    assert r.stdout == "stored upload 1: 1,500 requests, 0 rejected\n"
    eng = open_store(sqlite_store_url)
    [info] = list_uploads(eng)
    assert (info.name, info.formats) == ("a.jsonl", {"a.jsonl": "openai_chat", "b.jsonl.gz": "openai_chat"})
    want = read_logs([tmp_path / "a.jsonl", tmp_path / "b.jsonl.gz"]).frame
    assert (info.first_ts_ms, info.last_ts_ms) == (int(want["ts_ms"].min()), int(want["ts_ms"].max()))
    got = load_upload_frame(eng, 1)
    for col in ("ts_ms", "model", "prompt_tokens", "cached_tokens", "output_tokens", "source"):
        assert got[col].astype(str).tolist() == want[col].astype(str).tolist(), col


def test_a_bad_line_late_in_an_import_stores_nothing_twice_and_is_named(sqlite_store_url, tmp_path):
    from planner.store import open_store
    from planner.store.logs import list_uploads

    n = 5_000
    (tmp_path / "big.jsonl").write_bytes(_chat_lines(n, bad_line=n - 10))
    r = run("logs", "import", tmp_path / "big.jsonl", "--database-url", sqlite_store_url)
    assert r.exit_code == 0, r.output
    assert f"{n - 1:,} requests, 1 rejected\nfirst rejected: big.jsonl:{n - 10}: " in r.stdout
    eng = open_store(sqlite_store_url)
    assert [u.n_requests for u in list_uploads(eng)] == [n - 1]
    with eng.connect() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM log_request").scalar() == n - 1
