"""Replicas × routing × a prefix cache per replica inside the what-if replay (issue 45).

A dedicated deployment with `routing=` sends each request to a replica by one of the policies `ttft-planner prefix`
replays (round-robin, least-loaded, session, prefix-aware), and each replica keeps its own prefix cache under the
engine's eviction rule (vLLM tail-first, SGLang radix-leaf, llama.cpp's slots). Both are planner.kvcache.simulate,
called here: one cache model, not a second one. The replay then queues each request on its own replica and prefills
its uncached tokens at the replay's own service time (planner.whatif.replay, unchanged), so one replay gives TTFT, hit
rate and cost for the deployment as it would run.

The placement is made at the deployment's nominal rates: least-loaded and prefix-aware routing count a request in
flight for its prefill and decode, without queueing, as `ttft-planner prefix` does. So it is the same at every drawn
speed of the interval, and it is made once per trace and deployment.

Without prefix identity on the trace (a log with cached tokens and no block hashes), the router still picks each
replica (session and prefix-aware routing fall back to least-loaded, as without session ids or cached prefixes) and
the log's cached tokens stand.

`with_prefix_identity` is the one call that readies a trace for its candidates: `ttft-planner whatif` and the What-if
page both go through it, so `routing=` gives the same replicas, caches and fully-cached count on either front.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from planner.kvcache.chains import MOONCAKE_BLOCK_TOKENS, PrefixRequest, PrefixTraceError, read_prefix_trace
from planner.kvcache.simulate import Engine, ServiceRates, simulate
from planner.logs.prefix import DEFAULT_CACHE_BLOCKS, DEFAULT_EVICTION, ENGINE_EVICTION, Eviction
from planner.whatif.deployment import Dedicated, Deployment
from planner.whatif.prefix_identity import PrefixIdentity
from planner.whatif.trace import Trace, TraceError

__all__ = [
    "DEFAULT_CAPACITY_TOKENS",
    "LogFile",
    "Placement",
    "attach_prefix",
    "cache_rule",
    "placement",
    "prefix_cache_sentence",
    "routed",
    "with_prefix_identity",
]

#: A log file as the fronts hold it: a path (the command line, a sample) or an upload's (file name, bytes).
LogFile = Path | str | tuple[str, bytes]
#: Each replica's prefix cache without --prefix-cache-blocks / --kv-from-gpu: the log reader's default (tokens).
DEFAULT_CAPACITY_TOKENS = DEFAULT_CACHE_BLOCKS * MOONCAKE_BLOCK_TOKENS


@dataclass(frozen=True)
class Placement:
    """Where each request of a trace goes and what its replica's cache serves (arrays in trace order): its replica,
    its cached prompt tokens, and the most a cache could serve it (its full blocks' tokens; the prompt when the trace
    has no identity). routing: the policy; rule: the eviction rule, "llama.cpp slots", or "logged" (no identity:
    the log's cached tokens)."""

    replica_of: np.ndarray
    cached_tokens: np.ndarray
    cacheable_tokens: np.ndarray
    prompt_tokens: np.ndarray
    routing: str
    rule: str
    replicas: int
    capacity_blocks: int
    block_tokens: int

    @property
    def hit_rate(self) -> float:
        """Cached prompt tokens ÷ prompt tokens (0 for a trace without prompt tokens)."""
        total = float(self.prompt_tokens.sum())
        return float(self.cached_tokens.sum()) / total if total else 0.0

    @property
    def fully_cached(self) -> int:
        """Requests whose every full block was served from their replica's cache (`ttft-planner prefix` counts the
        same)."""
        k = self.cacheable_tokens
        return int(np.count_nonzero((k > 0) & (self.cached_tokens >= k)))

    def summary(self) -> dict[str, Any]:
        """The figures the command and JSON show for a candidate."""
        return {
            "routing": self.routing,
            "eviction": self.rule,
            "replicas": self.replicas,
            "capacity_blocks": self.capacity_blocks,
            "block_tokens": self.block_tokens,
            "hit_rate": self.hit_rate,
            "fully_cached": self.fully_cached,
            "requests": len(self.replica_of),
        }


def attach_prefix(
    trace: Trace,
    path: LogFile,
    capacity_tokens: int,
    block_tokens: int | None = None,
    trace_block_tokens: int | None = None,
) -> Trace:
    """`trace` with each request's prefix identity read from `path`, the file it was read from (a path, or an
    upload's (name, bytes), read in memory; hash_ids, or message text: planner.kvcache.chains, in `block_tokens`-token
    blocks, default the trace's), for a prefix cache of `capacity_tokens` KV tokens a replica (whole blocks).

    Raises TraceError naming the file when it has no prefix identity, or when its requests do not pair one to one,
    in order, with the trace's (another count, or another prompt length at some request).
    """
    source = path if isinstance(path, tuple) else Path(path)
    name = source[0] if isinstance(source, tuple) else source.name
    try:
        found = read_prefix_trace(source, block_tokens, trace_block_tokens=trace_block_tokens)
    except PrefixTraceError as exc:
        raise TraceError(f"routing= needs each request's prefix identity (hash_ids or message text): {exc}") from None
    prompts = np.array([r.prompt_tokens for r in found.requests], dtype=float)
    if len(prompts) != trace.n or not np.array_equal(prompts, trace.prompt_tokens):
        where = (
            f"{len(prompts):,} requests with a prefix identity against {trace.n:,} in the log"
            if len(prompts) != trace.n
            else f"request {int(np.flatnonzero(prompts != trace.prompt_tokens)[0]) + 1} has another prompt length"
        )
        raise TraceError(f"{name}: cannot pair each request with its prefix identity for routing= ({where})")
    capacity_blocks = max(1, int(capacity_tokens) // found.block_tokens)
    identity = PrefixIdentity(
        tuple(r.blocks for r in found.requests),
        tuple(r.session for r in found.requests),
        found.block_tokens,
        capacity_blocks,
        found.source,
    )
    note = (
        f"routing=: each replica's prefix cache holds {capacity_blocks:,} blocks × {found.block_tokens} tokens; "
        f"prefix identity from {found.source}"
    )
    return replace(trace, prefix=identity, notes=(*trace.notes, note))


def with_prefix_identity(
    trace: Trace,
    deployments: Sequence[Deployment],
    logs: Sequence[LogFile],
    capacity_tokens: int = DEFAULT_CAPACITY_TOKENS,
) -> Trace:
    """`trace` ready for `deployments`, on the command line and the What-if page alike: when a dedicated candidate
    has routing=, each request's prefix identity read from `logs`, the one log file the trace was read from
    (attach_prefix, each replica's cache `capacity_tokens` KV tokens); `trace` unchanged when none has. Without a
    file (a stored upload or a production source keeps token counts, not the prompts' hashes or text) the trace gets
    a note that each replica takes the log's cached tokens.

    Raises TraceError for more than one file, and as attach_prefix does.
    """
    if not any(isinstance(d, Dedicated) and d.routing is not None for d in deployments):
        return trace
    if not logs:
        note = (
            "routing=: this log keeps token counts, not each prompt's hash_ids or text, so each replica takes the "
            "log's cached tokens; replay the log file itself to give each replica its own prefix cache"
        )
        return replace(trace, notes=(*trace.notes, note))
    if len(logs) > 1:
        raise TraceError(f"routing= reads each request's prefix identity from one log file; {len(logs)} were given")
    return attach_prefix(trace, logs[0], capacity_tokens)


def prefix_cache_sentence(summary: dict[str, Any]) -> str:
    """One candidate's replicas and caches in words (Placement.summary's figures): 'round-robin routing over 2
    replicas, each with its own prefix cache (tail-first): hit rate 66.7%, 12/18 prompts fully cached'."""
    return (
        f"{summary['routing']} routing over {summary['replicas']} replicas, each with its own prefix cache "
        f"({summary['eviction']}): hit rate {summary['hit_rate']:.1%}, {summary['fully_cached']:,}/"
        f"{summary['requests']:,} prompts fully cached"
    )


def cache_rule(dep: Dedicated) -> tuple[Engine, Eviction | None]:
    """The cache a replica of `dep` keeps: llama.cpp's slots (no eviction rule), or a block cache evicting by
    `eviction=`, else by the engine's rule (vLLM tail-first, SGLang radix-leaf; the slot model: vLLM's)."""
    if dep.engine == Engine.LLAMA_CPP.value:
        return Engine.LLAMA_CPP, None
    if dep.eviction is not None:
        return Engine.VLLM, Eviction(dep.eviction)
    rule = ENGINE_EVICTION.get(dep.engine, DEFAULT_EVICTION)
    return (Engine.SGLANG if rule is Eviction.RADIX_LEAF else Engine.VLLM), rule


# One placement per (trace, deployment inputs): the interval replays the same trace at several speeds.
_placed: dict[int, tuple[weakref.ref[Trace], dict[tuple, Placement]]] = {}


def _forget(key: int) -> None:
    _placed.pop(key, None)


def _inputs(dep: Dedicated) -> tuple:
    return (
        dep.replicas,
        dep.routing,
        dep.engine,
        dep.eviction,
        dep.slots_per_replica,
        dep.kv_blocks,
        dep.block_size,
        dep.prefill_tokens_per_s.value,
        dep.decode_tokens_per_s.value,
        dep.prompt_overhead_tokens.value,
    )


def _place(dep: Dedicated, trace: Trace) -> Placement:
    prefill_ms = 1000.0 / dep.prefill_tokens_per_s.value
    rates = ServiceRates(
        prefill_ms_per_token=prefill_ms,
        decode_ms_per_token=1000.0 / dep.decode_tokens_per_s.value,
        overhead_ms=dep.prompt_overhead_tokens.value * prefill_ms,
    )
    ident = trace.prefix
    blocks = ident.blocks if ident is not None else ((),) * trace.n
    sessions = ident.sessions if ident is not None else (None,) * trace.n
    bt = ident.block_tokens if ident is not None else 1
    capacity = ident.capacity_blocks if ident is not None else 1
    if ident is not None and dep.kv_blocks > 0:  # a batching engine's own KV cache, in the identity's blocks
        capacity = max(1, dep.kv_blocks * dep.block_size // bt)
    requests = [
        PrefixRequest(int(t), s, int(p), b, int(o))
        for t, s, p, b, o in zip(
            trace.arrival_ms.tolist(),
            sessions,
            trace.prompt_tokens.tolist(),
            blocks,
            trace.output_tokens.tolist(),
            strict=True,
        )
    ]
    engine, rule = cache_rule(dep)
    run = simulate(
        requests,
        replicas=dep.replicas,
        capacity_blocks=capacity,
        block_tokens=bt,
        routing=str(dep.routing),
        rates=rates,
        engine=engine,
        slots=dep.slots_per_replica,
        eviction=rule,
    )
    prompt = np.asarray(trace.prompt_tokens, dtype=float)
    if ident is None:
        cached, cacheable, said = np.asarray(trace.cached_tokens, dtype=float), prompt, "logged"
    else:
        cached = np.asarray(run.cached_tokens, dtype=float)
        cacheable = np.asarray(run.cacheable_tokens, dtype=float)
        said = "llama.cpp slots" if rule is None else rule.value
    return Placement(
        np.asarray(run.replica_of, dtype=np.int64),
        cached,
        cacheable,
        prompt,
        str(dep.routing),
        said,
        dep.replicas,
        capacity,
        bt,
    )


def placement(dep: Deployment, trace: Trace) -> Placement | None:
    """Each request's replica and cached tokens under `dep`'s routing= (see the module docstring); None for a
    deployment without one (one queue over every slot, the log's cached tokens). Raises ValueError as
    planner.kvcache.simulate does (it cannot for a deployment that passed its own checks)."""
    if not isinstance(dep, Dedicated) or dep.routing is None:
        return None
    key = id(trace)
    held = _placed.get(key)
    if held is None or held[0]() is not trace:
        held = (weakref.ref(trace), {})
        _placed[key] = held
        weakref.finalize(trace, _forget, key)
    inputs = _inputs(dep)
    if inputs not in held[1]:
        held[1][inputs] = _place(dep, trace)
    return held[1][inputs]


def routed(dep: Deployment, trace: Trace) -> tuple[Trace, np.ndarray | None]:
    """(`trace` with the cached tokens its replicas' caches serve, each request's replica) under `dep`'s routing=;
    (`trace`, None) unchanged without one."""
    placed = placement(dep, trace)
    if placed is None:
        return trace, None
    return replace(trace, cached_tokens=placed.cached_tokens), placed.replica_of
