"""A fresh `ttft-planner probe` process: its first sample is as accurate as the rest (issue 14, item 1).

Ground truth is the server's own clock (tests/support/servers.py): from accept() of the sample's
fresh connection to the write of the first content chunk. Before the warm-up, the first sample of
every run read 12–16 ms high (anyio's backend, httpcore and h11 imported inside the timed region).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.servers import Script, ScriptedServer, Step, chat_chunk, sse, usage_chunk

ROOT = Path(__file__).resolve().parents[2]


def _script() -> Script:
    return Script(
        steps=[
            Step(sse(chat_chunk({"role": "assistant", "content": ""}))),
            Step(sse(chat_chunk({"content": "w0"})), delay_s=0.020, content=True),
            Step(sse(chat_chunk({"content": " w1"})), delay_s=0.002),
            Step(sse(usage_chunk(60, 2)) + b"data: [DONE]\n\n"),
        ]
    )


def _fresh_cli_errors(srv: ScriptedServer, n: int) -> list[float]:
    """Client TTFT − server TTFT (ms) for each sample of one fresh CLI process, in order."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "from planner.cli import main; main()",
            "probe",
            "--base-url",
            srv.url,
            "--model",
            "m",
            "-n",
            str(n),
            "--interval",
            "0.05",
            "--prompt-tokens",
            "50",
            "--max-tokens",
            "2",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    samples = [json.loads(line) for line in out.stdout.splitlines() if '"type": "sample"' in line]
    assert len(samples) == n and all(s["ok"] for s in samples), samples
    assert len(srv.requests) == n  # the warm-up never reached the target
    return [s["ttft_ms"] - srv.server_ttft_ms(i) for i, s in enumerate(samples)]


def test_first_sample_of_a_fresh_cli_run_is_as_accurate_as_the_rest():
    firsts, rest = [], []
    for _ in range(4):  # four fresh processes: the old bias was in every one, load noise is not
        with ScriptedServer(_script()) as srv:
            errors = _fresh_cli_errors(srv, 3)
        firsts.append(errors[0])
        rest += errors[1:]
    # Without the warm-up every first sample read 12–16 ms high on an idle machine (90+ ms on a loaded
    # one); with it the best first sample is within a few ms of the best of the others. The bound is
    # generous because this suite runs on shared, loaded machines (bench/bench_probe_accuracy.py has
    # the precise figures).
    assert min(firsts) - min(rest) < 5.0, f"first samples {firsts} ms off the server clock; the others {rest}"
