"""Replicas, a router and each replica's KV cache replayed over a team's requests: the cached tokens of each.

Each replica holds `capacity_blocks` blocks of one prefix cache (planner.logs.prefix.PrefixCache, the one cache model:
a request reuses its leading blocks still cached; all its blocks are then cached), evicting by its engine's rule:
vLLM frees a request's blocks tail first, SGLang evicts radix-tree leaves (`eviction` overrides it, `lru` included to
compare). The router picks the replica a request goes to:

- round-robin: in turn;
- least-loaded: the replica with the fewest requests in flight at the arrival (a request is in flight for its
  service time: prefill of its uncached tokens and decode of its output, at the ServiceRates given);
- session: a session's requests to one replica (its id hashed; a request without a session id goes least-loaded),
  as vLLM's production-stack session router and llm-d's affinity do;
- prefix: the replica holding the longest cached prefix of the prompt, ties and misses least-loaded (SGLang's
  cache-aware router, without its balance threshold).

The engine decides what a replica keeps (a stated parameter): `vllm` or `sglang`, the block cache above under the
engine's eviction rule; or `llama.cpp`, its server's slots (planner.kvcache.slots, proven against the server's own
counters): the replica's KV split into `slots` slots, each keeping its last prompt, a request landing on the most
similar slot or the least recently used and reusing its common prefix with it — replayed here at block granularity
(a slot's tokens are the prompt's block hashes; its output is not known, so not kept).

Predicted TTFT here is service only: a fixed overhead plus the uncached prompt at the prefill rate; queueing is the
what-if's business (planner.whatif), which can take these uncached tokens as its prompts.
"""

from __future__ import annotations

import hashlib
import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from planner.kvcache.chains import PrefixRequest
from planner.kvcache.slots import LlamaCppSlots, common_prefix
from planner.logs.prefix import Eviction, PrefixCache, eviction_for
from planner.percentiles import Percentile, percentile

__all__ = ["Engine", "Eviction", "PrefixRun", "Routing", "ServiceRates", "engine_eviction", "reuse_ceiling", "simulate"]


class Engine(StrEnum):
    VLLM = "vllm"  # a block cache per replica, freed tail first (planner.logs.prefix)
    SGLANG = "sglang"  # a block cache per replica, radix-tree leaves evicted first
    LLAMA_CPP = "llama.cpp"  # llama.cpp's server: slots, each keeping its last sequence


def engine_eviction(engine: Engine | str, eviction: Eviction | str | None = None) -> Eviction | None:
    """The eviction rule a replica of `engine` follows: `eviction` when given, else the engine's own (vLLM
    tail-first, SGLang radix-leaf); None for llama.cpp, whose slots keep whole sequences.

    Raises ValueError for an unknown engine or rule, or an eviction rule given for llama.cpp.
    """
    engine = Engine(engine)
    if engine is Engine.LLAMA_CPP:
        if eviction is not None:
            raise ValueError("llama.cpp keeps one sequence per slot: an eviction rule applies to vllm or sglang")
        return None
    return Eviction(eviction) if eviction is not None else eviction_for(engine.value)


