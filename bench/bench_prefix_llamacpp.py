"""The llama.cpp slot profile (planner/kvcache/slots.py) against the server's own cache counters (issue 31).

Replays a multi-turn coding-agent trace, as token ids, against llama.cpp's server with Gemma 3 270M on one core, and
compares per request the model's predicted reused prompt tokens with the server's `timings.cache_n`, its slot with
the server's `id_slot`, and the slot's length after the request with the server's `tokens_cached`.

The trace: a shared system prompt; sessions whose prompt grows each turn by the previous answer (the tokens the
server generated, so the model's slots hold the real output) and a new user message; turns of the sessions
interleaved at random (seeded), with more sessions than slots so that slots are taken over. Requests go one at a
time (each completes before the next), with `cache_prompt`, greedy decoding and `return_tokens`.

The server: `-np N --swa-full --cache-ram 0` (slots only: the model's profile; `--swa-full` because Gemma 3's
sliding-window layers would otherwise limit reuse to what context checkpoints keep), `-sps` as given, `-c` = N ×
--ctx-per-slot, `--no-kv-unified` unless --kv-unified; pinned to one core with `-t 1 -tb 1` in a session of its own,
as bench/bench_engine.py starts it. `--cache-ram M` turns the host-memory prompt cache on, which the model does not
follow: the run then shows how much more the server serves than the slots-only prediction.

    python bench/bench_prefix_llamacpp.py [--slots 2] [--sessions 6] [--turns 6] [--seed 1] [--similarity 0.1]
        [--cache-ram 0] [--out rows.jsonl]
    python bench/bench_prefix_llamacpp.py --matrix [--turns 6]   # --parallel 2 and 4, more sessions than slots

`--parallel` is `--slots` (llama-server's own name for -np). `--matrix` runs `--parallel 2` with 6 sessions and
`--parallel 4` with 10 (issue 45), each on a fresh server, and prints one Markdown row per setting: per-request cached
tokens against `timings.cache_n`, and beside it what the planner's own replay predicts for the same requests
(planner.kvcache.simulate with engine=llama.cpp: the prompts as 16-token blocks, a slot keeping its last prompt but
not the output, as `ttft-planner prefix --engine llama.cpp` replays a log that has no output ids).

Set up the engine once with `make engine`. At roughly 170 prefill tokens/s on one core the defaults take about a
minute; run it under `taskset -c 1` beside the server's core.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_engine import healthy, server_binary, start_server  # noqa: E402
from planner.kvcache.chains import PrefixRequest, chain_tokens  # noqa: E402
from planner.kvcache.simulate import simulate  # noqa: E402
from planner.kvcache.slots import DEFAULT_SIMILARITY, LlamaCppSlots  # noqa: E402
from tests.support.stopping import stop_process  # noqa: E402

TOKEN_LOW, TOKEN_HIGH = 1000, 100_000  # ordinary text pieces of Gemma 3's vocabulary (no control tokens)
ALTERNATIVES = (0.0, 0.1, 0.5)  # LRU only; this build's default; older servers' default
MATRIX = ((2, 6), (4, 10))  # (--parallel, sessions): more sessions than slots, so slots are taken over
PLANNER_BLOCK_TOKENS = 16  # the planner's blocks for token-id prompts (vLLM's default block)
SELECTED = re.compile(r"get_availabl\S*: id +(\d+) \| task -?\d+ \| selected slot by (LRU|LCP similarity)")


@dataclass(frozen=True)
class Trace:
    """first[s]: session s's system prompt + first user message; users[s][t]: its user message of turn t ≥ 1;
    order: (session, turn) in the order sent."""

    first: list[list[int]]
    users: list[list[list[int]]]
    order: list[tuple[int, int]]


def build_trace(sessions: int, turns: int, system_tokens: int, seed: int) -> Trace:
    rng = random.Random(seed)

    def tokens(n: int) -> list[int]:
        return [rng.randrange(TOKEN_LOW, TOKEN_HIGH) for _ in range(n)]

    system = tokens(system_tokens)
    first = [system + tokens(rng.randint(60, 140)) for _ in range(sessions)]
    users = [[[]] + [tokens(rng.randint(20, 100)) for _ in range(1, turns)] for _ in range(sessions)]
    order: list[tuple[int, int]] = []
    left = {s: 0 for s in range(sessions)}
    while left:
        s = rng.choice(sorted(left))
        order.append((s, left[s]))
        left[s] += 1
        if left[s] == turns:
            del left[s]
    return Trace(first, users, order)


class SlotServer:
    """llama-server with N slots, pinned to one core, started as bench/bench_engine.py's Server starts it (a session
    of its own, `-t 1 -tb 1`, nice -15 and a raised autogroup as root, /health polled), with this run's flags."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.port = args.port
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", self.port)) == 0:
                sys.exit(f"port {self.port} is already in use (another llama-server?): stop it or use --port")
        self.log_path = Path(tempfile.mkdtemp(prefix="llama-server-")) / "server.log"
        self.log = open(self.log_path, "w")
        self.flags = [
            "-c",
            str(args.slots * args.ctx_per_slot),
            "-np",
            str(args.slots),
            "-sps",
            str(args.similarity),
            "--cache-ram",
            str(args.cache_ram),
            *(["--kv-unified"] if args.kv_unified else ["--no-kv-unified"]),
            *([] if args.no_swa_full else ["--swa-full"]),
        ]
        self.proc = start_server(args.core, self.port, self.flags, self.log)
        if not healthy(self.proc, self.port):
            self.stop()
            sys.exit(f"llama-server exited or did not become healthy within 120 s; see {self.log_path}")

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=30) as r:
            return json.load(r)

    def complete(self, prompt: list[int], n_predict: int) -> dict[str, Any]:
        body = {
            "prompt": prompt,
            "cache_prompt": True,
            "n_predict": n_predict,
            "temperature": 0,
            "return_tokens": True,
        }
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/completion",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=900) as r:
            out: dict[str, Any] = json.load(r)
        return out

    def selections(self) -> list[tuple[int, str]]:
        """(slot, "lru" | "similarity") of each slot choice the server logged, in order."""
        self.log.flush()
        text = self.log_path.read_text(errors="replace")
        return [(int(i), "lru" if how == "LRU" else "similarity") for i, how in SELECTED.findall(text)]

    def stop(self) -> None:
        stop_process(self.proc, self.log)


