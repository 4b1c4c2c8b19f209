"""The what-if's step model against vLLM with prefix caching on one GPU (issue 45): ready to run wherever one is.

1. Starts `vllm serve MODEL --enable-prefix-caching` on one GPU (a small model that fits: `--model`, default
   Qwen/Qwen2.5-0.5B-Instruct from the local Hugging Face cache; nothing is downloaded when HF_HUB_OFFLINE=1), or
   uses `--base-url` of one already running.
2. Calibrates it as a user would: `ttft-planner calibrate --engine vllm --slots <max_num_seqs>` (the step model's
   fixed and per-decode-token costs, prefill, the speed spread pooled with this run's calibrations).
3. For the decode-heavy and the prompt-heavy mix (bench/engine_batching.py) at busy shares 0.3 / 0.6 / 0.85: the
   measured TTFT p50/p95 against the step model's 80 % interval, and each request's server TTFT against the replay.
4. Prefix caching: sessions sharing a system prompt (a Mooncake-style trace with hash_ids, one hash per 512 tokens,
   each hash a fixed text block) are sent to the server; vLLM's own `vllm:prefix_cache_hits` ÷
   `vllm:prefix_cache_queries` over the run (tokens) against the hit rate `ttft-planner whatif` predicts for the
   same trace on one replica (routing=round-robin, vLLM's tail-first eviction). Target: within 5 points.

    python bench/bench_vllm_whatif.py [--model M] [--base-url URL] [--runs 3]

Without vLLM or a GPU it prints "skipped: no vLLM/GPU" and exits 0 (`make bench` runs every script).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LEVELS = (0.3, 0.6, 0.85)
_METRIC = re.compile(r"^vllm:prefix_cache_(hits|queries)(?:_total)?(?:\{[^}]*\})?\s+([0-9.eE+-]+)$", re.M)


def gpu_and_vllm() -> str | None:
    """Why this machine cannot run the bench (None when it can): vLLM importable and a CUDA GPU visible."""
    try:
        import vllm  # noqa: F401
    except ImportError:
        return "vLLM is not installed"
    if shutil.which("nvidia-smi") is None:
        return "no nvidia-smi"
    out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=False)
    return None if out.returncode == 0 and "GPU" in out.stdout else "no GPU visible"


def prefix_counters(base_url: str) -> tuple[float, float]:
    """(prefix cache hits, queries) in tokens from the server's /metrics, summed over its series."""
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/metrics", timeout=10) as r:
        text = r.read().decode()
    sums = {"hits": 0.0, "queries": 0.0}
    for kind, value in _METRIC.findall(text):
        sums[kind] += float(value)
    return sums["hits"], sums["queries"]


def start_vllm(model: str, port: int, max_num_seqs: int, log: Path) -> subprocess.Popen:
    cmd = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model, "--port", str(port),
        "--enable-prefix-caching", "--max-num-seqs", str(max_num_seqs), "--gpu-memory-utilization", "0.85",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return proc
        except OSError:
            time.sleep(2)
    proc.terminate()
    sys.exit(f"vLLM did not become healthy within 600 s; see {log}")


def session_trace(path: Path, sessions: int, turns: int, seed: int) -> tuple[list[dict], list[str]]:
    """A Mooncake-style trace (timestamp ms, input_length, output_length, hash_ids of 512 tokens) of `sessions`
    conversations sharing a 1,024-token system prompt, each turn adding 512 tokens; and each request's prompt text
    (hash id h → a fixed block of 512 one-token words), so the server sees the prefixes the trace says."""
    rng = np.random.default_rng(seed)
    rows, texts = [], []
    next_hash = 2
    t = 0.0
    history: dict[int, list[int]] = {}
    for _turn in range(turns):
        for s in rng.permutation(sessions):
            hashes = history.setdefault(int(s), [0, 1])  # 0, 1: the shared system prompt
            hashes.append(next_hash)
            next_hash += 1
            t += float(rng.exponential(400.0))
            rows.append(
                {"timestamp": int(t), "input_length": 512 * len(hashes), "output_length": 16, "hash_ids": list(hashes)}
            )
            texts.append(" ".join(f"w{h}x{i % 97}" for h in hashes for i in range(512)))
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return rows, texts


