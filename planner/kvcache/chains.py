"""Each request's prompt as a chain of block hashes: the identity of its prefix, block by block.

A block's hash stands for the whole prompt up to its end (the hash of the previous block's hash and this block's
tokens), so two requests share their first k blocks exactly when their prompts agree on the first k × block
tokens — how vLLM's and SGLang's prefix caches match. Three sources:

- Mooncake / AIPerf traces give `hash_ids` (512-token blocks, already chained by the trace's authors). The trace's
  block size is the trace's own (`trace_block_tokens`, 512 unless stated), whatever the engine's block: an engine
  block that divides it reads each hash as trace ÷ engine blocks of its own, a multiple of it groups that many
  hashes into one, and any other size is refused (BlockSizeError): a hash cannot be cut at a size it was not made
  at;
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
from planner.kvcache.fields import arrival_ms, block_hashes, counts, session_of
from planner.logs.read import json_records
from planner.logs.records import Reject, RejectedLine, Rejections
from planner.logs.stream import BrokenStream
from planner.logs.tokenize import CHARS_PER_TOKEN, TokenCounter, message_text

__all__ = [
    "MOONCAKE_BLOCK_TOKENS",
    "BlockSizeError",
    "PrefixRequest",
    "PrefixTrace",
    "PrefixTraceError",
    "chain_tokens",
    "chain_text",
    "read_prefix_trace",
]

MOONCAKE_BLOCK_TOKENS = 512


class PrefixTraceError(PlannerError, ValueError):
    """A trace none of whose records can be used, or a file that cannot be read at all (too large, a bomb, not a
    regular file, not JSON); the message names the file and, for records, the first rejected lines."""


class BlockSizeError(PrefixTraceError):
    """An engine block size a hash_ids trace cannot be read at: neither a divisor nor a multiple of the trace's own
    block size. The message names both sizes and what would do."""


def engine_blocks(hashes: Sequence[int], prompt_tokens: int, trace_block: int, engine_block: int) -> tuple[int, ...]:
    """The engine's full blocks of a prompt given as trace-block hashes (`trace_block` tokens each, chained).

    An engine block that divides the trace's gives each hash trace ÷ engine blocks (hash h's j-th is h × k + j, one
    to one with (h, j)), the last partial trace block's full engine blocks included; a multiple of it gives one
    block per that many hashes, named by the group's last hash (a chained hash names its whole prefix). Raises
    BlockSizeError for any other size.
    """
    full = prompt_tokens // engine_block
    if engine_block == trace_block:
        return tuple(hashes[:full])
    if trace_block % engine_block == 0:
        k = trace_block // engine_block
        out = [h * k + j for h in hashes for j in range(k)]
        return tuple(out[:full])
    if engine_block % trace_block == 0:
        m = engine_block // trace_block
        return tuple(hashes[(j + 1) * m - 1] for j in range(min(full, len(hashes) // m)))
    fits = [d for d in (1, 16, 32, 64) if trace_block % d == 0][-2:]
    raise BlockSizeError(
        f"a block of {engine_block} tokens cannot be read from this trace's hash_ids: each hash stands for "
        f"{trace_block} tokens, so the engine's block must divide {trace_block} (e.g. {' or '.join(map(str, fits))}) "
        f"or be a multiple of it (e.g. {2 * trace_block})"
    )


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
    """The requests read, in arrival order, and the lines that were not (the first MAX_REJECTED_KEPT of them
    named, all of them counted)."""

    requests: tuple[PrefixRequest, ...]
    block_tokens: int
    source: str  # how the prefix identity was made, for the page and the command's provenance line
    approximate: bool  # True when blocks were cut from text at ≈ 4 characters a token
    rejected: tuple[RejectedLine, ...] = ()
    n_rejected: int = 0
    trace_block_tokens: int | None = None  # a hash_ids trace's own block size (tokens a hash stands for); None: text


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


def _prompt(rec: dict[str, Any]) -> Any:
    for key in ("messages", "prompt", "input"):
        if key in rec:
            return rec[key]
    body = rec.get("request") or rec.get("body")
    return _prompt(body) if isinstance(body, dict) else None


def _request(
    rec: dict[str, Any], hashed: bool, size: int, counter: TokenCounter | None, trace_size: int = 0
) -> PrefixRequest:
    """One record as a request (`hashed`: by its hash_ids of `trace_size`-token blocks, read in `size`-token engine
    blocks; else by its prompt text, in blocks of `size` tokens); raises Reject naming what it lacks or what a field
    held."""
    ts, session = arrival_ms(rec), session_of(rec)
    if hashed:
        if "hash_ids" not in rec:
            raise Reject("no hash_ids, as the trace's first record has")
        hashes = block_hashes(rec["hash_ids"])
        prompt, output = counts(rec, "input_length", ("output_length",))
        return PrefixRequest(ts, session, prompt, engine_blocks(hashes, prompt, trace_size or size, size), output)
    value = _prompt(rec)
    if value is None and "hash_ids" in rec:
        raise Reject("hash_ids but no prompt text, as the trace's first record has: a trace is one or the other")
    if value is None:
        raise Reject("no hash_ids, messages or prompt text to tell the prefix by")
    _, output = counts(rec, None, ("output_tokens", "completion_tokens"))
    text = message_text(value)
    if counter is not None and not counter.estimated:
        ids = counter.token_ids(text)
        return PrefixRequest(ts, session, len(ids), chain_tokens(ids, size), output)
    return PrefixRequest(ts, session, (counter or TokenCounter()).count(text), chain_text(text, size), output)


def _label(trace_file: Path | tuple[str, bytes]) -> str:
    return trace_file.name if isinstance(trace_file, Path) else str(trace_file[0])


def _records(
    trace_file: Path | tuple[str, bytes], out: Rejections, max_bytes: int | None
) -> Iterator[tuple[int, dict]]:
    """The file's numbered JSON records, opened and split as the log reader opens and splits a file
    (planner.logs.read.json_records: .gz / .zst under the size and bomb caps, BOM / UTF-16 decoding), a line that
    is not JSON, not UTF-8 or nested too deeply rejected into `out`, named. Raises PrefixTraceError when the file
    cannot be read at all."""
    label = _label(trace_file)
    try:
        _, records = json_records(trace_file, max_bytes)
        for line, rec in records:
            if isinstance(rec, str):
                out.reject(label, line, rec)
            else:
                yield line, rec
    except (ValueError, OSError, EOFError) as exc:  # TooLarge, a corrupt .gz / .zst, not a regular file, not JSON
        why = (
            str(exc)
            if isinstance(exc, ValueError)
            else f"{label} is {exc}"
            if isinstance(exc, BrokenStream)
            else f"cannot read: {getattr(exc, 'strerror', None) or exc}"
        )
        raise PrefixTraceError(why if why.startswith(label) else f"{label}: {why}") from None


def _nothing_read(label: str, out: Rejections) -> str:
    """Why a trace gave no request: its first rejected lines, or that it held no records."""
    if not out.n_rejected:
        return f"{label}: no records"
    if all(r.line_no == 0 for r in out.rejected):  # the file as a whole (a JSON array that does not parse)
        return "; ".join(str(r) for r in out.rejected[:3])
    first = "; ".join(str(r) for r in out.rejected[:3])
    lines = f"{out.n_rejected:,} line{'' if out.n_rejected == 1 else 's'}"
    return f"{label}: no request could be read; {lines} rejected, first: {first}"


def read_prefix_trace(
    trace_file: Path | tuple[str, bytes],
    block_tokens: int | None = None,
    counter: TokenCounter | None = None,
    max_bytes: int | None = None,
    trace_block_tokens: int | None = None,
) -> PrefixTrace:
    """The requests of a JSON Lines (or JSON array) trace with their prompt identity. `trace_file`: a path, or a (file
    name, bytes) pair as read_logs takes an upload (read in memory, nothing written); plain, .gz or .zst, opened
    as `logs summarize` opens it (the same size cap, `max_bytes`, default planner.logs.opening.DEFAULT_MAX_BYTES, and
    the same bomb and nesting limits).

    Mooncake/AIPerf records (`hash_ids`, `input_length`, `output_length`, `timestamp` in ms) are hashes of
    `trace_block_tokens`-token blocks (default 512, Mooncake's and AIPerf's), read in `block_tokens`-token engine
    blocks (default: the trace's; see engine_blocks: a divisor or a multiple of the trace's, else BlockSizeError,
    raised before any record is read on); chat records (`messages`, or `prompt`/`input` text, under
    `request`/`body` too) are hashed from their text: exact token blocks when `counter` holds a real tokenizer,
    else blocks of ≈ 4 characters a token. The first readable record decides which (hash_ids, or text). Sessions
    come from session_id / conversation_id / thread_id (top level or in `metadata`).

    A record that cannot be used (not JSON, not UTF-8, too deeply nested, no prompt identity, a hash that is not a
    whole number, a bad time or count) is a rejected line in the result, named by file and line; the rest is read.
    Raises PrefixTraceError naming the file when it cannot be read at all or no record can be used.
    """
    if trace_block_tokens is not None and trace_block_tokens < 1:
        raise BlockSizeError(f"a trace's hash blocks hold at least one token, not {trace_block_tokens}")
    label = _label(trace_file)
    out = Rejections()
    exact = counter is not None and not counter.estimated
    hashed: bool | None = None  # decided by the first readable record
    size = trace_size = 0
    requests = []
    for line, rec in _records(trace_file, out, max_bytes):
        if hashed is None:
            hashed = "hash_ids" in rec
            trace_size = (trace_block_tokens or MOONCAKE_BLOCK_TOKENS) if hashed else 0
            size = block_tokens or trace_size or 16
            if hashed:
                engine_blocks((), 0, trace_size, size)  # refuses a size the hashes cannot be read at, up front
        try:
            requests.append(_request(rec, hashed, size, counter, trace_size))
        except Reject as exc:
            out.reject(label, line, str(exc))
        except RecursionError:
            out.reject(label, line, "nested too deeply to be a log record")
    if not requests:
        raise PrefixTraceError(_nothing_read(label, out))
    requests.sort(key=lambda r: r.ts_ms)
    if hashed and size < trace_size:
        source = f"hash_ids of {trace_size}-token blocks, each read as {trace_size // size} {size}-token engine blocks"
    elif hashed and size > trace_size:
        source = f"hash_ids of {trace_size}-token blocks, {size // trace_size} to each {size}-token engine block"
    elif hashed:
        source = f"hash_ids ({size}-token blocks)"
    elif exact and counter is not None:
        source = f"message text, {counter.label} ({size}-token blocks)"
    else:
        source = f"message text cut at ≈ {CHARS_PER_TOKEN:g} characters a token ({size}-token blocks, an estimate)"
    return PrefixTrace(
        tuple(requests),
        size,
        source,
        approximate=not hashed and not exact,
        rejected=tuple(out.rejected),
        n_rejected=out.n_rejected,
        trace_block_tokens=trace_size or None,
    )
