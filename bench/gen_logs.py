"""Generate realistic request logs: the benchmark's large OpenAI-style JSON Lines file, and the samples.

Traffic: coding-agent sessions on working days (Europe/Berlin office hours, a lunch dip, light
evenings and weekends); each session is a few turns of several calls seconds apart; the prompt
grows within a session as repo context, diffs and tool output pile up, and most of it is a
cached prefix after the first call. Deterministic for a given --seed.

  python bench/gen_logs.py bench-1m.jsonl --requests 1000000          # the benchmark file
  python bench/gen_logs.py --samples assets/sample_logs                 # the shipped samples
  (the real public-trace rows in assets/sample_logs are copied by hand; see its README.md)
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import random
import uuid
from pathlib import Path

BERLIN_OFFSET_H = 1  # November: CET = UTC+1
START = dt.datetime(2026, 11, 16, 0, 0, tzinfo=dt.UTC)  # a Monday
MODELS = ["gpt-4.1", "gpt-4.1-mini", "claude-sonnet-4-5", "llama-3.3-70b"]
SNIPPETS = [
    "Refactor the retry loop in client.py to honour Retry-After.",
    "Why does test_parse_sse fail on Windows line endings?",
    "Add a --vantage flag to the worker command.",
    "Explain this stack trace from the migration step.",
    "Write a unit test for the nearest-rank percentile.",
    "Rename ttft to ttft_ms everywhere in the probes module.",
]
REPLIES = ["Here is the change:", "The failure comes from", "Done. I updated", "Looking at the diff,"]


def _hour_weight(local_hour: int, weekday: int) -> float:
    if weekday >= 5:
        return 0.04
    shape = {8: 0.4, 9: 1.0, 10: 1.2, 11: 1.1, 12: 0.5, 13: 0.8, 14: 1.2, 15: 1.1, 16: 1.0, 17: 0.7, 18: 0.3, 19: 0.15}
    return shape.get(local_hour, 0.03)


def requests(n: int, seed: int = 7):
    """Yield n request dicts (ts_ms, model, prompt_tokens, cached_tokens, output_tokens, ttft_ms, duration_ms)."""
    rng = random.Random(seed)
    # Session starts: thin a per-minute grid by the hour-of-day weight until n calls are produced.
    produced = 0
    minute = 0
    # ~17.5 calls per session and ~2,900 weighted minutes per week: the log spans about a week for any n.
    sessions_per_min = n / (17.5 * 2900.0)
    while produced < n:
        t = START + dt.timedelta(minutes=minute)
        local = t + dt.timedelta(hours=BERLIN_OFFSET_H)
        minute = (minute + 1) % (14 * 24 * 60)
        lam = sessions_per_min * _hour_weight(local.hour, local.weekday())
        k = 0
        while rng.random() < lam / (1 + lam) and k < 1000:
            k += 1
        for _ in range(k):
            model = rng.choices(MODELS, weights=[5, 3, 3, 1])[0]
            ts = int(t.timestamp() * 1000) + rng.randrange(60_000)
            context = int(rng.lognormvariate(7.6, 0.6))  # ~2000-token system prompt + repo map
            for _turn in range(rng.randint(1, 6)):
                for call in range(rng.randint(2, 9)):
                    if produced >= n:
                        return
                    cached = 0 if call == 0 and _turn == 0 else int(context * rng.uniform(0.7, 0.98))
                    context += int(rng.lognormvariate(5.5, 1.0))  # tool output, diffs
                    prompt = min(context, 190_000)
                    cached = min(cached, prompt)
                    output = max(1, int(rng.lognormvariate(5.0, 0.9)))
                    ttft = 180 + (prompt - cached) * 0.04 + rng.expovariate(1 / 60)
                    duration = ttft + output * rng.uniform(8, 14)
                    yield {
                        "ts_ms": ts,
                        "model": model,
                        "prompt_tokens": prompt,
                        "cached_tokens": cached,
                        "output_tokens": output,
                        "ttft_ms": round(ttft, 1),
                        "duration_ms": round(duration, 1),
                    }
                    produced += 1
                    ts += int(duration) + int(rng.lognormvariate(8.0, 1.0))  # tool execution between calls
                ts += int(rng.lognormvariate(10.5, 0.8))  # the developer reads and types


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def openai_chat(r: dict, rng: random.Random) -> dict:
    return {
        "id": f"chatcmpl-{uuid.UUID(int=rng.getrandbits(128)).hex[:24]}",
        "object": "chat.completion",
        "created": r["ts_ms"] // 1000,
        "model": r["model"],
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": rng.choice(REPLIES), "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": r["prompt_tokens"],
            "completion_tokens": r["output_tokens"],
            "total_tokens": r["prompt_tokens"] + r["output_tokens"],
            "prompt_tokens_details": {"cached_tokens": r["cached_tokens"], "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        },
        "service_tier": "default",
        "system_fingerprint": "fp_6b68a8204b",
    }


def write_jsonl(path: Path, n: int, seed: int = 7) -> int:
    """Write n OpenAI chat-completion lines; returns the byte size."""
    rng = random.Random(seed + 1)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="utf-8") as fh:
        for r in requests(n, seed):
            fh.write(json.dumps(openai_chat(r, rng), separators=(",", ":")) + "\n")
    return path.stat().st_size


def write_samples(folder: Path, seed: int = 11) -> None:
    """The small samples in assets/sample_logs (one per supported format)."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    rows = list(requests(400, seed))

    with open(folder / "openai_chat_completions.jsonl", "w") as fh:
        for r in rows:
            fh.write(json.dumps(openai_chat(r, rng)) + "\n")

    with open(folder / "openai_batch_output.jsonl", "w") as fh:
        for i, r in enumerate(rows[:150]):
            line = {
                "id": f"batch_req_{i:06d}",
                "custom_id": f"task-{i}",
                "response": {"status_code": 200, "request_id": f"req_{i:06d}", "body": openai_chat(r, rng)},
                "error": None,
            }
            if i == 37:
                line = {
                    "id": f"batch_req_{i:06d}",
                    "custom_id": f"task-{i}",
                    "response": None,
                    "error": {
                        "code": "batch_expired",
                        "message": "This request could not be executed before the completion window expired.",
                    },
                }
            fh.write(json.dumps(line) + "\n")

    with open(folder / "anthropic_messages.jsonl", "w") as fh:
        for r in rows:
            read = r["cached_tokens"]
            creation = 0 if read else min(r["prompt_tokens"], 2048)
            msg = {
                "id": f"msg_{uuid.UUID(int=rng.getrandbits(128)).hex[:24]}",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5-20250929",
                "content": [{"type": "text", "text": rng.choice(REPLIES)}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {
                    "input_tokens": r["prompt_tokens"] - read - creation,
                    "cache_creation_input_tokens": creation,
                    "cache_read_input_tokens": read,
                    "output_tokens": r["output_tokens"],
                    "service_tier": "standard",
                },
            }
            fh.write(json.dumps({"timestamp": _iso(r["ts_ms"]), "response": msg}) + "\n")

    spend = []
    for i, r in enumerate(rows[:250]):
        start = r["ts_ms"]
        spend.append(
            {
                "request_id": f"chatcmpl-{i:08x}",
                "call_type": "acompletion",
                "api_key": "88dc28d0f030c55ed4ab77ed8faf098196cb1c05df778539800c9f1243fe6b4b",
                "spend": round(r["prompt_tokens"] * 2e-6 + r["output_tokens"] * 8e-6, 6),
                "total_tokens": r["prompt_tokens"] + r["output_tokens"],
                "prompt_tokens": r["prompt_tokens"],
                "completion_tokens": r["output_tokens"],
                "startTime": _iso(start),
                "endTime": _iso(start + int(r["duration_ms"])),
                "completionStartTime": _iso(start + int(r["ttft_ms"])),
                "model": r["model"],
                "model_id": "model-1",
                "model_group": r["model"],
                "custom_llm_provider": "openai",
                "api_base": "https://api.openai.com/v1",
                "user": "dev-team",
                "status": "success",
                "metadata": {
                    "user_api_key_alias": "agent",
                    "additional_usage_values": {"prompt_tokens_details": {"cached_tokens": r["cached_tokens"]}},
                },
                "cache_hit": "False",
                "cache_key": "Cache OFF",
                "request_tags": ["coding-agent"],
                "team_id": None,
                "end_user": "",
                "requester_ip_address": "",
                "messages": {},
                "response": {},
                "session_id": None,
            }
        )
    (folder / "litellm_spend_logs.json").write_text(json.dumps(spend, indent=1))

    observations = []
    for i, r in enumerate(rows[:250]):
        start = r["ts_ms"]
        trace = f"trace-{i // 6:05d}"
        if i % 6 == 0:
            observations.append(
                {
                    "id": f"span-{i}",
                    "traceId": trace,
                    "type": "SPAN",
                    "name": "agent-turn",
                    "startTime": _iso(start - 5),
                    "endTime": _iso(start + int(r["duration_ms"]) + 50),
                }
            )
        observations.append(
            {
                "id": f"gen-{i}",
                "traceId": trace,
                "type": "GENERATION",
                "name": "chat",
                "startTime": _iso(start),
                "endTime": _iso(start + int(r["duration_ms"])),
                "completionStartTime": _iso(start + int(r["ttft_ms"])),
                "model": r["model"],
                "modelParameters": {"temperature": 0.2},
                "input": [{"role": "user", "content": rng.choice(SNIPPETS)}],
                "output": {"role": "assistant", "content": rng.choice(REPLIES)},
                "level": "DEFAULT",
                "usageDetails": {
                    "input": r["prompt_tokens"] - r["cached_tokens"],
                    "input_cached_tokens": r["cached_tokens"],
                    "output": r["output_tokens"],
                    "total": r["prompt_tokens"] + r["output_tokens"],
                },
                "usage": {
                    "input": r["prompt_tokens"] - r["cached_tokens"],
                    "output": r["output_tokens"],
                    "unit": "TOKENS",
                },
            }
        )
    (folder / "langfuse_observations.json").write_text(
        json.dumps(
            {
                "data": observations,
                "meta": {"page": 1, "limit": 1000, "totalItems": len(observations), "totalPages": 1},
            },
            indent=1,
        )
    )

    with open(folder / "otel_genai_spans.jsonl", "w") as fh:
        batch: list = []
        for r in rows[:200]:
            start_ns = r["ts_ms"] * 1_000_000
            attrs = [
                {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                {"key": "gen_ai.system", "value": {"stringValue": "openai"}},
                {"key": "gen_ai.request.model", "value": {"stringValue": r["model"]}},
                {
                    "key": "gen_ai.response.model",
                    "value": {
                        "stringValue": r["model"] + "-2025-04-14" if r["model"].startswith("gpt") else r["model"]
                    },
                },
                {"key": "gen_ai.usage.input_tokens", "value": {"intValue": str(r["prompt_tokens"])}},
                {"key": "gen_ai.usage.output_tokens", "value": {"intValue": str(r["output_tokens"])}},
                {"key": "gen_ai.usage.cache_read.input_tokens", "value": {"intValue": str(r["cached_tokens"])}},
            ]
            batch.append(
                {
                    "traceId": uuid.UUID(int=rng.getrandbits(128)).hex,
                    "spanId": uuid.UUID(int=rng.getrandbits(128)).hex[:16],
                    "name": f"chat {r['model']}",
                    "kind": 3,
                    "startTimeUnixNano": str(start_ns),
                    "endTimeUnixNano": str(start_ns + int(r["duration_ms"] * 1e6)),
                    "attributes": attrs,
                    "events": [{"timeUnixNano": str(start_ns + int(r["ttft_ms"] * 1e6)), "name": "gen_ai.first_token"}],
                    "status": {},
                }
            )
            batch.append(
                {
                    "traceId": batch[-1]["traceId"],
                    "spanId": uuid.UUID(int=rng.getrandbits(128)).hex[:16],
                    "name": "POST",
                    "kind": 3,
                    "startTimeUnixNano": str(start_ns + 1000),
                    "endTimeUnixNano": str(start_ns + int(r["duration_ms"] * 1e6)),
                    "attributes": [{"key": "http.request.method", "value": {"stringValue": "POST"}}],
                }
            )
            if len(batch) >= 40:
                fh.write(
                    json.dumps(
                        {
                            "resourceSpans": [
                                {
                                    "resource": {
                                        "attributes": [
                                            {"key": "service.name", "value": {"stringValue": "coding-agent"}}
                                        ]
                                    },
                                    "scopeSpans": [
                                        {
                                            "scope": {
                                                "name": "opentelemetry.instrumentation.openai_v2",
                                                "version": "2.1b0",
                                            },
                                            "spans": batch,
                                        }
                                    ],
                                }
                            ]
                        }
                    )
                    + "\n"
                )
                batch = []

    with open(folder / "requests.csv", "w") as fh:
        fh.write("timestamp,model,prompt_tokens,cached_tokens,completion_tokens,ttft_ms\n")
        for r in rows:
            fh.write(
                f"{_iso(r['ts_ms'])},{r['model']},{r['prompt_tokens']},{r['cached_tokens']},{r['output_tokens']},{r['ttft_ms']}\n"
            )

    with open(folder / "gateway_custom_columns.csv", "w") as fh:
        fh.write("started;llm;tok_in_total;tok_in_hit;tok_out;first_byte_s\n")
        for r in rows[:200]:
            local = dt.datetime.fromtimestamp(r["ts_ms"] / 1000, dt.UTC) + dt.timedelta(hours=BERLIN_OFFSET_H)
            fh.write(
                f"{local.strftime('%Y-%m-%d %H:%M:%S')};{r['model']};{r['prompt_tokens']};{r['cached_tokens']};"
                f"{r['output_tokens']};{r['ttft_ms'] / 1000:.3f}\n"
            )

    with open(folder / "prompts_without_counts.jsonl", "w") as fh:
        for r in rows[:120]:
            words = " ".join(rng.choice(SNIPPETS) for _ in range(max(1, r["prompt_tokens"] // 200)))
            fh.write(
                json.dumps(
                    {
                        "timestamp": _iso(r["ts_ms"]),
                        "model": r["model"],
                        "messages": [
                            {"role": "system", "content": "You are a coding agent."},
                            {"role": "user", "content": words},
                        ],
                        "completion": rng.choice(REPLIES),
                    }
                )
                + "\n"
            )


def write_trace_samples(folder: Path, seed: int = 13) -> None:
    """The synthetic public-trace samples (in the published column formats, labelled synthetic) and a LiteLLM CSV
    export.

    Real rows of the Azure 2023 and Mooncake traces are copied into assets/sample_logs by hand (see its README);
    BurstGPT's and Azure 2024's rows could not be fetched, so these follow their published formats only.
    """
    import csv

    rng = random.Random(seed)
    # BurstGPT: Timestamp (s since the trace start), Model, Request tokens, Response tokens, Total tokens, Log Type.
    with open(folder / "burstgpt_synthetic.csv", "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["Timestamp", "Model", "Request tokens", "Response tokens", "Total tokens", "Log Type"])
        t = 5.0
        for _ in range(300):
            t += round(rng.expovariate(1 / 40.0))
            model = rng.choices(["ChatGPT", "GPT-4"], weights=[4, 1])[0]
            req = max(1, int(rng.lognormvariate(6.3, 1.1)))
            resp = (
                0 if rng.random() < 0.03 else max(1, int(rng.lognormvariate(5.4, 1.0)))
            )  # failures: 0 response tokens
            w.writerow([f"{t:.0f}", model, req, resp, req + resp, rng.choice(["Conversation log", "API log"])])
    # Azure LLM inference trace 2024: TIMESTAMP, ContextTokens, GeneratedTokens (May 2024).
    with open(folder / "azure_2024_synthetic.csv", "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["TIMESTAMP", "ContextTokens", "GeneratedTokens"])
        t = dt.datetime(2024, 5, 10, 0, 0, tzinfo=dt.UTC)
        for _ in range(300):
            t += dt.timedelta(seconds=rng.expovariate(1 / 2.0))
            w.writerow(
                [
                    t.strftime("%Y-%m-%d %H:%M:%S.%f") + "0+00:00",
                    max(1, int(rng.lognormvariate(7.2, 1.0))),
                    max(1, int(rng.lognormvariate(4.5, 1.0))),
                ]
            )
    # A LiteLLM spend-log export as CSV: metadata as quoted JSON (doubled quotes), a message with a line break.
    rows = list(requests(120, seed))
    with open(folder / "litellm_spend_logs.csv", "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\r\n")
        w.writerow(
            [
                "request_id",
                "call_type",
                "spend",
                "total_tokens",
                "prompt_tokens",
                "completion_tokens",
                "startTime",
                "endTime",
                "completionStartTime",
                "model",
                "user",
                "status",
                "metadata",
                "cache_hit",
                "messages",
            ]
        )
        for i, r in enumerate(rows):
            start = r["ts_ms"]
            meta = {
                "user_api_key_alias": "agent, team A",
                "additional_usage_values": {"prompt_tokens_details": {"cached_tokens": r["cached_tokens"]}},
            }
            msg = 'Fix the failing test,\nthen run "make check"' if i % 7 == 0 else ""
            w.writerow(
                [
                    f"chatcmpl-{i:08x}",
                    "acompletion",
                    round(r["prompt_tokens"] * 2e-6, 6),
                    r["prompt_tokens"] + r["output_tokens"],
                    r["prompt_tokens"],
                    r["output_tokens"],
                    _iso(start),
                    _iso(start + int(r["duration_ms"])),
                    _iso(start + int(r["ttft_ms"])),
                    r["model"],
                    "dev-team",
                    "success",
                    json.dumps(meta),
                    "False",
                    msg,
                ]
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("path", nargs="?", type=Path, help="output .jsonl (or .jsonl.gz) for --requests lines")
    ap.add_argument("--requests", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--samples", type=Path, help="write the format samples into this folder instead")
    args = ap.parse_args()
    if args.samples:
        write_samples(args.samples)
        write_trace_samples(args.samples)
        return
    if not args.path:
        ap.error("give an output path or --samples FOLDER")
    size = write_jsonl(args.path, args.requests, args.seed)
    print(f"wrote {args.requests:,} requests, {size / 1e6:.1f} MB, to {args.path}")


if __name__ == "__main__":
    main()
