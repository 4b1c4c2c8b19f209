"""Tables with user-named columns: CSV, or JSON records mapped field by field.

The mapping goes from a canonical field to a column name (CSV) or a dotted path (JSON):

  ts               arrival time (ISO 8601 or epoch s/ms/µs/ns)          required, or one of:
  ts_relative_s, ts_relative_ms   time since the trace's start (placed from a start date)
  prompt_tokens    whole prompt incl. cached tokens                     one of these three
  prompt_tokens_uncached   prompt without cached part (Anthropic's input_tokens)
  prompt_text      prompt text: tokens are counted (tokenizer or estimate)
  cached_tokens, output_tokens, model, ttft_ms, ttft_s, duration_ms, duration_s,
  first_token_time, end_time (timestamps: TTFT/duration from ts), output_text,
  hash_ids         prompt block hashes: cached tokens derived under a prefix cache (planner.logs.prefix)

`guess_mapping` proposes one from column names; the page shows it for the user to correct.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from planner.logs.prefix import PrefixCache
from planner.logs.records import MAX_EPOCH_MS, Reject, Row, dig, epoch_ms, non_negative, shown, timing_ms, token_count
from planner.logs.tokenize import TokenCounter, message_text

__all__ = ["FIELDS", "FIELD_LABELS", "REQUIRED_HELP", "extract_mapped", "guess_mapping", "mapping_complete"]

FIELDS = (
    "ts",
    "ts_relative_s",
    "ts_relative_ms",
    "model",
    "prompt_tokens",
    "prompt_tokens_uncached",
    "prompt_text",
    "cached_tokens",
    "output_tokens",
    "output_text",
    "ttft_ms",
    "ttft_s",
    "duration_ms",
    "duration_s",
    "first_token_time",
    "end_time",
    "hash_ids",
)
#: Each field as a page names it (the CLI's --map and the stored mapping keep the field names above).
FIELD_LABELS: dict[str, str] = {
    "ts": "Arrival time",
    "ts_relative_s": "Arrival, s from the trace's start",
    "ts_relative_ms": "Arrival, ms from the trace's start",
    "model": "Model",
    "prompt_tokens": "Prompt tokens (cached included)",
    "prompt_tokens_uncached": "Uncached prompt tokens",
    "prompt_text": "Prompt text (tokens counted)",
    "cached_tokens": "Cached prompt tokens",
    "output_tokens": "Output tokens",
    "output_text": "Output text (tokens counted)",
    "ttft_ms": "TTFT (ms)",
    "ttft_s": "TTFT (s)",
    "duration_ms": "Duration (ms)",
    "duration_s": "Duration (s)",
    "first_token_time": "First-token time",
    "end_time": "End time",
    "hash_ids": "Prefix block hashes",
}
REQUIRED_HELP = (
    "a time column (ts, or ts_relative_s / ts_relative_ms) and a prompt-token column (prompt_tokens, "
    "prompt_tokens_uncached or prompt_text)"
)

_SYNONYMS: dict[str, tuple[str, ...]] = {
    "ts": (
        "timestamp",
        "ts",
        "tsms",
        "time",
        "created",
        "createdat",
        "starttime",
        "requesttime",
        "datetime",
        "date",
        "requeststart",
        "startedat",
        "requestedat",
        "starttimeutc",
        "eventtime",
        "started",
    ),
    "model": ("model", "modelname", "modelid", "modelgroup", "deployment"),
    "prompt_tokens": (
        "prompttokens",
        "usageprompttokens",
        "totalinputtokens",
        "tokensin",
        "inputtokencount",
        "prompttokencount",
        "inputtokens",
        "promptlength",
        "ntokensprompt",
        "contexttokens",
        "requesttokens",
        "inputlength",
        "numprompttokens",
        "inputtokenscount",
    ),
    "cached_tokens": (
        "cachedtokens",
        "cachedprompttokens",
        "cachereadinputtokens",
        "cachehittokens",
        "inputcachedtokens",
        "cachetokens",
        "prompttokensdetailscachedtokens",
    ),
    "output_tokens": (
        "completiontokens",
        "outputtokens",
        "tokensout",
        "outputtokencount",
        "completiontokencount",
        "generatedtokens",
        "responsetokens",
        "outputlength",
        "numcompletiontokens",
        "generationtokens",
    ),
    "ttft_ms": ("ttftms", "timetofirsttokenms", "firsttokenms", "ttft"),
    "ttft_s": ("ttfts", "timetofirsttoken", "timetofirsttokens"),
    "duration_ms": ("durationms", "latencyms", "totalms", "elapsedms"),
    "duration_s": ("durations", "latency", "latencys", "duration"),
    "first_token_time": ("completionstarttime", "firsttokentime", "firsttokenat"),
    "end_time": ("endtime", "finishedat", "completedat"),
    "prompt_text": ("prompt", "prompttext", "input", "messages", "request"),
    "output_text": ("completion", "output", "response", "outputtext", "completiontext"),
    "hash_ids": ("hashids", "blockhashes"),
}


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def guess_mapping(columns: Sequence[str]) -> dict[str, str]:
    """A proposed mapping (canonical field → column) from column names; fields with no match are left out."""
    by_norm: dict[str, str] = {}
    for column in columns:
        by_norm.setdefault(_norm(column), column)
    out: dict[str, str] = {}
    used: set[str] = set()
    for field in FIELDS:
        for syn in _SYNONYMS.get(field, ()):
            col = by_norm.get(syn)
            if col is not None and col not in used:
                out[field] = col
                used.add(col)
                break
    # Anthropic-style columns: input_tokens excludes the cache reads listed beside it.
    if out.get("prompt_tokens") and _norm(out["prompt_tokens"]) == "inputtokens" and "cachereadinputtokens" in by_norm:
        out["prompt_tokens_uncached"] = out.pop("prompt_tokens")
    if any(k in out for k in ("prompt_tokens", "prompt_tokens_uncached")):
        out.pop("prompt_text", None)
    if "output_tokens" in out:
        out.pop("output_text", None)
    return out


def mapping_complete(mapping: Mapping[str, str]) -> bool:
    """True when the mapping names a time and a way to get prompt tokens."""
    has_time = any(mapping.get(k) for k in ("ts", "ts_relative_s", "ts_relative_ms"))
    return has_time and any(mapping.get(k) for k in ("prompt_tokens", "prompt_tokens_uncached", "prompt_text"))


def _timing(
    val: Callable[[str], Any], mapping: Mapping[str, str], fields: tuple[str, str, str], ts: int, tz: str
) -> float:
    """A timing in ms from the first of (ms, s, an end time) that is mapped and present; NaN when none is."""
    in_ms, in_s, at = fields
    if val(in_ms) is not None:
        return timing_ms(val(in_ms), mapping[in_ms])
    if val(in_s) is not None:
        return timing_ms(val(in_s), mapping[in_s], 1000.0)
    if val(at) is not None:
        gap = epoch_ms(val(at), mapping[at], tz) - ts
        if gap < 0:
            raise Reject(f"{mapping[at]} is before the arrival time")
        return timing_ms(gap, mapping[at])
    return math.nan


def extract_mapped(
    rec: Mapping[str, Any],
    mapping: Mapping[str, str],
    tz: str = "UTC",
    counter: TokenCounter | None = None,
    get: Callable[[Any, str], Any] = dig,
    start_ms: int = 0,
    prefix: PrefixCache | None = None,
) -> tuple[Row, bool]:
    """(Row, tokens_estimated) from one record via `mapping`; raises Reject naming the column.

    start_ms: UTC epoch ms that relative times (ts_relative_s / ts_relative_ms) count from.
    prefix: the LRU cache that derives cached tokens from hash_ids (when mapped and no cached column is).
    """

    def val(field: str) -> Any:
        col = mapping.get(field)
        if not col:
            return None
        v = get(rec, col)
        return None if v == "" else v

    if mapping.get("ts"):
        ts = epoch_ms(val("ts"), mapping["ts"], tz)
    else:
        unit = "ts_relative_s" if mapping.get("ts_relative_s") else "ts_relative_ms"
        raw = val(unit)
        if raw is None:
            raise Reject(f"missing timestamp {mapping.get(unit, unit)}")
        ts = start_ms + int(round(non_negative(raw, mapping[unit]) * (1000.0 if unit == "ts_relative_s" else 1.0)))
        if not 0 < ts < MAX_EPOCH_MS:
            raise Reject(f"{mapping[unit]} is outside 1970–2100 from the start: {shown(raw)}")
    estimated = False
    cached = token_count(val("cached_tokens"), mapping.get("cached_tokens", "cached_tokens"), required=False)
    if mapping.get("prompt_tokens"):
        prompt = token_count(val("prompt_tokens"), mapping["prompt_tokens"])
    elif mapping.get("prompt_tokens_uncached"):
        prompt = token_count(val("prompt_tokens_uncached"), mapping["prompt_tokens_uncached"]) + cached
    elif mapping.get("prompt_text"):
        counter = counter or TokenCounter()
        text = message_text(val("prompt_text"))
        if not text:
            raise Reject(f"missing {mapping['prompt_text']}")
        prompt, estimated = counter.count(text), counter.estimated
    else:
        raise Reject("no prompt-token column is mapped")
    if prefix is not None and not mapping.get("cached_tokens") and mapping.get("hash_ids"):
        hashes = val("hash_ids")
        if isinstance(hashes, str):
            hashes = [h for h in re.split(r"[\s,\[\]]+", hashes) if h]
        cached = prefix.cached_tokens(hashes if isinstance(hashes, list) else [], prompt)
    if cached > prompt:
        raise Reject(f"cached tokens ({cached}) exceed prompt tokens ({prompt})")
    if mapping.get("output_tokens"):
        output = token_count(val("output_tokens"), mapping["output_tokens"], required=False)
    elif mapping.get("output_text"):
        counter = counter or TokenCounter()
        output = counter.count(message_text(val("output_text")))
        estimated = estimated or counter.estimated
    else:
        output = 0
    ttft = _timing(val, mapping, ("ttft_ms", "ttft_s", "first_token_time"), ts, tz)
    duration = _timing(val, mapping, ("duration_ms", "duration_s", "end_time"), ts, tz)
    model = val("model")
    return Row(ts, "" if model is None else str(model), prompt, cached, output, ttft, duration), estimated
