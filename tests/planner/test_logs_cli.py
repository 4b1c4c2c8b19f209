"""`ttft-planner logs …` through click's runner: output a user reads, exit codes, the store commands."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from planner.cli import cli

SAMPLES = Path(__file__).resolve().parents[2] / "assets" / "sample_logs"


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
    r = run("logs", "summarize", SAMPLES / "requests.csv", SAMPLES / "litellm_spend_logs.json", "--json", "--workday", "08:00-17:00")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["n"] == 650 and d["workday"] == "08:00-17:00"
    assert d["prompt_tokens"]["p95"]["n"] == 650 and d["prompt_tokens"]["p95"]["reliable"]
    assert d["ttft_ms"]["p50"]["n"] == 650
    assert len(d["hourly"]) == 24 and 0 < d["cached_share"]["token_fraction"] < 1
    assert d["formats"] == {"requests.csv": "csv", "litellm_spend_logs.json": "litellm"}


def test_mapping_flag_reads_custom_csv():
    r = run("logs", "summarize", SAMPLES / "gateway_custom_columns.csv", "--json", "--tz", "Europe/Berlin",
            "--map", "ts=started", "--map", "prompt_tokens=tok_in_total", "--map", "cached_tokens=tok_in_hit")
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


def test_import_list_delete(sqlite_url):
    r = run("logs", "import", SAMPLES / "requests.csv", "--name", "office", "--database-url", sqlite_url)
    assert r.exit_code == 0, r.output
    assert "stored upload 1: 400 requests, 0 rejected" in r.output
    r = run("logs", "list", "--database-url", sqlite_url)
    assert "office" in r.output and "400 requests" in r.output
    assert run("logs", "delete", "1", "--database-url", sqlite_url).exit_code == 0
    r = run("logs", "delete", "1", "--database-url", sqlite_url)
    assert r.exit_code == 2 and "no log upload with id 1" in r.output


def test_tokenizer_flag_counts_text_exactly(tmp_path):
    from tests.planner.test_logs_readers import _word_tokenizer_json

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