class _Slots:
    """llama.cpp's slots over block hashes, answering as PrefixCache does (leading blocks cached)."""

    def __init__(self, n_slots: int, capacity_blocks: int) -> None:
        self.slots = LlamaCppSlots(n_slots, max(2, capacity_blocks // n_slots))
        self._unique = 0

    def matched_blocks(self, hashes: Sequence[int]) -> int:
        return max(common_prefix(self.slots.tokens(i), hashes) for i in range(self.slots.n_slots))

    def hit_blocks(self, hashes: Sequence[int]) -> int:
        if len(hashes) + 1 >= self.slots.slot_tokens:
            return 0  # longer than a slot's context: the server refuses it, so nothing is reused
        self._unique += 1
        # a token no other prompt has (block hashes are ≥ 0) stands for the prompt's last, partial block: the
        # server's "one token always evaluated" then never takes a whole block back
        return self.slots.serve([*hashes, -self._unique])


class Routing(StrEnum):
    ROUND_ROBIN = "round-robin"
    LEAST_LOADED = "least-loaded"
    SESSION = "session"
    PREFIX = "prefix"


@dataclass(frozen=True)
class ServiceRates:
    """How long a request holds a replica and what its first token waits for: prefill of the uncached prompt at
    `prefill_ms_per_token`, decode at `decode_ms_per_token`, plus `overhead_ms` before the first token."""

    prefill_ms_per_token: float = 0.1  # 10,000 prompt tokens a second
    decode_ms_per_token: float = 20.0
    overhead_ms: float = 0.0

    def ttft_ms(self, uncached_tokens: int) -> float:
        return self.overhead_ms + uncached_tokens * self.prefill_ms_per_token

    def service_ms(self, uncached_tokens: int, output_tokens: int) -> float:
        return self.ttft_ms(uncached_tokens) + output_tokens * self.decode_ms_per_token


@dataclass(frozen=True)
class PrefixRun:
    """What one deployment does with the requests: per request its replica and cached tokens, and the totals."""

    routing: Routing
    replicas: int
    capacity_blocks: int
    block_tokens: int
    replica_of: tuple[int, ...]
    cached_tokens: tuple[int, ...]
    prompt_tokens: tuple[int, ...]
    rates: ServiceRates
    eviction: Eviction | None = None  # None: llama.cpp's slots
    cacheable_tokens: tuple[int, ...] = ()  # per request, its full blocks' tokens (the most a cache can serve)

    @property
    def hit_rate(self) -> float:
        """Cached prompt tokens ÷ prompt tokens."""
        total = sum(self.prompt_tokens)
        return sum(self.cached_tokens) / total if total else 0.0

    @property
    def request_hit_fraction(self) -> float:
        n = len(self.cached_tokens)
        return sum(1 for c in self.cached_tokens if c > 0) / n if n else 0.0

    @property
    def fully_cached(self) -> int:
        """Requests whose every full block was served from the cache (a request without one is never counted)."""
        return sum(1 for c, k in zip(self.cached_tokens, self.cacheable_tokens, strict=True) if 0 < k <= c)

    def uncached(self) -> list[int]:
        return [p - c for p, c in zip(self.prompt_tokens, self.cached_tokens, strict=True)]

    def uncached_p(self, p: float) -> Percentile:
        return percentile(self.uncached(), p)

    def ttft_p(self, p: float) -> Percentile:
        return percentile([self.rates.ttft_ms(u) for u in self.uncached()], p)


def _stable(key: str) -> int:
    # surrogatepass: a session id may hold a lone surrogate (JSON's "\ud800"), which is text, not UTF-8
    return int.from_bytes(hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")


def simulate(
    requests: Sequence[PrefixRequest],
    *,
    replicas: int,
    capacity_blocks: int,
    block_tokens: int,
    routing: Routing | str = Routing.ROUND_ROBIN,
    rates: ServiceRates | None = None,
    engine: Engine | str = Engine.VLLM,
    slots: int = 4,
    eviction: Eviction | str | None = None,
) -> PrefixRun:
    """Replay `requests` (in arrival order) on `replicas` replicas of `capacity_blocks` blocks each (for the
    llama.cpp engine, split over `slots` slots), each evicting by `eviction` (default: the engine's rule,
    engine_eviction).

    Raises ValueError for fewer than one replica, block or slot, or an unknown engine, routing or rule.
    """
    if replicas < 1 or capacity_blocks < 1 or block_tokens < 1 or slots < 1:
        raise ValueError("a deployment needs at least one replica of at least one block of at least one token")
    routing = Routing(routing)
    rates = rates or ServiceRates()
    rule = engine_eviction(engine, eviction)
    caches: list[PrefixCache | _Slots]
    if rule is None:
        caches = [_Slots(slots, capacity_blocks) for _ in range(replicas)]
    else:
        caches = [PrefixCache(capacity_blocks, block_tokens, rule) for _ in range(replicas)]
    busy: list[list[float]] = [[] for _ in range(replicas)]  # per replica: a heap of finish times (ms)
    replica_of, cached = [], []
    turn = 0

    def in_flight(i: int, now: float) -> int:
        heap = busy[i]
        while heap and heap[0] <= now:
            heapq.heappop(heap)
        return len(heap)

    def least_loaded(now: float, among: Sequence[int]) -> int:
        return min(among, key=lambda i: (in_flight(i, now), i))

    for r in requests:
        now = float(r.ts_ms)
        if routing is Routing.ROUND_ROBIN:
            pick, turn = turn % replicas, turn + 1
        elif routing is Routing.SESSION and r.session is not None:
            pick = _stable(r.session) % replicas
        elif routing is Routing.PREFIX:
            matched = [c.matched_blocks(r.blocks) for c in caches]
            best = max(matched)
            pick = least_loaded(now, [i for i, m in enumerate(matched) if m == best])
        else:
            pick = least_loaded(now, range(replicas))
        hit = min(caches[pick].hit_blocks(r.blocks) * block_tokens, r.prompt_tokens)
        replica_of.append(pick)
        cached.append(hit)
        heapq.heappush(busy[pick], now + rates.service_ms(r.prompt_tokens - hit, r.output_tokens))
    return PrefixRun(
        routing,
        replicas,
        capacity_blocks,
        block_tokens,
        tuple(replica_of),
        tuple(cached),
        tuple(r.prompt_tokens for r in requests),
        rates,
        rule,
        tuple(min(len(r.blocks) * block_tokens, r.prompt_tokens) for r in requests),
    )


def reuse_ceiling(requests: Sequence[PrefixRequest], block_tokens: int) -> tuple[float, float]:
    """(share of prompt tokens that repeat an earlier request's prefix, the same counting only earlier requests of
    the same session): the hit rate of one replica with an unbounded cache, the most any deployment can reach."""
    seen: set[int] = set()
    by_session: dict[str | None, set[int]] = {}
    total = repeated = within = 0
    for r in requests:
        own = by_session.setdefault(r.session, set())
        lead = next((i for i, b in enumerate(r.blocks) if b not in seen), len(r.blocks))
        lead_own = next((i for i, b in enumerate(r.blocks) if b not in own), len(r.blocks))
        total += r.prompt_tokens
        repeated += min(lead * block_tokens, r.prompt_tokens)
        if r.session is not None:
            within += min(lead_own * block_tokens, r.prompt_tokens)
        seen.update(r.blocks)
        own.update(r.blocks)
    return (repeated / total, within / total) if total else (math.nan, math.nan)
