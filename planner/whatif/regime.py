"""The regime a candidate's p95 lands in, in the sentence a lead forwards (issue 45).

What the slowest 5 % of requests (at or above the p95) wait for, from their replayed segments:

- **capacity-bound** (a batching engine; queueing dominates): new requests wait for one of the replica's running
  sequences (`slots`, vLLM's max_num_seqs) or KV blocks;
- **decode-bound** (a batching engine; its prompt's steps dominate, and the decode tokens in them cost more than its
  own prompt): "new requests wait on 40 running decodes";
- **prefill-bound** (a batching engine): the prompts' own compute, and the other prompts' chunks in their steps;
- **cold-start-bound** (a batching engine with an overflow pool): the slowest find their replica full and wait for
  an overflow replica to load;
- for the slot model: **queue-bound** (waiting for a free slot), **cold-start-bound**, **prefill-bound** or
  **network-bound**, whichever segment is largest.

Then one replica more, replayed on the same trace: "a second replica halves p95 (820 → 405 ms)", or what it does.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from planner.percentiles import nearest_rank_index
from planner.whatif.deployment import Dedicated, Deployment, Serverless
from planner.whatif.outcome import SEGMENT_KEYS, CannotKeepUp, Replay
from planner.whatif.replay import replay
from planner.whatif.trace import Trace

__all__ = ["regime_sentence"]

_ORDINAL = {2: "second", 3: "third", 4: "fourth", 5: "fifth"}


def _p95(ttft_ms: np.ndarray) -> float:
    ordered = np.sort(ttft_ms)
    return float(ordered[nearest_rank_index(0.95, len(ordered))])


def _batching_regime(dep: Dedicated, rep: Replay, trace: Trace, tail: np.ndarray) -> str:
    costs = dep.step_costs
    queue = float(rep.queue_ms[tail].mean())
    prefill = float(rep.prefill_ms[tail].mean())
    cold = float(rep.cold_ms[tail].mean())
    if cold > max(queue, prefill):  # an overflow pool behind the engine
        return (
            f"cold-start-bound: {float(rep.overflow[tail].mean()):.0%} of the slowest 5 % find their replica full, "
            f"go to the overflow pool and wait {cold:,.0f} ms for a replica to load"
        )
    if queue > prefill:
        kv = " or KV blocks" if dep.kv_blocks else ""
        return (
            f"capacity-bound: new requests wait {queue:,.0f} ms for one of the {dep.slots_per_replica:,} running "
            f"sequences{kv} of a replica"
        )
    running = rep.first_step_decodes[tail] if rep.first_step_decodes is not None else np.zeros(int(tail.sum()))
    decodes = float(running.mean())
    own_ms = float(
        (
            costs.step_ms + costs.prompt_token_ms * (trace.uncached_tokens[tail] + dep.prompt_overhead_tokens.value)
        ).mean()
    )
    decode_ms = costs.decode_token_ms * decodes
    if decode_ms > own_ms:
        return (
            f"decode-bound: new requests wait on {decodes:,.0f} running decodes (each of their steps carries "
            f"{decode_ms:,.0f} ms of decode tokens against {own_ms:,.0f} ms of their own prompt)"
        )
    return (
        f"prefill-bound: the slowest prompts' own compute ({own_ms:,.0f} ms) and the other prompts in their steps "
        f"({dep.max_num_batched_tokens:,} tokens a step at most) make their first token"
    )


_SLOT_WORDS = {
    "queue_ms": "queue-bound: the slowest 5 % wait {ms:,.0f} ms for a free slot",
    "cold_ms": "cold-start-bound: the slowest 5 % wait {ms:,.0f} ms for a replica to load",
    "prefill_ms": "prefill-bound: the slowest 5 % spend {ms:,.0f} ms prefilling their own prompt",
    "network_ms": "network-bound: {ms:,.0f} ms of the slowest 5 % is the round trip",
}


def _one_more(dep: Deployment) -> tuple[Deployment, str] | None:
    """The deployment with one replica more, and its words; None for a serverless pool already at its top."""
    if isinstance(dep, Dedicated):
        n = dep.replicas + 1
        return replace(dep, replicas=n), f"a {_ORDINAL.get(n, f'{n}th')} replica"
    if isinstance(dep, Serverless):
        return replace(dep, max_replicas=dep.max_replicas + 1), f"allowing {dep.max_replicas + 1} replicas"
    return None


def regime_sentence(dep: Deployment, rep: Replay, trace: Trace, max_wait_s: float) -> str:
    """'decode-bound: new requests wait on 40 running decodes (…); a second replica halves p95 (820 → 405 ms)' for
    the replay `rep` of `trace` on `dep` (see the module docstring). One more replay, with one replica more."""
    p95 = _p95(rep.ttft_ms)
    tail = rep.ttft_ms >= p95
    if isinstance(dep, Dedicated) and dep.batching:
        text = _batching_regime(dep, rep, trace, tail)
    else:
        means = {k: float(getattr(rep, k)[tail].mean()) for k in SEGMENT_KEYS}
        key = max(means, key=means.__getitem__)
        text = _SLOT_WORDS[key].format(ms=means[key])
    more = _one_more(dep)
    if more is None:
        return text
    bigger, words = more
    try:
        after = _p95(replay(bigger, trace, max_wait_s=max_wait_s).ttft_ms)
    except CannotKeepUp:
        return text
    if after <= 0.55 * p95:
        return f"{text}; {words} halves p95 ({p95:,.0f} → {after:,.0f} ms)"
    if after >= 0.97 * p95:
        return f"{text}; {words} would not change p95 ({p95:,.0f} → {after:,.0f} ms)"
    return f"{text}; {words} takes p95 from {p95:,.0f} to {after:,.0f} ms ({after / p95 - 1:+.0%})"
