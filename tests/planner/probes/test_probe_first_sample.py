"""A fresh `ttft-planner probe` process does its lazy first-request work before the first sample (issue 14, item 1).

Before the warm-up (planner/probes/warmup.py) the first sample of every run read 12–16 ms high: anyio's backend,
httpcore, h11 and certifi were imported, and their files opened, inside the timed region. That cause is checked
here without a clock: the real CLI runs in a fresh process with an audit hook that records every import and file
open, and a pass-through wrapper around the CLI's probe_once that marks while a sample is being taken; no sample
may import or open anything. The URL names "localhost", so the resolver runs as in real use. How many milliseconds
the first sample is off the server's clock is a figure: bench/bench_probe_accuracy.py --cli-runs prints it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.servers import Script, ScriptedServer, Step, chat_chunk, sse, usage_chunk

ROOT = Path(__file__).resolve().parents[3]

#: The CLI as users run it, plus instrumentation that changes nothing it does: an audit hook (imports and file
#: opens) and a wrapper that calls the real probe_once, marking the sample in between.
_AUDITED_CLI = """
import atexit, json, sys
import planner.cli.probe as cli_probe
from planner.cli import main

during_samples = []
sampling = False

def hook(event, args):
    if sampling and event in ("import", "open"):
        during_samples.append(f"{event} {args[0]}")

real_probe_once = cli_probe.probe_once

async def probe_once(*args, **kwargs):
    global sampling
    sampling = True
    try:
        return await real_probe_once(*args, **kwargs)
    finally:
        sampling = False

cli_probe.probe_once = probe_once
sys.addaudithook(hook)
atexit.register(lambda: print(json.dumps({"type": "audit", "during_samples": during_samples}), flush=True))
main()
"""


def test_no_sample_of_a_fresh_cli_run_imports_or_opens_anything():
    script = Script(
        steps=[
            Step(sse(chat_chunk({"role": "assistant", "content": ""}))),
            Step(sse(chat_chunk({"content": "w0"})), content=True),
            Step(sse(usage_chunk(60, 1)) + b"data: [DONE]\n\n"),
        ]
    )
    n = 2
    with ScriptedServer(script) as srv:
        out = subprocess.run(
            [sys.executable, "-c", _AUDITED_CLI, "probe", "--base-url", f"http://localhost:{srv.port}/v1"]
            + [
                "--model",
                "m",
                "-n",
                str(n),
                "--interval-s",
                "0",
                "--prompt-tokens",
                "50",
                "--max-tokens",
                "1",
                "--json",
            ],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            cwd=ROOT,
        )
        served = len(srv.requests)
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    samples = [x for x in lines if x["type"] == "sample"]
    assert len(samples) == n and all(s["ok"] for s in samples), samples
    assert served == n  # the warm-up never reached the target
    audit = next(x for x in lines if x["type"] == "audit")
    assert audit["during_samples"] == [], "imported or opened while a sample was timed"
