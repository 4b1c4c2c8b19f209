"""bench/peers.py: reading the peers' exports, the offline tokenizer they need, finding them, their CPU.

The exports below have the shape of real ones (AIPerf 0.13.0's profile_export.jsonl, GuideLLM 0.8.1's
benchmarks.json, as written on 2026-12-01), cut down to the fields the parsers read, plus the cases a run can produce.
"""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from bench.peers import (
    PEERS,
    SKIPPED,
    Workload,
    find_peer,
    measured_run,
    parse_aiperf_records,
    parse_guidellm_benchmarks,
    run_peer,
    write_tokenizer,
)
from tests.support.waiting import wait_for


def _aiperf_line(start_ns: int, ttft: dict | None, *, phase: str = "profiling", error: dict | None = None) -> str:
    metrics = {"request_latency": {"value": 40.1, "unit": "ms"}}
    if ttft is not None:
        metrics["time_to_first_token"] = ttft
    record = {
        "metadata": {"request_start_ns": start_ns, "benchmark_phase": phase, "worker_id": "worker_0"},
        "metrics": metrics,
        "error": error,
    }
    return json.dumps(record)


def test_aiperf_ttfts_come_in_request_start_order_in_ms(tmp_path: Path) -> None:
    path = tmp_path / "profile_export.jsonl"
    lines = [
        _aiperf_line(3_000, {"value": 21.5, "unit": "ms"}),
        _aiperf_line(1_000, {"value": 20_400_000, "unit": "ns"}),
        _aiperf_line(2_000, {"value": 0.0203, "unit": "s"}),
    ]
    path.write_text("\n".join(lines) + "\n")
    ttfts, rejected = parse_aiperf_records(path)
    assert ttfts == pytest.approx([20.4, 20.3, 21.5])
    assert rejected == []


def test_aiperf_warmup_is_left_out_and_failures_are_named(tmp_path: Path) -> None:
    path = tmp_path / "profile_export.jsonl"
    lines = [
        _aiperf_line(1, {"value": 99.0, "unit": "ms"}, phase="warmup"),
        _aiperf_line(2, None, error={"code": 500, "type": "Internal Server Error", "message": "boom"}),
        _aiperf_line(3, None),
        _aiperf_line(4, {"value": 1.0, "unit": "fortnights"}),
        "{not json",
        _aiperf_line(5, {"value": 20.0, "unit": "ms"}),
    ]
    path.write_text("\n".join(lines))
    ttfts, rejected = parse_aiperf_records(path)
    assert ttfts == [20.0]
    assert [r.split(": ", 1)[1].split(" ")[0] for r in rejected] == ["error", "no", "unknown", "unreadable"]
    assert rejected[0].startswith("profile_export.jsonl line 2: error") and "boom" in rejected[0]


def test_aiperf_without_an_export_is_one_rejection(tmp_path: Path) -> None:
    assert parse_aiperf_records(tmp_path / "profile_export.jsonl") == ([], ["profile_export.jsonl: not written"])


def _guidellm_request(start_s: float, ttft_ms: float | None) -> dict:
    return {
        "info": {"timings": {"request_start": start_s, "request_end": start_s + 0.05}},
        "time_to_first_token_ms": ttft_ms,
    }


def test_guidellm_ttfts_come_in_request_start_order_and_errors_are_rejections(tmp_path: Path) -> None:
    report = {
        "benchmarks": [
            {
                "requests": {
                    "successful": [
                        _guidellm_request(1764556800.2, 20.6),
                        _guidellm_request(1764556800.1, 20.5),
                        _guidellm_request(1764556800.3, None),
                    ],
                    "errored": [{"info": {"error": "HTTPStatusError: 500"}}],
                    "incomplete": [{"info": {}}],
                }
            }
        ]
    }
    path = tmp_path / "benchmarks.json"
    path.write_text(json.dumps(report))
    ttfts, rejected = parse_guidellm_benchmarks(path)
    assert ttfts == [20.5, 20.6]
    assert rejected == [
        "successful[2]: no time_to_first_token_ms",
        "errored[0]: HTTPStatusError: 500",
        "incomplete[0]: incomplete",
    ]


@pytest.mark.parametrize(("content", "reason"), [(None, "not written"), ("{}", "unreadable"), ("[", "unreadable")])
def test_guidellm_without_a_usable_report_is_one_rejection(tmp_path: Path, content: str | None, reason: str) -> None:
    path = tmp_path / "benchmarks.json"
    if content is not None:
        path.write_text(content)
    ttfts, rejected = parse_guidellm_benchmarks(path)
    assert ttfts == [] and len(rejected) == 1 and rejected[0].startswith(f"benchmarks.json: {reason}")


def test_the_tokenizer_counts_one_token_per_word_and_keeps_unknown_words(tmp_path: Path) -> None:
    from tokenizers import Tokenizer

    folder = write_tokenizer(tmp_path / "tok")
    assert json.loads((folder / "tokenizer_config.json").read_text())["tokenizer_class"] == "PreTrainedTokenizerFast"
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    text = "the quick brown fox, jumped over the lazy dog"
    ids = tokenizer.encode(text).ids
    assert len(ids) == len(text.split())
    # a peer builds prompts by decoding token ids: the words stay words, so the length survives a second encoding
    decoded = tokenizer.decode(ids)
    assert len(decoded.split()) == len(ids) == len(tokenizer.encode(decoded).ids)
    assert decoded.startswith("the word word")


def _executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_a_peer_is_found_in_its_own_venv_first_then_on_path(tmp_path: Path, monkeypatch) -> None:
    aiperf = next(p for p in PEERS if p.command == "aiperf")
    on_path = _executable(tmp_path / "bin" / "aiperf")
    monkeypatch.setenv("PATH", str(on_path.parent))
    monkeypatch.setenv("TTFT_PEERS_DIR", str(tmp_path / "peers"))
    assert find_peer(aiperf) == str(on_path)
    in_venv = _executable(tmp_path / "peers" / "aiperf" / "bin" / "aiperf")
    assert find_peer(aiperf) == str(in_venv)


def test_a_missing_peer_is_skipped(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("TTFT_PEERS_DIR", str(tmp_path / "peers"))
    workload = Workload(base_url="http://127.0.0.1:9/v1", model="m", requests=1, prompt_tokens=8, output_tokens=1)
    for peer in PEERS:
        assert run_peer(peer, workload, tmp_path) == SKIPPED


def test_the_cpu_of_a_child_and_of_the_children_it_waited_for_is_counted() -> None:
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.2: pass\n"
    code = f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {burn!r}])\n{burn}"
    done, cpu_s, wall_s = measured_run([sys.executable, "-c", code], timeout_s=60)
    assert done.returncode == 0
    assert cpu_s >= 0.4  # 0.2 s in the child, 0.2 s in its own child, plus two interpreter start-ups
    assert wall_s >= 0.4


def test_a_timeout_ends_the_child_and_its_helpers(tmp_path: Path) -> None:
    pid_file = tmp_path / "helper.pid"
    # A child (and its helper) that sleep past measured_run's 2 s timeout: the test is that the timeout ends both.
    code = (
        "import subprocess, sys, time\n"
        "helper = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(helper.pid))\n"
        "time.sleep(60)\n"
    )
    with pytest.raises(subprocess.TimeoutExpired):
        measured_run([sys.executable, "-c", code], timeout_s=2)
    helper = int(pid_file.read_text())
    wait_for(lambda: not _alive(helper), timeout_s=60, what="the helper process ended with its parent")


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except FileNotFoundError:
        return False
    return status != "Z"  # a killed helper whose parent died is reaped by init; until then it is a zombie