def replay(args: argparse.Namespace, trace: Trace, srv: SlotServer, slot_tokens: int) -> list[dict[str, Any]]:
    model = LlamaCppSlots(args.slots, slot_tokens, args.similarity)
    # the same trace under other rules, to show what the exact ones are worth: LRU only, and the other default
    others = {sim: LlamaCppSlots(args.slots, slot_tokens, sim) for sim in ALTERNATIVES if sim != args.similarity}
    convo = {s: list(first) for s, first in enumerate(trace.first)}  # each session's next prompt, less its user turn
    rows = []
    for i, (s, t) in enumerate(trace.order):
        prompt = convo[s] + trace.users[s][t]
        res = srv.complete(prompt, args.output_tokens)
        output = [int(x) for x in res.get("tokens") or []]
        if not output:
            sys.exit(f"request {i}: the server returned no `tokens` (return_tokens unsupported?): {res}")
        timings = res["timings"]
        predicted = model.serve(prompt, output)
        other = {f"predicted_sim_{sim:g}": m.serve(prompt, output) for sim, m in others.items()}
        rows.append(
            {
                "i": i,
                "session": s,
                "turn": t,
                "blocks": chain_tokens(prompt, PLANNER_BLOCK_TOKENS),
                "prompt_tokens": len(prompt),
                "output_tokens": len(output),
                "cache_n": timings["cache_n"],
                "prompt_n": timings["prompt_n"],
                "predicted": predicted,
                "diff": predicted - timings["cache_n"],
                "id_slot": res.get("id_slot"),
                "predicted_slot": model.slot_of_last,
                "predicted_rule": model.rule_of_last,
                "tokens_cached": res.get("tokens_cached"),
                "predicted_slot_tokens": len(model.tokens(model.slot_of_last or 0)),
                "prompt_ms": timings.get("prompt_ms"),
                **other,
            }
        )
        convo[s] = prompt + output
        if args.verbose:
            r = rows[-1]
            print(
                f"  {i:3d} s{s} t{t} prompt {len(prompt):5d} cache_n {r['cache_n']:5d} predicted {predicted:5d} "
                f"slot {r['id_slot']}/{r['predicted_slot']} ({r['predicted_rule']})",
                flush=True,
            )
    logged = srv.selections()
    for r, (slot, rule) in zip(rows, logged if len(logged) == len(rows) else [], strict=False):
        r["server_rule"] = rule
        r["server_log_slot"] = slot
    return rows


