"""Write assets/sample_logs/agent_sessions.jsonl: synthetic coding-agent sessions with their message text.

Each session resends a shared system prompt, its own repository context, and its conversation so far (every turn
appends the assistant's answer and a new user message): the traffic whose prefix reuse `ttft-planner prefix`
measures. Sessions interleave in time. Deterministic (a seeded RNG); the words are filler, the shape is the point.

  python bench/gen_agent_sessions.py [--sessions 10] [--turns 6] [--seed 7] [--out FILE]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORDS = (
    "def return self import test module error value config path request token cache stream probe endpoint "
    "region latency budget prefill worker schedule store frame parse assert fixture retry timeout header json "
    "model replica router session block hash queue metric alert sample percentile window commit branch diff"
).split()


def _text(rng: random.Random, tokens: int) -> str:
    """About `tokens` tokens of filler (≈ 4 characters a token)."""
    out, chars = [], 0
    while chars < tokens * 4:
        w = rng.choice(WORDS)
        out.append(w)
        chars += len(w) + 1
    return " ".join(out)


def sessions(n_sessions: int, turns: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    system = {"role": "system", "content": "You are a coding agent. " + _text(rng, 800)}
    start = dt.datetime(2026, 11, 16, 9, 0, tzinfo=dt.UTC)
    records = []
    for s in range(n_sessions):
        repo = {"role": "user", "content": f"Repository context for task {s}: " + _text(rng, 1500)}
        messages = [system, repo]
        t = start + dt.timedelta(seconds=rng.uniform(0, 900))
        for _turn in range(turns):
            messages = messages + [{"role": "user", "content": _text(rng, rng.randint(60, 200))}]
            output = rng.randint(80, 300)
            records.append(
                {
                    "timestamp": t.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                    "session_id": f"task-{s:02d}",
                    "model": "qwen2.5-coder-32b",
                    "messages": messages,
                    "output_tokens": output,
                }
            )
            messages = messages + [{"role": "assistant", "content": _text(rng, output)}]
            t += dt.timedelta(seconds=rng.uniform(20, 120))
    records.sort(key=lambda r: r["timestamp"])
    return records


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=10)
    ap.add_argument("--turns", type=int, default=6)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", type=Path, default=ROOT / "assets" / "sample_logs" / "agent_sessions.jsonl")
    args = ap.parse_args()
    recs = sessions(args.sessions, args.turns, args.seed)
    args.out.write_text("".join(json.dumps(r) + "\n" for r in recs))
    print(f"wrote {len(recs)} requests of {args.sessions} sessions to {args.out}")


if __name__ == "__main__":
    main()