async def _send_texts(base_url: str, model: str, rows: list[dict], texts: list[str]) -> None:
    import httpx

    async with httpx.AsyncClient(trust_env=False, timeout=600) as client:
        t0 = asyncio.get_running_loop().time()

        async def one(i: int) -> None:
            await asyncio.sleep(max(0.0, t0 + rows[i]["timestamp"] / 1000 - asyncio.get_running_loop().time()))
            body = {"model": model, "prompt": texts[i], "max_tokens": rows[i]["output_length"], "temperature": 0}
            await client.post(base_url + "/completions", json=body)

        await asyncio.gather(*(one(i) for i in range(len(rows))))


def prefix_check(base_url: str, model: str, max_num_seqs: int, work: Path) -> str:
    """Measured against predicted prefix-cache hit rate on the session trace (see the module docstring)."""
    trace_path = work / "sessions.jsonl"
    rows, texts = session_trace(trace_path, sessions=16, turns=6, seed=3)
    h0, q0 = prefix_counters(base_url)
    asyncio.run(_send_texts(base_url, model, rows, texts))
    h1, q1 = prefix_counters(base_url)
    measured = (h1 - h0) / (q1 - q0) if q1 > q0 else float("nan")
    spec = (
        f"dedicated:name=vllm,engine=vllm,replicas=1,slots={max_num_seqs},prefill=20000,decode=100,usd_per_gpu_h=0,"
        "routing=round-robin"
    )
    out = subprocess.run(
        [sys.executable, "-m", "planner.cli", "whatif", "--log", str(trace_path), "--deployment", spec, "--json"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    try:
        predicted = json.loads(out.stdout)["candidates"][0]["prefix_cache"]["hit_rate"]
    except (ValueError, KeyError, TypeError, IndexError):
        return f"prefix cache: measured {measured:.1%}; no prediction ({out.stderr.strip()[-300:]})"
    gap = abs(measured - predicted) * 100
    return (
        f"prefix cache: vLLM's hits ÷ queries {measured:.1%}, predicted {predicted:.1%} ({gap:.1f} points; "
        f"target ≤ 5): {'met' if gap <= 5 else 'NOT met'}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="Qwen/Qwen2.5-0.5B-Instruct")
    ap.add_argument("--base-url", help="a vLLM already running (with --enable-prefix-caching)")
    ap.add_argument("--port", type=int, default=8100)
    ap.add_argument("--max-num-seqs", type=int, default=64)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--levels", default=",".join(map(str, LEVELS)))
    ap.add_argument("--mixes", default="decode,prompt")
    args = ap.parse_args()
    if not args.base_url:
        why = gpu_and_vllm()
        if why is not None:
            print(f"skipped: no vLLM/GPU ({why})")
            return 0
    from bench.engine_batching import run_batching, summary

    work = Path(tempfile.mkdtemp(prefix="bench-vllm-"))
    proc = None if args.base_url else start_vllm(args.model, args.port, args.max_num_seqs, work / "vllm.log")
    url = args.base_url or f"http://127.0.0.1:{args.port}/v1"
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: vLLM {args.model} at {url}", flush=True)
    try:
        args.parallel, args.engine_key, args.concurrencies = args.max_num_seqs, "vllm", (1, 4, 16)
        args.levels = [float(x) for x in args.levels.split(",")]
        args.mixes = [m for m in args.mixes.split(",") if m]
        args.lengths, args.calibration_step = [128, 1024], 10.0
        cells = run_batching(url, args.model, args)
        summary(cells)
        print(prefix_check(url, args.model, args.max_num_seqs, work))
    finally:
        if proc is not None:
            os.killpg(proc.pid, 15)
            proc.wait(timeout=60)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