def naive_affinity(rows: list[dict[str, Any]], slots: int, system_tokens: int) -> int:
    """Cached tokens if the N slots simply held the N most recently served sessions (what "N slots" suggests, and
    not what llama.cpp does): a session among them reuses its previous prompt + output − 1, any other the shared
    system prompt (all but the first request)."""
    held: dict[int, int] = {}  # session → its slot's length, most recent last
    total = 0
    for i, r in enumerate(rows):
        s = r["session"]
        total += held.pop(s) if s in held else (system_tokens if i else 0)
        held[s] = r["prompt_tokens"] + r["output_tokens"] - 1
        if len(held) > slots:
            del held[next(iter(held))]
    return total


def planner_prediction(rows: list[dict[str, Any]], slots: int, slot_tokens: int, similarity: float) -> list[int]:
    """Cached tokens per request as the planner's own replay predicts them (planner.kvcache.simulate, engine
    llama.cpp, one replica of `slots` slots of `slot_tokens`): prompts as 16-token blocks, output unknown."""
    requests = [
        PrefixRequest(r["i"], str(r["session"]), r["prompt_tokens"], tuple(r["blocks"]), r["output_tokens"])
        for r in rows
    ]
    capacity = slots * slot_tokens // PLANNER_BLOCK_TOKENS
    if similarity != DEFAULT_SIMILARITY:
        print(f"note: the planner's llama.cpp replay uses -sps {DEFAULT_SIMILARITY}; this run used {similarity}")
    run = simulate(
        requests,
        replicas=1,
        capacity_blocks=capacity,
        block_tokens=PLANNER_BLOCK_TOKENS,
        engine="llama.cpp",
        slots=slots,
    )
    return list(run.cached_tokens)


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    prompt = sum(r["prompt_tokens"] for r in rows)
    measured = sum(r["cache_n"] for r in rows)
    predicted = sum(r["predicted"] for r in rows)
    with_slot = [r for r in rows if r["id_slot"] is not None]
    with_len = [r for r in rows if r["tokens_cached"] is not None]
    with_rule = [r for r in rows if "server_rule" in r]
    return {
        "requests": n,
        "prompt_tokens": prompt,
        "hit_measured": measured / prompt,
        "hit_predicted": predicted / prompt,
        "pp_apart": 100 * (predicted - measured) / prompt,
        "exact": sum(r["diff"] == 0 for r in rows),
        "mean_abs_diff": sum(abs(r["diff"]) for r in rows) / n,
        "max_abs_diff": max(abs(r["diff"]) for r in rows),
        "slot_agree": sum(r["id_slot"] == r["predicted_slot"] for r in with_slot),
        "slot_known": len(with_slot),
        "len_agree": sum(r["tokens_cached"] == r["predicted_slot_tokens"] for r in with_len),
        "len_known": len(with_len),
        "rule_agree": sum(r["server_rule"] == r["predicted_rule"] for r in with_rule),
        "rule_known": len(with_rule),
        "count_mismatch": sum(r["cache_n"] + r["prompt_n"] != r["prompt_tokens"] for r in rows),
        "server_lru": sum(r.get("server_rule") == "lru" for r in rows),
        "hit_planner": sum(r["planner_predicted"] for r in rows) / prompt,
        "planner_pp": 100 * (sum(r["planner_predicted"] for r in rows) - measured) / prompt,
        "planner_mean_abs": sum(abs(r["planner_predicted"] - r["cache_n"]) for r in rows) / n,
    }


