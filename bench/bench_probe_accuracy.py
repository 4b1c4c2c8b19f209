"""How far is each client's TTFT from the truth? Our probe vs `requests` iter_lines vs the official `openai` client.

Ground truth: a local server (tests/support/servers.py, in its own process, TCP_NODELAY) stamps
`perf_counter_ns()` just before it writes the first content chunk; perf_counter is CLOCK_MONOTONIC,
shared by both processes. Each client stamps the moment it has the first content token; the error is
client stamp − server stamp. The stream: role-only chunk at once, first content after 20 ms, then 7 more
tokens 2 ms apart, [DONE]. Clients take turns (order rotated each round), each on a fresh connection
except `openai`, which pools as its users do.

Then the CLI as users run it (issue 14): `--cli-runs` fresh `ttft-planner probe` processes, each taking
`--cli-samples` samples on fresh connections; the truth there is the server's own TTFT (accept() of
the sample's connection → first content write), since the CLI's start clock lives in its own process.
The first sample of each run is reported apart from the rest.

Then our probe alone on each stream shape the tests cover (tests/planner/probes/test_probe_streams.py checks which write
each phase is stamped at; the milliseconds are measured here): SSE ping comments and `data:` without a space, one
JSON event split across two TCP writes, several events in one write, reasoning first, a tool call first, Anthropic
with a thinking block first, legacy completions. Each stream sends its lead-in at once, the first token after 20 ms,
then more 2 ms apart. The cloud protocols (Responses, Azure, Gemini, Bedrock) are bench/bench_protocol_accuracy.py's.

Then one process per client, `--peer-requests` requests each at concurrency 1 (issue 14): one `ttft-planner probe`
process, AIPerf and GuideLLM (bench/peers.py; "skipped" when not installed), each request matched in order to the
server's truth for it: accept() → first content write when the request opened its connection, else the request's
arrival → first content write (the peers keep their connection). Signed error too, since each clock starts at its
own point (the table says where), and the client's CPU per request, whole process (start-up included).

    .venv/bin/python bench/bench_probe_accuracy.py [--samples 200] [--cli-runs 10] [--shapes 100] \
        [--peer-requests 100] [--json]

Targets: in-process median |error| ≤ 0.5 ms and p99 ≤ 2 ms on loopback, no worse than either peer
(issue 3), on every stream shape as on the plain one; fresh CLI: every sample, the first included, within 3 ms
of the server clock (issue 14).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.peers import PEERS, Workload, measured_cli, peer_tokenizer, run_peer  # noqa: E402
from planner.percentiles import summarize  # noqa: E402
from planner.probes.ttft import ProbeTarget, probe_once  # noqa: E402
from tests.support.servers import (  # noqa: E402
    RecordedRequest,
    Script,
    ScriptedServer,
    StartClock,
    Step,
    anthropic_event,
    chat_chunk,
    completion_chunk,
    sse,
)

FIRST_CONTENT_DELAY_S = 0.020
TOKENS = 8
PEER_PROMPT_TOKENS = 64  # the peers' synthetic prompts (our probe sends its own 50-token one)


def _script() -> Script:
    steps = [
        Step(sse(chat_chunk({"role": "assistant", "content": ""}))),
        Step(sse(chat_chunk({"content": "w0"})), delay_s=FIRST_CONTENT_DELAY_S, content=True),
    ]
    steps += [Step(sse(chat_chunk({"content": f" w{i}"})), delay_s=0.002) for i in range(1, TOKENS)]
    steps += [Step(sse(chat_chunk({}, finish="length")) + b"data: [DONE]\n\n")]
    return Script(steps=steps)


def _chat_tokens(first: int = 1) -> list[Step]:
    return [Step(sse(chat_chunk({"content": f" w{i}"})), delay_s=0.002) for i in range(first, TOKENS)]


def _anthropic_thinking_first() -> Script:
    def delta(i: int, kind: str, text: str) -> bytes:
        return anthropic_event("content_block_delta", index=i, delta={"type": f"{kind}_delta", kind: text})

    start = anthropic_event("message_start", message={"usage": {"input_tokens": 50, "output_tokens": 1}})
    start += anthropic_event("ping")
    start += anthropic_event("content_block_start", index=0, content_block={"type": "thinking", "thinking": ""})
    steps = [Step(start), Step(delta(0, "thinking", "hm"), delay_s=FIRST_CONTENT_DELAY_S, content=True)]
    steps += [Step(delta(0, "thinking", f" t{i}"), delay_s=0.002) for i in range(1, TOKENS // 2)]
    steps.append(
        Step(
            anthropic_event("content_block_stop", index=0)
            + anthropic_event("content_block_start", index=1, content_block={"type": "text", "text": ""})
        )
    )
    steps += [Step(delta(1, "text", f" w{i}"), delay_s=0.002) for i in range(TOKENS // 2, TOKENS)]
    tail = anthropic_event("content_block_stop", index=1)
    tail += anthropic_event("message_delta", delta={"stop_reason": "max_tokens"}, usage={"output_tokens": TOKENS})
    return Script(steps=[*steps, Step(tail + anthropic_event("message_stop"))])


def _shape_scripts() -> dict[str, tuple[str, Script]]:
    """name → (protocol, script): the stream shapes of tests/planner/probes/test_probe_streams.py, first token after 20
    ms."""
    done = Step(b"data: [DONE]\n\n")
    frame = sse(chat_chunk({"content": "w0"}))
    tool = {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "f"}}]}
    role = Step(sse(chat_chunk({"role": "assistant", "content": ""})))
    first = {"delay_s": FIRST_CONTENT_DELAY_S, "content": True}
    return {
        "pings, data: without a space": (
            "openai-chat",
            Script(
                steps=[
                    Step(b": ping\n\n: ping - 2025-01-01\n\n"),
                    Step(sse(chat_chunk({"content": "w0"}), space=False), **first),
                    *_chat_tokens(),
                    Step(b"data:[DONE]\n\n"),
                ]
            ),
        ),
        "event split across two writes": (
            "openai-chat",
            Script(
                steps=[Step(frame[: len(frame) // 2]), Step(frame[len(frame) // 2 :], **first), *_chat_tokens(), done]
            ),
        ),
        "several events in one write": (
            "openai-chat",
            Script(
                steps=[role, Step(b"".join(sse(chat_chunk({"content": f" w{i}"})) for i in range(3)), **first), done]
            ),
        ),
        "reasoning first": (
            "openai-chat",
            Script(steps=[role, Step(sse(chat_chunk({"reasoning_content": "hm"})), **first), *_chat_tokens(), done]),
        ),
        "tool call first": (
            "openai-chat",
            Script(
                steps=[
                    Step(sse(chat_chunk({"role": "assistant", "content": None}))),
                    Step(sse(chat_chunk(tool)), **first),
                    *(
                        Step(
                            sse(chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": f"{i}"}}]})),
                            delay_s=0.002,
                        )
                        for i in range(1, TOKENS)
                    ),
                    Step(sse(chat_chunk({}, finish="tool_calls"))),
                    done,
                ]
            ),
        ),
        "anthropic, thinking first": ("anthropic", _anthropic_thinking_first()),
        "legacy completions": (
            "openai-completions",
            Script(
                steps=[
                    Step(sse(completion_chunk(""))),
                    Step(sse(completion_chunk(" w0")), **first),
                    *(Step(sse(completion_chunk(f" w{i}")), delay_s=0.002) for i in range(1, TOKENS)),
                    done,
                ]
            ),
        ),
    }


SHAPES = _shape_scripts()


# GuideLLM checks GET /health before it starts and AIPerf sends HEAD /metrics: a GET gets this small JSON, a HEAD
# an empty 200 (a body after a HEAD response would be read as the start of the next response).
_MODELS = Script(
    steps=[Step(json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode())],
    headers={"Content-Type": "application/json"},
    chunked=False,
)
_EMPTY = Script(steps=[], headers={"Content-Type": "application/json"}, chunked=False)


def _answer(i: int, request: RecordedRequest) -> Script:
    if request.method == "POST":
        shape = SHAPES.get(json.loads(request.body).get("model"))  # the shapes' probes name one as their model
        return _script() if shape is None else shape[1]
    return _EMPTY if request.method == "HEAD" else _MODELS


def _request_ttfts_ms(srv: ScriptedServer) -> list[float | None]:
    """Each request's TTFT on the server's clock; None for a request without content (a GET or a HEAD).

    Its connection's accept() → first content write for the first request on a connection (the client's clock
    covers the connect), else the request's arrival → first content write (a pooled connection).
    """
    out: list[float | None] = []
    seen: set[int] = set()
    for i, request in enumerate(srv.requests):
        first = srv.first_content_ns[i]
        if request.connection_no not in seen:
            seen.add(request.connection_no)
            out.append(srv.server_ttft_ms(i))
        else:
            out.append(None if first is None else (first - request.received_ns) / 1e6)
    return out


def _server_process(conn, ready) -> None:
    with ScriptedServer(_answer) as srv:
        ready.send(srv.url)
        while True:
            msg = conn.recv()
            if msg == "truth":
                conn.send(list(srv.first_content_ns))
            elif msg == "count":
                conn.send(len(srv.requests))
            elif msg == "request_ttft":
                conn.send(_request_ttfts_ms(srv))
            elif msg == "stop":
                return


def _new_loop() -> asyncio.AbstractEventLoop:
    if os.environ.get("BENCH_LOOP") == "asyncio":
        return asyncio.new_event_loop()
    import uvloop  # the CLI's loop too (planner.cli.probe)

    return uvloop.new_event_loop()


class OurProbe:
    name = "ttft-planner probe (httpx, raw reads)"

    def __init__(self, url: str) -> None:
        self.loop = _new_loop()
        self.target = ProbeTarget(base_url=url, model="m", prompt_tokens=50, max_tokens=TOKENS)

    def first_token_ns(self) -> int | None:
        clock = StartClock()
        s = self.loop.run_until_complete(probe_once(self.target, clock_ns=clock, max_attempts=1))
        return None if not s.ok else clock.start_ns + round(s.ttft_ms * 1e6)


class RequestsIterLines:
    name = "requests iter_lines(chunk_size=1)"

    def __init__(self, url: str) -> None:
        import requests

        self.requests = requests
        self.url = url + "/chat/completions"

    def first_token_ns(self) -> int | None:
        body = {"model": "m", "stream": True, "max_tokens": TOKENS, "messages": [{"role": "user", "content": "hi"}]}
        first = None
        with self.requests.post(self.url, json=body, stream=True, timeout=30) as r:
            for line in r.iter_lines(chunk_size=1):
                if first is None and line.startswith(b"data: ") and line != b"data: [DONE]":
                    t = time.perf_counter_ns()
                    choices = json.loads(line[6:]).get("choices") or [{}]
                    if choices[0].get("delta", {}).get("content"):
                        first = t
        return first


class OpenAIClient:
    name = "openai client (stream=True)"

    def __init__(self, url: str) -> None:
        import openai

        self.client = openai.OpenAI(base_url=url, api_key="not-a-key", max_retries=0)

    def first_token_ns(self) -> int | None:
        first = None
        stream = self.client.chat.completions.create(
            model="m", max_tokens=TOKENS, stream=True, messages=[{"role": "user", "content": "hi"}]
        )
        for chunk in stream:
            t = time.perf_counter_ns()
            if first is None and chunk.choices and chunk.choices[0].delta.content:
                first = t
        return first


def _fresh_cli_run(url: str, n: int) -> tuple[list[float | None], float]:
    """(TTFT in ms of each sample, None when it failed; CPU seconds) of one fresh `ttft-planner probe` process."""
    out, cpu_s, _ = measured_cli(
        "probe",
        "--base-url",
        url,
        "--model",
        "m",
        "-n",
        str(n),
        "--interval-s",
        "0.1",
        "--prompt-tokens",
        "50",
        "--max-tokens",
        str(TOKENS),
        "--json",
        timeout_s=600,
    )
    samples = [json.loads(line) for line in out.stdout.splitlines() if line.startswith('{"type": "sample"')]
    return [s["ttft_ms"] if s["ok"] else None for s in samples], cpu_s


def _shape_errors(parent, url: str, probe: OurProbe, samples: int) -> dict[str, list[float]]:
    """shape → errors (ms) of our probe's first-token stamp against the server's first-content write, in process."""
    targets = {
        name: ProbeTarget(base_url=url, model=name, protocol=protocol, prompt_tokens=50, max_tokens=TOKENS)
        for name, (protocol, _) in SHAPES.items()
    }
    parent.send("count")
    request_no = parent.recv()
    seen: dict[str, list[tuple[int, int | None]]] = {name: [] for name in targets}
    for i in range(samples):
        names = list(targets)
        for name in names[i % len(names) :] + names[: i % len(names)]:  # rotated, as the clients are
            probe.target = targets[name]
            seen[name].append((request_no, probe.first_token_ns()))
            request_no += 1
    parent.send("truth")
    truth = parent.recv()
    return {
        name: [(t - truth[i]) / 1e6 for i, t in pairs if t is not None and truth[i] is not None]
        for name, pairs in seen.items()
    }


def _cli_errors(parent, url: str, runs: int, n: int) -> tuple[list[float], list[float]]:
    """(first-sample errors, other errors) in ms: client TTFT − server TTFT over `runs` fresh CLI processes."""
    firsts, rest = [], []
    for _ in range(runs):
        parent.send("count")
        start = parent.recv()
        ttfts, _ = _fresh_cli_run(url, n)
        parent.send("request_ttft")
        truth = parent.recv()[start:]
        for k, (client, server) in enumerate(zip(ttfts, truth, strict=False)):
            if client is not None and server is not None:
                (firsts if k == 0 else rest).append(client - server)
    return firsts, rest


def _abs_summary(errs: list[float]) -> dict:
    s = summarize([abs(e) for e in errs], ps=(0.5, 0.99))
    return {
        "n": len(errs),
        "median_abs_error_ms": s["p50"].value,
        "p99_abs_error_ms": s["p99"].value,
        "max_abs_error_ms": s["max"].value,
        "mean_signed_error_ms": sum(errs) / len(errs) if errs else None,
    }


def _matched(ttfts: list[float], truth: list[float]) -> list[float]:
    """Errors (ms) of one process's TTFTs against the server's, in order; extra server requests at the start (a
    peer's warm-up) are left out, so both lists are aligned at their ends."""
    n = min(len(ttfts), len(truth))
    return [c - s for c, s in zip(ttfts[len(ttfts) - n :], truth[len(truth) - n :], strict=True)]


OUR_CLOCK = "before its fresh connection's connect → the first content byte read"


def _one_process_rows(parent, url: str, n: int) -> dict[str, dict]:
    """One `ttft-planner probe` process and each peer, `n` requests each: error vs the server, CPU per request."""

    def truth_since(start: int) -> list[float]:
        parent.send("request_ttft")
        return [t for t in parent.recv()[start:] if t is not None]

    rows: dict[str, dict] = {}
    parent.send("count")
    start = parent.recv()
    ttfts, cpu_s = _fresh_cli_run(url, n)
    pairs = [(c, s) for c, s in zip(ttfts, truth_since(start), strict=False) if c is not None]
    rows["ttft-planner probe (CLI)"] = {
        **_abs_summary([c - s for c, s in pairs]),
        "requests": len(ttfts),
        "cpu_ms_per_request": cpu_s * 1000 / max(1, len(ttfts)),
        "clock": OUR_CLOCK,
    }
    workload = Workload(base_url=url, model="m", requests=n, prompt_tokens=PEER_PROMPT_TOKENS, output_tokens=TOKENS)
    with peer_tokenizer() as tokenizer:
        for peer in PEERS:
            parent.send("count")
            start = parent.recv()
            run = run_peer(peer, workload, tokenizer)
            if isinstance(run, str):
                rows[peer.name] = {"skipped": run}
                continue
            truth = truth_since(start)
            rows[peer.name] = {
                **_abs_summary(_matched(run.ttft_ms, truth)),
                "requests": run.requests,
                "server_requests": len(truth),
                "rejected": run.rejected[:5],
                "failed": run.failed,
                "cpu_ms_per_request": run.cpu_ms_per_request,
                "clock": peer.clock,
                "command": " ".join(run.command),
            }
    return rows


ROW = "{:<44} {:>4} {:>16} {:>13} {:>8} {:>15} {:>12}"


def _fmt(v: float | None, digits: int = 3) -> str:
    return "—" if v is None else f"{v:.{digits}f}"


def _print_row(name: str, r: dict) -> None:
    if "skipped" in r or r.get("failed"):
        print(f"{name:<44} {r.get('skipped') or 'FAILED ' + r['failed']}")
        return
    print(
        ROW.format(
            name,
            r["n"],
            _fmt(r["median_abs_error_ms"]),
            _fmt(r["p99_abs_error_ms"]),
            _fmt(r["max_abs_error_ms"]),
            _fmt(r["mean_signed_error_ms"]),
            _fmt(r["cpu_ms_per_request"], 2),
        )
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=200, help="samples per client (default 200)")
    ap.add_argument("--cli-runs", type=int, default=10, help="fresh CLI processes (default 10; 0 skips)")
    ap.add_argument("--cli-samples", type=int, default=5, help="samples per fresh CLI process (default 5)")
    ap.add_argument(
        "--shapes", type=int, default=100, help="our probe's samples per stream shape (default 100; 0 skips)"
    )
    ap.add_argument(
        "--peer-requests",
        type=int,
        default=100,
        help="requests of the one-process runs: our CLI, AIPerf, GuideLLM (default 100; 0 skips)",
    )
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = ap.parse_args()
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe()
    ready_r, ready_w = ctx.Pipe()
    proc = ctx.Process(target=_server_process, args=(child, ready_w), daemon=True)
    proc.start()
    url = ready_r.recv()
    clients = [OurProbe(url), RequestsIterLines(url), OpenAIClient(url)]
    for c in clients:  # warm-up: imports, first connection, server thread start
        c.first_token_ns()
    if os.environ.get("BENCH_GC_FREEZE", "1") == "1":
        gc.collect()
        gc.freeze()  # as the CLI does: a full collection over the imported modules' objects is a multi-ms pause
    detected: dict[str, list[tuple[int, int | None]]] = {c.name: [] for c in clients}
    cpu_ns = dict.fromkeys(detected, 0)
    request_no = len(clients)
    for i in range(args.samples):
        order = clients[i % 3 :] + clients[: i % 3]
        for c in order:
            t0 = time.process_time_ns()
            detected[c.name].append((request_no, c.first_token_ns()))
            cpu_ns[c.name] += time.process_time_ns() - t0
            request_no += 1
    parent.send("truth")
    truth = parent.recv()
    shape_errs = _shape_errors(parent, url, clients[0], args.shapes) if args.shapes > 0 else {}
    shapes = {name: {**_abs_summary(e), "failed": args.shapes - len(e)} for name, e in shape_errs.items()}
    firsts, rest = _cli_errors(parent, url, args.cli_runs, args.cli_samples) if args.cli_runs > 0 else ([], [])
    one_process = _one_process_rows(parent, url, args.peer_requests) if args.peer_requests > 0 else {}
    parent.send("stop")
    proc.join(5)
    results = {}
    for c in clients:
        errs = [(t - truth[i]) / 1e6 for i, t in detected[c.name] if t is not None and truth[i] is not None]
        results[c.name] = {
            **_abs_summary(errs),
            "failed": args.samples - len(errs),
            "cpu_ms_per_request": cpu_ns[c.name] / 1e6 / max(1, args.samples),
        }
    cli = {"first sample": _abs_summary(firsts), "other samples": _abs_summary(rest)} if firsts else {}
    load = os.getloadavg()[0]
    if args.json:
        print(
            json.dumps(
                {
                    "samples_per_client": args.samples,
                    "load_avg_1m": load,
                    "cpus": os.cpu_count(),
                    "results": results,
                    "shapes": {"samples_per_shape": args.shapes, "rows": shapes},
                    "fresh_cli": {"runs": args.cli_runs, "samples_per_run": args.cli_samples, **cli},
                    "one_process": {"requests": args.peer_requests, "rows": one_process},
                }
            )
        )
        return 0
    busy = "" if load < (os.cpu_count() or 1) else " (machine loaded: re-run when idle)"
    print(
        f"TTFT error vs server ground truth, loopback, {args.samples} samples per client "
        f"(load average {load:.1f} on {os.cpu_count()} CPUs; nearest-rank percentiles; CPU: this process's "
        "time in the client's calls)"
    )
    print(ROW.format("client", "n", "median |err| ms", "p99 |err| ms", "max ms", "mean signed ms", "CPU ms/req"))
    for name, r in results.items():
        _print_row(name, r)
    ours = results[clients[0].name]
    verdict = ours["median_abs_error_ms"] <= 0.5 and ours["p99_abs_error_ms"] <= 2.0
    print(f"target median ≤ 0.5 ms and p99 ≤ 2 ms: {'met' if verdict else 'NOT met'}{busy}")
    if shapes:
        print(f"\nour probe per stream shape ({args.shapes} samples each; first token after 20 ms)")
        for name, r in shapes.items():
            failed = f"{r['failed']} of {args.shapes} samples failed" if r["failed"] else None
            _print_row(name, {**r, "cpu_ms_per_request": None, "failed": failed})
        ok = all(
            not r["failed"] and r["median_abs_error_ms"] <= 0.5 and r["p99_abs_error_ms"] <= 2.0
            for r in shapes.values()
        )
        print(f"target every shape median ≤ 0.5 ms and p99 ≤ 2 ms: {'met' if ok else 'NOT met'}{busy}")
    if cli:
        print(
            f"\nfresh `ttft-planner probe` processes ({args.cli_runs} runs × {args.cli_samples} samples; "
            "truth: server accept() → first content write)"
        )
        for name, r in cli.items():
            _print_row(name, {**r, "cpu_ms_per_request": None})
        worst = max(abs(e) for e in firsts + rest)
        print(
            f"target every sample (first included) within 3 ms: {'met' if worst <= 3.0 else 'NOT met'} "
            f"(worst {worst:.2f} ms){busy}"
        )
    if one_process:
        print(
            f"\none process per client, {args.peer_requests} requests at concurrency 1 ({PEER_PROMPT_TOKENS}-token "
            "prompts for the peers); truth: accept() → first content write on a new connection, the request's "
            "arrival → first content write on a kept one; CPU: the whole process, start-up included"
        )
        for name, r in one_process.items():
            _print_row(name, r)
        for name, r in one_process.items():
            if "clock" in r:
                print(f"  {name} clock: {r['clock']}")
            if not r.get("failed") and r.get("server_requests", r.get("requests")) != r.get("requests"):
                print(f"  {name}: {r['requests']} exported, {r['server_requests']} served: matched from the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
