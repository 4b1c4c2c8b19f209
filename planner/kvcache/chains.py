"""Each request's prompt as a chain of block hashes: the identity of its prefix, block by block.

A block's hash stands for the whole prompt up to its end (the hash of the previous block's hash and this block's
tokens), so two requests share their first k blocks exactly when their prompts agree on the first k × block
tokens — how vLLM's and SGLang's prefix caches match. Three sources:

- Mooncake / AIPerf traces give `hash_ids` (512-token blocks, already chained by the trace's authors);
- token ids (a replay we generate, or text through a real tokenizer) are cut into full blocks and chained here;
- chat text without a tokenizer is cut into blocks of block_tokens × 4 characters (≈ 4 characters a token,
  planner.logs.tokenize's estimate): a stated approximation, labelled so.

Only full blocks are hashed: an engine caches whole blocks, so a prompt's last partial block is never a hit.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.errors import PlannerError
from planner.logs.tokenize import CHARS_PER_TOKEN, TokenCounter, message_text

__all__ = [
    "MOONCAKE_BLOCK_TOKENS",
    "PrefixRequest",
    "PrefixTrace",
    "PrefixTraceError",
    "chain_tokens",
    "chain_text",
    "read_prefix_trace",
]

MOONCAKE_BLOCK_TOKENS = 512
_SESSION_KEYS = ("session_id", "conversation_id", "thread_id")  # top level or under `metadata`


class PrefixTraceError(PlannerError, ValueError):
    """A trace that gives no prompt identity (no hash_ids, messages or prompt text), naming file and line."""


@dataclass(frozen=True)
class PrefixRequest:
    """One request: when it arrived, its session (None if the log has none), its prompt length and the chained
    hashes of its prompt's full blocks, in order."""

    ts_ms: int
    session: str | None
    prompt_tokens: int
    blocks: tuple[int, ...]
    output_tokens: int = 0


@dataclass(frozen=True)
class PrefixTrace:
    requests: tuple[PrefixRequest, ...]
    block_tokens: int
    source: str  # how the prefix identity was made, for the page and the command's provenance line
    approximate: bool  # True when blocks were cut from text at ≈ 4 characters a token


def _h(prev: int, payload: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(prev.to_bytes(8, "little") + payload, digest_size=8).digest(), "little")


def chain_tokens(tokens: Sequence[int], block_tokens: int) -> tuple[int, ...]:
    """The chained hashes of the full blocks of a token sequence."""
    out, prev = [], 0
    for start in range(0, len(tokens) - block_tokens + 1, block_tokens):
        prev = _h(prev, json.dumps(list(tokens[start : start + block_tokens])).encode())
        out.append(prev)
    return tuple(out)


def chain_text(text: str, block_tokens: int) -> tuple[int, ...]:
    """The chained hashes of the full blocks of a text, a block being block_tokens × 4 characters (an estimate)."""
    size = int(block_tokens * CHARS_PER_TOKEN)
    out, prev = [], 0
    for start in range(0, len(text) - size + 1, size):
        prev = _h(prev, text[start : start + size].encode("utf-8", "surrogatepass"))
        out.append(prev)
    return tuple(out)


def _session(rec: dict[str, Any]) -> str | None:
    meta = rec.get("metadata")
    for where in (rec, meta if isinstance(meta, dict) else {}):
        for key in _SESSION_KEYS:
            if where.get(key) not in (None, ""):
                return str(where[key])
    return None


def _ts_ms(value: Any, line: int, label: str) -> int:
    import datetime as dt

    if isinstance(value, bool) or value is None:
        raise PrefixTraceError(f"{label}:{line}: no timestamp")
    if isinstance(value, (int, float)):
        v = float(value)
        return int(v if v > 1e11 or v < 1e9 else v * 1000)  # seconds since 1970, or ms (Mooncake: ms from start)
    try:
        when = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise PrefixTraceError(f"{label}:{line}: timestamp {value!r} is not a number or an ISO time") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return int(when.timestamp() * 1000)


def _records(text: str, label: str) -> Iterator[tuple[int, dict[str, Any]]]:
    if text.lstrip().startswith("["):
        for i, rec in enumerate(json.loads(text), 1):
            yield i, rec
        return
    for i, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise PrefixTraceError(f"{label}:{i}: not JSON ({exc.msg})") from None
            if not isinstance(rec, dict):
                raise PrefixTraceError(f"{label}:{i}: a JSON object per line expected")
            yield i, rec


def _prompt(rec: dict[str, Any]) -> Any:
    for key in ("messages", "prompt", "input"):
        if key in rec:
            return rec[key]
    body = rec.get("request") or rec.get("body")
    return _prompt(body) if isinstance(body, dict) else None


def read_prefix_trace(
    trace_file: Path | tuple[str, bytes], block_tokens: int | None = None, counter: TokenCounter | None = None
) -> PrefixTrace:
    """The requests of a JSON Lines (or JSON array) trace with their prompt identity. `trace_file`: a path, or a (file
    name, bytes) pair as read_logs takes an upload (read in memory, nothing written).

    Mooncake/AIPerf records (`hash_ids`, `input_length`, `output_length`, `timestamp` in ms) keep their 512-token
    blocks; chat records (`messages`, or `prompt`/`input` text, under `request`/`body` too) are hashed from their
    text: exact token blocks when `counter` holds a real tokenizer, else blocks of ≈ 4 characters a token.
    Sessions come from session_id / conversation_id / thread_id (top level or in `metadata`).

    Raises PrefixTraceError naming the file and line of a record with neither.
    """
    label, data = (trace_file.name, trace_file.read_bytes()) if isinstance(trace_file, Path) else trace_file
    recs = list(_records(data.decode("utf-8-sig"), label))
    if not recs:
        raise PrefixTraceError(f"{label}: no records")
    mooncake = all("hash_ids" in r for _, r in recs)
    exact = counter is not None and not counter.estimated
    size = block_tokens or (MOONCAKE_BLOCK_TOKENS if mooncake else 16)
    out = []
    for line, rec in recs:
        ts = _ts_ms(rec.get("timestamp", rec.get("created", rec.get("startTime"))), line, label)
        if mooncake:
            prompt, blocks = int(rec.get("input_length", 0)), tuple(int(h) for h in rec["hash_ids"])
            full = prompt // size
            out.append(PrefixRequest(ts, _session(rec), prompt, blocks[:full], int(rec.get("output_length", 0))))
            continue
        value = _prompt(rec)
        if value is None:
            raise PrefixTraceError(f"{label}:{line}: no hash_ids, messages or prompt text to tell the prefix by")
        text = message_text(value)
        if exact and counter is not None:
            ids = counter.token_ids(text)
            prompt, blocks = len(ids), chain_tokens(ids, size)
        else:
            prompt, blocks = (counter or TokenCounter()).count(text), chain_text(text, size)
        output = rec.get("output_tokens", rec.get("completion_tokens", 0))
        out.append(PrefixRequest(ts, _session(rec), prompt, blocks, int(output or 0)))
    out.sort(key=lambda r: r.ts_ms)
    if mooncake:
        source = f"hash_ids ({size}-token blocks)"
    elif exact and counter is not None:
        source = f"message text, {counter.label} ({size}-token blocks)"
    else:
        source = f"message text cut at ≈ {CHARS_PER_TOKEN:g} characters a token ({size}-token blocks, an estimate)"
    return PrefixTrace(tuple(out), size, source, approximate=not mooncake and not exact)