def run_setting(args: argparse.Namespace) -> tuple[list[dict[str, Any]], SlotServer, int, str, float, float]:
    """One server with args.slots slots over its trace: (rows, the server, n_ctx per slot, build, load, seconds)."""
    trace = build_trace(args.sessions, args.turns, args.system_tokens, args.seed)
    load0 = os.getloadavg()[0]
    t0 = time.monotonic()
    srv = SlotServer(args)
    try:
        slot_tokens = int(srv.get("/slots")[0]["n_ctx"])
        build = str(srv.get("/props").get("build_info", "?"))
        rows = replay(args, trace, srv, slot_tokens)
    finally:
        srv.stop()
    planned = planner_prediction(rows, args.slots, slot_tokens, args.similarity)
    for r, p in zip(rows, planned, strict=True):
        r["planner_predicted"] = p
        del r["blocks"]
    return rows, srv, slot_tokens, build, load0, time.monotonic() - t0


def report(args: argparse.Namespace, rows, srv: SlotServer, slot_tokens: int, build: str, load0: float, wall: float):
    """The full text report of one setting (as before issue 45, plus the planner's block-level replay)."""
    s = summarise(rows)
    version = subprocess.run([str(server_binary()), "--version"], capture_output=True, text=True).stderr.strip()
    print(
        f"llama-server {version.splitlines()[0] if version else '?'} (build_info {build}), Gemma 3 270M Q4_K_M on "
        f"core {args.core} (-t 1), {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average "
        f"{load0:.1f} at start, {wall:.0f} s"
    )
    print(f"server flags: {' '.join(srv.flags)}; n_ctx per slot {slot_tokens}")
    print(
        f"trace: {args.sessions} sessions × {args.turns} turns, seed {args.seed}, system prompt "
        f"{args.system_tokens} tokens, {args.output_tokens} output tokens per request; model "
        f"LlamaCppSlots({args.slots}, {slot_tokens}, similarity={args.similarity})"
    )
    lines = [
        ("requests", f"{s['requests']}"),
        ("prompt tokens", f"{s['prompt_tokens']:,}"),
        ("aggregate hit rate, measured (cache_n)", f"{s['hit_measured']:.2%}"),
        ("aggregate hit rate, predicted", f"{s['hit_predicted']:.2%}"),
        ("apart (target ≤ 5 pp)", f"{s['pp_apart']:+.2f} pp ({'within' if abs(s['pp_apart']) <= 5 else 'OUTSIDE'})"),
        ("per-request exact agreement", f"{s['exact']}/{s['requests']} ({s['exact'] / s['requests']:.0%})"),
        ("mean |predicted − cache_n|", f"{s['mean_abs_diff']:.1f} tokens (max {s['max_abs_diff']})"),
        ("slot choice agreement (id_slot)", f"{s['slot_agree']}/{s['slot_known']}"),
        ("slot length agreement (tokens_cached)", f"{s['len_agree']}/{s['len_known']}"),
        ("rule agreement (server log)", f"{s['rule_agree']}/{s['rule_known']} (LRU {s['server_lru']}×)"),
        ("cache_n + prompt_n ≠ prompt", f"{s['count_mismatch']}"),
        (
            "planner replay (16-token blocks, no output)",
            f"{s['hit_planner']:.2%} ({s['planner_pp']:+.2f} pp), mean |diff| {s['planner_mean_abs']:.1f} tokens",
        ),
    ]
    width = max(len(k) for k, _ in lines)
    for k, v in lines:
        print(f"  {k:<{width}}  {v}")
    for key in sorted(k for k in rows[0] if k.startswith("predicted_sim_")):
        hit = sum(r[key] for r in rows) / s["prompt_tokens"]
        exact = sum(r[key] == r["cache_n"] for r in rows)
        print(
            f"  other model, similarity {key.removeprefix('predicted_sim_')}: hit rate {hit:.2%} "
            f"({100 * hit - 100 * s['hit_measured']:+.2f} pp), exact {exact}/{s['requests']}"
        )
    naive = naive_affinity(rows, args.slots, args.system_tokens) / s["prompt_tokens"]
    print(
        f"  naive model, {args.slots} slots = {args.slots} most recent sessions: hit rate {naive:.2%} "
        f"({100 * naive - 100 * s['hit_measured']:+.2f} pp)"
    )
    off = [r for r in rows if r["diff"] != 0 or r["id_slot"] != r["predicted_slot"]]
    if off:
        print(f"disagreements ({len(off)}; first 12): i session turn prompt cache_n predicted id_slot/predicted")
        for r in off[:12]:
            print(
                f"  {r['i']:3d} s{r['session']} t{r['turn']} {r['prompt_tokens']:5d} {r['cache_n']:5d} "
                f"{r['predicted']:5d} {r['id_slot']}/{r['predicted_slot']} "
                f"({r.get('server_rule')}/{r['predicted_rule']})"
            )
    return s


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__
    )
    ap.add_argument("--slots", "--parallel", type=int, default=2, help="server slots, -np / --parallel (default 2)")
    ap.add_argument("--sessions", type=int, default=6, help="agent sessions, more than slots (default 6)")
    ap.add_argument("--turns", type=int, default=6, help="requests per session (default 6)")
    ap.add_argument("--seed", type=int, default=1, help="trace seed (default 1)")
    ap.add_argument(
        "--similarity",
        type=float,
        default=DEFAULT_SIMILARITY,
        help=f"--slot-prompt-similarity, for the server and the model (default {DEFAULT_SIMILARITY}, this build's)",
    )
    ap.add_argument(
        "--cache-ram", type=int, default=0, help="the server's host prompt cache in MiB (default 0: off, slots only)"
    )
    ap.add_argument("--out", type=Path, help="write the per-request rows to this JSON Lines file")
    ap.add_argument("--system-tokens", type=int, default=320, help="shared system prompt (default 320 tokens)")
    ap.add_argument("--output-tokens", type=int, default=8, help="n_predict per request (default 8)")
    ap.add_argument("--ctx-per-slot", type=int, default=2048, help="context per slot: -c = slots × this (2048)")
    ap.add_argument("--kv-unified", action="store_true", help="one KV pool shared by the slots (default: per slot)")
    ap.add_argument("--no-swa-full", action="store_true", help="leave out --swa-full (reuse then limited by SWA)")
    ap.add_argument("--port", type=int, default=8095)
    ap.add_argument("--core", type=int, default=1, help="CPU core for the server (default 1)")
    ap.add_argument(
        "--matrix",
        action="store_true",
        help=f"run {', '.join(f'--parallel {n} with {m} sessions' for n, m in MATRIX)} and print a Markdown table",
    )
    ap.add_argument("-v", "--verbose", action="store_true", help="print each request as it completes")
    args = ap.parse_args()
    settings = [(n, m) for n, m in MATRIX] if args.matrix else [(args.slots, args.sessions)]
    table = []
    for n, m in settings:
        args.slots, args.sessions = n, m
        if args.sessions <= args.slots:
            print(f"note: {args.sessions} sessions on {args.slots} slots: no slot needs to be taken over")
        rows, srv, slot_tokens, build, load0, wall = run_setting(args)
        if args.out:
            out = args.out if not args.matrix else args.out.with_name(f"{args.out.stem}.np{n}{args.out.suffix}")
            with open(out, "w") as f:
                for r in rows:
                    f.write(json.dumps(r) + "\n")
        s = report(args, rows, srv, slot_tokens, build, load0, wall)
        table.append((n, m, s))
    if args.matrix:
        print()
        print(
            "| --parallel | sessions | requests | cache_n hit rate | predicted (slots profile) | per-request exact | "
            "id_slot | planner replay (16-token blocks) |"
        )
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for n, m, s in table:
            print(
                f"| {n} | {m} | {s['requests']} | {s['hit_measured']:.2%} | {s['hit_predicted']:.2%} "
                f"({s['pp_apart']:+.2f} pp) | {s['exact']}/{s['requests']} | {s['slot_agree']}/{s['slot_known']} | "
                f"{s['hit_planner']:.2%} ({s['planner_pp']:+.2f} pp) |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
